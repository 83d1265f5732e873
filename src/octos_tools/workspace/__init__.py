"""Safe file-system access confined to one directory tree (DESIGN.md §4).

:class:`Workspace` is the only way a built-in tool touches the file system. Every path is
checked lexically first (NUL bytes, ``..`` leaving the root, absolute paths compared to the
root component by component) and then opened one component at a time from a descriptor of
the root with ``O_NOFOLLOW`` through ``dir_fd``: no symbolic link is ever followed, so neither
a link in the path nor one swapped in during the call leads out of the root.

:mod:`octos_tools.workspace.text` decodes and re-encodes file bytes while keeping the BOM, the
encoding and the line endings, so an edit changes only the bytes it means to change.
"""

from __future__ import annotations

from ._workspace import Entry, EntryKind, FileChange, Workspace

__all__ = ["Entry", "EntryKind", "FileChange", "Workspace"]
