"""The four history tools, with octos's names and arguments (octos
``crates/octos-agent/src/tools``); the family's rules are in
:mod:`octos_tools.builtins.workspace_history`.

``project`` (optional, unlike octos, whose stores are per project) narrows each tool to a
subfolder of the workspace: the log to checkpoints touching it, ``file`` relative to it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio.to_thread
from pydantic import Field

from ...errors import ErrorKind, ToolError
from ...history import HistoryStore, HistoryUnavailable, history_for
from ...history._restore import newest_note, restore
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...typed import ToolArgs
from ...workspace import text as textcodec
from .._base import WorkspaceTool

if TYPE_CHECKING:
    from ...config import Config
    from ...context import ToolContext
    from ...registry import ToolRegistry
    from ...workspace import Workspace


_PROJECT = "Subfolder of the workspace (optional)."
_MAX_SHOW_BYTES = 40_000


class _HistoryTool(WorkspaceTool):
    tags = ("fs", "workspace")
    concurrency_class = ConcurrencyClass.SAFE

    def _store(self, ctx: ToolContext | None) -> tuple[Workspace, HistoryStore]:
        ws = self.workspace_for(ctx)
        store, reason = history_for(ws)
        if store is None:
            raise ToolError(
                ErrorKind.HISTORY_UNAVAILABLE,
                "the workspace history is not available: "
                + (reason or "it is off ([history] enabled = false)"),
            )
        return ws, store

    @staticmethod
    def _path(ws: Workspace, project: str | None, file: str | None) -> str | None:
        if project:
            base = ws.relpath(project)
            if file:
                return ws.relpath(f"{base}/{file}") if base != "." else ws.relpath(file)
            return None if base == "." else base
        return ws.relpath(file) if file else None

    @staticmethod
    def _commit(store: HistoryStore, commit: str) -> str:
        full = store.resolve(commit)
        if full is None:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"no checkpoint {commit!r} in this workspace; {newest_note(store)}",
            )
        return full

    @staticmethod
    async def _thread(fn: object) -> ToolResult:
        try:
            return await anyio.to_thread.run_sync(fn)  # type: ignore[arg-type]
        except HistoryUnavailable as exc:
            raise ToolError(
                ErrorKind.HISTORY_UNAVAILABLE, f"the workspace history: {exc}"
            ) from None


class WorkspaceLogTool(_HistoryTool):
    """``workspace_log {limit=20, project?}``: the newest checkpoints, newest first: id,
    time, tool, what changed."""

    name = "workspace_log"
    title = "Workspace history"
    description = "List checkpoints of workspace changes (newest first): id, time, tool, paths."

    class Args(ToolArgs):
        limit: int = Field(20, ge=1, le=500, description="How many.")
        project: str | None = Field(None, description=_PROJECT)

    async def run(self, args: WorkspaceLogTool.Args, ctx: ToolContext | None) -> ToolResult:
        ws, store = self._store(ctx)
        prefix = self._path(ws, args.project, None)

        def work() -> ToolResult:
            entries = store.log(args.limit, prefix)
            if not entries:
                return ToolResult.ok("No checkpoints yet.", structured_metadata={"commits": []})
            lines = []
            rows: list[JSONObject] = []
            for e in entries:
                when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time))
                n = len(e.paths)
                lines.append(f"{e.commit[:12]} {when} {e.tool}: {e.summary} ({n} path(s))")
                rows.append(
                    {
                        "commit": e.commit,
                        "time": e.time,
                        "tool": e.tool,
                        "call_id": e.call_id,
                        "session": e.session,
                        "paths": list(e.paths),
                    }
                )
            return ToolResult.ok("\n".join(lines), structured_metadata={"commits": rows})

        return await self._thread(work)


class WorkspaceShowTool(_HistoryTool):
    """``workspace_show {commit, file, project?}``: a file's content at a checkpoint."""

    name = "workspace_show"
    title = "File at a checkpoint"
    description = "Show a file's content at a checkpoint (id from workspace_log)."

    class Args(ToolArgs):
        commit: str = Field(description="Checkpoint id.")
        file: str = Field(description="File path.")
        project: str | None = Field(None, description=_PROJECT)

    async def run(self, args: WorkspaceShowTool.Args, ctx: ToolContext | None) -> ToolResult:
        ws, store = self._store(ctx)
        path = self._path(ws, args.project, args.file)
        assert path is not None

        def work() -> ToolResult:
            full = self._commit(store, args.commit)
            found = store.blob_at(full, path)
            if found is None:
                raise ToolError(ErrorKind.NOT_FOUND, f"{path} is not in checkpoint {full[:12]}")
            mode, data = found
            meta: JSONObject = {"commit": full, "path": path, "mode": mode, "size": len(data)}
            if mode == "120000":
                return ToolResult.ok(
                    f"{path} is a symbolic link to {data.decode('utf-8', 'replace')}",
                    structured_metadata=meta,
                )
            if textcodec.is_binary(data, whole=True):
                return ToolResult.ok(
                    f"{path} is a binary file ({len(data):,} bytes) in {full[:12]}",
                    structured_metadata=meta,
                )
            text = textcodec.display(textcodec.decode(data[:_MAX_SHOW_BYTES]).text)
            if len(data) > _MAX_SHOW_BYTES:
                text += f"\n… (cut: {len(data):,} bytes in all)"
                meta["truncated"] = True
            return ToolResult.ok(text, structured_metadata=meta)

        return await self._thread(work)


