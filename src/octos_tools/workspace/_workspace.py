"""The :class:`Workspace`: descriptor-based, symlink-refusing file access under one root.

Rules (DESIGN.md §4; stricter than octos, which guards only the last component, reference
§5.2):

* Pure checks before any system call: a NUL byte is ``invalid_arguments``; ``..`` that would
  climb above the root and absolute paths outside the root are ``path_outside_workspace``.
  Absolute paths are compared with the root component by component, never as string
  prefixes (``/ws_secret`` is not inside ``/ws``). On POSIX a backslash is an ordinary
  file-name character.
* Every component is opened with ``os.open(name, O_NOFOLLOW | O_DIRECTORY, dir_fd=parent)``
  starting from a descriptor of the root; the leaf with ``O_NOFOLLOW``. A symlink anywhere is
  ``symlink_refused``. Nothing is resolved by path string, so there is no check-then-use race.
* Writes go to a temporary file in the target's directory (through its descriptor), are
  flushed and ``fsync``-ed, then ``os.replace``-d through the same descriptor: a crash leaves
  the old file or the new one. Missing parents are created one component at a time.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat as stat_mod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from ..errors import ErrorKind, PathError

__all__ = ["Entry", "EntryKind", "FileChange", "Workspace"]

EntryKind = Literal["file", "dir", "symlink", "other"]
"""What a directory entry is, by ``lstat`` (a symlink is never classified by its target)."""

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
_TMP_PREFIX = ".octos-tmp-"
_NAME_MAX = 255
"""Longest file-name component in bytes on Linux/macOS file systems (``NAME_MAX``)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One directory entry, as ``lstat`` sees it.

    Attributes:
        name: the entry's name (a single component, no slash).
        kind: ``"file"``, ``"dir"``, ``"symlink"`` (never followed) or ``"other"``
            (FIFO, socket, device).
        size: size in bytes (for a symlink: the length of its target text).
        mtime: modification time, seconds since the epoch.
    """

    name: str
    kind: EntryKind
    size: int
    mtime: float


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file of an all-or-nothing :meth:`Workspace.apply_changes` commit.

    Attributes:
        path: a user path (workspace-relative, or absolute inside the root).
        content: the new bytes, or ``None`` to delete the file.
    """

    path: str
    content: bytes | None


def _kind_of(mode: int) -> EntryKind:
    if stat_mod.S_ISLNK(mode):
        return "symlink"
    if stat_mod.S_ISDIR(mode):
        return "dir"
    if stat_mod.S_ISREG(mode):
        return "file"
    return "other"


def _sort_key(name: str) -> bytes:
    """Byte order of a name (as ``ls`` in the C locale and ripgrep's ``--sort path``)."""
    return os.fsencode(name)


