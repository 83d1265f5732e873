"""Running one tool: its timeout, its context and what a raised exception becomes
(step 8 of :mod:`octos_tools.pipeline`, without the lock and the stages).

:func:`dispatch` awaits a tool's coroutine with the call's
:class:`~octos_tools.context.ToolContext` set as
:func:`~octos_tools.context.current_context`, under ONE timeout (the tool's own, else the
default; none for a tool that waits for a person). The first step of the coroutine runs at
once: a tool that finishes without waiting needs no timer at all. A raised
:class:`~octos_tools.errors.ToolError` becomes its typed failure, a timeout ``timeout``,
any other exception ``internal_error`` (logged); cancellation propagates.
"""

from __future__ import annotations

import asyncio
import logging
import types
from asyncio.events import _get_running_loop  # the C fast path; None off asyncio
from collections.abc import Generator
from typing import Any

import anyio

from .context import ToolContext, reset_current_context, set_current_context
from .errors import ErrorKind, ToolError
from .tool_types import Tool, ToolResult

__all__ = ["dispatch", "failure_of", "not_a_result", "timeout_of"]

logger = logging.getLogger("octos_tools.pipeline")


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
    timeout = timeout_of(tool, default_timeout)
    token = set_current_context(ctx)
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
        return failure_of(tool, exc, timeout)
    finally:
        reset_current_context(token)
    if not isinstance(result, ToolResult):
        return not_a_result(tool, result)
    return result


def timeout_of(tool: Tool, default_timeout: float) -> float | None:
    """The call's timeout in seconds: the tool's own, else the default; none for a tool
    that waits for a person."""
    return None if tool.blocks_on_human_input else (tool.timeout or default_timeout)


def failure_of(tool: Tool, exc: Exception, timeout: float | None) -> ToolResult:
    """The failed result of a tool that raised ``exc``: a :class:`ToolError` its typed
    failure, a :class:`TimeoutError` (under a ``timeout``) ``timeout``, anything else
    ``internal_error`` (logged)."""
    if isinstance(exc, ToolError):
        return ToolResult.from_error(exc)
    if isinstance(exc, TimeoutError) and timeout is not None:
        from ._off_loop import is_off_loop

        what = (
            # Python cannot stop a thread: a plugin's blocking code runs on (docs/plugins.md)
            "its call was abandoned (the plugin's code may run on in its thread)"
            if is_off_loop(tool)
            else "was stopped"
        )
        return ToolResult.failure(
            ErrorKind.TIMEOUT, f"tool {tool.name!r} did not finish within {timeout:g} s and {what}"
        )
    logger.error("tool %r raised", tool.name, exc_info=exc)
    return ToolResult.failure(
        ErrorKind.INTERNAL_ERROR,
        f"tool {tool.name!r} failed with an internal error: {type(exc).__name__}: {exc}",
    )


def not_a_result(tool: Tool, value: object) -> ToolResult:
    return ToolResult.failure(
        ErrorKind.INTERNAL_ERROR,
        f"tool {tool.name!r} returned {type(value).__name__}, not a ToolResult",
    )
