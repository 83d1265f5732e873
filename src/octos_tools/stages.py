"""The pipeline's extension stages: hooks, tracing and the audit log around one call.

With none configured a view's ``stages`` is ``None`` and :func:`octos_tools.pipeline.run_call`
takes its usual path (one attribute test per call). With any configured, a call runs here::

    span start (tracing)
      steps 1-5: policy, deferral, size, lookup, validation        (pipeline.admit)
      PreToolUse hooks: deny / ask / allow / rewrite (validated again)
      steps 6-9: LRU, spawn or dispatch under the lock, cap, redaction (pipeline.execute)
      PostToolUse / PostToolUseFailure hooks: observe, add context
    span end; one audit line

Hooks run only for a call the policies let through (steps 1-6 refuse before them), so no
hook can allow what a policy denies. Several matching hooks of one event run concurrently
(registry hooks and the session's own); their answers combine as Claude Code's do:
``deny`` over ``ask`` over ``allow``; ``updatedInput`` of several hooks apply in
registration order (the last wins). A hook's ``ask`` goes to the context's approval
channel (``ctx.approval``): no channel → ``approval_required``, declined →
``approval_denied``; nothing runs in either case. A denied call is ``policy_denied`` with
octos's text ``[HOOK DENIED] Tool 'NAME' was blocked: REASON. Do not retry.``
(``crates/octos-agent/src/agent/execution.rs``) and ``reason: "hook"`` in its metadata.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel

from .context import ApprovalRequest, ToolContext
from .errors import ErrorKind, ToolError
from .hooks import Hook, HookError, HookInput, HookOutput
from .output import redact_secrets
from .pipeline import RawArguments, admit, execute, post_process
from .tool_types import Tool, ToolResult

if TYPE_CHECKING:
    from .audit import AuditLog
    from .tracing import Tracing
    from .view import ToolView

__all__ = ["CallStages", "build_stages"]

logger = logging.getLogger("octos_tools.stages")

_CONTEXT_HEADER = "\n\n[hook context]\n"


class CallStages:
    """The stages one view's calls go through (module docstring).

    Args:
        hooks: the hooks, registry's first, then the session's.
        tracing: the tracing stage, or ``None``.
        audit: the audit log, or ``None``.
    """

    __slots__ = ("audit", "hooks", "post", "pre", "tracing")

    def __init__(
        self, hooks: Sequence[Hook], tracing: Tracing | None, audit: AuditLog | None
    ) -> None:
        self.hooks = tuple(hooks)
        self.pre = tuple(h for h in self.hooks if h.event == "PreToolUse")
        self.post = tuple(h for h in self.hooks if h.event != "PreToolUse")
        self.tracing = tracing
        self.audit = audit

    async def run(
        self, view: ToolView, name: str, raw: RawArguments, ctx: ToolContext, locked: bool
    ) -> ToolResult:
        """Run one call of ``name`` in ``view`` through the stages and the pipeline's steps;
        never raises for a bad call (cancellation propagates, after its audit line)."""
        started = time.perf_counter()
        decisions: dict[str, str] = {}
        result: ToolResult | None = None
        tracing = self.tracing
        try:
            if tracing is None:
                result = await self._call(view, name, raw, ctx, locked, decisions)
            else:
                with tracing.span(name, ctx.tool_call_id) as span:
                    result = await self._call(view, name, raw, ctx, locked, decisions)
                    tracing.finish(span, result, raw)
            return result
        finally:
            audit = self.audit
            if audit is not None:
                from .audit import arguments_sha256

                if result is None:
                    outcome = "cancelled"
                elif result.success:
                    outcome = "ok"
                else:
                    kind = result.error_kind
                    outcome = kind.value if kind is not None else "error"
                audit.record(
                    tool=name,
                    call_id=ctx.tool_call_id,
                    session=_session_id(ctx),
                    decisions=decisions,
                    outcome=outcome,
                    duration_ms=(time.perf_counter() - started) * 1000,
                    args_sha256=arguments_sha256(raw),
                )

    async def _call(
        self,
        view: ToolView,
        name: str,
        raw: RawArguments,
        ctx: ToolContext,
        locked: bool,
        decisions: dict[str, str],
    ) -> ToolResult:
        registry = view.registry
        try:
            tool, args = admit(view, name, raw, ctx)
        except ToolError as exc:
            decisions["policy"] = "deny" if exc.kind is ErrorKind.POLICY_DENIED else "allow"
            return post_process(registry, registry.get(name), ToolResult.from_error(exc))
        except Exception as exc:
            logger.exception("call of %r failed before it ran", name)
            decisions["policy"] = "allow"
            return ToolResult.failure(
                ErrorKind.INTERNAL_ERROR,
                f"the call of {name!r} failed before it ran: {type(exc).__name__}: {exc}",
            )
        decisions["policy"] = "allow"
        added: list[str] = []
        pre = [h for h in self.pre if h.matches(name)]
        if pre:
            refused, args = await self._before(view, tool, args, ctx, pre, decisions, added)
            if refused is not None:
                return post_process(registry, tool, refused)
        result = await execute(view, tool, args, ctx, locked)
        post = [
            h
            for h in self.post
            if h.event == ("PostToolUse" if result.success else "PostToolUseFailure")
            and h.matches(name)
        ]
        if post:
            added.extend(await self._after(tool, args, ctx, result, post))
        if added:
            text = redact_secrets(_CONTEXT_HEADER + "\n".join(added))
            result = replace(result, output=result.output + text)
        return result

    async def _before(
        self,
        view: ToolView,
        tool: Tool,
        args: Any,
        ctx: ToolContext,
        hooks: list[Hook],
        decisions: dict[str, str],
        added: list[str],
    ) -> tuple[ToolResult | None, Any]:
        """The PreToolUse hooks: ``(refusal or None, the arguments to run with)``."""
        tool_input = _tool_input(args)
        event = _event(ctx, "PreToolUse", tool.name, tool_input)
        answers = await _run_hooks(hooks, event)
        decision = "none"
        reason = ""
        updated: dict[str, Any] | None = None
        for hook, answer in zip(hooks, answers, strict=True):
            if isinstance(answer, BaseException):
                if hook.fail_closed:
                    decision = "deny"
                    reason = f"a hook failed and is set to fail closed ({answer})"
                    break
                continue
            if answer is None:
                continue
            if answer.additional_context:
                added.append(answer.additional_context)
            if answer.updated_input is not None:
                updated = answer.updated_input
            rank = _RANK.get(answer.permission_decision or "none", 0)
            if rank > _RANK[decision]:
                decision = answer.permission_decision or "none"
                reason = answer.reason
        if decision == "none" and updated is not None:
            decisions["hooks"] = "rewrite"
        else:
            decisions["hooks"] = decision
        if decision == "deny":
            return _hook_denied(tool.name, reason), args
        if updated is not None:
            try:
                _, args = view.registry.validated_arguments(tool.name, updated)
            except ToolError as exc:  # the rewrite is invalid: the call does not run
                return ToolResult.from_error(
                    ToolError(
                        exc.kind, f"a hook rewrote the arguments of {tool.name!r}: {exc.message}"
                    )
                ), args
        if decision == "ask":
            approval = ctx.approval
            if approval is None:
                decisions["approval"] = "no_channel"
                return ToolResult.failure(
                    ErrorKind.APPROVAL_REQUIRED,
                    f"a hook asks a person to approve this call of {tool.name!r}"
                    + (f" ({reason})" if reason else "")
                    + ", and no approval channel is attached. Do not retry it.",
                ), args
            request = ApprovalRequest(
                tool=tool.name,
                action=_action_text(tool.name, _tool_input(args)),
                reason=reason or "a PreToolUse hook asks for approval",
            )
            try:
                approved = await approval(request)
            except Exception:
                logger.exception("the approval channel failed")
                approved = False
            decisions["approval"] = "approved" if approved else "declined"
            if not approved:
                return ToolResult.failure(
                    ErrorKind.APPROVAL_DENIED,
                    f"the call of {tool.name!r} was declined by the person asked. Do not retry it.",
                ), args
        return None, args

    async def _after(
        self, tool: Tool, args: Any, ctx: ToolContext, result: ToolResult, hooks: list[Hook]
    ) -> list[str]:
        """The PostToolUse / PostToolUseFailure hooks: the texts they add for the model."""
        response = {
            "success": result.success,
            "output": result.output,
            "structured_metadata": result.structured_metadata,
        }
        event = _event(ctx, hooks[0].event, tool.name, _tool_input(args))
        event = replace(
            event,
            tool_response=response,
            error=None if result.success else result.output,
        )
        texts: list[str] = []
        for answer in await _run_hooks(hooks, event):
            if isinstance(answer, BaseException) or answer is None:
                continue
            if answer.block and answer.reason:
                texts.append(answer.reason)
            if answer.additional_context:
                texts.append(answer.additional_context)
        return texts


_RANK = {"none": 0, "allow": 1, "ask": 2, "deny": 3}


def _hook_denied(name: str, reason: str) -> ToolResult:
    reason = reason.strip().rstrip(".")
    text = (
        f"[HOOK DENIED] Tool '{name}' was blocked: {reason}. Do not retry."
        if reason
        else f"[HOOK DENIED] Tool '{name}' was blocked by a lifecycle hook. Do not retry."
    )
    return ToolResult.failure(
        ErrorKind.POLICY_DENIED,
        text.removeprefix("[HOOK DENIED] "),
        output=f"Error [policy_denied]: {text}",
        metadata={"reason": "hook"},
    )


def _tool_input(args: Any) -> dict[str, Any]:
    if isinstance(args, BaseModel):
        dumped: dict[str, Any] = args.model_dump(mode="json", exclude_unset=True, by_alias=True)
        return dumped
    return dict(args) if isinstance(args, dict) else {}


def _action_text(name: str, tool_input: dict[str, Any]) -> str:
    import json

    for key in ("cmd", "command"):
        value = tool_input.get(key)
        if isinstance(value, str):
            return value
    return f"{name} {json.dumps(tool_input, ensure_ascii=False, default=str)[:2000]}"


def _session_id(ctx: ToolContext) -> str:
    """The call's session for hooks and the audit log: its
    :attr:`ToolSession.session_id <octos_tools.session.ToolSession.session_id>` (the MCP
    session id under ``serve`` over HTTP), else the context's ``session_key``."""
    session = ctx.session
    if session is not None:
        return session.session_id
    return ctx.session_key or ""