class Workspace:
    """A directory tree that tools may read and write, and nothing outside it.

    Args:
        root: an existing directory. It is resolved once (``realpath``) and stored as
            :attr:`root`; later symlink swaps of the root itself are not followed because
            every call re-opens the resolved path with ``O_NOFOLLOW``.

    Raises:
        FileNotFoundError: ``root`` does not exist.
        NotADirectoryError: ``root`` is not a directory.

    Every method takes a *user path* (``str`` or path-like): relative to the root, or
    absolute inside it. Failures raise :class:`~octos_tools.errors.PathError` with kind
    ``invalid_arguments`` (NUL byte, empty where not allowed, a name over 255 bytes),
    ``path_outside_workspace``, ``symlink_refused``, ``not_found``, ``is_a_directory``,
    ``not_a_directory``, ``permission_denied`` or ``already_exists``.

    Source: DESIGN.md §4 (seed opens only the leaf with ``O_NOFOLLOW``; we walk every
    component from the root descriptor).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        raw = os.fspath(root)
        if "\x00" in raw:
            raise ValueError("workspace root contains a NUL byte")
        real = os.path.realpath(raw)
        if not os.path.exists(real):
            raise FileNotFoundError(f"workspace root does not exist: {raw!r}")
        if not os.path.isdir(real):
            raise NotADirectoryError(f"workspace root is not a directory: {raw!r}")
        self.root: Path = Path(real)
        # Absolute user paths may name the root by its real path or by the (normalised)
        # spelling it was given with; both are compared component by component.
        spellings = {real, os.path.normpath(os.path.abspath(raw))}
        self._root_spellings: tuple[tuple[str, ...], ...] = tuple(
            tuple(p for p in s.split("/") if p) for s in sorted(spellings)
        )

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workspace) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    # ------------------------------------------------------------------ pure checks

    def _parts(self, path: str | os.PathLike[str]) -> list[str]:
        """Normalised components of ``path`` below the root; no I/O.

        Raises:
            PathError: ``invalid_arguments`` (NUL byte, overlong name, not a string) or
                ``path_outside_workspace``.
        """
        try:
            text = os.fspath(path)
        except TypeError:
            raise PathError(
                ErrorKind.INVALID_ARGUMENTS, f"path must be a string, got {type(path).__name__}"
            ) from None
        if not isinstance(text, str):
            raise PathError(ErrorKind.INVALID_ARGUMENTS, "path must be a text string")
        if "\x00" in text:
            raise PathError(
                ErrorKind.INVALID_ARGUMENTS,
                f"path {_show(text)} contains a NUL byte (\\x00); file names cannot hold it",
            )
        if text.startswith("/"):
            parts = _normalise(text.split("/"), text, absolute=True)
            for root in self._root_spellings:
                if tuple(parts[: len(root)]) == root:
                    rest = parts[len(root) :]
                    break
            else:
                raise PathError(
                    ErrorKind.PATH_OUTSIDE_WORKSPACE,
                    f"{_show(text)} is outside the workspace {str(self.root)!r}; "
                    "use a path relative to the workspace root",
                )
        else:
            rest = _normalise(text.split("/"), text, absolute=False)
        for part in rest:
            if len(os.fsencode(part)) > _NAME_MAX:
                raise PathError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"file name {_show(part[:40] + '…')} in {_show(text[:80])} is longer than "
                    f"{_NAME_MAX} bytes",
                )
        return rest

    def relpath(self, path: str | os.PathLike[str]) -> str:
        """The normalised workspace-relative POSIX form of ``path`` (``"."`` for the root).

        Pure: no file-system access, so symlinks are not detected here.

        Raises:
            PathError: ``invalid_arguments`` or ``path_outside_workspace``.
        """
        parts = self._parts(path)
        return "/".join(parts) if parts else "."

    # ------------------------------------------------------------------ descriptors

    def _open_root(self) -> int:
        try:
            return os.open(self.root, _DIR_FLAGS)
        except OSError as exc:  # pragma: no cover - the root vanished or was swapped
            raise _map_os_error(exc, ".", is_dir=True) from None

    def _open_dir(self, parts: Sequence[str], display: str, *, create: bool = False) -> int:
        """Open the directory ``parts`` (each component no-follow); return its descriptor.

        With ``create``, missing components are created one at a time (``mkdirat``).
        """
        fd = self._open_root()
        try:
            for i, name in enumerate(parts):
                nxt = _open_subdir(fd, name, "/".join(parts[: i + 1]) or display, create)
                os.close(fd)
                fd = nxt
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _parent(
        self, path: str | os.PathLike[str], *, create: bool = False, allow_root: bool = False
    ) -> tuple[int, str | None, str]:
        """``(parent_fd, leaf_name, relpath)``; ``leaf_name`` is ``None`` for the root."""
        parts = self._parts(path)
        rel = "/".join(parts) if parts else "."
        if not parts:
            if not allow_root:
                raise PathError(
                    ErrorKind.IS_A_DIRECTORY, "the workspace root is a directory, not a file"
                )
            return self._open_root(), None, rel
        pfd = self._open_dir(parts[:-1], rel, create=create)
        if _names_folder(path):
            try:
                _check_folder_leaf(pfd, parts[-1], rel)
            except BaseException:
                os.close(pfd)
                raise
        return pfd, parts[-1], rel

    # ------------------------------------------------------------------ reading

    def open_read(self, path: str | os.PathLike[str]) -> BinaryIO:
        """Open a regular file for binary reading, never following a symlink.

        The caller closes the returned file. Suited to ranged reads of huge files.

        Raises:
            PathError: ``not_found``, ``symlink_refused``, ``is_a_directory``,
                ``invalid_arguments`` (not a regular file: FIFO, device, socket), and the
                path kinds of :meth:`relpath`.
        """
        pfd, name, rel = self._parent(path)
        assert name is not None
        try:
            try:
                fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK, dir_fd=pfd)
            except OSError as exc:
                raise _map_leaf_error(exc, pfd, name, rel) from None
        finally:
            os.close(pfd)
        try:
            st = os.fstat(fd)
            if stat_mod.S_ISDIR(st.st_mode):
                raise PathError(ErrorKind.IS_A_DIRECTORY, f"{rel} is a directory, not a file")
            if not stat_mod.S_ISREG(st.st_mode):
                raise PathError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"{rel} is not a regular file ({_kind_name(st.st_mode)}); refusing to read it",
                )
            if _O_NONBLOCK:
                import fcntl

                flags = fcntl.fcntl(fd, fcntl.F_GETFL)
                fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~_O_NONBLOCK)
            return open(fd, "rb", closefd=True)  # the caller closes it
        except BaseException:
            os.close(fd)
            raise

    def read_bytes(self, path: str | os.PathLike[str], *, max_bytes: int | None = None) -> bytes:
        """The whole content of a regular file.

        Args:
            path: user path of a regular file.
            max_bytes: refuse files larger than this many bytes (``None``: no limit).

        Raises:
            PathError: as :meth:`open_read`, plus ``file_too_large`` over ``max_bytes``.
        """
        with self.open_read(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if max_bytes is not None and size > max_bytes:
                raise PathError(
                    ErrorKind.FILE_TOO_LARGE,
                    f"{self.relpath(path)} is {size:,} bytes, over the limit of {max_bytes:,}",
                    size=size,
                )
            data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
            if max_bytes is not None and len(data) > max_bytes:
                raise PathError(
                    ErrorKind.FILE_TOO_LARGE,
                    f"{self.relpath(path)} grew over the limit of {max_bytes:,} bytes",
                )
            return data

    def stat(self, path: str | os.PathLike[str]) -> os.stat_result:
        """``lstat`` of ``path`` (a symlink leaf is reported, not followed).

        Raises:
            PathError: ``not_found``, ``symlink_refused`` (a symlink *before* the leaf),
                ``not_a_directory`` and the path kinds of :meth:`relpath`.
        """
        pfd, name, rel = self._parent(path, allow_root=True)
        try:
            if name is None:
                return os.fstat(pfd)
            try:
                return os.stat(name, dir_fd=pfd, follow_symlinks=False)
            except OSError as exc:
                raise _map_os_error(exc, rel) from None
        finally:
            os.close(pfd)

    def exists(self, path: str | os.PathLike[str]) -> bool:
        """Whether something (even a dangling symlink) exists at ``path``.

        ``False`` when it or a parent is missing, or a parent is not a directory.

        Raises:
            PathError: ``invalid_arguments``, ``path_outside_workspace``, ``symlink_refused``
                (a symlinked parent), ``permission_denied``.
        """
        return self._stat_if_present(path) is not None

    def is_file(self, path: str | os.PathLike[str]) -> bool:
        """``True`` if ``path`` is a regular file (not a symlink to one)."""
        return self._is(path, stat_mod.S_ISREG)

    def is_dir(self, path: str | os.PathLike[str]) -> bool:
        """``True`` if ``path`` is a directory (not a symlink to one)."""
        return self._is(path, stat_mod.S_ISDIR)

    def _is(self, path: str | os.PathLike[str], test: Callable[[int], bool]) -> bool:
        st = self._stat_if_present(path)
        return st is not None and test(st.st_mode)

    def _stat_if_present(self, path: str | os.PathLike[str]) -> os.stat_result | None:
        """:meth:`stat`, or ``None`` when ``path`` or a parent is missing or a parent is not
        a directory; other failures raise."""
        try:
            return self.stat(path)
        except PathError as exc:
            if exc.kind in (ErrorKind.NOT_FOUND, ErrorKind.NOT_A_DIRECTORY):
                return None
            raise

    # ------------------------------------------------------------------ listing

    def list_dir(self, path: str | os.PathLike[str] = ".") -> list[Entry]:
        """The entries of a directory, sorted by name (byte order), including hidden ones.

        Raises:
            PathError: ``not_found``, ``not_a_directory``, ``symlink_refused`` (the directory
                or a parent is a symlink), ``permission_denied``, path kinds.
        """
        parts = self._parts(path)
        fd = self._open_dir(parts, "/".join(parts) or ".")
        try:
            return _scan(fd)
        finally:
            os.close(fd)

    def walk(
        self,
        path: str | os.PathLike[str] = ".",
        *,
        max_entries: int | None = None,
        descend: Callable[[str, Entry], bool] | None = None,
    ) -> Iterator[tuple[str, Entry]]:
        """Every entry below ``path``, depth first, pre-order, sorted by name.

        Symlinks are yielded as entries but never descended into; directories that cannot
        be opened (permissions, or swapped for a symlink meanwhile) are yielded and skipped.

        Args:
            path: the directory to walk (not itself yielded).
            max_entries: stop after yielding this many entries (``None``: no limit).
            descend: optional filter ``(relpath, entry) -> bool``; a directory is entered
                only when it returns ``True`` (used by glob to prune).

        Yields:
            ``(workspace_relative_path, Entry)``.

        Raises:
            PathError: for ``path`` itself, as :meth:`list_dir`.
        """
        parts = self._parts(path)
        base = "/".join(parts)
        fd = self._open_dir(parts, base or ".")
        count = 0
        # Stack of (fd, prefix, entries, next index); descriptors closed on exit.
        stack: list[tuple[int, str, list[Entry], int]] = []
        try:
            stack.append((fd, base, _scan(fd), 0))
            while stack:
                dfd, prefix, entries, idx = stack[-1]
                if idx >= len(entries):
                    stack.pop()
                    os.close(dfd)
                    continue
                stack[-1] = (dfd, prefix, entries, idx + 1)
                entry = entries[idx]
                rel = f"{prefix}/{entry.name}" if prefix else entry.name
                if max_entries is not None and count >= max_entries:
                    return
                count += 1
                yield rel, entry
                if entry.kind != "dir" or (descend is not None and not descend(rel, entry)):
                    continue
                try:
                    sub = os.open(entry.name, _DIR_FLAGS, dir_fd=dfd)
                except OSError:
                    continue
                try:
                    sub_entries = _scan(sub)
                except OSError:
                    os.close(sub)
                    continue
                stack.append((sub, rel, sub_entries, 0))
        finally:
            for dfd, *_ in stack:
                with contextlib.suppress(OSError):
                    os.close(dfd)

    # ------------------------------------------------------------------ writing

    def write_bytes(
        self, path: str | os.PathLike[str], data: bytes, *, create_parents: bool = True
    ) -> None:
        """Atomically replace (or create) a regular file with ``data``.

        The bytes go to a temporary file in the same directory, which is flushed, ``fsync``-ed
        and ``os.replace``-d over the target through the directory descriptor; the directory
        is ``fsync``-ed afterwards. An existing file keeps its permission bits; a new one gets
        ``0o666 & ~umask``.

        Args:
            path: user path of the file.
            data: the complete new content.
            create_parents: create missing parent directories, one component at a time.

        Raises:
            PathError: ``symlink_refused`` (the target or a parent is a symlink, dangling or
                not), ``is_a_directory``, ``not_found`` (parent missing without
                ``create_parents``), ``not_a_directory``, ``permission_denied``, path kinds.
        """
        pfd, name, rel = self._parent(path, create=create_parents)
        assert name is not None
        try:
            mode = _target_mode(pfd, name, rel)
            tmp = _stage(pfd, data, mode, rel)
            try:
                os.replace(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=pfd)
                raise _map_os_error(exc, rel) from None
            _fsync_dir(pfd)
        finally:
            os.close(pfd)

    def mkdir(self, path: str | os.PathLike[str], *, parents: bool = True) -> None:
        """Create a directory (no error if it already is one).

        Args:
            path: user path of the directory.
            parents: create missing parents too, one component at a time.

        Raises:
            PathError: ``already_exists`` (a non-directory is there), ``symlink_refused``,
                ``not_found`` (parent missing and ``parents`` false), path kinds.
        """
        parts = self._parts(path)
        if not parts:
            return
        rel = "/".join(parts)
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
                raise _map_os_error(exc, rel) from None
        finally:
            os.close(pfd)

    def delete(self, path: str | os.PathLike[str]) -> None:
        """Remove a file, or a symlink itself (its target is untouched).

        Raises:
            PathError: ``is_a_directory`` (directories are not removed), ``not_found``,
                ``symlink_refused`` (a symlinked parent), path kinds.
        """
        pfd, name, rel = self._parent(path)
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
                raise _map_os_error(exc, rel) from None
            _fsync_dir(pfd)
        finally:
            os.close(pfd)

    def rename(
        self,
        src: str | os.PathLike[str],
        dst: str | os.PathLike[str],
        *,
        create_parents: bool = True,
    ) -> None:
        """Move ``src`` (a file or a symlink itself) to ``dst``, replacing a file there.

        Raises:
            PathError: ``not_found`` (``src``), ``is_a_directory`` (either is a directory),
                ``symlink_refused`` (a symlinked parent), path kinds.
        """
        sfd, sname, srel = self._parent(src)
        assert sname is not None
        try:
            dfd, dname, drel = self._parent(dst, create=create_parents)
            assert dname is not None
            try:
                try:
                    st = os.stat(sname, dir_fd=sfd, follow_symlinks=False)
                except OSError as exc:
                    raise _map_os_error(exc, srel) from None
                if stat_mod.S_ISDIR(st.st_mode):
                    raise PathError(ErrorKind.IS_A_DIRECTORY, f"{srel} is a directory")
                with contextlib.suppress(FileNotFoundError):
                    dst_st = os.stat(dname, dir_fd=dfd, follow_symlinks=False)
                    if stat_mod.S_ISDIR(dst_st.st_mode):
                        raise PathError(ErrorKind.IS_A_DIRECTORY, f"{drel} is a directory")
                try:
                    os.replace(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
                except OSError as exc:
                    raise _map_os_error(exc, drel) from None
                _fsync_dir(dfd)
                _fsync_dir(sfd)
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)

    def apply_changes(self, changes: Sequence[FileChange]) -> None:
        """Write and delete several files as one all-or-nothing commit.

        Phase 1 checks every target (no symlink, no directory; a deletion's file exists)
        and stages each new content in a temporary file beside its target (fsync-ed), and
        keeps a hard link (or a copy) of every file that will be replaced or deleted.
        Phase 2 replaces/unlinks in order. If anything fails, everything already changed is
        restored from those backups, new files are removed, staged temporaries and
        directories created for the commit are removed, and the error is raised.

        Args:
            changes: the files to change; ``content=None`` deletes. A path may appear once.

        Raises:
            PathError: any kind of :meth:`write_bytes` / :meth:`delete`; ``invalid_arguments``
                for a path given twice. Nothing is changed when it is raised.
        """
        seen: set[str] = set()
        for ch in changes:
            rel = self.relpath(ch.path)
            if rel in seen:
                raise PathError(ErrorKind.INVALID_ARGUMENTS, f"{rel} is changed twice")
            seen.add(rel)
        txn = _Transaction(self)
        try:
            txn.prepare(changes)
            txn.commit()
        except BaseException:
            txn.rollback()
            raise
        finally:
            txn.close()


# ---------------------------------------------------------------------- transaction


@dataclass
class _Staged:
    rel: str
    pfd: int
    name: str
    content: bytes | None
    tmp: str | None = None
    backup: str | None = None
    backup_copy: bool = False
    existed: bool = False
    done: bool = False


class _Transaction:
    """State of one :meth:`Workspace.apply_changes` call (internal)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.items: list[_Staged] = []
        self.created_dirs: list[tuple[int, str]] = []  # (parent fd dup, name), in order

    def prepare(self, changes: Sequence[FileChange]) -> None:
        for ch in changes:
            parts = self.ws._parts(ch.path)
            rel = "/".join(parts) or "."
            if not parts:
                raise PathError(ErrorKind.IS_A_DIRECTORY, "the workspace root is a directory")
            pfd = self._open_parent(parts[:-1], rel, create=ch.content is not None)
            item = _Staged(rel=rel, pfd=pfd, name=parts[-1], content=ch.content)
            self.items.append(item)
            st = _existing_file(
                pfd, item.name, rel, link_note="it is neither followed nor replaced"
            )
            if st is not None:
                item.existed = True
                item.backup, item.backup_copy = _backup(pfd, item.name, rel)
            elif ch.content is None:
                raise PathError(ErrorKind.NOT_FOUND, f"{rel} does not exist; nothing to delete")
            if ch.content is not None:
                mode = stat_mod.S_IMODE(st.st_mode) if st is not None else _default_mode()
                item.tmp = _stage(pfd, ch.content, mode, rel)

    def _open_parent(self, parts: Sequence[str], rel: str, *, create: bool) -> int:
        fd = self.ws._open_root()
        try:
            for i, name in enumerate(parts):
                try:
                    nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise PathError(
                            ErrorKind.NOT_FOUND,
                            f"directory {'/'.join(parts[: i + 1])} does not exist",
                        ) from None
                    try:
                        os.mkdir(name, 0o777, dir_fd=fd)
                        self.created_dirs.append((os.dup(fd), name))
                    except FileExistsError:
                        pass
                    except OSError as exc:
                        raise _map_os_error(exc, "/".join(parts[: i + 1])) from None
                    nxt = _open_subdir(fd, name, "/".join(parts[: i + 1]), False)
                except OSError as exc:
                    raise _map_subdir_error(exc, fd, name, "/".join(parts[: i + 1])) from None
                os.close(fd)
                fd = nxt
        except BaseException:
            os.close(fd)
            raise
        return fd

    def commit(self) -> None:
        for item in self.items:
            try:
                if item.content is None:
                    os.unlink(item.name, dir_fd=item.pfd)
                else:
                    assert item.tmp is not None
                    os.replace(item.tmp, item.name, src_dir_fd=item.pfd, dst_dir_fd=item.pfd)
                    item.tmp = None
            except OSError as exc:
                raise _map_os_error(exc, item.rel) from None
            item.done = True
        for item in self.items:
            _fsync_dir(item.pfd)
        # Success: drop backups.
        for item in self.items:
            if item.backup is not None:
                with contextlib.suppress(OSError):
                    os.unlink(item.backup, dir_fd=item.pfd)
                item.backup = None
        self.created_dirs.clear()  # keep them

    def rollback(self) -> None:
        for item in reversed(self.items):
            with contextlib.suppress(OSError):
                if item.done:
                    if item.backup is not None:
                        os.replace(item.backup, item.name, src_dir_fd=item.pfd, dst_dir_fd=item.pfd)
                        item.backup = None
                    elif item.content is not None:
                        os.unlink(item.name, dir_fd=item.pfd)
            for leftover in (item.tmp, item.backup):
                if leftover is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(leftover, dir_fd=item.pfd)
            item.tmp = item.backup = None
        for pfd, name in reversed(self.created_dirs):
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=pfd)

    def close(self) -> None:
        for item in self.items:
            with contextlib.suppress(OSError):
                os.close(item.pfd)
        for pfd, _ in self.created_dirs:
            with contextlib.suppress(OSError):
                os.close(pfd)
        self.items.clear()
        self.created_dirs.clear()


