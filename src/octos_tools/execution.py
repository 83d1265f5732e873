"""Batch execution: one model turn's tool calls (Safe calls together; a batch with an
Exclusive call runs serially, in call order).

:func:`execute_batch` gives exactly one result per call, in call order. In a serial batch,
after a failed call the calls that have not started get a synthetic ``cancelled`` result
naming the failed sibling, except that argument errors (``invalid_json``,
``invalid_arguments``, ``args_too_large``) do not cancel siblings: the model only has to
fix that one call. Each call runs through :meth:`ToolSession.call
<octos_tools.session.ToolSession.call>` (or the registry's default view), whose
readers-writer lock keeps an Exclusive call alone against concurrent calls too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import anyio

from .concurrency import acquire, batch_is_serial, release
from .context import ToolContext
from .errors import ErrorKind
from .output import cap_output, redact_secrets
from .tool_types import ConcurrencyClass, ToolCall, ToolResult

if TYPE_CHECKING:
    from .registry import ToolRegistry
    from .session import ToolSession

__all__ = [
    "NON_CASCADING_KINDS",
    "ToolCall",
    "cap_output",
    "execute_batch",
    "redact_secrets",
    "run_batch",
]

#: Failure kinds that do not cancel the rest of a serial batch.
NON_CASCADING_KINDS = frozenset(
    {ErrorKind.INVALID_JSON, ErrorKind.INVALID_ARGUMENTS, ErrorKind.ARGS_TOO_LARGE}
)


def _cancelled(call: ToolCall, failed: ToolCall) -> ToolResult:
    return ToolResult.failure(
        ErrorKind.CANCELLED,
        f"call {call.name!r} ({call.id}) was not run because the earlier call "
        f"{failed.name!r} ({failed.id}) in the same batch failed. Re-issue it on the next "
        "turn if it is still needed.",
        metadata={"failed_sibling": {"id": failed.id, "name": failed.name}},
    )


async def run_batch(
    calls: Sequence[ToolCall],
    run: Callable[[ToolCall], Awaitable[ToolResult]],
    concurrency_class: Callable[[str], ConcurrencyClass],
) -> list[ToolResult]:
    """The batch rule over any way of running one call.

    Args:
        calls: the calls, in the model's order.
        run: runs one call (e.g. a session's ``call``).
        concurrency_class: the class of a tool name (unknown names: Safe).

    Returns:
        One result per call, in call order.
    """
    if not calls:
        return []
    exclusive = batch_is_serial((c.name for c in calls), concurrency_class)
    results: list[ToolResult | None] = [None] * len(calls)
    if not exclusive:

        async def one(index: int, call: ToolCall) -> None:
            results[index] = await run(call)

        if len(calls) == 1:
            await one(0, calls[0])
        else:
            async with anyio.create_task_group() as tg:
                for index, call in enumerate(calls):
                    tg.start_soon(one, index, call)
    else:
        failed: ToolCall | None = None
        for index, call in enumerate(calls):
            if failed is not None:
                results[index] = _cancelled(call, failed)
                continue
            result = await run(call)
            results[index] = result
            if not result.success and result.error_kind not in NON_CASCADING_KINDS:
                failed = call
    return [
        r if r is not None else ToolResult.failure(ErrorKind.INTERNAL_ERROR, "no result")
        for r in results
    ]


async def execute_batch(
    target: ToolRegistry | ToolSession,
    calls: Sequence[ToolCall],
    ctx: ToolContext | None = None,
) -> list[ToolResult]:
    """Run one model turn's tool calls.

    * every call Safe → all run concurrently, the batch holding the session's lock shared
      (an Exclusive call of the session waits for the whole batch, so the batch sees one
      state of the files);
    * any call Exclusive → all run serially in call order, the batch holding the lock
      alone; after a failure the remaining calls get a ``cancelled`` result (argument
      errors excepted).

    Args:
        target: a :class:`~octos_tools.session.ToolSession` (its view and context), or a
            :class:`~octos_tools.registry.ToolRegistry` (its default session).
        calls: the calls, in the model's order.
        ctx: a base context; each call gets a copy with its own ``tool_call_id`` (default:
            the session's context, or a fresh one for a registry).

    Returns:
        One :class:`~octos_tools.tool_types.ToolResult` per call, in call order.
    """
    from .pipeline import run_call
    from .session import ToolSession

    if not calls:
        return []
    session = target if isinstance(target, ToolSession) else target.default_session
    registry = session.registry
    view = session.view
    base = session.ctx if ctx is None else registry.context_for(ctx, session)

    async def run(call: ToolCall) -> ToolResult:
        call_ctx = base if call.id == base.tool_call_id else base.for_call(call.id)
        return await run_call(view, call.name, call.arguments, call_ctx, locked=True)

    concurrency_class = registry.concurrency_class
    lock = view.lock
    exclusive = batch_is_serial((c.name for c in calls), concurrency_class)
    await acquire(lock, exclusive)
    try:
        return await run_batch(calls, run, concurrency_class)
    finally:
        release(lock, exclusive)
