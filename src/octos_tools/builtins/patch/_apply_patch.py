"""The ``apply_patch`` tool: plans the whole patch, checks every target, then writes it with
:meth:`Workspace.apply_changes` (the family's rules, atomicity first, are in
:mod:`octos_tools.builtins.patch`).

A moved file keeps its permission bits; an overwritten file's old content is shown in a diff.
A path leaving the workspace is ``path_outside_workspace``, as for every tool.
"""

from __future__ import annotations

import contextlib
import difflib
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...typed import ToolArgs
from ...workspace import text as textcodec
from .._base import WorkspaceTool
from ..files import MAX_EDIT_BYTES, SeenFiles, links_note, seen_files
from ._grammar import PatchOp, parse_patch
from ._planning import PlannedFile, plan_patch

if TYPE_CHECKING:
    from ...config import Config
    from ...context import ToolContext
    from ...registry import ToolRegistry
    from ...workspace import Workspace, WriteOutcome


#: Lines of unified diff shown per file in the result (the rest is counted).
PREVIEW_LINES = 40


def _unified(before: str | None, after: str | None, old_name: str, new_name: str) -> list[str]:
    a = textcodec.to_lf(before or "").splitlines(keepends=True)
    b = textcodec.to_lf(after or "").splitlines(keepends=True)
    return list(
        difflib.unified_diff(
            a,
            b,
            fromfile=old_name if before is not None else "/dev/null",
            tofile=new_name if after is not None else "/dev/null",
            n=1,
        )
    )


def _short_diff(p: PlannedFile) -> tuple[str, int, int]:
    diff = _unified(p.before, p.after, f"a/{p.source or p.path}", f"b/{p.path}")
    added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
    removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
    if p.op == "move" and p.replaced is not None:
        # the destination's old content, which the move overwrote
        diff += _unified(p.replaced, p.after, f"a/{p.path} (overwritten)", f"b/{p.path}")
    lines = [d if d.endswith("\n") else d + "\n" for d in diff]
    if len(lines) > PREVIEW_LINES:
        rest = len(lines) - PREVIEW_LINES
        lines = [*lines[:PREVIEW_LINES], f"... ({rest} more diff lines)\n"]
    return "".join(lines), added, removed


_OP_LETTER = {"add": "A", "update": "M", "delete": "D", "move": "R"}


