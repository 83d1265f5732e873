"""Atomic writing: stage a new content, then rename it over the target.

A new content is written to a temporary file (in the state folder, or beside the target when
that folder sits on another file system), then ``renameat``-ed over the target. Another
process sees the old file or the new one, never a mix; a crash of the writing process leaves
one or the other; a failed write (a full disk included) leaves the old file as it was.

Durability is a setting of the workspace (:attr:`Writing.durable_writes`, the config's
``files.durable_writes``): when on, the temporary file is ``fsync``-ed before the rename and
the target's folder after it (and the parent of each folder the write creates), so a
finished write also survives a power cut or a kernel crash. When off (the default, like
``@modelcontextprotocol/server-filesystem``, Codex's ``apply_patch`` and octos, which write
without ``fsync``), the last writes before such a crash may be lost, and on file systems
that do not order a rename after the renamed file's data (ext4 does, by default:
``auto_da_alloc``) the file may then be found empty.

The replacement keeps the target's permission bits (and owner, where allowed); a new file
gets ``0o666 & ~umask``.

Hard links: the rename gives the target a new inode, so a file with several names keeps its
old content under the other names (a link to a file *outside* the workspace is therefore never
written through). :class:`WriteOutcome` says how many other names the old file had, so the
tool can say so.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..errors import ErrorKind, PathError
from ._os_errors import map_os_error
from ._paths import O_CLOEXEC, O_NOFOLLOW
from ._reading import Reading
from ._state import StateHold, fsync_dir, note_foreign_temp, writer_lock
from ._tempnames import new_temp_name

__all__ = [
    "WriteOutcome",
    "Writing",
    "drop_markers",
    "existing_file",
    "foreign_noter",
    "same_device",
    "stage",
]


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    """What a write did to one file.

    Attributes:
        path: the workspace-relative path written.
        created: there was no file before.
        mode: the permission bits of the new file.
        other_links: how many other hard links (names) the replaced file had; they keep the
            old content (0 for a new file).
        inode: ``(st_dev, st_ino)`` of the replaced file (``None`` for a new file), to find
            those other names.
    """

    path: str
    created: bool
    mode: int
    other_links: int = 0
    inode: tuple[int, int] | None = None


def existing_file(pfd: int, name: str, rel: str, *, link_note: str) -> os.stat_result | None:
    """``lstat`` of the write target ``name`` in ``pfd``: ``None`` when it does not exist,
    its stat when it is a regular file.

    Raises:
        PathError: ``symlink_refused`` (the message ends with ``link_note``),
            ``is_a_directory``, ``invalid_arguments`` for another kind of file, or the
            mapped ``OSError``.
    """
    try:
        st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise map_os_error(exc, rel) from None
    if stat_mod.S_ISLNK(st.st_mode):
        raise PathError(ErrorKind.SYMLINK_REFUSED, f"{rel} is a symbolic link; {link_note}")
    if stat_mod.S_ISDIR(st.st_mode):
        raise PathError(ErrorKind.IS_A_DIRECTORY, f"{rel} is a directory")
    if not stat_mod.S_ISREG(st.st_mode):
        raise PathError(ErrorKind.INVALID_ARGUMENTS, f"{rel} is not a regular file")
    return st


def same_device(a: int, b: int) -> bool:
    """Whether the open folders ``a`` and ``b`` are on one file system (rename works)."""
    try:
        return os.fstat(a).st_dev == os.fstat(b).st_dev
    except OSError:
        return False


def stage(
    dfd: int,
    data: bytes,
    rel: str,
    *,
    mode: int | None,
    owner: os.stat_result | None = None,
    note: Callable[[str], object] | None = None,
    durable: bool = True,
) -> str:
    """Write ``data`` to a new temporary file in folder ``dfd``; return its name.

    Args:
        dfd: the folder to create it in.
        data: the content.
        rel: the target's path, for messages.
        mode: permission bits to give it; ``None``: the default of a new file (umask).
        owner: the file it will replace; its owner and group are copied when allowed.
        note: called with the temporary name before the file is created (to record it).
        durable: ``fsync`` the file before returning.

    Raises:
        PathError: ``disk_full`` and other mapped ``OSError`` kinds; no temporary file is
            left behind.
    """
    for _ in range(100):
        tmp = new_temp_name()
        if note is not None:
            try:
                note(tmp)
            except OSError as exc:
                raise map_os_error(exc, rel) from None
        try:
            fd = os.open(
                tmp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0o600 if mode is not None else 0o666,
                dir_fd=dfd,
            )
        except FileExistsError:
            continue
        except OSError as exc:
            raise map_os_error(exc, rel) from None
        break
    else:  # pragma: no cover - 100 collisions of 64 random bits
        raise PathError(ErrorKind.INTERNAL_ERROR, f"cannot create a temporary file for {rel}")
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if owner is not None:
            st = os.fstat(fd)
            if (st.st_uid, st.st_gid) != (owner.st_uid, owner.st_gid):
                with contextlib.suppress(OSError):
                    os.fchown(fd, owner.st_uid, owner.st_gid)
        if mode is not None:
            os.fchmod(fd, mode)
        if durable:
            os.fsync(fd)
    except BaseException as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        if isinstance(exc, OSError):
            raise map_os_error(exc, rel) from None
        raise
    os.close(fd)
    return tmp


class Writing(Reading):
    """The single-file writing methods of :class:`~octos_tools.workspace.Workspace`."""

    _state_hold: StateHold | None = None

    @contextlib.contextmanager
    def holding_state_folder(self) -> Iterator[None]:
        """While the block runs, the state folder a write creates is kept (not removed and
        re-created by every write); it is removed when the block ends, if idle and empty.

        For a host that writes often (``octos-tools serve``): removing a folder costs a
        journal commit on ext4 (about 4 ms). See :class:`~._state.StateHold` for what is
        given up meanwhile. Nested blocks share the outer hold.
        """
        if self._state_hold is not None and self._state_hold.active:
            yield
            return
        hold = StateHold()
        self._state_hold = hold
        try:
            yield
        finally:
            self._state_hold = None
            hold.release()

    def release_state_folder(self) -> None:
        """End the current :meth:`holding_state_folder` hold now (idempotent): for a process
        about to leave without unwinding (``os._exit`` after a signal). Writes after it go
        the usual way again."""
        hold = self._state_hold
        if hold is not None:
            hold.release()

    def write_bytes(
        self,
        path: str | os.PathLike[str],
        data: bytes,
        *,
        create_parents: bool = True,
        mode: int | None = None,
    ) -> WriteOutcome:
        """Atomically replace (or create) a regular file with ``data``.

        See the module docstring for the method. An existing file keeps its permission bits
        unless ``mode`` is given; a new one gets ``mode`` or ``0o666 & ~umask``.

        Args:
            path: user path of the file.
            data: the complete new content.
            create_parents: create missing parent directories, one component at a time.
            mode: permission bits for the file (``None``: keep / default).

        Returns:
            A :class:`WriteOutcome` (created or replaced, other hard links of the old file).

        Raises:
            PathError: ``symlink_refused`` (the target or a parent is a symlink, dangling or
                not), ``is_a_directory``, ``not_found`` (parent missing without
                ``create_parents``), ``not_a_directory``, ``permission_denied``,
                ``disk_full``, ``invalid_arguments`` (a path of ``PATH_MAX`` bytes or more,
                a reserved temporary name), path kinds. The old file is intact when raised.
        """
        pfd, name, rel = self._parent(path, create=create_parents, for_write=True)
        assert name is not None
        try:
            st = existing_file(
                pfd, name, rel, link_note="writes never go through links (remove it first)"
            )
            if mode is None:
                mode = None if st is None else stat_mod.S_IMODE(st.st_mode)
            with self._writer() as sfd:
                where = sfd if sfd is not None and same_device(sfd, pfd) else pfd
                markers: list[str] = []
                noter = foreign_noter(sfd, where, rel.rpartition("/")[0], markers)
                try:
                    tmp = stage(
                        where,
                        data,
                        rel,
                        mode=mode,
                        owner=st,
                        note=noter,
                        durable=self.durable_writes,
                    )
                    try:
                        os.replace(tmp, name, src_dir_fd=where, dst_dir_fd=pfd)
                    except OSError as exc:
                        with contextlib.suppress(OSError):
                            os.unlink(tmp, dir_fd=where)
                        raise map_os_error(exc, rel) from None
                    if self.durable_writes:
                        fsync_dir(pfd)
                finally:
                    drop_markers(sfd, markers)
                now = os.stat(name, dir_fd=pfd, follow_symlinks=False)
                new_mode = stat_mod.S_IMODE(now.st_mode)
        finally:
            os.close(pfd)
        if st is None:
            return WriteOutcome(rel, True, new_mode)
        return WriteOutcome(rel, False, new_mode, st.st_nlink - 1, (st.st_dev, st.st_ino))

    def _writer(self) -> contextlib.AbstractContextManager[int | None]:
        """The shared writer lock of :mod:`._state` (recovering first when idle)."""
        hold = self._state_hold
        if hold is not None:
            hold.ensure(self._open_root)
        root_fd = self._open_root()
        return _closing_writer(root_fd)

    def mkdir(self, path: str | os.PathLike[str], *, parents: bool = True) -> None:
        """Create a directory (no error if it already is one).

        Args:
            path: user path of the directory.
            parents: create missing parents too, one component at a time.

        Raises:
            PathError: ``already_exists`` (a non-directory is there), ``symlink_refused``,
                ``not_found`` (parent missing and ``parents`` false), ``disk_full``,
                path kinds.
        """
        parts = self._parts(path)
        if not parts:
            return
        rel = "/".join(parts)
        self._check_writable_name(parts, os.fspath(path))
        pfd = self._open_dir(parts[:-1], rel, create=parents)
        try:
            try:
                os.mkdir(parts[-1], 0o777, dir_fd=pfd)
            except FileExistsError:
                st = os.stat(parts[-1], dir_fd=pfd, follow_symlinks=False)
                if stat_mod.S_ISLNK(st.st_mode):
                    raise PathError(
                        ErrorKind.SYMLINK_REFUSED, f"{rel} is a symbolic link; not followed"
                    ) from None
                if not stat_mod.S_ISDIR(st.st_mode):
                    raise PathError(
                        ErrorKind.ALREADY_EXISTS, f"{rel} already exists and is not a directory"
                    ) from None
            except OSError as exc:
                raise map_os_error(exc, rel) from None
        finally:
            os.close(pfd)

    def delete(self, path: str | os.PathLike[str]) -> None:
        """Remove a file, or a symlink itself (its target is untouched).

        Raises:
            PathError: ``is_a_directory`` (directories are not removed), ``not_found``,
                ``symlink_refused`` (a symlinked parent), path kinds.
        """
        pfd, name, rel = self._parent(path, for_write=True)
        assert name is not None
        try:
            try:
                st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
                if stat_mod.S_ISDIR(st.st_mode):
                    raise PathError(
                        ErrorKind.IS_A_DIRECTORY, f"{rel} is a directory; only files are deleted"
                    )
                os.unlink(name, dir_fd=pfd)
            except OSError as exc:
                raise map_os_error(exc, rel) from None
            if self.durable_writes:
                fsync_dir(pfd)
        finally:
            os.close(pfd)

    def rename(
        self,
        src: str | os.PathLike[str],
        dst: str | os.PathLike[str],
        *,
        create_parents: bool = True,
    ) -> None:
        """Move ``src`` (a file or a symlink itself) to ``dst``, replacing a file there. The
        file keeps its inode, so its permission bits and other hard links.

        Raises:
            PathError: ``not_found`` (``src``), ``is_a_directory`` (either is a directory),
                ``symlink_refused`` (a symlinked parent), path kinds.
        """
        sfd, sname, srel = self._parent(src, for_write=True)
        assert sname is not None
        try:
            dfd, dname, drel = self._parent(dst, create=create_parents, for_write=True)
            assert dname is not None
            try:
                try:
                    st = os.stat(sname, dir_fd=sfd, follow_symlinks=False)
                except OSError as exc:
                    raise map_os_error(exc, srel) from None
                if stat_mod.S_ISDIR(st.st_mode):
                    raise PathError(ErrorKind.IS_A_DIRECTORY, f"{srel} is a directory")
                with contextlib.suppress(FileNotFoundError):
                    dst_st = os.stat(dname, dir_fd=dfd, follow_symlinks=False)
                    if stat_mod.S_ISDIR(dst_st.st_mode):
                        raise PathError(ErrorKind.IS_A_DIRECTORY, f"{drel} is a directory")
                try:
                    os.replace(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
                except OSError as exc:
                    raise map_os_error(exc, drel) from None
                if self.durable_writes:
                    fsync_dir(dfd)
                    fsync_dir(sfd)
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)


def foreign_noter(
    sfd: int | None, where: int, dir_rel: str, markers: list[str]
) -> Callable[[str], object] | None:
    """A ``note`` for :func:`stage` recording temporary names created in ``where`` when that
    is not the state folder ``sfd`` (``None`` when no record is needed or possible)."""
    if sfd is None or where == sfd:
        return None
    state = sfd

    def note(name: str) -> None:
        markers.append(note_foreign_temp(state, dir_rel, name))

    return note


def drop_markers(sfd: int | None, markers: list[str]) -> None:
    """Remove the records of :func:`foreign_noter` once their temporary files are gone."""
    if sfd is None:
        return
    for marker in markers:
        with contextlib.suppress(OSError):
            os.unlink(marker, dir_fd=sfd)
    markers.clear()


@contextlib.contextmanager
def _closing_writer(root_fd: int) -> Iterator[int | None]:
    try:
        with writer_lock(root_fd) as sfd:
            yield sfd
    finally:
        os.close(root_fd)
