"""A readers-writer lock for anyio tasks: the concurrency rule of a session.

Safe calls hold it shared (they run together); an Exclusive call holds it alone (no other
call of the session overlaps it). Writers are preferred: once an Exclusive call waits, new
Safe calls queue behind it, so a stream of reads cannot starve a write.

Acquiring a free lock does not yield to the event loop (no checkpoint): the common case,
a Safe call with no writer around, costs a few attribute operations.
"""

from __future__ import annotations

import anyio

__all__ = ["ReadWriteLock"]


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
