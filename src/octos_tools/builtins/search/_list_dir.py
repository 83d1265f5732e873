"""``list_dir``: the entries of one workspace directory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from ...tool_types import ToolResult
from ...typed import ToolArgs
from ...workspace import Entry
from ...workspace import text as textcodec
from ._search_tool import SearchTool

if TYPE_CHECKING:
    from ...context import ToolContext

__all__ = ["MAX_LIST_ENTRIES", "ListDirTool"]

MAX_LIST_ENTRIES = 1000
"""list_dir shows at most this many entries and says how many were left out."""

_KIND_ORDER = {"dir": 0, "file": 1, "symlink": 2, "other": 3}
_INLINE_DIR_BYTES = 32 << 10
"""Folders up to this ``st_size`` (some hundreds of entries) are listed on the event loop (a
worker-thread hop costs more than the listing); bigger ones in a worker thread."""


class ListDirTool(SearchTool):
    """``list_dir {path="."}``: a directory's entries, directories first, then files, links.

    Each group is sorted by name (byte order). Symbolic links are shown as links and never
    followed; a symlinked directory argument is ``symlink_refused``. Sizes are in bytes.
    octos-tools' internal files (``.octos-tmp-*``, ``.octos/``) are not shown. At most
    1,000 entries are listed; the first line gives the total.

    Source: octos ``crates/octos-agent/src/tools/list_dir.rs``, which classifies links by
    target; we do not.
    """

    name = "list_dir"
    title = "List directory"
    description = (
        "List a workspace directory: subfolders, files with sizes, symbolic links (never followed)."
    )

    class Args(ToolArgs):
        path: str = Field(".", description="Directory, relative to the workspace.")

    async def run(self, args: ListDirTool.Args, ctx: ToolContext | None) -> ToolResult:
        ws = self.workspace_for(ctx)
        path = args.path or "."
        rel = ws.relpath(path)
        small = ws.list_small_dir(path, _INLINE_DIR_BYTES)
        entries = small if small is not None else await self._bounded(lambda _b: ws.list_dir(path))
        if not entries:
            return ToolResult.ok(
                f"Directory {rel} is empty.", structured_metadata={"path": rel, "entries": 0}
            )
        return ToolResult.ok(
            _listing_text(entries, rel),
            structured_metadata={"path": rel, "entries": len(entries), "counts": _counts(entries)},
        )


def _listing_text(entries: list[Entry], rel: str) -> str:
    """The text of a listing of ``entries`` (sorted by name, as
    :meth:`~octos_tools.workspace.Workspace.list_dir` returns them) of the folder ``rel``:
    a count line, then directories, files with sizes, links, others, each group by name;
    at most :data:`MAX_LIST_ENTRIES` lines of entries."""
    groups: dict[str, list[Entry]] = {kind: [] for kind in _KIND_ORDER}
    for e in entries:
        groups[e.kind].append(e)
    # One test for the whole listing instead of one per name: only a name holding an
    # escaped byte (os.fsdecode's lone surrogates) needs textcodec.display.
    plain = "".join([e.name for e in entries]).isascii()
    lines = [f"{len(entries)} entries in {rel}:"]
    room = MAX_LIST_ENTRIES
    for kind, group in groups.items():
        group = group[:room]
        room -= len(group)
        if not plain:
            group = [e._replace(name=textcodec.display(e.name)) for e in group]
        if kind == "dir":
            lines += [f"[dir]  {e.name}/" for e in group]
        elif kind == "file":
            lines += [f"[file] {e.name}  ({e.size:,} bytes)" for e in group]
        elif kind == "symlink":
            lines += [f"[link] {e.name}  (symbolic link, not followed)" for e in group]
        else:
            lines += [f"[other] {e.name}" for e in group]
    if len(entries) > MAX_LIST_ENTRIES:
        lines.append(f"… and {len(entries) - MAX_LIST_ENTRIES:,} more entries not shown")
    return "\n".join(lines)


def _counts(entries: list[Entry]) -> dict[str, int]:
    counts = dict.fromkeys(_KIND_ORDER, 0)
    for e in entries:
        counts[e.kind] += 1
    return counts
