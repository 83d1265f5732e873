"""The git guard in the background: every :data:`TICK_SECS` while a sandboxed process that
outlives its call is alive (an ``exec_command`` session, a mounted stdio MCP server in
``workspace-write``), so what it plants between two polls or calls is undone within a
bounded window instead of at the next poll.

One daemon thread for the whole process runs :meth:`~._git_guard.GuardWatch.tick` of every
registered watch, then sleeps; it stops when nothing is registered. A tick is the guard's
ordinary check (the walk lists again only the folders whose ``ctime`` changed), so what it
catches and how it judges are the same as after a command; its lines wait in the watch's
``notes`` for the next poll or call and are logged at once (``octos_tools.sandbox``).

Why a clock and not inotify (the history package's :mod:`octos_tools.history._watch`): a
new repository can appear in any folder, so inotify needs a watch on every folder of the
writable roots (a second set beside the history's, from the same per-user limit), must
race each new folder's creation against its watch, and wakes at every file a build writes;
the check would still be the judge. The clock costs one walk of unchanged folders
(``lstat`` each) per tick and bounds the window at :data:`TICK_SECS` plus one check; on a
tree so big that the checks would take more than :data:`MAX_CPU_SHARE` of a core, the
ticks space out to keep that share, and the window grows with them (50 times one round).
"""

from __future__ import annotations

import logging
import threading
import time

from ._git_guard import GuardWatch

__all__ = ["MAX_CPU_SHARE", "TICK_SECS", "GuardTicker", "ticker"]

#: Seconds between two background checks of a live watch: what a background process
#: plants is undone within this (plus one check, about 1 ms on 10,000 files).
TICK_SECS = 0.25
#: The share of one core the ticks may take: when a round of checks takes longer than
#: this share of :data:`TICK_SECS` (a big tree, many live watches), the next round waits
#: longer (a 50 ms round: the next one 2.45 s later).
MAX_CPU_SHARE = 0.02

logger = logging.getLogger("octos_tools.sandbox")


class GuardTicker:
    """Runs the registered watches' :meth:`~._git_guard.GuardWatch.tick` every ``period``
    seconds on a thread of its own (started on the first :meth:`add`).

    Args:
        period: seconds between ticks (at least; see :data:`MAX_CPU_SHARE`).
        share: the share of one core a round of ticks may take.
    """

    def __init__(self, period: float = TICK_SECS, share: float = MAX_CPU_SHARE) -> None:
        self.period = period
        self.share = share
        self.last_wait = period
        self.ticks = 0
        self._watches: dict[int, GuardWatch] = {}
        self._ids = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, watch: GuardWatch) -> int:
        """Check ``watch`` in the background until :meth:`remove` of the returned handle."""
        with self._cond:
            self._ids += 1
            self._watches[self._ids] = watch
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="octos-git-guard", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()
            return self._ids

    def remove(self, handle: int) -> None:
        """Stop checking the watch of ``handle`` (unknown handles are ignored)."""
        with self._cond:
            self._watches.pop(handle, None)
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._watches)

    def _run(self) -> None:
        next_at = time.monotonic() + self.period
        while True:
            with self._cond:
                while self._watches and (wait := next_at - time.monotonic()) > 0:
                    self._cond.wait(wait)
                if not self._watches:
                    self._thread = None
                    return
                handles = list(self._watches)
            started = time.monotonic()
            for handle in handles:
                with self._cond:
                    watch = self._watches.get(handle)  # removed meanwhile: its end was checked
                if watch is not None:
                    try:
                        for line in watch.tick():
                            logger.warning("%s", line)
                    except Exception:  # the thread must keep ticking the others
                        logger.exception("the git guard's background check failed")
            self.ticks += 1
            now = time.monotonic()
            spent = now - started
            self.last_wait = max(self.period, spent * (1 - self.share) / self.share)
            next_at = now + self.last_wait


_ticker = GuardTicker()


def ticker() -> GuardTicker:
    """The process's :class:`GuardTicker`."""
    return _ticker
