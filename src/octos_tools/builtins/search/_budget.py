"""Time budget of one search call: a deadline and a stop flag that worker threads poll.

The registry runs each call under a timeout (an anyio cancel scope). A blocking search runs
in a worker thread, which a cancel scope cannot stop; so :func:`run_in_thread` gives the
thread a :class:`Budget` holding the scope's deadline (converted to ``time.monotonic``) and
a stop flag set when the call is cancelled. Walks check the budget between directories and
files, the rg reader between reads, the fallback regex engine is given the remaining time as
its own timeout: the thread ends close to the limit instead of running on unseen.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from ...errors import ErrorKind, ToolError

__all__ = ["Budget", "BudgetExceeded", "run_in_thread"]

_T = TypeVar("_T")


class BudgetExceeded(ToolError):
    """The call ran out of time (kind ``timeout``) or was cancelled."""

    def __init__(self, message: str = "the search ran out of time and was stopped") -> None:
        super().__init__(ErrorKind.TIMEOUT, message)


class Budget:
    """A deadline (``time.monotonic`` seconds, or ``None``: none) and a stop flag.

    Thread-safe: :meth:`stop` may be called from any thread.
    """

    __slots__ = ("_stop", "deadline")

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline
        self._stop = threading.Event()

    def stop(self) -> None:
        """Ask the work holding this budget to stop at its next :meth:`check`."""
        self._stop.set()

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called or the deadline has passed."""
        return self._stop.is_set() or (
            self.deadline is not None and time.monotonic() >= self.deadline
        )

    def remaining(self) -> float | None:
        """Seconds left (never negative), or ``None`` without a deadline."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def check(self) -> None:
        """Return if time is left; otherwise raise.

        Raises:
            BudgetExceeded: the deadline passed or :meth:`stop` was called.
        """
        if self.stopped:
            raise BudgetExceeded()


def _scope_deadline() -> float | None:
    """The enclosing cancel scopes' deadline as a ``time.monotonic`` value, or ``None``."""
    deadline = anyio.current_effective_deadline()
    if math.isinf(deadline):
        return None
    return time.monotonic() + (deadline - anyio.current_time())


async def run_in_thread(fn: Callable[[Budget], _T]) -> _T:
    """Run ``fn(budget)`` in a worker thread, bounded by the caller's cancel scopes.

    The budget's deadline is the enclosing scopes' effective deadline. When the call is
    cancelled (its timeout fires) the thread is abandoned and its budget stopped, so it
    ends at its next check instead of holding a worker thread.

    Raises:
        BudgetExceeded: ``fn`` ran out of time first (kind ``timeout``).
    """
    budget = Budget(_scope_deadline())
    try:
        return await anyio.to_thread.run_sync(fn, budget, abandon_on_cancel=True)
    finally:
        budget.stop()
