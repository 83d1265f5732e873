"""The checkpoint hook: one call around every Exclusive tool call of the pipeline.

:func:`around_call` is called by :mod:`octos_tools.pipeline` for each Exclusive call (the
only tools that may change files). For a tool it knows it records:

* the file tools (``write_file``, ``edit_file``, ``diff_edit``, ``apply_patch``): before the
  call, the paths the call will write when they changed since this process last recorded
  them (a checkpoint ``outside``: an editor's or another program's change, so the restore
  of the state before the call gives back what was on disk); after a successful call, the
  paths it changed;
* the command tools (``exec_command``, ``shell``, ``bash``): the whole tree before the
  command (``outside``, when anything changed) and after it, whatever its exit code, so
  what a command removed can be restored.

Any other tool runs untouched (``workspace_restore`` records its own checkpoints). A store
that cannot be used never blocks the call: the tool runs, and its result says
``checkpoint_skipped`` with the reason (``structured_metadata``, and one line of output).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ..errors import ToolError
from ._settings import history_for
from ._store import HistoryStore, HistoryUnavailable

if TYPE_CHECKING:
    from ..context import ToolContext
    from ..tool_types import Tool, ToolResult
    from ..workspace import Workspace

__all__ = ["COMMAND_TOOLS", "FILE_TOOLS", "around_call"]

FILE_TOOLS = frozenset({"write_file", "edit_file", "diff_edit", "apply_patch"})
"""Tools whose checkpoint covers the paths they write."""
COMMAND_TOOLS = frozenset({"exec_command", "shell", "bash"})
"""Tools whose checkpoint scans the whole tree before and after the call."""

_PATCH_PATH = re.compile(r"^\*\*\* (?:Add File|Delete File|Update File|Move to): (.+?)\s*$", re.M)


def _arg(args: Any, key: str) -> Any:
    return args.get(key) if isinstance(args, dict) else getattr(args, key, None)


def _target_paths(ws: Workspace, name: str, args: Any) -> list[str]:
    raw: list[str] = []
    path = _arg(args, "path")
    if isinstance(path, str):
        raw.append(path)
    patch = _arg(args, "patch") if name == "apply_patch" else None
    if isinstance(patch, str):
        raw += _PATCH_PATH.findall(patch)
    out: set[str] = set()
    for p in raw:
        try:
            out.add(ws.relpath(p))
        except ToolError:
            continue
    return sorted(out)


def _command_summary(args: Any) -> str:
    for key in ("cmd", "command"):
        value = _arg(args, key)
        if isinstance(value, str):
            return " ".join(value.split())[:120]
        if isinstance(value, list):
            return " ".join(map(str, value))[:120]
    return ""


async def around_call(
    tool: Tool, args: Any, ctx: ToolContext, call: Callable[[], Awaitable[ToolResult]]
) -> ToolResult:
    """Run ``call()`` (the dispatch of ``tool`` with ``args``) with its checkpoints
    (module docstring). Never raises for the store's sake."""
    name = tool.name
    is_file = name in FILE_TOOLS
    if not is_file and name not in COMMAND_TOOLS:
        return await call()
    ws: Workspace | None = getattr(tool, "workspace", None) or ctx.workspace
    if ws is None:
        return await call()
    store, reason = history_for(ws)
    if store is None and reason is None:  # history off
        return await call()
    paths = _target_paths(ws, name, args) if is_file else None
    holder: HistoryStore | None = None
    if store is not None:
        try:
            if is_file:  # before, call and after as one: no other process records between
                await anyio.to_thread.run_sync(store.hold)
                holder = store
            await anyio.to_thread.run_sync(_before, store, paths)
        except HistoryUnavailable as exc:
            store, reason = None, str(exc)
    try:
        result = await call()
        if is_file and not result.success:
            return result  # a failed write changed nothing
        if store is None:
            return _annotate(result, None, reason)
        return await _after(store, result, name, args, ctx, paths)
    finally:
        if holder is not None:
            holder.release()


async def _after(
    store: HistoryStore,
    result: ToolResult,
    name: str,
    args: Any,
    ctx: ToolContext,
    paths: list[str] | None,
) -> ToolResult:
    changed = sorted({*result.modified_files, *(paths or [])}) if paths is not None else None
    summary = "" if paths is not None else _command_summary(args)
    try:
        cp = await anyio.to_thread.run_sync(
            lambda: store.checkpoint(
                changed,
                tool=name,
                call_id=ctx.tool_call_id,
                session=ctx.session_key or "",
                summary=summary,
            )
        )
    except HistoryUnavailable as exc:
        return _annotate(result, None, str(exc))
    if cp is None:
        return _annotate(result, None, "nothing changed since the newest checkpoint", quiet=True)
    return _annotate(result, cp.short, None)


def _before(store: HistoryStore, paths: list[str] | None) -> None:
    if store.head() is None:
        store.checkpoint(None, tool="baseline", summary="the workspace before the first change")
    elif paths is None or store.has_pending() or not store.known_unchanged(paths):
        summary = "changes made outside octos-tools"
        store.checkpoint(paths, tool="outside", summary=summary, pending=True)


def _annotate(
    result: ToolResult, checkpoint: str | None, skipped: str | None, *, quiet: bool = False
) -> ToolResult:
    meta = dict(result.structured_metadata or {})
    if checkpoint is not None:
        meta["checkpoint"] = checkpoint
        return dataclasses.replace(result, structured_metadata=meta)
    meta["checkpoint_skipped"] = skipped
    if quiet:
        return dataclasses.replace(result, structured_metadata=meta)
    output = f"{result.output}\n[checkpoint skipped: {skipped}]"
    return dataclasses.replace(result, output=output, structured_metadata=meta)