# ---------------------------------------------------------------------- helpers


def _show(text: str) -> str:
    """A quoted, printable rendering of a user path for messages."""
    return repr(text if len(text) <= 200 else text[:200] + "…")


def _normalise(raw_parts: list[str], text: str, *, absolute: bool) -> list[str]:
    out: list[str] = []
    for part in raw_parts:
        if part in ("", "."):
            continue
        if part == "..":
            if out:
                out.pop()
            elif not absolute:
                raise PathError(
                    ErrorKind.PATH_OUTSIDE_WORKSPACE,
                    f"{_show(text)} leaves the workspace through '..'; "
                    "use a path inside the workspace",
                )
            continue
        out.append(part)
    return out


def _kind_name(mode: int) -> str:
    if stat_mod.S_ISFIFO(mode):
        return "a FIFO"
    if stat_mod.S_ISSOCK(mode):
        return "a socket"
    if stat_mod.S_ISCHR(mode) or stat_mod.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _map_os_error(exc: OSError, rel: str, *, is_dir: bool = False) -> PathError:
    code = exc.errno
    if code == errno.ENOENT:
        return PathError(ErrorKind.NOT_FOUND, f"{rel} does not exist")
    if code == errno.ELOOP:
        return PathError(ErrorKind.SYMLINK_REFUSED, f"{rel} is a symbolic link; not followed")
    if code == errno.EISDIR:
        return PathError(ErrorKind.IS_A_DIRECTORY, f"{rel} is a directory")
    if code == errno.ENOTDIR:
        return PathError(ErrorKind.NOT_A_DIRECTORY, f"a parent of {rel} is not a directory")
    if code in (errno.EACCES, errno.EPERM):
        return PathError(ErrorKind.PERMISSION_DENIED, f"permission denied: {rel}")
    if code == errno.EEXIST:
        return PathError(ErrorKind.ALREADY_EXISTS, f"{rel} already exists")
    if code == errno.ENAMETOOLONG:
        return PathError(ErrorKind.INVALID_ARGUMENTS, f"a name in {rel} is too long")
    if code == errno.ENOTEMPTY:
        return PathError(ErrorKind.IS_A_DIRECTORY, f"{rel} is a non-empty directory")
    return PathError(
        ErrorKind.PERMISSION_DENIED if code == errno.EROFS else ErrorKind.INTERNAL_ERROR,
        f"cannot access {rel}: {exc.strerror or exc}",
    )


