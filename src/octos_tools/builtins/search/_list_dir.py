"""``list_dir``: the entries of one workspace directory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from ...tool_types import ToolResult
from ...typed import ToolArgs
from ...workspace import Entry, is_internal_temp_name
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
        entries = [e for e in entries if not is_internal_temp_name(e.name)]
        if not entries:
            return ToolResult.ok(
                f"Directory {rel} is empty.", structured_metadata={"path": rel, "entries": 0}
            )
        # entries come sorted by name in byte order: a stable sort by kind keeps it
        ordered = sorted(entries, key=lambda e: _KIND_ORDER[e.kind])
        lines = [f"{len(entries)} entries in {rel}:"]
        lines += [_entry_line(e) for e in ordered[:MAX_LIST_ENTRIES]]
        if len(ordered) > MAX_LIST_ENTRIES:
            lines.append(f"… and {len(ordered) - MAX_LIST_ENTRIES:,} more entries not shown")
        counts = dict.fromkeys(_KIND_ORDER, 0)
        for e in entries:
            counts[e.kind] += 1
        return ToolResult.ok(
            "\n".join(lines),
            structured_metadata={"path": rel, "entries": len(entries), "counts": counts},
        )


def _entry_line(e: Entry) -> str:
    name = textcodec.display(e.name)
    if e.kind == "dir":
        return f"[dir]  {name}/"
    if e.kind == "file":
        return f"[file] {name}  ({e.size:,} bytes)"
    if e.kind == "symlink":
        return f"[link] {name}  (symbolic link, not followed)"
    return f"[other] {name}"
