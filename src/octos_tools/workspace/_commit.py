"""Multi-file commits: every file of a change set written, or none, even across a crash.

:meth:`Committing.apply_changes` works in three phases:

1. *Prepare*: check every target (no symlink, no directory; a deletion's file exists), stage
   each new content as a temporary file and keep a second name (hard link, else a
   copy) of every file that will be replaced or deleted, all in the state folder
   (:mod:`._state`).
2. *Journal*: write the list of renames to ``journal-<hex>.json`` in the state folder.
3. *Commit*: rename / unlink in order, remove the journal, then the backups.

With :attr:`~._atomic.Writing.durable_writes` the staged files, the journal and the folders
are ``fsync``-ed too (before the journal, after it, after the renames), so the change set
also survives a power cut all applied or not at all; without it, a crash of the process
does.

A failure in-process rolls back from the backups (new files removed, folders created for the
commit removed). A crash (SIGKILL; a power cut with ``durable_writes``) before the journal
exists leaves every target untouched; after it, the next
:class:`~octos_tools.workspace.Workspace` opened on the folder, or the next write, rolls the
journal forward, so the change set ends all applied.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ErrorKind, PathError
from ._atomic import (
    WriteOutcome,
    Writing,
    drop_markers,
    existing_file,
    foreign_noter,
    same_device,
    stage,
)
from ._os_errors import map_leaf_error, map_os_error
from ._paths import O_CLOEXEC, O_NOFOLLOW
from ._state import fsync_dir, write_journal
from ._tempnames import new_temp_name

__all__ = ["Committing", "FileChange"]


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file of an all-or-nothing :meth:`Workspace.apply_changes` commit.

    Attributes:
        path: a user path (workspace-relative, or absolute inside the root).
        content: the new bytes, or ``None`` to delete the file.
        mode: permission bits for the written file; ``None`` keeps the bits of the file it
            replaces (a new file gets ``0o666 & ~umask``). A move passes its source's bits.
    """

    path: str
    content: bytes | None
    mode: int | None = None


@dataclass
class _Staged:
    rel: str
    dir_rel: str
    pfd: int
    name: str
    content: bytes | None
    mode: int | None
    tmp: str | None = None
    tmp_fd: int = -1  # the folder holding tmp (the state folder or pfd)
    backup: str | None = None
    backup_fd: int = -1
    before: os.stat_result | None = None
    done: bool = False


