"""The call pipeline: every tool call of every host runs through :func:`run_call`.

A :class:`~octos_tools.session.ToolSession` (MCP server, agent loop, ``octos-tools call``,
and :meth:`ToolRegistry.execute <octos_tools.registry.ToolRegistry.execute>` through the
registry's default session) calls it, in this order:

1. **policy**: hard policies, the provider policy and ``require_tags`` (the registry's
   verdict, cached until its next mutation), then the call context's
   :class:`~octos_tools.context.ToolPermissions` (alias links included) → ``policy_denied``;
2. **deferral**: a deferred tool called by name is activated (its first group) in the
   calling view only; deferral saves tokens, it is not a permission;
3. **size**: the raw argument bytes against the limit, before parsing → ``args_too_large``;
4. **lookup** → ``unknown_tool`` naming the closest registered names;
5. **parse and validate, once** (:mod:`octos_tools.arguments`, one module for typed and
   JSON-schema tools) → ``invalid_json`` / ``invalid_arguments``;
6. usage recorded in the view's LRU;
7. **spawn-only** tools return a task-handle envelope at once and run in the
   :class:`~octos_tools.tasks.TaskSupervisor` (outside the session's lock: a background
   task does not hold the session's other calls back);
8. **dispatch** under the view's readers-writer lock (the Safe / Exclusive rule of
   :mod:`octos_tools.concurrency`) and ONE timeout scope (:mod:`octos_tools.dispatch`) →
   ``timeout``; a raised :class:`~octos_tools.errors.ToolError` becomes its typed failure,
   any other exception ``internal_error`` (never a crash of the host);
9. **output post-processing**: head/tail cap, credential redaction, the prompt-injection
   filter of untrusted content.

Steps 1-5 are :func:`admit`; steps 6-9 are :func:`execute`, the one path every call takes
(with stages or without). For a typed tool, what steps 1, 2, 4 and 5 decide for a name (the
verdict, deferral, the lookup, the validator) is a :class:`~octos_tools._call_plan.CallPlan`
kept in the view until its next change: :func:`run_call` validates a short argument string
straight with it and falls back to :func:`admit` for anything else. "Runs inline" is a
branch of step 8: a tool whose coroutine cannot suspend (no ``await`` in its own code) is
awaited in :func:`execute`'s own frame with no timer (nothing could stop it before it
ends). The context's permissions, the size, the lock, the timeout and the output cap are
checked on every call.

Steps 1-5 never wait, so :func:`run_call` runs them at once and returns the coroutine of
steps 6-9 (one coroutine frame per call).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Coroutine
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ._call_plan import plan_call
from .arguments import FAST_JSON_CHARS, RawArguments
from .concurrency import acquire, release, try_acquire
from .context import ToolContext, reset_current_context, set_current_context
from .dispatch import dispatch, failure_of, not_a_result, timeout_of
from .errors import ErrorKind, ToolError
from .function_tool import to_result
from .history import around_call
from .output import cap_output, redact_secrets, redact_value
from .tasks import SPAWN_ONLY_READ_MODES
from .tool_types import ConcurrencyClass, Tool, ToolResult, ok_result
from .typed import typed_model

if TYPE_CHECKING:
    from ._call_plan import CallPlan
    from .registry import ToolRegistry
    from .tasks import TaskRecord
    from .view import ToolView

__all__ = [
    "SPAWN_ONLY_READ_MODES",
    "RawArguments",
    "admit",
    "dispatch",
    "execute",
    "post_process",
    "prepare",
    "run_call",
    "typed_model",
]

logger = logging.getLogger("octos_tools.pipeline")

_EXCLUSIVE = ConcurrencyClass.EXCLUSIVE
_PLAIN = frozenset({int, float, bool, type(None)})
"""Metadata values that cannot hold a credential (no redaction walk needed)."""
_REDACT_MIN_CHARS = 8
"""Outputs shorter than this hold no credential any redaction pattern recognises."""


def run_call(
    view: ToolView, name: str, raw: RawArguments, ctx: ToolContext, *, locked: bool = False
) -> Coroutine[Any, Any, ToolResult]:
    """Run one tool call through the whole pipeline (module docstring) in ``view``.

    Args:
        view: the calling session's view.
        name: the tool name the model asked for.
        raw: the raw argument string exactly as sent, parsed arguments, or ``None``.
        ctx: the call's context, already completed by
            :meth:`~octos_tools.registry.ToolRegistry.context_for`.
        locked: the caller already holds ``view.lock`` for this call (a batch holds it
            for all its calls); the lock is not reentrant.

    Returns:
        A coroutine whose value is the result (steps 1-5 have run already); never raises
        for a bad call (cancellation propagates).
    """
    stages = view.stages
    if stages is not None:  # hooks, tracing or an audit log: see octos_tools.stages
        return stages.run(view, name, raw, ctx, locked)
    # A planned name (allowed, not deferred, typed: see _call_plan), a context without
    # permission lists, a short ASCII argument string without escapes (under the size
    # limit, no lone surrogate possible) that validates at once: steps 1-5 are decided.
    try:
        plan = view.plans[name]
    except KeyError:
        plan = plan_call(view, name)
    if plan is not None and type(raw) is str:
        permissions = ctx.permissions
        if (
            not permissions.denied_tools
            and permissions.allowed_tools is None
            and (size := len(raw)) <= FAST_JSON_CHARS
            and size <= view.registry.max_args_size
            and raw.isascii()
            and "\\u" not in raw
        ):
            try:
                args = plan.validate_json(raw)
            except ValidationError:
                pass  # the general way says exactly what is wrong (or applies a leniency)
            else:
                return execute(view, plan.tool, args, ctx, locked, plan)
    try:
        tool, args = admit(view, name, raw, ctx)
    except ToolError as exc:
        return _ready(post_process(view.registry, None, ToolResult.from_error(exc)))
    except Exception as exc:  # a bug before dispatch (e.g. in validation): never raise
        logger.exception("call of %r failed before it ran", name)
        return _ready(post_process(view.registry, None, _failed_before(name, exc)))
    return execute(view, tool, args, ctx, locked)


async def _ready(result: ToolResult) -> ToolResult:
    return result


def admit(view: ToolView, name: str, raw: RawArguments, ctx: ToolContext) -> tuple[Tool, Any]:
    """Steps 1-5 of a call in ``view``: policy (the registry's verdict, then the context's
    permissions), deferral, size, lookup, parse and validate.

    Returns:
        The tool and its validated arguments (an ``Args`` instance for a typed tool, else
        a ``dict``).

    Raises:
        ToolError: ``policy_denied``, ``args_too_large``, ``invalid_json``,
            ``unknown_tool`` or ``invalid_arguments``.
    """
    registry = view.registry
    if not registry.evaluate(name).allowed:  # cached until the next mutation
        registry.check_policy(name)
    permissions = ctx.permissions
    if (
        permissions.denied_tools or permissions.allowed_tools is not None
    ) and not permissions.is_tool_allowed(name):
        raise ToolError(
            ErrorKind.POLICY_DENIED,
            f"tool {name!r} is not permitted in this context (its permissions deny "
            "it). Do not retry it; use another tool.",
            reason="context_permissions",
        )
    if view.is_deferred(name):
        view.auto_activate(name)
    return registry.validated_arguments(name, raw)


async def execute(
    view: ToolView,
    tool: Tool,
    args: Any,
    ctx: ToolContext,
    locked: bool = False,
    plan: CallPlan | None = None,
) -> ToolResult:
    """Steps 6-9 of an admitted call, the one path of every call: the LRU mark; a
    spawn-only tool starts in the background (its task-handle envelope is the result);
    any other runs under ``view``'s lock (unless the caller holds it: ``locked``): inline
    when its ``plan`` says it cannot suspend, else under its timeout (an Exclusive call
    inside the workspace history's checkpoints); then :func:`post_process`. Never raises
    for a bad call.

    Args:
        view: the calling session's view.
        tool: the admitted tool.
        args: its validated arguments (from :func:`admit`, or from ``plan``'s validator).
        ctx: the call's context.
        locked: the caller holds ``view.lock``.
        plan: the call plan whose validator made ``args``, or ``None``.
    """
    lifecycle = view.lifecycle
    lifecycle.last_used[tool.name] = lifecycle.iteration  # step 6: usage for the LRU
    registry = view.registry
    lock = view.lock
    exclusive = tool.concurrency_class is _EXCLUSIVE  # step 8: concurrency.py's rule
    inline = plan is not None and plan.inline
    # "hold" is whether this call takes the lock: not when the caller holds it, nor for an
    # inline call that finds it free (it ends before any other task runs: concurrency.py).
    hold = not locked and not (inline and lock.free_for(exclusive))
    try:
        if plan is None and registry.is_spawn_only(tool.name):  # step 7 (never planned)
            return post_process(registry, tool, _spawn(registry, tool, args, ctx))
        if hold and not try_acquire(lock, exclusive):
            await acquire(lock, exclusive)
    except ToolError as exc:  # from a spawn
        return post_process(registry, tool, ToolResult.from_error(exc))
    except Exception as exc:  # a bug of the pipeline itself: never raise
        logger.exception("call of %r failed before it ran", tool.name)
        return post_process(registry, tool, _failed_before(tool.name, exc))
    try:
        if inline and plan is not None:
            # Runs inline: a coroutine that never suspends, no timer (nothing could stop
            # it before it ends), one coroutine frame.
            token = set_current_context(ctx)
            try:
                fn = plan.fn
                if fn is not None:
                    kwargs = args[0] if plan.fields_only else args.__dict__
                    if plan.context_params:
                        kwargs = dict(kwargs)
                        for param in plan.context_params:
                            kwargs[param] = ctx
                    value = await fn(**kwargs)
                    if type(value) is int:  # digits: no credential pattern matches them
                        output = str(value)
                        result = ok_result(output, {"result": value})
                        if len(output) <= (tool.max_output_bytes or registry.max_output_bytes) // 4:
                            return result
                    else:
                        result = to_result(value)
                else:
                    result = await plan.run(args, ctx)  # type: ignore[misc]
                    if not isinstance(result, ToolResult):
                        result = not_a_result(tool, result)
            except Exception as exc:  # noqa: BLE001 - logged by failure_of
                result = failure_of(tool, exc, timeout_of(tool, registry.default_timeout))
            finally:
                reset_current_context(token)
        elif exclusive:
            # the workspace history's checkpoints around a call that may change files
            run = partial(dispatch, tool, args, ctx, registry.default_timeout)
            result = await around_call(tool, args, ctx, run)
        else:
            result = await dispatch(tool, args, ctx, registry.default_timeout)
    except Exception as exc:  # a bug of the pipeline itself: never raise
        logger.exception("call of %r failed", tool.name)
        result = _failed_before(tool.name, exc)
    finally:
        if hold:
            release(lock, exclusive)
    return post_process(registry, tool, result)  # step 9


def _failed_before(name: str, exc: Exception) -> ToolResult:
    return ToolResult.failure(
        ErrorKind.INTERNAL_ERROR,
        f"the call of {name!r} failed before it ran: {type(exc).__name__}: {exc}",
    )


def prepare(registry: ToolRegistry, name: str, raw: RawArguments) -> tuple[Tool, Any]:
    """Steps 3-5 (:meth:`ToolRegistry.validated_arguments
    <octos_tools.registry.ToolRegistry.validated_arguments>`, kept here for callers of
    round 4).

    Raises:
        ToolError: ``args_too_large``, ``invalid_json``, ``unknown_tool`` or
            ``invalid_arguments``.
    """
    return registry.validated_arguments(name, raw)


# ---------------------------------------------------------------------- spawn-only


def _spawn(registry: ToolRegistry, tool: Tool, args: Any, ctx: ToolContext) -> ToolResult:
    supervisor = registry.supervisor

    async def run(record: TaskRecord) -> ToolResult:
        supervisor.append_output(record.id, f"[starting] tool={tool.name} task_id={record.id}\n")
        result = post_process(
            registry, tool, await dispatch(tool, args, ctx, registry.default_timeout)
        )
        record.output_files.extend(_declared_outputs(result))
        supervisor.append_output(record.id, result.output or "[no output]")
        if not result.output.endswith("\n"):
            supervisor.append_output(record.id, "\n")
        return result

    record = supervisor.spawn(
        run,
        tool_name=tool.name,
        tool_call_id=ctx.tool_call_id,
        session_key=ctx.session_key,
        args=args.model_dump() if isinstance(args, BaseModel) else args,
    )
    message = registry.spawn_only_message(tool.name)
    summary = message or (
        f"Background work started for `{tool.name}`. Use read_task_output(task_handle, "
        "mode={kind: head|tail|grep|line_range|file}) to read its output without "
        "flooding the context."
    )
    envelope = {
        "ok": True,
        "task_handle": record.id,
        "summary": summary[:400],
        "expected_files": [],
        "output_dir": registry.output_dir_hint or "skill-output/",
        "read_with": "read_task_output",
        "read_modes": list(SPAWN_ONLY_READ_MODES),
    }
    text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
    return ToolResult.ok(text, structured_metadata={"task": envelope})


def _declared_outputs(result: ToolResult) -> list[str]:
    files: list[str] = list(result.files_to_send)
    files.extend(result.modified_files)
    meta = result.structured_metadata or {}
    extra = meta.get("output_files")
    if isinstance(extra, list):
        files.extend(str(x) for x in extra)
    return list(dict.fromkeys(files))


# ---------------------------------------------------------------------- output


def post_process(registry: ToolRegistry, tool: Tool | None, result: ToolResult) -> ToolResult:
    """Step 9: cap the output at the tool's (else the registry's) byte limit, head and
    tail kept; redact credentials from the output and the metadata when the registry
    redacts; filter prompt-injection phrases from untrusted content
    (:attr:`~octos_tools.tool_types.Tool.content_trust`, :func:`_filter_injection`). Returns
    ``result`` itself when nothing changed."""
    output = result.output
    limit = (tool.max_output_bytes if tool is not None else None) or registry.max_output_bytes
    if len(output) > limit // 4:
        output = cap_output(output, limit)
    if registry.redact:
        if len(output) >= _REDACT_MIN_CHARS:
            output = redact_secrets(output)
        meta = result.structured_metadata
        if meta:
            for value in meta.values():
                if type(value) not in _PLAIN:
                    # The metadata reaches the model too (MCP structuredContent, CLI JSON).
                    redacted = redact_value(meta)
                    if redacted is not meta:
                        result = replace(result, structured_metadata=redacted)
                    break
    trust = tool.content_trust if tool is not None else "trusted"
    if trust != "trusted" and registry.injection_filter != "off":
        output, result = _filter_injection(registry, trust, output, result)
    if output is not result.output:
        result = replace(result, output=output)
    return result


def _filter_injection(
    registry: ToolRegistry, trust: str, output: str, result: ToolResult
) -> tuple[str, ToolResult]:
    """Prompt-injection phrases of an untrusted or workspace result
    (:mod:`._injection`): blocked in the text of untrusted content when the registry's
    ``injection_filter`` is ``"block"``, else kept; the metadata says ``untrusted`` (for
    untrusted content) and lists the matches under ``injection``."""
    from ._injection import filter_text

    mode = registry.injection_filter if trust == "untrusted" else "flag"
    output, matches = filter_text(output, mode)  # type: ignore[arg-type]
    if trust != "untrusted" and not matches:
        return output, result
    meta = dict(result.structured_metadata or {})
    if trust == "untrusted":
        meta["untrusted"] = True
    if matches:
        meta["injection"] = {
            "action": "blocked" if mode == "block" else "flagged",
            "matches": [m.as_json() for m in matches[:20]],
            "count": len(matches),
        }
    return output, replace(result, structured_metadata=meta)
