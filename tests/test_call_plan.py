"""Call plans (``octos_tools._call_plan``) and the pipeline's inline path for tools whose
coroutine cannot suspend: every rule of the general path still holds once a plan exists."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from pydantic import model_validator

from octos_tools import FunctionTool, ToolRegistry, ToolSession, tool
from octos_tools._call_plan import never_suspends, plan_call
from octos_tools.context import ToolContext, ToolPermissions, current_context
from octos_tools.errors import ErrorKind, ToolError
from octos_tools.policy import ToolPolicy
from octos_tools.tool_types import ConcurrencyClass, ToolResult
from octos_tools.typed import ToolArgs, TypedTool

pytestmark = pytest.mark.anyio

RAW = '{"a": 1, "b": 2}'


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _session(*tools: FunctionTool | TypedTool, **kwargs: Any) -> ToolSession:
    registry = ToolRegistry(**kwargs)
    for t in tools or (tool(add),):
        registry.register(t)
    return ToolSession(registry)


# ---------------------------------------------------------------------- never_suspends


async def _straight() -> int:
    return 1


async def _awaits() -> None:
    await asyncio.sleep(0)


async def _async_for(items: Any) -> None:
    async for _ in items:
        pass


@asynccontextmanager
async def _cm() -> AsyncIterator[None]:
    yield


async def _async_with() -> None:
    async with _cm():
        pass


async def _defines_an_awaiting_inner() -> int:
    async def inner() -> None:
        await asyncio.sleep(0)

    del inner
    return 2


async def _await_in_comprehension(items: list[Any]) -> list[Any]:
    return [await item for item in items]


async def _agen() -> AsyncIterator[int]:
    yield 1


def _sync() -> int:
    return 1


def test_never_suspends_reads_the_coroutine_code() -> None:
    assert never_suspends(_straight)
    assert never_suspends(_defines_an_awaiting_inner)  # the inner function is its own code
    assert not never_suspends(_awaits)
    assert not never_suspends(_async_for)
    assert not never_suspends(_async_with)
    assert not never_suspends(_await_in_comprehension)
    assert not never_suspends(_agen)
    assert not never_suspends(_sync)
    assert not never_suspends(len)
    assert not never_suspends(FunctionTool(add))  # a callable object, not a function


# ---------------------------------------------------------------------- plans and their life


async def test_a_plan_is_made_once_and_dropped_at_every_change() -> None:
    session = _session()
    assert (await session.call("add", RAW)).output == "3"
    plan = session.view.plans["add"]
    assert plan is not None and plan.fn is add and plan.fields_only
    assert (await session.call("add", RAW)).output == "3"
    assert session.view.plans["add"] is plan
    session.hide(["add"])  # a change of the view
    assert "add" not in session.view.plans
    assert (await session.call("add", RAW)).output == "3"  # hidden tools stay callable
    session.registry.set_context_filter(["x"])  # a mutation of the registry
    assert session.view.plans == {}


async def test_a_policy_set_after_the_plan_refuses_the_call() -> None:
    session = _session()
    assert (await session.call("add", RAW)).success
    session.registry.set_provider_policy(ToolPolicy(deny=["add"]))
    result = await session.call("add", RAW)
    assert result.error_kind is ErrorKind.POLICY_DENIED
    assert session.view.plans["add"] is None  # refused names go the general way
    session.registry.set_provider_policy(None)
    assert (await session.call("add", RAW)).output == "3"


async def test_registry_execute_drops_its_default_view_plans_on_mutation() -> None:
    registry = ToolRegistry()
    registry.register(tool(add))
    assert (await registry.execute("add", RAW)).output == "3"
    assert registry.default_view.plans["add"] is not None
    registry.apply_policy(ToolPolicy(deny=["add"]))
    assert (await registry.execute("add", RAW)).error_kind is ErrorKind.POLICY_DENIED


async def test_a_replaced_tool_is_the_one_called() -> None:
    session = _session()
    assert (await session.call("add", RAW)).output == "3"

    async def sub(a: int, b: int) -> int:
        return a - b

    session.registry.register(FunctionTool(sub, name="add"))
    assert (await session.call("add", RAW)).output == "-1"


async def test_a_deferred_tool_is_activated_by_its_call_then_planned() -> None:
    session = _session()
    assert (await session.call("add", RAW)).success
    session.registry.defer(["add"])
    assert session.is_deferred("add")
    assert (await session.call("add", RAW)).output == "3"  # auto-activation
    assert not session.is_deferred("add")
    assert session.view.plans.get("add") is None  # the activation dropped the plans
    assert (await session.call("add", RAW)).output == "3"
    assert session.view.plans["add"] is not None


async def test_context_permissions_still_refuse_a_planned_tool() -> None:
    session = _session()
    assert (await session.call("add", RAW)).success
    denied = ToolContext(permissions=ToolPermissions(denied_tools=frozenset({"add"})))
    result = await session.call("add", RAW, ctx=denied)
    assert result.error_kind is ErrorKind.POLICY_DENIED
    only_other = ToolContext(permissions=ToolPermissions(allowed_tools=frozenset({"x"})))
    assert (await session.call("add", RAW, ctx=only_other)).error_kind is (ErrorKind.POLICY_DENIED)


async def test_the_size_limit_holds_for_a_planned_tool() -> None:
    session = _session(max_args_size=8)
    assert (await session.call("add", "{}")).error_kind is ErrorKind.INVALID_ARGUMENTS
    assert session.view.plans["add"] is not None
    result = await session.call("add", RAW)
    assert result.error_kind is ErrorKind.ARGS_TOO_LARGE


async def test_usage_is_recorded_for_the_lru() -> None:
    session = _session()
    session.tick()
    session.tick()
    await session.call("add", RAW)
    assert session.lifecycle.last_used["add"] == 2


async def test_spawn_only_tools_are_not_planned() -> None:
    session = _session()
    session.registry.mark_spawn_only("add")
    result = await session.call("add", RAW)
    assert result.success and result.structured_metadata is not None
    assert "task" in result.structured_metadata
    assert session.view.plans["add"] is None
    await session.registry.aclose()


# ---------------------------------------------------------------------- arguments


async def test_argument_errors_and_leniencies_are_those_of_the_general_path() -> None:
    session = _session()
    assert (await session.call("add", RAW)).success
    wrong = await session.call("add", '{"a": "1", "b": 2}')
    assert wrong.error_kind is ErrorKind.INVALID_ARGUMENTS
    assert "field 'a'" in wrong.output and "got a string" in wrong.output
    missing = await session.call("add", '{"a": 1}')
    assert "missing required field 'b'" in missing.output
    extra = await session.call("add", '{"a": 1, "b": 2, "c": 3}')
    assert "unknown field 'c'" in extra.output
    assert (await session.call("add", '{"a": 2.0, "b": 1e1}')).output == "12"  # integral
    assert (await session.call("add", '{"a": 1, "b": "\\u0032"}')).error_kind is (
        ErrorKind.INVALID_ARGUMENTS
    )
    assert (await session.call("add", "{nope")).error_kind is ErrorKind.INVALID_JSON
    assert (await session.call("add", {"a": 1, "b": 2})).output == "3"  # parsed arguments


class Checked(ToolArgs):
    low: int
    high: int

    @model_validator(mode="after")
    def ordered(self) -> Checked:
        if self.low > self.high:
            raise ValueError("low must not exceed high")
        return self


async def test_a_model_validator_runs_for_a_planned_function_tool() -> None:
    async def span(args: Checked) -> int:
        return args.high - args.low

    async def bounded(low: int, high: int) -> int:
        return high - low

    session = _session(FunctionTool(span))
    assert (await session.call("span", '{"args": {"low": 1, "high": 4}}')).output == "3"
    bad = await session.call("span", '{"args": {"low": 5, "high": 4}}')
    assert bad.error_kind is ErrorKind.INVALID_ARGUMENTS and "low must not exceed" in bad.output
    session.registry.register(FunctionTool(bounded))
    assert (await session.call("bounded", '{"low": 1, "high": 4}')).output == "3"


# ---------------------------------------------------------------------- running


async def test_the_call_context_is_current_during_the_call_only() -> None:
    seen: list[ToolContext] = []

    async def probe(note: str, ctx: ToolContext) -> str:
        seen.append(current_context())
        assert ctx is current_context()
        return note

    session = _session(FunctionTool(probe))
    result = await session.call("probe", '{"note": "hi"}', tool_call_id="call-7")
    assert result.output == "hi"
    assert seen[0].tool_call_id == "call-7" and seen[0].session is session
    assert current_context().tool_call_id == ""  # reset after the call


async def test_failures_of_an_inline_tool_keep_their_kinds() -> None:
    async def typed_failure() -> str:
        raise ToolError(ErrorKind.NOT_FOUND, "nothing here")

    async def bug() -> str:
        raise ValueError("boom")

    async def timed_out() -> str:
        raise TimeoutError

    async def not_json() -> object:
        return object()

    session = _session(
        FunctionTool(typed_failure), FunctionTool(bug), FunctionTool(timed_out, timeout=3)
    )
    session.registry.register(FunctionTool(not_json))
    assert (await session.call("typed_failure", "{}")).output == "Error [not_found]: nothing here"
    failed = await session.call("bug", "{}")
    assert failed.error_kind is ErrorKind.INTERNAL_ERROR and "ValueError: boom" in failed.output
    timeout = await session.call("timed_out", "{}")
    assert timeout.error_kind is ErrorKind.TIMEOUT and "within 3 s" in timeout.output
    assert (await session.call("not_json", "{}")).output.startswith('"<object object')
    assert session.view.lock.readers == 0 and not session.view.lock.writing


async def test_output_of_an_inline_tool_is_capped_and_redacted() -> None:
    key = "sk-" + "a" * 40

    async def leak() -> str:
        return f"key={key}"

    async def big() -> int:
        return 10**600

    big_tool = FunctionTool(big)
    big_tool.max_output_bytes = 256
    session = _session(FunctionTool(leak), big_tool)
    leaked = await session.call("leak", "{}")
    assert key not in leaked.output and "[credential-redacted]" in leaked.output
    capped = await session.call("big", "{}")
    assert "bytes omitted" in capped.output and len(capped.output.encode()) <= 256
    assert (await session.call("big", "{}")).output == capped.output


async def test_a_tool_that_awaits_is_still_stopped_at_its_timeout() -> None:
    async def slow() -> str:
        await asyncio.sleep(30)
        return "late"

    session = _session(FunctionTool(slow, timeout=0.05))
    with anyio.fail_after(10):
        result = await session.call("slow", "{}")
    assert result.error_kind is ErrorKind.TIMEOUT
    plan = session.view.plans["slow"]
    assert plan is not None and plan.fn is None and plan.run is None  # the general dispatch


class Double(TypedTool):
    name = "double"
    description = "Double a number."

    class Args(ToolArgs):
        n: int

    async def run(self, args: Any, ctx: ToolContext | None) -> ToolResult:
        return ToolResult.ok(str(args.n * 2))


class Broken(TypedTool):
    name = "broken"
    description = "Return something that is not a result."

    class Args(ToolArgs):
        pass

    async def run(self, args: Any, ctx: ToolContext | None) -> ToolResult:
        return "not a result"  # type: ignore[return-value]


async def test_a_typed_tool_whose_run_cannot_suspend_runs_inline() -> None:
    session = _session(Double(), Broken())
    assert (await session.call("double", '{"n": 21}')).output == "42"
    plan = session.view.plans["double"]
    assert plan is not None and plan.run is not None and plan.fn is None
    broken = await session.call("broken", "{}")
    assert broken.error_kind is ErrorKind.INTERNAL_ERROR and "not a ToolResult" in broken.output


# ---------------------------------------------------------------------- the lock


async def test_inline_calls_respect_exclusive_calls_both_ways() -> None:
    gate = anyio.Event()
    log: list[str] = []

    async def hold(tag: str) -> str:
        log.append(f"start:{tag}")
        await gate.wait()
        log.append(f"end:{tag}")
        return tag

    async def quick(tag: str) -> str:
        log.append(f"quick:{tag}")
        return tag

    async def quick_write(tag: str) -> str:
        log.append(f"write:{tag}")
        return tag

    session = _session(
        FunctionTool(hold, concurrency=ConcurrencyClass.EXCLUSIVE),
        FunctionTool(quick),
        FunctionTool(quick_write, name="write", concurrency=ConcurrencyClass.EXCLUSIVE),
        FunctionTool(hold, name="read_slowly"),
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.call, "hold", '{"tag": "w"}')
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(session.call, "quick", '{"tag": "r"}')  # a Safe call waits for the writer
        await anyio.wait_all_tasks_blocked()
        assert log == ["start:w"]
        gate.set()
    assert log == ["start:w", "end:w", "quick:r"]

    gate = anyio.Event()
    log.clear()
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.call, "read_slowly", '{"tag": "s"}')
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(session.call, "write", '{"tag": "x"}')  # an Exclusive call waits too
        await anyio.wait_all_tasks_blocked()
        assert log == ["start:s"]
        gate.set()
    assert log == ["start:s", "end:s", "write:x"]
    lock = session.view.lock
    assert lock.readers == 0 and not lock.writing


async def test_a_batch_runs_planned_calls_under_its_own_hold_of_the_lock() -> None:
    from octos_tools.execution import ToolCall

    session = _session()
    results = await session.after_tool_calls([ToolCall("1", "add", RAW), ToolCall("2", "add", RAW)])
    assert [r.output for r in results] == ["3", "3"]
    assert session.view.lock.readers == 0


def test_plan_call_stores_no_plan_for_unknown_names_beyond_the_bound() -> None:
    from octos_tools import _call_plan

    session = _session()
    view = session.view
    for i in range(_call_plan.MAX_PLANS + 10):
        assert plan_call(view, f"missing_{i}") is None
    assert len(view.plans) == _call_plan.MAX_PLANS


# ---------------------------------------------------------------------- the call's context


def test_for_call_copies_every_field_of_the_context() -> None:
    import dataclasses

    registry = ToolRegistry()
    session = ToolSession(registry)
    base = dataclasses.replace(
        session.ctx,
        attachments=["a.png"],
        session_key="k",
        spawn_depth=2,
        state={"plan": 1},
        extras={"x": 1},
        permissions=ToolPermissions(mode="read_only", read_only=True),
    )
    clone = base.for_call("call-9")
    assert clone.tool_call_id == "call-9" and base.tool_call_id == ""
    for f in dataclasses.fields(ToolContext):
        if f.name != "tool_call_id":
            assert getattr(clone, f.name) is getattr(base, f.name), f.name

    @dataclasses.dataclass(slots=True)
    class HostContext(ToolContext):
        host: str = "h"

    derived = HostContext(host="mine").for_call("c")
    assert type(derived) is HostContext and derived.host == "mine" and derived.tool_call_id == "c"
