"""Finding the other names (hard links) of a file inside the workspace."""

from __future__ import annotations

import os
import time

from ..errors import PathError
from ._paths import PathResolver
from ._tempnames import is_internal_temp_name

__all__ = ["LinkSearch", "find_hard_links"]

LinkSearch = tuple[list[str], bool]
"""``(workspace-relative names found, whether the whole tree was searched)``."""


def find_hard_links(
    ws: PathResolver,
    inode: tuple[int, int],
    *,
    exclude: str | None = None,
    max_dirs: int = 2_000,
    max_found: int = 10,
    max_seconds: float = 0.1,
) -> LinkSearch:
    """Names inside the workspace of the file ``inode`` = ``(st_dev, st_ino)``.

    Walks the tree breadth first (symlinks never entered, ``.git`` and our temporary names
    skipped), comparing each entry's inode number, which ``scandir`` gives without a
    ``stat`` call; one folder descriptor is open at a time.

    Args:
        ws: the workspace.
        inode: ``(st_dev, st_ino)`` of the file (as it was before a replace).
        exclude: a workspace-relative name not to report (the one just written).
        max_dirs: stop after reading this many folders.
        max_found: stop after finding this many names.
        max_seconds: stop after this long (seconds), so a big tree never slows a write.

    Returns:
        ``(names in walk order, complete)``: ``complete`` is false when the walk stopped at
        a limit or could not read a folder, so other names may exist.
    """
    dev, ino = inode
    deadline = time.monotonic() + max_seconds
    found: list[str] = []
    queue: list[str] = [""]
    complete = True
    read = 0
    while queue:
        if read >= max_dirs or len(found) >= max_found or time.monotonic() > deadline:
            return found, False
        prefix = queue.pop(0)
        read += 1
        try:
            parts = [p for p in prefix.split("/") if p]
            fd = ws._open_dir(parts, prefix or ".")
        except PathError:
            complete = False
            continue
        try:
            with os.scandir(fd) as it:
                entries = list(it)
            for de in entries:  # the folder stays open: DirEntry.stat needs it
                name = de.name
                if is_internal_temp_name(name):
                    continue
                rel = f"{prefix}/{name}" if prefix else name
                if ws.off_limits.hides(rel):
                    continue  # a credential store or the state folder (._off_limits)
                try:
                    if de.is_dir(follow_symlinks=False):
                        if name != ".git":
                            queue.append(rel)
                    elif de.inode() == ino and rel != exclude:
                        st = de.stat(follow_symlinks=False)
                        if st.st_dev == dev and st.st_ino == ino:
                            found.append(rel)
                except OSError:
                    complete = False
        except OSError:
            complete = False
        finally:
            os.close(fd)
    return found, complete