def _event(ctx: ToolContext, event: str, name: str, tool_input: dict[str, Any]) -> HookInput:
    ws = ctx.workspace
    cwd = str(ws.root) if ws is not None else os.getcwd()
    return HookInput(
        hook_event_name=event,
        tool_name=name,
        tool_input=tool_input,
        tool_use_id=ctx.tool_call_id,
        session_id=_session_id(ctx),
        cwd=cwd,
    )


async def _run_hooks(
    hooks: Sequence[Hook], event: HookInput
) -> list[HookOutput | BaseException | None]:
    """Run ``hooks`` on ``event`` concurrently; a failure is logged and returned in its
    place (never raised)."""
    answers: list[HookOutput | BaseException | None] = [None] * len(hooks)

    async def one(index: int, hook: Hook) -> None:
        try:
            answer = await hook.callback(event)
            if answer is not None and not isinstance(answer, HookOutput):
                raise HookError(f"a hook returned {type(answer).__name__}, not a HookOutput")
            answers[index] = answer
        except Exception as exc:  # noqa: BLE001 - a hook never crashes the call
            logger.warning("%s hook %r failed: %s", event.hook_event_name, hook.callback, exc)
            answers[index] = exc

    if len(hooks) == 1:
        await one(0, hooks[0])
        return answers
    async with anyio.create_task_group() as tg:
        for index, hook in enumerate(hooks):
            tg.start_soon(one, index, hook)
    return answers


def build_stages(
    hooks: Sequence[Hook], tracing: Tracing | None, audit: AuditLog | None
) -> CallStages | None:
    """The stages for a view, or ``None`` when there is nothing to run (the pipeline's
    usual path)."""
    if not hooks and tracing is None and audit is None:
        return None
    return CallStages(hooks, tracing, audit)
