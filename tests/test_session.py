"""ToolSession: tick → auto_evict → specs before each request; the batch after."""

from __future__ import annotations

import pytest

from octos_tools.context import ToolContext
from octos_tools.execution import ToolCall
from octos_tools.lifecycle import ToolLifecycle
from octos_tools.registry import ToolRegistry
from octos_tools.session import ToolSession

from .helpers import EchoTool


def _registry(count: int = 6, max_active: int = 3, idle: int = 2) -> ToolRegistry:
    registry = ToolRegistry(lifecycle=ToolLifecycle(max_active, idle, ["t0"]))
    for i in range(count):
        registry.register(EchoTool(f"t{i}"))
    return registry


def test_before_model_request_ticks_evicts_and_reports_change() -> None:
    registry = _registry()
    session = ToolSession(registry)
    first = session.before_model_request()
    assert [s.name for s in first] == [f"t{i}" for i in range(6)]
    assert session.changed and session.evicted == []
    assert registry.lifecycle.iteration == 1
    second = session.before_model_request()  # idle 2 >= threshold: evict down to 3
    assert session.evicted == ["t1", "t2", "t3"]
    assert session.changed
    assert [s.name for s in second] == ["t0", "t4", "t5"]
    session.before_model_request()
    assert not session.changed and session.evicted == []
    assert session.requests == 3


@pytest.mark.anyio
async def test_changes_made_by_tool_calls_are_seen_at_the_next_request() -> None:
    registry = _registry()
    session = ToolSession(registry)
    session.before_model_request()
    session.before_model_request()
    assert registry.is_deferred("t1")
    assert not session.specs_changed()
    results = await session.after_tool_calls([ToolCall("c1", "t1", '{"text": "hi"}')])
    assert [r.output for r in results] == ["hi"]
    assert session.specs_changed()  # t1 came back on use
    specs = session.before_model_request()
    assert session.changed
    assert "t1" in [s.name for s in specs]


@pytest.mark.anyio
async def test_calls_use_the_session_context() -> None:
    seen: list[str | None] = []

    class Probe(EchoTool):
        async def execute_with_context(self, ctx: ToolContext, args: dict[str, object]):  # type: ignore[no-untyped-def,override]
            seen.append(ctx.session_key)
            seen.append(ctx.tool_call_id)
            return await super().execute_with_context(ctx, args)

    registry = ToolRegistry()
    registry.register(Probe("probe"))
    session = ToolSession(registry, ToolContext(session_key="abc"))
    await session.after_tool_calls([ToolCall("call-1", "probe", "{}")])
    await session.call("probe", {}, tool_call_id="call-2")
    assert seen == ["abc", "call-1", "abc", "call-2"]
    await session.aclose()


def test_default_context_takes_the_registry_session_key() -> None:
    registry = ToolRegistry(session_key="k")
    session = ToolSession(registry)
    assert session.ctx.session_key == "k"
    assert session.ctx.registry is registry
