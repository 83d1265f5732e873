"""execute_batch: Safe concurrent, Exclusive serial, cancellation, one result per call."""

from __future__ import annotations

import time

import anyio
import pytest

from octos_tools.errors import ErrorKind
from octos_tools.execution import ToolCall, execute_batch
from octos_tools.function_tool import tool
from octos_tools.registry import ToolRegistry

from .helpers import EchoTool


@pytest.mark.anyio
async def test_five_safe_calls_run_concurrently() -> None:
    # observed, not timed (a loaded machine makes any time bound flaky): every Safe call
    # has started before the first one ends
    log: list[str] = []
    r = ToolRegistry()
    for i in range(5):
        r.register(EchoTool(f"s{i}", delay=0.2, log=log))
    results = await execute_batch(r, [ToolCall(f"c{i}", f"s{i}", "{}") for i in range(5)])
    assert [res.output for res in results] == [f"s{i}" for i in range(5)]
    first_end = next(i for i, x in enumerate(log) if x.startswith("end:"))
    assert sorted(log[:first_end]) == [f"start:s{i}" for i in range(5)], log


@pytest.mark.anyio
async def test_any_exclusive_makes_batch_serial_in_order() -> None:
    log: list[str] = []
    r = ToolRegistry()
    r.register(EchoTool("read", delay=0.05, log=log))
    r.register(EchoTool("write", exclusive=True, delay=0.05, log=log))
    calls = [ToolCall("1", "read"), ToolCall("2", "write"), ToolCall("3", "read")]
    results = await execute_batch(r, calls)
    assert all(res.success for res in results)
    assert log == ["start:read", "end:read", "start:write", "end:write", "start:read", "end:read"]


@pytest.mark.anyio
async def test_failure_cancels_the_rest_naming_the_sibling() -> None:
    log: list[str] = []
    r = ToolRegistry()
    r.register(EchoTool("ok", exclusive=True, log=log))
    r.register(EchoTool("bad", fail=True, log=log))
    calls = [ToolCall("1", "ok"), ToolCall("2", "bad"), ToolCall("3", "ok"), ToolCall("4", "ok")]
    results = await execute_batch(r, calls)
    assert [res.success for res in results] == [True, False, False, False]
    assert results[1].error_kind is ErrorKind.NOT_FOUND
    for res in results[2:]:
        assert res.error_kind is ErrorKind.CANCELLED
        assert "bad" in res.output and "(2)" in res.output
    assert log.count("start:ok") == 1  # the cancelled calls never ran


@pytest.mark.anyio
async def test_argument_errors_do_not_cancel_siblings() -> None:
    r = ToolRegistry()
    r.register(EchoTool("w", exclusive=True))
    calls = [
        ToolCall("1", "w", "{bad json"),
        ToolCall("2", "w", '{"text": 5}'),
        ToolCall("3", "w", '{"text": "' + "x" * 1_048_576 + '"}'),
        ToolCall("4", "w", '{"text": "fine"}'),
    ]
    results = await execute_batch(r, calls)
    kinds = [res.error_kind for res in results]
    assert kinds == [
        ErrorKind.INVALID_JSON,
        ErrorKind.INVALID_ARGUMENTS,
        ErrorKind.ARGS_TOO_LARGE,
        None,
    ]
    assert results[3].output == "fine"


@pytest.mark.anyio
async def test_unknown_tool_in_serial_batch_cancels_rest() -> None:
    r = ToolRegistry()
    r.register(EchoTool("w", exclusive=True))
    results = await execute_batch(r, [ToolCall("1", "nope"), ToolCall("2", "w")])
    assert results[0].error_kind is ErrorKind.UNKNOWN_TOOL
    assert results[1].error_kind is ErrorKind.CANCELLED


@pytest.mark.anyio
async def test_exactly_one_result_per_call_in_order() -> None:
    r = ToolRegistry()
    for i in range(20):
        r.register(EchoTool(f"t{i}", delay=0.01 * (20 - i)))
    calls = [ToolCall(f"id{i}", f"t{i}", {"text": str(i)}) for i in range(20)]
    results = await execute_batch(r, calls)
    assert [res.output for res in results] == [str(i) for i in range(20)]
    assert await execute_batch(r, []) == []


@pytest.mark.anyio
async def test_sync_tool_does_not_block_event_loop() -> None:
    @tool
    def slow_sync(seconds: float) -> str:
        """Sleep in a thread."""
        time.sleep(seconds)
        return "slept"

    @tool
    async def quick_async() -> str:
        """Return at once."""
        return "quick"

    r = ToolRegistry()
    r.register(slow_sync)
    r.register(quick_async)
    finished: list[tuple[str, float]] = []
    started = time.monotonic()

    async def run(name: str, args: dict[str, float]) -> None:
        res = await r.execute(name, args)
        finished.append((res.output, time.monotonic() - started))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "slow_sync", {"seconds": 1.0})
        await anyio.sleep(0.05)
        tg.start_soon(run, "quick_async", {})
    order = [name for name, _ in finished]
    assert order == ["quick", "slept"]
    assert finished[0][1] < 0.8
