"""Progress of long built-in calls: a heartbeat while a call waits.

MCP lets a request carry a ``progressToken`` and the server answer with
``notifications/progress`` while it works (MCP specification, *Utilities → Progress*);
``serve`` gives every call a :class:`~octos_tools.context.ProgressReporter` for it, a no-op
when the request carried no token. :func:`heartbeat` reports the seconds elapsed every
:data:`INTERVAL` seconds for as long as its block runs (a command waiting to finish, a
search over a big tree), so a host can show the call is alive and does not time it out.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from .context import ToolContext

__all__ = ["INTERVAL", "heartbeat"]

INTERVAL = 2.0
"""Seconds between two heartbeats."""


@asynccontextmanager
async def heartbeat(
    ctx: ToolContext | None,
    what: str,
    *,
    total: float | None = None,
    interval: float | None = None,
) -> AsyncIterator[None]:
    """Report ``(seconds elapsed, total, "<what>: N s")`` every ``interval`` seconds while
    the block runs; nothing when ``ctx`` has no progress reporter.

    Args:
        ctx: the call's context.
        what: what the call is doing, e.g. ``"running: make test"``.
        total: the most seconds it may take (its timeout), or ``None``.
        interval: seconds between reports (default :data:`INTERVAL`).
    """
    if ctx is None or ctx.progress is None:
        yield
        return
    every = INTERVAL if interval is None else interval
    started = time.monotonic()

    async def beat() -> None:
        while True:
            await anyio.sleep(every)
            elapsed = round(time.monotonic() - started, 1)
            await ctx.report_progress(elapsed, total, f"{what}: {elapsed:.0f} s")

    async with anyio.create_task_group() as tg:
        tg.start_soon(beat)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()
