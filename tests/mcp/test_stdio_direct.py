"""The stdio transport's direct streams (stdout a pipe): each message decoded and written by
the task that uses it. Answers never interleave on a pipe that is full, not even when the
sending task is cancelled; undecodable lines reach the SDK as their exception."""

from __future__ import annotations

import fcntl
import json
import os

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from octos_tools.mcp.stdio import CappedLines, PipeWriter, _DirectReads, _DirectWrites

pytestmark = pytest.mark.anyio

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def _small_pipe() -> tuple[int, int]:
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, 4096)
    os.set_blocking(w, False)
    return r, w


def _message(n: int, size: int) -> SessionMessage:
    result = {"content": [{"type": "text", "text": f"{n}:" + "x" * size}]}
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=n, result=result))


async def _drain(r: int, into: bytearray, stop: anyio.Event) -> None:
    """Read ``r`` in small bites until end of input, or until ``stop`` and nothing is left."""
    os.set_blocking(r, False)
    while True:
        try:
            chunk = os.read(r, 1500)  # slower than the writers: the pipe fills up
        except BlockingIOError:
            if stop.is_set():
                return
            await anyio.sleep(0.001)
            continue
        if not chunk:
            return
        into.extend(chunk)
        await anyio.sleep(0)


def _lines(data: bytearray) -> list[dict[str, object]]:
    text = data.decode("utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


async def test_concurrent_answers_on_a_full_pipe_never_interleave() -> None:
    r, w = _small_pipe()
    writes = _DirectWrites(PipeWriter(w))
    got = bytearray()
    stop = anyio.Event()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_drain, r, got, stop)
            async with anyio.create_task_group() as senders:
                for n in range(12):
                    senders.start_soon(writes.send, _message(n, 3000 + 700 * n))
            stop.set()
    finally:
        os.close(w)
        os.close(r)
    lines = _lines(got)
    assert sorted(line["id"] for line in lines) == list(range(12))  # type: ignore[type-var]
    for line in lines:
        text = line["result"]["content"][0]["text"]  # type: ignore[index]
        n = line["id"]
        assert text == f"{n}:" + "x" * (3000 + 700 * n)  # type: ignore[operator]


async def test_a_cancelled_sender_still_finishes_its_message() -> None:
    r, w = _small_pipe()
    writes = _DirectWrites(PipeWriter(w))
    got = bytearray()
    stop = anyio.Event()
    scopes: list[anyio.CancelScope] = []

    async def cancelled_sender() -> None:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            await writes.send(_message(1, 50_000))

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancelled_sender)
            await anyio.sleep(0.02)  # it has written what fits and waits for room
            scopes[0].cancel()
            tg.start_soon(_drain, r, got, stop)
            await writes.send(_message(2, 10))  # after the rest of message 1
            stop.set()
    finally:
        os.close(w)
        os.close(r)
    assert [line["id"] for line in _lines(got)] == [1, 2]


async def test_sends_after_close_are_refused() -> None:
    r, w = _small_pipe()
    writes = _DirectWrites(PipeWriter(w))
    try:
        async with writes:
            await writes.send(_message(1, 10))
        with pytest.raises(anyio.ClosedResourceError):
            await writes.send(_message(2, 10))
        assert os.read(r, 1000).count(b"\n") == 1
    finally:
        os.close(w)
        os.close(r)


async def test_lines_are_decoded_by_the_sdk_and_bad_ones_passed_on() -> None:
    r, w = os.pipe()
    os.write(w, b'{"jsonrpc":"2.0","id":7,"method":"ping"}\nnot json\n')
    os.close(w)
    reads = _DirectReads(CappedLines(r, 1 << 20))
    try:
        first = await reads.receive()
        assert isinstance(first, SessionMessage)
        assert isinstance(first.message, types.JSONRPCRequest) and first.message.id == 7
        second = await reads.receive()
        assert isinstance(second, ValueError)
        with pytest.raises(anyio.EndOfStream):
            await reads.receive()
    finally:
        os.close(r)