class Committing(Writing):
    """The multi-file commit of :class:`~octos_tools.workspace.Workspace`."""

    def apply_changes(self, changes: Sequence[FileChange]) -> list[WriteOutcome]:
        """Write and delete several files as one all-or-nothing commit (module docstring).

        Args:
            changes: the files to change; ``content=None`` deletes. A path may appear once.

        Returns:
            One :class:`WriteOutcome` per change, in order (for a deletion ``created`` is
            false and ``mode`` the deleted file's bits).

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
        with self._writer() as sfd:
            txn = _Transaction(self, sfd)
            try:
                txn.prepare(changes)
                txn.commit()
                return txn.outcomes()
            except BaseException:
                txn.rollback()
                raise
            finally:
                txn.close()


class _Transaction:
    """State of one :meth:`Committing.apply_changes` call (internal)."""

    def __init__(self, ws: Committing, sfd: int | None) -> None:
        self.ws = ws
        self.sfd = sfd
        self.durable = ws.durable_writes
        self.items: list[_Staged] = []
        self.created_dirs: list[tuple[list[str], str]] = []  # (parent parts, name), in order
        self.dirs: dict[str, int] = {}  # open folders by workspace-relative path, shared
        self.journal: str | None = None
        self.markers: list[str] = []  # records of temporary files outside the state folder

    def prepare(self, changes: Sequence[FileChange]) -> None:
        for ch in changes:
            parts = self.ws._parts(ch.path)
            rel = "/".join(parts) or "."
            if not parts:
                raise PathError(ErrorKind.IS_A_DIRECTORY, "the workspace root is a directory")
            if ch.content is not None:
                self.ws._check_writable_name(parts, os.fspath(ch.path))
            dir_rel = "/".join(parts[:-1])
            pfd = self.dirs.get(dir_rel)
            if pfd is None:
                pfd = self._open_parent(parts[:-1], rel, create=ch.content is not None)
                self.dirs[dir_rel] = pfd
            item = _Staged(rel, "/".join(parts[:-1]), pfd, parts[-1], ch.content, ch.mode)
            self.items.append(item)
            st = existing_file(pfd, item.name, rel, link_note="it is neither followed nor replaced")
            item.before = st
            here = self.sfd if self.sfd is not None and same_device(self.sfd, pfd) else pfd
            noter = foreign_noter(self.sfd, here, item.dir_rel, self.markers)
            if st is not None:
                item.backup_fd = here
                item.backup = _backup(pfd, item.name, here, rel, noter)
            elif ch.content is None:
                raise PathError(ErrorKind.NOT_FOUND, f"{rel} does not exist; nothing to delete")
            if ch.content is not None:
                mode = ch.mode
                if mode is None and st is not None:
                    mode = stat_mod.S_IMODE(st.st_mode)
                item.tmp_fd = here
                item.tmp = stage(
                    here, ch.content, rel, mode=mode, owner=st, note=noter, durable=self.durable
                )
        if self.sfd is not None and self.durable:
            fsync_dir(self.sfd)

    def _open_parent(self, parts: Sequence[str], rel: str, *, create: bool) -> int:
        made: list[str] = []
        try:
            return self.ws._open_dir(parts, rel, create=create, created=made)
        finally:  # recorded even when a later component fails: the rollback removes them
            for path in made:
                parent, _, name = path.rpartition("/")
                self.created_dirs.append((parent.split("/") if parent else [], name))

    def _journal_items(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for item in self.items:
            in_state = "state" if item.tmp_fd == self.sfd else "dir"
            out.append(
                {
                    "dir": item.dir_rel,
                    "name": item.name,
                    "tmp": item.tmp,
                    "tmp_in": in_state,
                    "delete": item.content is None,
                    "backup": item.backup,
                    "backup_in": "state" if item.backup_fd == self.sfd else "dir",
                }
            )
        return out

    def commit(self) -> None:
        if self.sfd is not None and len(self.items) > 1:
            try:
                self.journal = write_journal(self.sfd, self._journal_items(), durable=self.durable)
            except OSError as exc:
                raise map_os_error(exc, "the commit journal") from None
        for item in self.items:
            try:
                if item.content is None:
                    os.unlink(item.name, dir_fd=item.pfd)
                else:
                    assert item.tmp is not None
                    os.replace(item.tmp, item.name, src_dir_fd=item.tmp_fd, dst_dir_fd=item.pfd)
                    item.tmp = None
            except OSError as exc:
                raise map_os_error(exc, item.rel) from None
            item.done = True
        synced: set[tuple[int, int]] = set()
        for item in self.items if self.durable else ():
            with contextlib.suppress(OSError):
                st = os.fstat(item.pfd)
                if (st.st_dev, st.st_ino) not in synced:
                    synced.add((st.st_dev, st.st_ino))
                    fsync_dir(item.pfd)
        self._drop_journal()
        # Success: drop backups.
        for item in self.items:
            if item.backup is not None:
                with contextlib.suppress(OSError):
                    os.unlink(item.backup, dir_fd=item.backup_fd)
                item.backup = None
        self.created_dirs.clear()  # keep them

    def _drop_journal(self) -> None:
        if self.journal is not None and self.sfd is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.journal, dir_fd=self.sfd)
            if self.durable:
                fsync_dir(self.sfd)
            self.journal = None

    def outcomes(self) -> list[WriteOutcome]:
        out: list[WriteOutcome] = []
        for item in self.items:
            st = item.before
            if item.content is None:
                assert st is not None
                out.append(WriteOutcome(item.rel, False, stat_mod.S_IMODE(st.st_mode)))
                continue
            try:
                mode = stat_mod.S_IMODE(
                    os.stat(item.name, dir_fd=item.pfd, follow_symlinks=False).st_mode
                )
            except OSError:
                mode = item.mode or 0
            if st is None:
                out.append(WriteOutcome(item.rel, True, mode))
            else:
                # st was taken before the backup link was made
                out.append(
                    WriteOutcome(item.rel, False, mode, st.st_nlink - 1, (st.st_dev, st.st_ino))
                )
        return out

    def rollback(self) -> None:
        for item in reversed(self.items):
            with contextlib.suppress(OSError):
                if item.done:
                    if item.backup is not None:
                        os.replace(
                            item.backup, item.name, src_dir_fd=item.backup_fd, dst_dir_fd=item.pfd
                        )
                        item.backup = None
                    elif item.content is not None:
                        os.unlink(item.name, dir_fd=item.pfd)
            if item.tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(item.tmp, dir_fd=item.tmp_fd)
            if item.backup is not None:
                with contextlib.suppress(OSError):
                    os.unlink(item.backup, dir_fd=item.backup_fd)
            item.tmp = item.backup = None
        self._drop_journal()
        for parent, name in reversed(self.created_dirs):
            with contextlib.suppress(OSError, PathError):
                pfd = self.ws._open_dir(parent, "/".join(parent) or ".")
                try:
                    os.rmdir(name, dir_fd=pfd)
                finally:
                    os.close(pfd)

    def close(self) -> None:
        drop_markers(self.sfd, self.markers)
        for fd in self.dirs.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.dirs.clear()
        self.items.clear()
        self.created_dirs.clear()


def _backup(
    pfd: int, name: str, dest_fd: int, rel: str, note: Callable[[str], object] | None
) -> str:
    """Keep the current file reachable under a temporary name in ``dest_fd`` (a hard link,
    else a copy); return that name."""
    for _ in range(100):
        bak = new_temp_name(".bak")
        if note is not None:
            try:
                note(bak)
            except OSError as exc:
                raise map_os_error(exc, rel) from None
        try:
            os.link(name, bak, src_dir_fd=pfd, dst_dir_fd=dest_fd, follow_symlinks=False)
            return bak
        except FileExistsError:
            continue
        except OSError:
            break
    # Hard links unsupported here: copy the bytes.
    try:
        fd = os.open(name, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC, dir_fd=pfd)
    except OSError as exc:
        raise map_leaf_error(exc, pfd, name, rel) from None
    try:
        st = os.fstat(fd)
        with open(fd, "rb", closefd=False) as fh:
            data = fh.read()
    finally:
        os.close(fd)
    return stage(dest_fd, data, rel, mode=stat_mod.S_IMODE(st.st_mode), note=note)
