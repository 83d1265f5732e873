"""The call pipeline: every tool call of every host runs through :func:`run_call`.

A :class:`~octos_tools.session.ToolSession` (MCP server, agent loop, ``octos-tools call``)
and :meth:`ToolRegistry.execute <octos_tools.registry.ToolRegistry.execute>` (the
registry's default view) both call it, in this order:

1. **policy**: hard policies, the provider policy and ``require_tags`` (the registry's
   verdict, cached until its next mutation), then the call context's
   :class:`~octos_tools.context.ToolPermissions` (alias links included) → ``policy_denied``;
2. **deferral**: a deferred tool called by name is activated (its first group) in the
   calling view only; deferral saves tokens, it is not a permission;
3. **size**: the raw argument bytes against the limit, before parsing → ``args_too_large``;
4. **lookup** → ``unknown_tool`` naming the closest registered names;
5. **parse and validate, once**: a typed tool (:class:`~octos_tools.typed.TypedTool`,
   ``@tool``) validates the raw JSON straight into its ``Args`` model; a JSON-schema tool
   is parsed and checked with ``jsonschema`` (imported then) → ``invalid_json`` /
   ``invalid_arguments``;
6. usage recorded in the view's LRU;
7. **spawn-only** tools return a task-handle envelope at once and run in the
   :class:`~octos_tools.tasks.TaskSupervisor` (outside the session's lock: a background
   task does not hold the session's other calls back);
8. **dispatch** under the view's readers-writer lock (Safe calls together, an Exclusive
   call alone) and ONE timeout scope → ``timeout``; a raised
   :class:`~octos_tools.errors.ToolError` becomes its typed failure, any other exception
   ``internal_error`` (never a crash of the host);
9. **output post-processing**: head/tail cap and credential redaction.

Steps 1, 2, 4 and the choice of validator and runner are decided once per tool name and
view (a :class:`~octos_tools._call_plan.CallPlan`, dropped at every change of the registry
or the view); the context's permissions, the size, the lock, the timeout and the output
cap are checked on every call. A tool whose coroutine cannot suspend (no ``await`` in its
own code) is awaited straight from :func:`run_call`'s frame: it ends in its first step, so
no timer is armed (none could stop it); every other tool runs under its timeout.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import types
from asyncio.events import _get_running_loop  # the C fast path; None off asyncio
from collections.abc import Generator, Mapping
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, ValidationError

from ._call_plan import cached_model, plan_call, typed_model
from .arguments import parse_arguments, validate_arguments
from .context import _CURRENT, ToolContext
from .errors import ErrorKind, ToolError
from .function_tool import to_result
from .history import around_call
from .output import cap_output, redact_secrets, redact_value
from .tool import ConcurrencyClass, Tool, ToolResult, ok_result
from .typed import ToolArgs, validate_arguments_of

if TYPE_CHECKING:
    from ._call_plan import CallPlan
    from .registry import ToolRegistry, ToolView
    from .tasks import TaskRecord

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

SPAWN_ONLY_READ_MODES = ("head", "tail", "grep", "line_range", "file")
"""The ``read_task_output`` modes a spawn-only envelope advertises."""

RawArguments = str | bytes | Mapping[str, Any] | None
"""What a model (or a library caller) sends as a call's arguments."""

_EXCLUSIVE = ConcurrencyClass.EXCLUSIVE
_set_context = _CURRENT.set  # bound once: ~1k instructions less per call than
_reset_context = _CURRENT.reset  # looking the methods up on the ContextVar each time
_FAST_JSON_CHARS = 4000
"""Raw strings up to this length (ASCII, no ``\\u`` escape) are validated straight from
JSON: they cannot hold a lone surrogate or an integer Python refuses to print."""
_PLAIN = frozenset({int, float, bool, type(None)})
"""Metadata values that cannot hold a credential (no redaction walk needed)."""
_REDACT_MIN_CHARS = 8
"""Outputs shorter than this hold no credential any redaction pattern recognises."""


