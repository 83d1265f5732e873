"""What the file tools share: the base class, size limits, argument-schema tidying, line
cutting, short diffs and the hard-link note."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import anyio.to_thread

from ...errors import ErrorKind, ToolError
from ...typed import ToolArgs
from ...workspace import text as textcodec
from .._base import WorkspaceTool

if TYPE_CHECKING:
    from ...config import Config
    from ...context import ToolContext
    from ...tool_types import JSONObject
    from ...workspace import Workspace, WriteOutcome

__all__ = [
    "MAX_EDIT_BYTES",
    "MAX_FULL_READ_BYTES",
    "MAX_LINE_CHARS",
    "PATH_DESCRIPTION",
    "FileArgs",
    "FileTool",
    "cut_line",
    "links_note",
    "short_diff",
]

_T = TypeVar("_T")

MAX_FULL_READ_BYTES = 10_000_000
"""read_file loads files up to this size whole; larger ones need a line range."""
MAX_EDIT_BYTES = 50_000_000
"""edit_file / diff_edit refuse files larger than this (bytes)."""
MAX_LINE_CHARS = 2000
"""read_file shows at most this many characters of a line and says how to read the rest."""
_MAX_DIFF_LINES = 80
PATH_DESCRIPTION = "Path in the workspace."


class FileArgs(ToolArgs):
    """Base of the file tools' argument models (the schema is made lean by
    :func:`~octos_tools.typed.json_schema_of`, as for every typed tool)."""


class FileTool(WorkspaceTool):
    """Base of the file and search tools: a :class:`WorkspaceTool` with an output budget.

    Args:
        workspace: the :class:`Workspace` the tool is confined to; when ``None`` the
            call's ``ctx.workspace`` is used.
        config: settings; the output budget comes from ``config.limits.max_output_bytes``.
    """

    tags = ("fs", "code")

    def __init__(self, workspace: Workspace | None = None, config: Config | None = None) -> None:
        super().__init__(workspace)
        max_output = config.limits.max_output_bytes if config is not None else 50_000
        #: Bytes of output this tool aims to stay under (below the registry's own cap, so
        #: the tool, not the registry, decides where to cut and says how to continue).
        self.output_budget = max(2_000, int(max_output * 0.8))

    def _write_target(self, ctx: ToolContext | None, path: str) -> tuple[Workspace, str]:
        """The workspace and ``path`` relative to it, for a tool that writes ``path``.

        Raises:
            ToolError: ``not_configured`` without a workspace, the path kinds of
                :meth:`Workspace.relpath`, ``policy_denied`` in a read-only context.
        """
        ws = self.workspace_for(ctx)
        rel = ws.relpath(path)
        if ctx is not None and ctx.permissions.read_only:
            raise ToolError(
                ErrorKind.POLICY_DENIED,
                f"{self.name} cannot write: this context has read-only file access",
            )
        return ws, rel

    @staticmethod
    async def _in_thread(fn: Callable[[], _T]) -> _T:
        return await anyio.to_thread.run_sync(fn)


def cut_line(line: str, limit: int = MAX_LINE_CHARS) -> str:
    """``line`` cut after ``limit`` characters, with a marker giving its full length."""
    if len(line) <= limit:
        return line
    return line[:limit] + f" … [line cut: {len(line):,} characters in all]"


def short_diff(rel: str, old: str, new: str, *, max_lines: int = _MAX_DIFF_LINES) -> str:
    """A unified diff (LF, display form) of ``old`` → ``new``, cut after ``max_lines``."""
    a = textcodec.split_lines(textcodec.display(old))
    b = textcodec.split_lines(textcodec.display(new))
    lines = list(difflib.unified_diff(a, b, f"a/{rel}", f"b/{rel}", n=2, lineterm=""))
    if len(lines) > max_lines:
        extra = len(lines) - max_lines
        lines = [*lines[:max_lines], f"… ({extra} more diff lines)"]
    return "\n".join(cut_line(x) for x in lines)


def links_note(ws: Workspace, outcome: WriteOutcome, meta: JSONObject) -> str:
    """A sentence saying which other names of a hard-linked file keep its old content
    (``""`` when the file had no other link); adds ``other_links`` and ``stale_links`` to
    ``meta``.

    Writes replace the file with a new one (atomic rename), so the other names of a
    hard-linked file keep the old content; this note says so instead of hiding it.
    """
    n = outcome.other_links
    if n <= 0 or outcome.inode is None:
        return ""
    names, complete = ws.hard_links(outcome.inode, exclude=outcome.path)
    meta["other_links"] = n
    meta["stale_links"] = names
    s = "s" if n != 1 else ""
    text = (
        f"Note: {outcome.path} had {n} other hard link{s}; the write gave {outcome.path} a new "
        f"file, so {'they keep' if n != 1 else 'it keeps'} the old content"
    )
    if names:
        text += ": " + ", ".join(names)
    missing = n - len(names)
    if missing > 0:
        where = "outside the workspace" if complete else "outside the workspace or not searched"
        text += f" ({missing} name{'s' if missing != 1 else ''} {where})"
    return text + "."
