"""Batch execution: Safe calls concurrently, any Exclusive call makes the batch serial
(seed §6.2.5, reference §6.1).

``execute_batch`` gives exactly one result per call, in call order. After a failed call the
calls that have not started get a synthetic ``cancelled`` result naming the failed sibling,
except that argument errors (``invalid_json``, ``invalid_arguments``, ``args_too_large``)
do not cancel siblings: the model only has to fix that one call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from .context import ToolContext
from .errors import ErrorKind
from .output import cap_output, redact_secrets
from .registry import ToolRegistry
from .tool import ConcurrencyClass, ToolResult

__all__ = [
    "NON_CASCADING_KINDS",
    "ToolCall",
    "cap_output",
    "execute_batch",
    "redact_secrets",
]

#: Failure kinds that do not cancel the rest of a serial batch.
NON_CASCADING_KINDS = frozenset(
    {ErrorKind.INVALID_JSON, ErrorKind.INVALID_ARGUMENTS, ErrorKind.ARGS_TOO_LARGE}
)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of a model turn.

    Attributes:
        id: the model's tool-call id (echoed back with the result).
        name: the tool name.
        arguments: the raw argument string as sent, or parsed arguments.
    """

    id: str
    name: str
    arguments: str | bytes | Mapping[str, Any] | None = None


def _context(ctx: ToolContext | None, call: ToolCall) -> ToolContext | None:
    if ctx is None:
        return ToolContext(tool_call_id=call.id)
    return ctx.for_call(call.id)


def _cancelled(call: ToolCall, failed: ToolCall) -> ToolResult:
    return ToolResult.failure(
        ErrorKind.CANCELLED,
        f"call {call.name!r} ({call.id}) was not run because the earlier call "
        f"{failed.name!r} ({failed.id}) in the same batch failed. Re-issue it on the next "
        "turn if it is still needed.",
        metadata={"failed_sibling": {"id": failed.id, "name": failed.name}},
    )


async def execute_batch(
    registry: ToolRegistry,
    calls: Sequence[ToolCall],
    ctx: ToolContext | None = None,
) -> list[ToolResult]:
    """Run one model turn's tool calls.

    * every call Safe → all run concurrently;
    * any call Exclusive → all run serially in call order; after a failure the remaining
      calls get a ``cancelled`` result (argument errors excepted).

    Args:
        registry: the registry to run them in.
        calls: the calls, in the model's order.
        ctx: a base context; each call gets a copy with its own ``tool_call_id``.

    Returns:
        One :class:`~octos_tools.tool.ToolResult` per call, in call order.
    """
    if not calls:
        return []
    exclusive = any(registry.concurrency_class(c.name) is ConcurrencyClass.EXCLUSIVE for c in calls)
    results: list[ToolResult | None] = [None] * len(calls)
    if not exclusive:

        async def run(index: int, call: ToolCall) -> None:
            results[index] = await registry.execute(call.name, call.arguments, _context(ctx, call))

        async with anyio.create_task_group() as tg:
            for index, call in enumerate(calls):
                tg.start_soon(run, index, call)
    else:
        failed: ToolCall | None = None
        for index, call in enumerate(calls):
            if failed is not None:
                results[index] = _cancelled(call, failed)
                continue
            result = await registry.execute(call.name, call.arguments, _context(ctx, call))
            results[index] = result
            if not result.success and result.error_kind not in NON_CASCADING_KINDS:
                failed = call
    return [
        r if r is not None else ToolResult.failure(ErrorKind.INTERNAL_ERROR, "no result")
        for r in results
    ]