def _map_subdir_error(exc: OSError, pfd: int, name: str, rel: str) -> PathError:
    """Classify a failed no-follow ``O_DIRECTORY`` open of ``name`` under ``pfd``."""
    if exc.errno in (errno.ENOTDIR, errno.ELOOP):
        try:
            st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
        except OSError:
            return _map_os_error(exc, rel)
        if stat_mod.S_ISLNK(st.st_mode):
            return PathError(
                ErrorKind.SYMLINK_REFUSED,
                f"{rel} is a symbolic link; links are not followed inside the workspace",
            )
        return PathError(ErrorKind.NOT_A_DIRECTORY, f"{rel} is not a directory")
    return _map_os_error(exc, rel)


def _map_leaf_error(exc: OSError, pfd: int, name: str, rel: str) -> PathError:
    if exc.errno == errno.ELOOP or exc.errno == errno.EMLINK:
        return PathError(
            ErrorKind.SYMLINK_REFUSED,
            f"{rel} is a symbolic link; links are not followed inside the workspace",
        )
    return _map_os_error(exc, rel)


def _names_folder(path: str | os.PathLike[str]) -> bool:
    """Whether the user path ends with ``/`` (or ``/.``): POSIX then requires a directory
    (``open("file.txt/")`` is ``ENOTDIR``), a rule the lexical normalisation would drop."""
    text = os.fspath(path)
    return isinstance(text, str) and (text.endswith("/") or text.endswith("/."))