async def run_call(
    view: ToolView, name: str, raw: RawArguments, ctx: ToolContext, *, locked: bool = False
) -> ToolResult:
    """Run one tool call through the whole pipeline (module docstring) in ``view``.

    Args:
        view: the calling session's view (or the registry's default view).
        name: the tool name the model asked for.
        raw: the raw argument string exactly as sent, parsed arguments, or ``None``.
        ctx: the call's context, already completed by
            :meth:`~octos_tools.registry.ToolRegistry.context_for`.
        locked: the caller already holds ``view.lock`` for this call (a batch holds it
            for all its calls); the lock is not reentrant.

    Returns:
        The result; never raises for a bad call (cancellation propagates).
    """
    stages = view.stages
    if stages is not None:  # hooks, tracing or an audit log: see octos_tools.stages
        return await stages.run(view, name, raw, ctx, locked)
    registry = view.registry
    # The fast path: a planned name (allowed, not deferred, typed: see _call_plan), a
    # context without permission lists, a short ASCII argument string without escapes
    # (under the size limit, no lone surrogate possible) that validates at once.
    plan: CallPlan | None
    try:
        plan = view._plans[name]
    except KeyError:
        plan = plan_call(view, name)
    permissions = ctx.permissions
    tool: Tool | None = None
    if (
        plan is not None
        and type(raw) is str
        and not permissions.denied_tools
        and permissions.allowed_tools is None
        and (size := len(raw)) <= _FAST_JSON_CHARS
        and size <= registry.max_args_size
        and raw.isascii()
        and "\\u" not in raw
    ):
        try:
            args = plan.validate_json(raw)
        except ValidationError:
            pass  # the general way says exactly what is wrong (or applies a leniency)
        else:
            lifecycle = view.lifecycle
            lifecycle.last_used[name] = lifecycle.iteration  # usage for the LRU
            tool = plan.tool
            fn = plan.fn
            run = plan.run
            if fn is not None or run is not None:
                # A coroutine that never suspends: no timer (nothing could stop it before
                # it ends), a free lock taken and released in place, one coroutine frame.
                lock = view.lock
                exclusive = tool.concurrency_class is _EXCLUSIVE
                if not locked:
                    if exclusive:
                        if lock._writer or lock._readers or lock._waiting_writers:
                            await lock.acquire_write()
                        else:
                            lock._writer = True
                    elif lock._writer or lock._waiting_writers:
                        await lock.acquire_read()
                    else:
                        lock._readers += 1
                token = _set_context(ctx)
                try:
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
                            if (
                                len(output)
                                <= (tool.max_output_bytes or registry.max_output_bytes) // 4
                            ):
                                return result
                        else:
                            result = to_result(value)
                    elif run is not None:
                        result = await run(args, ctx)
                        if not isinstance(result, ToolResult):
                            result = _not_a_result(tool, result)
                except Exception as exc:  # noqa: BLE001 - logged by _failure_of
                    result = _failure_of(tool, exc, _timeout_of(tool, registry.default_timeout))
                finally:
                    _reset_context(token)
                    if not locked:
                        if exclusive:
                            lock.release_write()
                        else:
                            lock._readers -= 1
                            if not lock._readers and lock._changed is not None:
                                lock._notify()
                return post_process(registry, tool, result)
    if tool is None:  # the general way: steps 1-6
        try:
            tool, args = admit(view, name, raw, ctx)
        except ToolError as exc:
            return post_process(registry, tool, ToolResult.from_error(exc))
        except Exception as exc:  # a bug before dispatch (e.g. in validation): never raise
            logger.exception("call of %r failed before it ran", name)
            return post_process(registry, tool, _failed_before(name, exc))
    return post_process(registry, tool, await execute(view, tool, args, ctx, locked=locked))


def admit(view: ToolView, name: str, raw: RawArguments, ctx: ToolContext) -> tuple[Tool, Any]:
    """Steps 1-6 of a call in ``view``: policy (the registry's verdict, then the context's
    permissions), deferral, size, lookup, parse and validate, the LRU mark.

    Returns:
        The tool and its validated arguments (an ``Args`` instance for a typed tool, else
        a ``dict``).

    Raises:
        ToolError: ``policy_denied``, ``args_too_large``, ``invalid_json``,
            ``unknown_tool`` or ``invalid_arguments``.
    """
    registry = view.registry
    decision = registry._verdicts.get(name)  # cached until the next mutation
    if decision is None:
        decision = registry.evaluate(name)
    if not decision.allowed:
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
    if (name in view._evicted or name in registry._deferred) and view.is_deferred(name):
        view.auto_activate(name)
    tool, args = prepare(registry, name, raw)
    lifecycle = view.lifecycle
    lifecycle.last_used[name] = lifecycle.iteration  # usage for the LRU
    return tool, args