class ApplyPatchTool(WorkspaceTool):
    """``apply_patch {patch}`` (Codex; tags fs, code; Exclusive).

    ``input`` is accepted as an alias of ``patch``; ``{path, diff}`` is handed to the
    registry's ``diff_edit`` tool (octos). Neither alias is advertised in the schema.

    The result lists every file (``A``/``M``/``D``/``R``), says which were overwritten
    (``structured_metadata["overwritten"]``), and names every changed path in
    ``structured_metadata["files_modified"]`` (``file_modified`` holds the first, the field
    being a single path).

    Args:
        workspace: the workspace the patch applies to.
        registry: the registry to find ``diff_edit`` in, or ``None``.
    """

    name = "apply_patch"
    title = "Apply a patch"
    description = (
        "Edit files with a Codex patch:\n"
        "*** Begin Patch\n"
        "*** Add File: new.txt\n+line\n"
        "*** Delete File: old.txt\n"
        "*** Update File: a.py\n*** Move to: b.py (optional)\n"
        "@@ def f(): (optional anchor)\n"
        " context\n-old\n+new\n"
        "*** End Patch\n"
        "Use ~3 context lines. All or nothing."
    )
    tags = ("fs", "code")
    concurrency_class = ConcurrencyClass.EXCLUSIVE

    class Args(ToolArgs):
        patch: str = Field(description="The patch text.")
        path: SkipJsonSchema[str | None] = None
        diff: SkipJsonSchema[str | None] = None

        @model_validator(mode="before")
        @classmethod
        def _aliases(cls, data: Any) -> Any:
            """``input`` is ``patch``; ``{path, diff}`` alone means a diff_edit call."""
            if not isinstance(data, dict) or ("input" not in data and "patch" in data):
                return data
            data = dict(data)
            alias = data.pop("input", None)
            if data.get("patch") is None:
                if alias is not None:
                    data["patch"] = alias
                elif "path" in data and "diff" in data:
                    data["patch"] = ""
            return data

    def __init__(self, workspace: Workspace | None, registry: ToolRegistry | None = None) -> None:
        super().__init__(workspace)
        self.registry = registry

    async def run(self, args: ApplyPatchTool.Args, ctx: ToolContext | None) -> ToolResult:
        if ctx is not None and ctx.permissions.read_only:
            raise ToolError(ErrorKind.POLICY_DENIED, "apply_patch cannot write: read-only context")
        if not args.patch and args.path is not None and args.diff is not None:
            return await self._delegate(ctx, args.path, args.diff)
        ws = self.workspace_for(ctx)
        ops = parse_patch(args.patch)

        targets = _lock_targets(ws, ops)
        seen = seen_files(ctx)

        def work() -> ToolResult:
            # every file's writer lock, in one fixed order, from the plan's reads to the
            # renames: a concurrent writer in another process can neither lose this patch
            # nor have its own edit lost
            with ws.lock_paths(targets):
                if seen is not None:
                    _check_stale(ws, seen, targets)
                changes, planned = plan_patch(ws, ops)
                outcomes: list[WriteOutcome] = []
                if changes:
                    try:
                        outcomes = ws.apply_changes(changes)
                    except ToolError as exc:
                        raise ToolError(
                            exc.kind, f"{exc.message}. No file was changed.", **exc.details
                        ) from None
            if seen is not None:
                for change in changes:
                    if change.content is not None:
                        seen.note_written(ws.relpath(change.path), change.content)
                    else:
                        seen.note_written(ws.relpath(change.path), b"")
            return self._result(ws, planned, outcomes, bool(changes))

        return await anyio.to_thread.run_sync(work)

    async def _delegate(self, ctx: ToolContext | None, path: str, diff: str) -> ToolResult:
        registry = self.registry
        tool = registry.get("diff_edit") if registry is not None else None
        if (
            registry is None
            or tool is None
            or ctx is None
            or not registry.evaluate("diff_edit").allowed
            or not ctx.permissions.is_tool_allowed("diff_edit")
        ):
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                "{path, diff} needs the diff_edit tool, which is not available here; "
                "send the change as 'patch' instead",
            )
        if self.workspace is not None and getattr(tool, "workspace", None) is not self.workspace:
            tool = tool.with_workspace(self.workspace)
        return await tool.execute_with_context(ctx, {"path": path, "diff": diff})

    def _result(
        self,
        ws: Workspace,
        planned: list[PlannedFile],
        outcomes: list[WriteOutcome],
        wrote: bool,
    ) -> ToolResult:
        modified: list[str] = []
        overwritten: list[str] = []
        preview: list[JSONObject] = []
        lines = [f"Applied patch to {len(planned)} file operation(s):"]
        diffs: list[str] = []
        for p in planned:
            diff, added, removed = _short_diff(p)
            letter = _OP_LETTER[p.op]
            shown = f"{p.source} -> {p.path}" if p.source else p.path
            extra = ""
            if p.replaced is not None:
                overwritten.append(p.path)
                extra = f"; overwrote the existing {p.path}, old content in the diff below"
            lines.append(f"  {letter} {shown} (+{added} -{removed}{extra})")
            for path in (p.source, p.path):
                if path is not None and path not in modified:
                    modified.append(path)
            entry: JSONObject = {
                "op": p.op,
                "path": p.path,
                "added": added,
                "removed": removed,
                "diff": diff,
            }
            if p.source:
                entry["from"] = p.source
            if p.replaced is not None:
                entry["overwritten"] = True
            preview.append(entry)
            if diff:
                diffs.append(diff.rstrip("\n"))
        if not wrote:
            lines.append("(the files already had this content; nothing was written)")
        meta: JSONObject = {
            "codex_tool": "apply_patch",
            "modified_paths": modified,
            "files_modified": modified,
            "overwritten": overwritten,
            "diff_preview": preview,
        }
        for outcome in outcomes:
            note = links_note(ws, outcome, {})
            if note:
                lines.append(note)
        text = "\n".join(lines)
        if diffs:
            text += "\n\n" + "\n".join(diffs)
        return ToolResult.ok(
            text,
            file_modified=modified[0] if modified else None,
            files_modified=list(modified),
            structured_metadata=meta,
        )


def _check_stale(ws: Workspace, seen: SeenFiles, targets: list[str]) -> None:
    """``stale_file`` when a file the session read changed since (before any change)."""
    for rel in targets:
        if not seen.knows(rel):
            continue
        try:
            data = ws.read_bytes(rel, max_bytes=MAX_EDIT_BYTES)
        except ToolError:
            continue  # gone or unreadable: the plan reports it
        text = None if textcodec.is_binary(data, whole=True) else textcodec.decode(data).text
        seen.check_stale(rel, data, text)


def _lock_targets(ws: Workspace, ops: list[PatchOp]) -> list[str]:
    """The workspace-relative paths a patch reads or writes (sources and destinations);
    a path the workspace refuses is left to the plan, which reports it."""
    out: set[str] = set()
    for op in ops:
        for path in (op.path, getattr(op, "move_to", None)):
            if path:
                with contextlib.suppress(ToolError):
                    out.add(ws.relpath(path))
    return sorted(out)


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``apply_patch``, delegating ``{path, diff}`` to the registry's
    ``diff_edit``."""
    registry.register(ApplyPatchTool(workspace, registry))