def _check_folder_leaf(pfd: int, name: str, rel: str) -> None:
    """For a path ending with ``/``: the leaf must be a directory (not followed).

    Raises:
        PathError: ``not_a_directory`` (a file or other non-directory), ``symlink_refused``,
            ``not_found``.
    """
    try:
        mode = os.stat(name, dir_fd=pfd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        raise PathError(
            ErrorKind.NOT_FOUND,
            f"{rel}/ ends with '/', which names a folder, and there is no folder {rel}; "
            "for a file, drop the trailing '/'",
        ) from None
    except OSError as exc:
        raise _map_os_error(exc, rel) from None
    if stat_mod.S_ISLNK(mode):
        raise PathError(ErrorKind.SYMLINK_REFUSED, f"{rel} is a symbolic link; not followed")
    if not stat_mod.S_ISDIR(mode):
        what = "a file" if stat_mod.S_ISREG(mode) else _kind_name(mode)
        raise PathError(
            ErrorKind.NOT_A_DIRECTORY,
            f"{rel}/ ends with '/', but {rel} is {what}, not a folder; drop the trailing '/'",
        )


def _open_subdir(fd: int, name: str, rel: str, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise PathError(ErrorKind.NOT_FOUND, f"{rel} does not exist") from None
    except OSError as exc:
        raise _map_subdir_error(exc, fd, name, rel) from None
    try:
        os.mkdir(name, 0o777, dir_fd=fd)
    except FileExistsError:
        pass
    except OSError as exc:
        raise _map_os_error(exc, rel) from None
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise _map_subdir_error(exc, fd, name, rel) from None


def _scan(fd: int) -> list[Entry]:
    entries: list[Entry] = []
    with os.scandir(fd) as it:
        for de in it:
            try:
                st = de.stat(follow_symlinks=False)
            except OSError:
                continue
            entries.append(Entry(de.name, _kind_of(st.st_mode), st.st_size, st.st_mtime))
    entries.sort(key=lambda e: _sort_key(e.name))
    return entries


def _default_mode() -> int:
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def _existing_file(pfd: int, name: str, rel: str, *, link_note: str) -> os.stat_result | None:
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
        raise _map_os_error(exc, rel) from None
    if stat_mod.S_ISLNK(st.st_mode):
        raise PathError(ErrorKind.SYMLINK_REFUSED, f"{rel} is a symbolic link; {link_note}")
    if stat_mod.S_ISDIR(st.st_mode):
        raise PathError(ErrorKind.IS_A_DIRECTORY, f"{rel} is a directory")
    if not stat_mod.S_ISREG(st.st_mode):
        raise PathError(ErrorKind.INVALID_ARGUMENTS, f"{rel} is not a regular file")
    return st


def _target_mode(pfd: int, name: str, rel: str) -> int:
    """Permission bits for the new file; refuse symlinks and directories at the target."""
    st = _existing_file(pfd, name, rel, link_note="writes never go through links (remove it first)")
    return _default_mode() if st is None else stat_mod.S_IMODE(st.st_mode)


def _stage(pfd: int, data: bytes, mode: int, rel: str) -> str:
    """Write ``data`` to a new temporary file in ``pfd``; return its name (fsync-ed)."""
    for _ in range(100):
        tmp = f"{_TMP_PREFIX}{secrets.token_hex(8)}"
        try:
            fd = os.open(
                tmp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC,
                0o600,
                dir_fd=pfd,
            )
        except FileExistsError:
            continue
        except OSError as exc:
            raise _map_os_error(exc, rel) from None
        break
    else:  # pragma: no cover - 100 collisions of 64 random bits
        raise PathError(ErrorKind.INTERNAL_ERROR, f"cannot create a temporary file for {rel}")
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fchmod(fd, mode)
        os.fsync(fd)
    except BaseException as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=pfd)
        if isinstance(exc, OSError):
            raise _map_os_error(exc, rel) from None
        raise
    os.close(fd)
    return tmp


def _backup(pfd: int, name: str, rel: str) -> tuple[str, bool]:
    """Keep the current file reachable under a temporary name (hard link, else copy)."""
    for _ in range(100):
        bak = f"{_TMP_PREFIX}{secrets.token_hex(8)}.bak"
        try:
            os.link(name, bak, src_dir_fd=pfd, dst_dir_fd=pfd, follow_symlinks=False)
            return bak, False
        except FileExistsError:
            continue
        except OSError:
            break
    # Hard links unsupported here: copy the bytes.
    try:
        fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=pfd)
    except OSError as exc:
        raise _map_leaf_error(exc, pfd, name, rel) from None
    try:
        st = os.fstat(fd)
        with open(fd, "rb", closefd=False) as fh:
            data = fh.read()
    finally:
        os.close(fd)
    return _stage(pfd, data, stat_mod.S_IMODE(st.st_mode), rel), True


def _fsync_dir(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.fsync(fd)