async def execute(
    view: ToolView, tool: Tool, args: Any, ctx: ToolContext, *, locked: bool = False
) -> ToolResult:
    """Steps 7-8 of an admitted call: a spawn-only tool starts in the background (its
    task-handle envelope is the result), any other runs under ``view``'s lock (unless the
    caller holds it: ``locked``) and its timeout. Never raises for a bad call; the result
    is not post-processed (:func:`post_process`)."""
    registry = view.registry
    try:
        if tool.name in registry._spawn_only:
            return _spawn(registry, tool, args, ctx)
        if tool.concurrency_class is _EXCLUSIVE:
            # the workspace history's checkpoints around a call that may change files
            run = partial(dispatch, tool, args, ctx, registry.default_timeout)
            if locked:
                return await around_call(tool, args, ctx, run)
            lock = view.lock
            await lock.acquire_write()
            try:
                return await around_call(tool, args, ctx, run)
            finally:
                lock.release_write()
        if locked:
            return await dispatch(tool, args, ctx, registry.default_timeout)
        lock = view.lock
        if not lock.try_acquire_read():
            await lock.acquire_read()
        try:
            return await dispatch(tool, args, ctx, registry.default_timeout)
        finally:
            lock.release_read()
    except ToolError as exc:  # from a spawn
        return ToolResult.from_error(exc)
    except Exception as exc:  # a bug of the pipeline itself: never raise
        logger.exception("call of %r failed before it ran", tool.name)
        return _failed_before(tool.name, exc)


def _failed_before(name: str, exc: Exception) -> ToolResult:
    return ToolResult.failure(
        ErrorKind.INTERNAL_ERROR,
        f"the call of {name!r} failed before it ran: {type(exc).__name__}: {exc}",
    )


# ---------------------------------------------------------------------- arguments


def prepare(registry: ToolRegistry, name: str, raw: RawArguments) -> tuple[Tool, Any]:
    """Size check, lookup, parse and validate (steps 3-5): the tool and its arguments, an
    ``Args`` instance for a typed tool, else a ``dict``.

    Raises:
        ToolError: ``args_too_large``, ``invalid_json``, ``unknown_tool`` or
            ``invalid_arguments``.
    """
    limit = registry.max_args_size
    tool = registry._tools.get(name)
    if tool is None:
        parse_arguments(raw, tool_name=name, limit=limit)  # a bad argument string first
        raise _unknown_tool(registry, name)
    model = cached_model(registry, name, tool)
    if model is not None:
        return tool, _typed_arguments(model, name, raw, limit)
    parsed = parse_arguments(raw, tool_name=name, limit=limit)
    if tool.validate_arguments:
        try:
            validator = registry.validator_of(tool)
        except Exception as exc:  # noqa: BLE001 - jsonschema.SchemaError: the tool's fault
            raise ToolError(ErrorKind.INTERNAL_ERROR, str(getattr(exc, "message", exc))) from None
        parsed = validate_arguments(parsed, tool.input_schema, tool_name=name, validator=validator)
    return tool, parsed


def _typed_arguments(model: type[ToolArgs], name: str, raw: RawArguments, limit: int) -> ToolArgs:
    if type(raw) is str and len(raw) <= _FAST_JSON_CHARS and raw.isascii() and "\\u" not in raw:
        # ASCII without escapes: no lone surrogate, no integer Python refuses; under the
        # limit unless the limit itself is tiny. Straight from JSON into the model.
        if len(raw) <= limit:
            try:  # model_validate_json without its Python wrapper
                return model.__pydantic_validator__.validate_json(raw)  # type: ignore[no-any-return]
            except ValidationError:
                pass  # the rules below say exactly what is wrong (or apply a leniency)
    parsed = parse_arguments(raw, tool_name=name, limit=limit)
    return validate_arguments_of(model, parsed, name)


def _unknown_tool(registry: ToolRegistry, name: str) -> ToolError:
    pool = [n for n in registry._tools if registry.evaluate(n).allowed]
    close = difflib.get_close_matches(name, pool, n=3, cutoff=0.5)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    if not close and pool:
        hint = f" Available tools: {', '.join(pool[:20])}{'…' if len(pool) > 20 else ''}."
    return ToolError(ErrorKind.UNKNOWN_TOOL, f"unknown tool {name!r}.{hint}", suggestions=close)


# ---------------------------------------------------------------------- dispatch


@types.coroutine
def _finish(coro: Any, pending: Any) -> Generator[Any, Any, Any]:
    """Drive an already-started coroutine to its end (what ``yield from`` does)."""
    while True:
        try:
            sent = yield pending
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # noqa: BLE001 - cancellation goes to the tool
            try:
                pending = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                pending = coro.send(sent)
            except StopIteration as stop:
                return stop.value


