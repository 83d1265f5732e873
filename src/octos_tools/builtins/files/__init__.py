"""File tools: ``read_file``, ``diff_edit``, ``edit_file``, ``write_file``.

Every path goes through :class:`~octos_tools.workspace.Workspace` (no symlink followed, no
way out of the root) and every edit through :mod:`octos_tools.workspace.text` (BOM,
encoding and line endings kept; bytes outside the edit never change). Writes are atomic and
keep the file's permission bits; a full disk is ``disk_full`` and leaves the file as it was.
Blocking file I/O runs in a worker thread so the event loop stays free.

Hard links: a write replaces the file with a new one (an atomic rename), so when the old
file had other names they keep the old content; the result says so and names those found
inside the workspace (a link to a file outside the workspace is thus never written through).
Writing in place would keep the link but could leave a half-written file after a crash.

One module per tool (:mod:`.read`, :mod:`.write`, :mod:`.edit`, :mod:`.diff`), shared parts
in :mod:`._common` and :mod:`._editing`. Names, arguments, tags (``fs``, ``code``) and
concurrency classes follow octos; messages are our own. Differences from octos, on purpose:
an empty file reads as a success, ``end_line < start_line`` is ``invalid_arguments``,
``edit_file`` has ``replace_all`` and matches LF text against CRLF files, ``diff_edit`` keeps
the file's line endings, ``read_file`` shows very long lines in column ranges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import (
    MAX_EDIT_BYTES,
    MAX_FULL_READ_BYTES,
    MAX_LINE_CHARS,
    FileTool,
    short_diff,
)
from .diff import DiffEditTool, parse_unified_diff
from .edit import EditFileTool
from .read import ReadFileTool
from .write import WriteFileTool

if TYPE_CHECKING:
    from ...config import Config
    from ...registry import ToolRegistry
    from ...workspace import Workspace

__all__ = [
    "MAX_EDIT_BYTES",
    "MAX_FULL_READ_BYTES",
    "MAX_LINE_CHARS",
    "DiffEditTool",
    "EditFileTool",
    "FileTool",
    "ReadFileTool",
    "WriteFileTool",
    "parse_unified_diff",
    "register",
    "short_diff",
]


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register the file tools in octos's order: read_file, diff_edit, edit_file, write_file.

    ``apply_patch`` (between read_file and diff_edit in octos) is registered by the
    ``patch`` family.
    """
    for cls in (ReadFileTool, DiffEditTool, EditFileTool, WriteFileTool):
        registry.register(cls(workspace, config))
