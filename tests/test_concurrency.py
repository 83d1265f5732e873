"""The readers-writer lock that orders a session's calls."""

from __future__ import annotations

import anyio
import pytest

from octos_tools.concurrency import ReadWriteLock


@pytest.mark.anyio
async def test_readers_share_a_writer_waits_and_then_goes_first() -> None:
    lock = ReadWriteLock()
    order: list[str] = []
    await lock.acquire_read()
    await lock.acquire_read()
    assert lock.readers == 2

    async def writer() -> None:
        await lock.acquire_write()
        order.append("write")
        await anyio.sleep(0.01)
        lock.release_write()

    async def late_reader() -> None:
        await lock.acquire_read()  # queued behind the waiting writer
        order.append("late read")
        lock.release_read()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            await anyio.sleep(0.01)
            assert not lock.try_acquire_read()  # a writer waits: no new shared hold
            tg.start_soon(late_reader)
            await anyio.sleep(0.01)
            assert order == []
            lock.release_read()
            lock.release_read()
    assert order == ["write", "late read"]
    assert lock.readers == 0 and not lock.writing


@pytest.mark.anyio
async def test_a_cancelled_waiting_writer_lets_queued_readers_go() -> None:
    lock = ReadWriteLock()
    await lock.acquire_read()
    got: list[str] = []

    async def reader() -> None:
        await lock.acquire_read()
        got.append("read")
        lock.release_read()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)  # runs once the writer below waits, so it queues
            with anyio.move_on_after(0.05):
                await lock.acquire_write()  # never granted: this task holds a read
            await anyio.sleep(0.01)
            assert got == ["read"]  # the reader did not stay behind the gone writer
    lock.release_read()
    assert lock.readers == 0
    await lock.acquire_write()
    assert lock.writing
    lock.release_write()