async def _finish_with_timeout(coro: Any, pending: Any, timeout: float | None) -> Any:
    """Finish a coroutine whose first step yielded ``pending``, with at most one timeout
    (seconds; ``None``: none).

    On asyncio one ``loop.call_at`` timer cancels the task at the deadline and the
    cancellation is turned into :class:`TimeoutError` (what :func:`asyncio.timeout` does,
    without a cancel scope on anyio's stack, so the tool's own scopes, entered during its
    first step, nest as written).

    Raises:
        TimeoutError: at the deadline.
    """
    if timeout is None:
        return await _finish(coro, pending)
    loop = asyncio.get_running_loop()
    task = asyncio.current_task(loop)
    assert task is not None
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    handle = loop.call_at(loop.time() + timeout, expire)
    try:
        result = await _finish(coro, pending)
    except asyncio.CancelledError:
        if expired and task.uncancel() == 0:
            raise TimeoutError from None
        raise
    finally:
        handle.cancel()
    if expired:  # the tool swallowed the cancellation and finished anyway
        task.uncancel()
    return result


async def dispatch(tool: Tool, args: Any, ctx: ToolContext, default_timeout: float) -> ToolResult:
    """Run ``tool`` with validated ``args`` (an ``Args`` instance for a typed tool, else a
    ``dict``) under its timeout, with ``ctx`` as :func:`~octos_tools.context.current_context`.

    The timeout (seconds) is the tool's own, else ``default_timeout``; none for a tool that
    waits for a person. A :class:`~octos_tools.errors.ToolError` becomes its typed failure,
    a timeout ``timeout``, any other exception ``internal_error``; cancellation propagates.
    """
    timeout = _timeout_of(tool, default_timeout)
    token = _set_context(ctx)
    try:
        if type(args) is dict:  # a JSON-schema tool (or one validating by itself)
            coro = tool.execute_with_context(ctx, args)
        else:  # an Args instance of a typed tool
            coro = tool.run(args, ctx)  # type: ignore[attr-defined]
        send = coro.send if type(coro) is types.CoroutineType else None
        if send is None or (timeout is not None and _get_running_loop() is None):
            if timeout is None:
                result = await coro
            else:
                with anyio.fail_after(timeout):
                    result = await coro
        else:
            # Run the first step at once: a tool that finishes without waiting (most
            # calls of a fast tool) needs no timer at all.
            try:
                pending = send(None)
            except StopIteration as stop:
                result = stop.value
            else:
                result = await _finish_with_timeout(coro, pending, timeout)
    except Exception as exc:  # noqa: BLE001 - logged by _failure_of; cancellation propagates
        return _failure_of(tool, exc, timeout)
    finally:
        _reset_context(token)
    if not isinstance(result, ToolResult):
        return _not_a_result(tool, result)
    return result


def _timeout_of(tool: Tool, default_timeout: float) -> float | None:
    """The call's timeout in seconds: the tool's own, else the default; none for a tool
    that waits for a person."""
    return None if tool.blocks_on_human_input else (tool.timeout or default_timeout)


def _failure_of(tool: Tool, exc: Exception, timeout: float | None) -> ToolResult:
    """The failed result of a tool that raised ``exc``: a :class:`ToolError` its typed
    failure, a :class:`TimeoutError` (under a ``timeout``) ``timeout``, anything else
    ``internal_error`` (logged)."""
    if isinstance(exc, ToolError):
        return ToolResult.from_error(exc)
    if isinstance(exc, TimeoutError) and timeout is not None:
        return ToolResult.failure(
            ErrorKind.TIMEOUT,
            f"tool {tool.name!r} did not finish within {timeout:g} s and was stopped",
        )
    logger.error("tool %r raised", tool.name, exc_info=exc)
    return ToolResult.failure(
        ErrorKind.INTERNAL_ERROR,
        f"tool {tool.name!r} failed with an internal error: {type(exc).__name__}: {exc}",
    )


def _not_a_result(tool: Tool, value: object) -> ToolResult:
    return ToolResult.failure(
        ErrorKind.INTERNAL_ERROR,
        f"tool {tool.name!r} returned {type(value).__name__}, not a ToolResult",
    )


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
    (:attr:`~octos_tools.tool.Tool.content_trust`, :func:`_filter_injection`). Returns
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
