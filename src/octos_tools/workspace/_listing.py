"""Listing and walking: directory entries by ``lstat``, symlinks never entered.

Our own temporary files (:func:`~octos_tools.workspace.is_internal_temp_name`) are never
listed.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod
from collections.abc import Callable, Iterator
from operator import itemgetter
from typing import Literal, NamedTuple

from ._paths import DIR_FLAGS, PathResolver
from ._tempnames import TMP_PREFIX

__all__ = ["Entry", "EntryKind", "Listing", "scan"]

EntryKind = Literal["file", "dir", "symlink", "other"]
"""What a directory entry is, by ``lstat`` (a symlink is never classified by its target)."""


class Entry(NamedTuple):
    """One directory entry, as ``lstat`` sees it (immutable; a named tuple, so that a
    listing of thousands of entries builds them at C speed).

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


_KIND_OF_TYPE: dict[int, EntryKind] = {
    stat_mod.S_IFREG: "file",
    stat_mod.S_IFDIR: "dir",
    stat_mod.S_IFLNK: "symlink",
}
"""``S_IFMT(st_mode)`` → kind; any other file type is ``"other"``."""
_S_IFMT = 0o170000
"""The file-type bits of ``st_mode`` (``stat.S_IFMT`` without a call)."""
_name_of = itemgetter(0)
_new_entry = tuple.__new__
"""``Entry`` made from its field tuple without the Python-level ``__new__`` (one Python
frame less per entry)."""


def scan(fd: int) -> list[Entry]:
    """The entries of the open directory ``fd``, sorted by name in byte order (as ``ls`` in
    the C locale and ripgrep's ``--sort path``), our temporary names left out.

    One ``lstat`` per entry (``DirEntry.stat``, through ``fd``); an entry that vanishes
    meanwhile is left out.
    """
    entries: list[Entry] = []
    append = entries.append
    kinds = _KIND_OF_TYPE
    with os.scandir(fd) as it:
        for de in it:
            name = de.name
            if name.startswith(TMP_PREFIX):  # is_internal_temp_name, inlined
                continue
            try:
                st = de.stat(follow_symlinks=False)
            except OSError:
                continue
            kind = kinds.get(st.st_mode & _S_IFMT, "other")
            append(_new_entry(Entry, (name, kind, st.st_size, st.st_mtime)))
    # Code point order of the names (an exact-str key sorts at C speed) is byte order for
    # ASCII and valid UTF-8; only escaped bytes (os.fsdecode's lone surrogates) can sort
    # otherwise.
    entries.sort(key=_name_of)
    if not "".join([e[0] for e in entries]).isascii():
        entries.sort(key=lambda e: os.fsencode(e.name))
    return entries


class Listing(PathResolver):
    """The listing methods of :class:`~octos_tools.workspace.Workspace`."""

    def list_dir(self, path: str | os.PathLike[str] = ".") -> list[Entry]:
        """The entries of a directory, sorted by name (byte order), including hidden ones.

        Raises:
            PathError: ``not_found``, ``not_a_directory``, ``symlink_refused`` (the directory
                or a parent is a symlink), ``permission_denied``, path kinds.
        """
        parts = self._parts(path)
        fd = self._open_dir(parts, "/".join(parts) or ".")
        try:
            return scan(fd)
        finally:
            os.close(fd)

    def list_small_dir(self, path: str | os.PathLike[str], max_bytes: int) -> list[Entry] | None:
        """:meth:`list_dir` of a directory whose own size (``st_size``, which grows with its
        entries on every common file system) is at most ``max_bytes``; ``None`` for a bigger
        one, unread. Lets a caller list small folders without a worker thread.

        Raises:
            PathError: as :meth:`list_dir`.
        """
        parts = self._parts(path)
        fd = self._open_dir(parts, "/".join(parts) or ".")
        try:
            if os.fstat(fd).st_size > max_bytes:
                return None
            return scan(fd)
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
            stack.append((fd, base, scan(fd), 0))
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
                    sub = os.open(entry.name, DIR_FLAGS, dir_fd=dfd)
                except OSError:
                    continue
                try:
                    sub_entries = scan(sub)
                except OSError:
                    os.close(sub)
                    continue
                stack.append((sub, rel, sub_entries, 0))
        finally:
            for dfd, *_ in stack:
                with contextlib.suppress(OSError):
                    os.close(dfd)
