"""Finding the other names (hard links) of a file inside the workspace."""

from __future__ import annotations

import contextlib
import os

from ._paths import DIR_FLAGS, PathResolver
from ._tempnames import is_internal_temp_name

__all__ = ["LinkSearch", "find_hard_links"]

LinkSearch = tuple[list[str], bool]
"""``(workspace-relative names found, whether the whole tree was searched)``."""


def find_hard_links(
    ws: PathResolver,
    inode: tuple[int, int],
    *,
    exclude: str | None = None,
    max_entries: int = 2_000,
    max_found: int = 10,
) -> LinkSearch:
    """Names inside the workspace of the file ``inode`` = ``(st_dev, st_ino)``.

    Walks the tree (symlinks never entered, ``.git`` skipped) comparing each entry's inode
    number, which ``scandir`` gives without a ``stat`` call.

    Args:
        ws: the workspace.
        inode: ``(st_dev, st_ino)`` of the file (as it was before a replace).
        exclude: a workspace-relative name not to report (the one just written).
        max_entries: stop after reading this many directories.
        max_found: stop after finding this many names.

    Returns:
        ``(names in walk order, complete)``: ``complete`` is false when the walk stopped at
        a limit, so other names may exist.
    """
    dev, ino = inode
    found: list[str] = []
    seen = 0  # directories read
    root = ws._open_root()
    stack: list[tuple[int, str]] = [(root, "")]
    try:
        while stack:
            fd, prefix = stack.pop()
            try:
                if not _scan_one(fd, prefix, dev, ino, exclude, found, stack):
                    return found, False
                seen += 1
            finally:
                if fd != root:
                    os.close(fd)
            if seen > max_entries or len(found) >= max_found:
                return found, bool(not stack and len(found) < max_found)
    finally:
        os.close(root)
        for fd, _ in stack:
            with contextlib.suppress(OSError):
                os.close(fd)
    return found, True


def _scan_one(
    fd: int,
    prefix: str,
    dev: int,
    ino: int,
    exclude: str | None,
    found: list[str],
    stack: list[tuple[int, str]],
) -> bool:
    """Look at the entries of folder ``fd``; push its subfolders. ``False`` on a read error
    that makes the search incomplete."""
    try:
        with os.scandir(fd) as it:
            entries = list(it)
    except OSError:
        return False
    for de in entries:
        name = de.name
        if is_internal_temp_name(name):
            continue
        rel = f"{prefix}{name}"
        try:
            if de.is_dir(follow_symlinks=False):
                if name != ".git":
                    with contextlib.suppress(OSError):
                        stack.append((os.open(name, DIR_FLAGS, dir_fd=fd), rel + "/"))
                continue
            if de.inode() == ino and rel != exclude:
                st = de.stat(follow_symlinks=False)
                if st.st_dev == dev and st.st_ino == ino:
                    found.append(rel)
        except OSError:
            continue
    return True
