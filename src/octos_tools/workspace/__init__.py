"""Safe file-system access confined to one directory tree.

:class:`Workspace` is the only way a built-in tool touches the file system. Every path is
checked lexically first (NUL bytes, ``..`` leaving the root, absolute paths compared to the
root component by component) and then opened one component at a time from a descriptor of
the root with ``O_NOFOLLOW`` through ``dir_fd``: no symbolic link is ever followed, so neither
a link in the path nor one swapped in during the call leads out of the root. Writes are
atomic, keep permission bits, and multi-file commits survive a crash (all applied or none).

:func:`is_internal_temp_name` tells our own temporary files (``.octos-tmp-*``) from the
user's: listing and search tools hide them.

:mod:`octos_tools.workspace.text` decodes and re-encodes file bytes while keeping the BOM, the
encoding and the line endings, so an edit changes only the bytes it means to change.
"""

from __future__ import annotations

from ._atomic import WriteOutcome
from ._commit import FileChange
from ._listing import Entry, EntryKind
from ._tempnames import is_internal_temp_name
from ._workspace import Workspace

__all__ = [
    "Entry",
    "EntryKind",
    "FileChange",
    "Workspace",
    "WriteOutcome",
    "is_internal_temp_name",
]
