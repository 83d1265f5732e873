"""File tools: ``read_file``, ``diff_edit``, ``edit_file``, ``write_file``.

Rules: every path goes through :class:`~octos_tools.workspace.Workspace` (no symlink
followed, no way out of the root) and every edit through :mod:`octos_tools.workspace.text`
(BOM, encoding and line endings kept; bytes outside the edit never change). Writes are
atomic and keep the file's permission bits; a full disk is ``disk_full`` and leaves the file
as it was. Blocking file I/O runs in a worker thread. A write replaces the file (an atomic
rename), so other hard links keep the old content; the result names those found inside the
workspace. Differences from octos, on purpose: an empty file reads as a success,
``end_line < start_line`` is ``invalid_arguments``, ``edit_file`` has ``replace_all`` and
matches LF text against CRLF files, ``diff_edit`` keeps the file's line endings,
``read_file`` shows very long lines in column ranges.

* :mod:`._read_file`, :mod:`._write_file`, :mod:`._edit_file`, :mod:`._diff_edit`: the tools;
* :mod:`._file_tool`: their base class, limits and notes; :mod:`._editing`: the shared edit step;
* :mod:`._seen`: what a session has seen of each file (``stale_file``, unchanged reads;
  also used by ``apply_patch``).

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._diff_edit import DiffEditTool, parse_unified_diff
from ._edit_file import EditFileTool
from ._file_tool import (
    MAX_EDIT_BYTES,
    MAX_FULL_READ_BYTES,
    MAX_LINE_CHARS,
    FileTool,
    links_note,
    short_diff,
)
from ._read_file import ReadFileTool
from ._seen import SeenFiles, seen_files
from ._write_file import WriteFileTool

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
    "SeenFiles",
    "WriteFileTool",
    "links_note",
    "parse_unified_diff",
    "register",
    "seen_files",
    "short_diff",
]


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register the file tools in octos's order: read_file, diff_edit, edit_file, write_file.

    ``apply_patch`` (between read_file and diff_edit in octos) is registered by the
    ``patch`` family.
    """
    for cls in (ReadFileTool, DiffEditTool, EditFileTool, WriteFileTool):
        registry.register(cls(workspace, config))