class WorkspaceDiffTool(_HistoryTool):
    """``workspace_diff {from_commit, to_commit=newest, file?, project?}``: a unified diff."""

    name = "workspace_diff"
    title = "Diff checkpoints"
    description = "Unified diff between two checkpoints (to_commit: default the newest)."

    class Args(ToolArgs):
        from_commit: str = Field(description="Older checkpoint id.")
        to_commit: str | None = Field(None, description="Newer checkpoint id.")
        file: str | None = Field(None, description="Only this file.")
        project: str | None = Field(None, description=_PROJECT)

    async def run(self, args: WorkspaceDiffTool.Args, ctx: ToolContext | None) -> ToolResult:
        ws, store = self._store(ctx)
        path = self._path(ws, args.project, args.file)

        def work() -> ToolResult:
            old = self._commit(store, args.from_commit)
            new = self._commit(store, args.to_commit or "HEAD")
            text = store.diff(old, new, path)
            meta: JSONObject = {"from_commit": old, "to_commit": new, "path": path}
            if not text:
                return ToolResult.ok(
                    f"No differences between {old[:12]} and {new[:12]}.", structured_metadata=meta
                )
            return ToolResult.ok(text, structured_metadata=meta)

        return await self._thread(work)


class WorkspaceRestoreTool(_HistoryTool):
    """``workspace_restore {commit, file?, force=false, project?}`` (Exclusive): one file or
    the whole workspace back to a checkpoint; itself a checkpoint (undo it by restoring the
    one before). See :mod:`octos_tools.history._restore` for drift and what is left alone."""

    name = "workspace_restore"
    title = "Restore a checkpoint"
    description = (
        "Restore one file or the whole workspace to a checkpoint (files created since are "
        "removed). Refuses files changed outside the history unless force."
    )
    concurrency_class = ConcurrencyClass.EXCLUSIVE

    class Args(ToolArgs):
        commit: str = Field(description="Checkpoint id.")
        file: str | None = Field(None, description="Only this file.")
        force: bool = Field(False, description="Overwrite files changed since.")
        project: str | None = Field(None, description=_PROJECT)

    async def run(self, args: WorkspaceRestoreTool.Args, ctx: ToolContext | None) -> ToolResult:
        if ctx is not None and ctx.permissions.read_only:
            raise ToolError(ErrorKind.POLICY_DENIED, "workspace_restore cannot write: read-only")
        ws, store = self._store(ctx)
        path = self._path(ws, args.project, args.file)
        call_id = ctx.tool_call_id if ctx else ""
        session = (ctx.session_key or "") if ctx else ""

        def work() -> ToolResult:
            out = restore(
                store, ws, args.commit, path, force=args.force, call_id=call_id, session=session
            )
            lines = [f"Restored {path or 'the workspace'} to checkpoint {out.target[:12]}."]
            for label, items in (
                ("written back", out.restored),
                ("recreated (deleted since)", out.recreated),
                ("removed (created since)", out.removed),
            ):
                if items:
                    more = " …" if len(items) > 30 else ""
                    lines.append(f"{label}: {', '.join(items[:30])}{more}")
            if not (out.restored or out.recreated or out.removed):
                lines.append("Nothing differed; nothing was changed.")
            for p, why in list(out.skipped.items())[:20]:
                lines.append(f"left alone: {p} ({why})")
            if out.drift_checkpoint:
                lines.append(
                    f"The files changed outside the history were recorded first as checkpoint "
                    f"{out.drift_checkpoint[:12]}."
                )
            if out.checkpoint:
                lines.append(
                    f"This restore is checkpoint {out.checkpoint[:12]}; restore the one "
                    "before it to undo."
                )
            meta: JSONObject = {
                "commit": out.target,
                "restored": out.restored,
                "recreated": out.recreated,
                "removed": out.removed,
                "skipped": dict(out.skipped),
                "checkpoint": out.checkpoint,
                "drift_checkpoint": out.drift_checkpoint,
            }
            changed = [*out.restored, *out.recreated, *out.removed]
            return ToolResult.ok(
                "\n".join(lines),
                file_modified=changed[0] if changed else None,
                files_modified=changed,
                structured_metadata=meta,
            )

        return await self._thread(work)


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register the history tools (when ``[history] enabled``)."""
    if not config.history.enabled:
        return
    for cls in (WorkspaceLogTool, WorkspaceShowTool, WorkspaceDiffTool, WorkspaceRestoreTool):
        registry.register(cls(workspace))
