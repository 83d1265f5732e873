"""The Safe / Exclusive rule, in one place (octos ``crates/octos-agent/src/agent/execution.rs``).

Each tool declares a :class:`~octos_tools.tool_types.ConcurrencyClass`. Within one session:

* a **Safe** call (reads, searches) holds the session's :class:`ReadWriteLock` shared:
  Safe calls run together;
* an **Exclusive** call (writes, patches, commands) holds it alone: no other call of the
  session overlaps it, whether the calls arrive in one batch or as concurrent requests;
* writers are preferred: once an Exclusive call waits, new Safe calls queue behind it, so
  a stream of reads cannot starve a write;
* a **batch** (one model turn, :func:`octos_tools.execution.execute_batch`) with any
  Exclusive call runs serially in call order holding the lock alone
  (:func:`batch_is_serial`); an all-Safe batch runs concurrently holding it shared.

The pipeline (:mod:`octos_tools.pipeline`) takes and releases the lock per call through
:func:`try_acquire`, :func:`acquire` and :func:`release`; the batch runner through the
same. Acquiring a free lock does not yield to the event loop (no checkpoint): the common
case, a Safe call with no writer around, costs a few attribute operations.

A call whose coroutine cannot suspend (it runs inline, :mod:`octos_tools._call_plan`)
needs the lock only to be free for it (:meth:`ReadWriteLock.free_for`): it ends before
any other task of the loop runs, so holding the lock meanwhile would change nothing any
other call could see. When the lock is not free for it, it waits and holds it like any
other call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import anyio

from .tool_types import ConcurrencyClass

__all__ = [
    "ReadWriteLock",
    "acquire",
    "batch_is_serial",
    "is_exclusive",
    "release",
    "try_acquire",
]

_EXCLUSIVE = ConcurrencyClass.EXCLUSIVE


def is_exclusive(concurrency_class: ConcurrencyClass) -> bool:
    """Whether a call of this class must run alone in its session."""
    return concurrency_class is _EXCLUSIVE


def batch_is_serial(
    names: Iterable[str], concurrency_class: Callable[[str], ConcurrencyClass]
) -> bool:
    """Whether a batch of calls of ``names`` runs serially (any of them Exclusive).

    Args:
        names: the tool names of the batch's calls.
        concurrency_class: the class of a name (unknown names: Safe).
    """
    return any(concurrency_class(name) is _EXCLUSIVE for name in names)


class ReadWriteLock:
    """Shared (read) / exclusive (write) lock for tasks of one event loop.

    Not reentrant: a task holding it must not acquire it again (a write inside a read, or
    a second write, waits for itself). Not thread-safe (anyio tasks of one loop only).
    """

    __slots__ = ("_changed", "_readers", "_waiting_writers", "_writer")

    def __init__(self) -> None:
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0
        self._changed: anyio.Event | None = None

    @property
    def readers(self) -> int:
        """How many tasks hold the lock shared."""
        return self._readers

    @property
    def writing(self) -> bool:
        """Whether a task holds the lock exclusively."""
        return self._writer

    def _notify(self) -> None:
        changed = self._changed
        if changed is not None:
            self._changed = None
            changed.set()

    async def _wait(self) -> None:
        if self._changed is None:
            self._changed = anyio.Event()
        await self._changed.wait()

    def free_for(self, exclusive: bool) -> bool:
        """Whether a call could hold the lock now without waiting (alone when
        ``exclusive``: nobody holds or waits for it; shared: no writer holds or waits)."""
        if exclusive:
            return not (self._writer or self._readers or self._waiting_writers)
        return not (self._writer or self._waiting_writers)

    def try_acquire_write(self) -> bool:
        """Hold the lock alone if that needs no wait (nobody holds or waits for it);
        ``False`` otherwise (then await :meth:`acquire_write`)."""
        if self._writer or self._readers or self._waiting_writers:
            return False
        self._writer = True
        return True

    def try_acquire_read(self) -> bool:
        """Hold the lock shared if that needs no wait (no writer holds or waits for it);
        ``False`` otherwise (then await :meth:`acquire_read`)."""
        if self._writer or self._waiting_writers:
            return False
        self._readers += 1
        return True

    async def acquire_read(self) -> None:
        """Wait until no writer holds or waits for the lock, then hold it shared."""
        while self._writer or self._waiting_writers:
            await self._wait()
        self._readers += 1

    def release_read(self) -> None:
        """Release a shared hold."""
        self._readers -= 1
        if self._readers == 0:
            self._notify()

    async def acquire_write(self) -> None:
        """Wait until nobody holds the lock, then hold it alone."""
        self._waiting_writers += 1
        try:
            while self._writer or self._readers:
                await self._wait()
        except BaseException:
            self._waiting_writers -= 1
            self._notify()  # readers queued behind this writer may go now
            raise
        self._waiting_writers -= 1
        self._writer = True

    def release_write(self) -> None:
        """Release the exclusive hold."""
        self._writer = False
        self._notify()


def try_acquire(lock: ReadWriteLock, exclusive: bool) -> bool:
    """Hold ``lock`` for one call without waiting (alone for an Exclusive call, shared
    for a Safe one); ``False`` when the call must wait (then await :func:`acquire`)."""
    return lock.try_acquire_write() if exclusive else lock.try_acquire_read()


async def acquire(lock: ReadWriteLock, exclusive: bool) -> None:
    """Wait for ``lock`` and hold it for one call (alone when ``exclusive``)."""
    if exclusive:
        await lock.acquire_write()
    else:
        await lock.acquire_read()


def release(lock: ReadWriteLock, exclusive: bool) -> None:
    """Release what :func:`try_acquire` / :func:`acquire` took."""
    if exclusive:
        lock.release_write()
    else:
        lock.release_read()
