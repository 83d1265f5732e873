"""Sub-agent tools over the TaskSupervisor with a test spawn delegate."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins import agents
from octos_tools.builtins.agents import SpawnRequest, bind_spawn_delegate
from octos_tools.config import Config
from octos_tools.context import ToolContext
from octos_tools.errors import ErrorKind
from octos_tools.registry import ToolRegistry
from octos_tools.tasks import TaskRecord
from octos_tools.tool_types import ToolResult


class ShortDelegate:
    """Runs a short coroutine per agent: waits ``delay`` seconds, echoes its task."""

    def __init__(self, delay: float = 0.05) -> None:
        self.delay = delay
        self.requests: list[SpawnRequest] = []

    async def run(self, request: SpawnRequest, record: TaskRecord) -> ToolResult:
        self.requests.append(request)
        await asyncio.sleep(self.delay)
        if "fail" in request.task:
            return ToolResult.failure(ErrorKind.PROCESS_FAILED, "the child failed")
        return ToolResult.ok(f"done: {request.task} (+{len(request.inputs)} inputs)")


class LiveDelegate(ShortDelegate):
    """Also takes messages while an agent runs."""

    def __init__(self, delay: float = 0.05) -> None:
        super().__init__(delay)
        self.delivered: list[str] = []

    async def deliver_input(self, record: TaskRecord, message: str, interrupt: bool) -> bool:
        self.delivered.append(message)
        return True


async def make(delegate: Any | None) -> ToolRegistry:
    registry = ToolRegistry()
    agents.register(registry, None, Config())  # type: ignore[arg-type]
    if delegate is not None:
        assert bind_spawn_delegate(registry, delegate)
    return registry


def body(result: ToolResult) -> dict[str, Any]:
    assert result.success, result.output
    data = json.loads(result.output)
    assert isinstance(data, dict)
    # Compact JSON (no indentation): every agent tool's output is read by the model.
    assert result.output == json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return data


@pytest.mark.anyio
async def test_spawn_wait_and_results() -> None:
    delegate = ShortDelegate()
    registry = await make(delegate)
    spawned = body(await registry.execute("spawn_agent", {"message": "count files"}))
    agent_id = spawned["agent_id"]
    assert spawned["status"] in ("pending", "running")
    waited = body(await registry.execute("wait_agent", {"ids": [agent_id], "timeout_ms": 5000}))
    assert waited["timed_out"] is False
    [status] = waited["agents"]
    assert status["status"] == "completed" and "done: count files" in status["output"]
    assert delegate.requests[0].depth == 1
    failed = await registry.execute("spawn_agent", {"task": "please fail", "mode": "sync"})
    assert failed.error_kind is ErrorKind.PROCESS_FAILED  # a sync child's failure is the call's
    status = json.loads(failed.output)
    assert status["status"] == "failed" and status["terminal"] is True
    assert status["error_kind"] == "process_failed" and "output_tail" in status
    unknown = body(await registry.execute("wait_agent", {"ids": ["nope"], "timeout_ms": 10}))
    assert unknown["agents"] == [{"agent_id": "nope", "status": "unknown", "terminal": True}]
    await registry.aclose()


@pytest.mark.anyio
async def test_wait_times_out_and_close_cancels() -> None:
    registry = await make(ShortDelegate(delay=30))
    agent_id = body(await registry.execute("spawn_agent", {"message": "slow"}))["agent_id"]
    waited = body(await registry.execute("wait_agent", {"id": agent_id, "timeout_ms": 50}))
    assert waited["timed_out"] is True and waited["agents"][0]["status"] == "running"
    closed = body(await registry.execute("close_agent", {"id": agent_id}))
    assert closed["closed"] is True and closed["status"] == "cancelled"
    assert registry.supervisor.get(agent_id) is not None
    missing = await registry.execute("close_agent", {"id": "no-such-agent"})
    assert missing.error_kind is ErrorKind.NOT_FOUND
    await registry.aclose()


@pytest.mark.anyio
async def test_send_input_recorded_then_resume_delivers_it() -> None:
    delegate = ShortDelegate(delay=0.01)
    registry = await make(delegate)
    agent_id = body(await registry.execute("spawn_agent", {"message": "t", "mode": "sync"}))[
        "agent_id"
    ]
    sent = body(await registry.execute("send_input", {"id": agent_id, "message": "also X"}))
    assert sent["delivered"] is False and sent["delivery"] == "recorded"
    record = registry.supervisor.get(agent_id)
    assert record is not None and record.inputs[0]["message"] == "also X"
    resumed = body(await registry.execute("resume_agent", {"id": agent_id}))
    new_id = resumed["resumed_agent_id"]
    done = body(await registry.execute("wait_agent", {"ids": [new_id]}))
    assert "+1 inputs" in done["agents"][0]["output"]
    assert delegate.requests[-1].inputs == ("also X",)
    await registry.aclose()


@pytest.mark.anyio
async def test_send_input_live_delivery_and_running_resume() -> None:
    delegate = LiveDelegate(delay=30)
    registry = await make(delegate)
    agent_id = body(await registry.execute("spawn_agent", {"message": "t"}))["agent_id"]
    await asyncio.sleep(0)
    sent = body(await registry.execute("send_input", {"target": agent_id, "message": "hi"}))
    assert sent["delivered"] is True and sent["delivery"] == "live"
    assert delegate.delivered == ["hi"]
    still = body(await registry.execute("resume_agent", {"agent_id": agent_id}))
    assert "still running" in still["message"]
    await registry.aclose()


@pytest.mark.anyio
async def test_depth_limit_and_missing_delegate() -> None:
    registry = await make(ShortDelegate())
    deep = await registry.execute("spawn_agent", {"message": "x"}, ToolContext(spawn_depth=4))
    assert deep.error_kind is ErrorKind.POLICY_DENIED
    ok = await registry.execute("spawn_agent", {"message": "x"}, ToolContext(spawn_depth=3))
    assert ok.success
    await registry.aclose()
    bare = await make(None)
    none = await bare.execute("spawn_agent", {"message": "x"})
    assert none.error_kind is ErrorKind.NOT_CONFIGURED
    via_extras = await bare.execute(
        "spawn_agent",
        {"message": "x", "mode": "sync"},
        ToolContext(extras={"spawn_delegate": ShortDelegate()}),
    )
    assert body(via_extras)["status"] == "completed"
    empty = await bare.execute(
        "spawn_agent", {"message": " "}, ToolContext(extras={"spawn_delegate": ShortDelegate()})
    )
    assert empty.error_kind is ErrorKind.INVALID_ARGUMENTS
    await bare.aclose()


@pytest.mark.anyio
async def test_delegate_runs_a_role_agent_to_the_end() -> None:
    delegate = ShortDelegate()
    registry = await make(delegate)
    out = body(await registry.execute("delegate", {"role": "reviewer", "task": "review x.py"}))
    assert out["role"] == "reviewer" and out["status"] == "completed" and out["terminal"]
    assert "done: review x.py" in out["result"] and out["timed_out"] is False
    [request] = delegate.requests
    assert request.label == "delegate-reviewer" and request.role == "reviewer"
    # the role's budget, groups expanded to tool names
    assert "read_file" in request.allowed_tools and "grep" in request.allowed_tools
    assert not any(t.startswith("group:") for t in request.allowed_tools)

    failed = await registry.execute("delegate", {"role": "explorer", "task": "please fail"})
    assert failed.error_kind is ErrorKind.PROCESS_FAILED
    assert json.loads(failed.output)["status"] == "failed"
    bad_role = await registry.execute("delegate", {"role": "boss", "task": "x"})
    assert bad_role.error_kind is ErrorKind.INVALID_ARGUMENTS and "role" in bad_role.output
    no_task = await registry.execute("delegate", {"role": "reviewer"})
    assert no_task.error_kind is ErrorKind.INVALID_ARGUMENTS and "task" in no_task.output
    await registry.aclose()


@pytest.mark.anyio
async def test_delegate_times_out_and_needs_a_runner() -> None:
    registry = await make(ShortDelegate(delay=30))
    slow = await registry.execute(
        "delegate", {"role": "implementer", "task": "slow", "timeout_ms": 1000}
    )
    assert slow.error_kind is ErrorKind.TIMEOUT
    assert json.loads(slow.output)["terminal"] is False
    await registry.aclose()
    bare = await make(None)
    unbound = await bare.execute("delegate", {"role": "reviewer", "task": "x"})
    assert unbound.error_kind is ErrorKind.NOT_CONFIGURED
    await bare.aclose()


@pytest.mark.anyio
async def test_denying_spawn_agent_denies_delegate() -> None:
    from octos_tools.policy import ToolPolicy

    registry = await make(ShortDelegate())
    registry.apply_policy(ToolPolicy(deny=["spawn_agent"]))
    assert "delegate" not in registry.names() and "spawn_agent" not in registry.names()
    await registry.aclose()
    other = await make(ShortDelegate())
    other.apply_policy(ToolPolicy(deny=["wait_agent"]))
    assert "delegate" in other.names()
    await other.aclose()


@pytest.mark.anyio
async def test_id_aliases_accepted_but_not_advertised() -> None:
    registry = await make(ShortDelegate(delay=0.01))
    agent_id = body(await registry.execute("spawn_agent", {"task": "t", "mode": "sync"}))[
        "agent_id"
    ]
    for key, value in (("agent_id", agent_id), ("target", agent_id), ("targets", [agent_id])):
        closed = body(await registry.execute("close_agent", {key: value}))
        assert closed["agent_id"] == agent_id
    for name in ("send_input", "resume_agent", "wait_agent", "close_agent"):
        props = registry.get(name).spec().input_schema["properties"]  # type: ignore[union-attr]
        assert "id" in props and not {"agent_id", "target", "targets"} & set(props)
    spawn_props = registry.get("spawn_agent").spec().input_schema["properties"]  # type: ignore[union-attr]
    assert "message" in spawn_props and "task" not in spawn_props
    wrong = await registry.execute("wait_agent", {"timeout_ms": "soon"})
    assert wrong.error_kind is ErrorKind.INVALID_ARGUMENTS and "timeout_ms" in wrong.output
    await registry.aclose()


def test_the_sub_agent_tools_are_listed_only_while_a_spawn_delegate_is_bound(
    tmp_path: Path,
) -> None:
    from octos_tools.profile import build_registry

    registry = build_registry(Config(), tmp_path, defer=False)
    names = ("spawn_agent", "delegate", "send_input", "resume_agent", "wait_agent", "close_agent")
    assert not set(names) & set(registry.visible_names())
    assert all("spawn delegate" in registry.unavailable()[n] for n in names)

    class Runner:
        async def run(self, request: object, record: object) -> ToolResult:
            return ToolResult.ok("done")

    assert bind_spawn_delegate(registry, Runner())
    assert set(names) <= set(registry.visible_names())
    bind_spawn_delegate(registry, None)
    assert not set(names) & set(registry.visible_names())


@pytest.mark.anyio
async def test_after_rebind_cwd_spawn_and_read_task_output_share_one_supervisor(
    tmp_path: Any,
) -> None:
    from octos_tools.profile import build_registry
    from octos_tools.workspace import Workspace

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    delegate = LoggingDelegate()
    registry = build_registry(workspace=str(tmp_path / "a"))
    assert bind_spawn_delegate(registry, delegate)
    rebound = registry.rebind_cwd(Workspace(tmp_path / "b"))
    assert agents.spawn_delegate_of(rebound) is delegate  # the host's delegate comes along
    spawned = body(await rebound.execute("spawn_agent", {"message": "log it", "mode": "sync"}))
    handle = spawned["agent_id"]
    log = await rebound.execute("read_task_output", {"task_handle": handle})
    assert log.success, log.output
    assert "working on: log it" in log.output
    assert rebound.supervisor.get(handle) is not None and registry.supervisor.get(handle) is None
    # the old registry's tools do not see the new registry's agents, and the other way round
    old = await registry.execute("close_agent", {"id": handle})
    assert old.error_kind is ErrorKind.NOT_FOUND
    await rebound.supervisor.aclose()
    await registry.aclose()


class LoggingDelegate(ShortDelegate):
    """Streams a line into the task log before it answers."""

    async def run(self, request: SpawnRequest, record: TaskRecord) -> ToolResult:
        record.append_output(f"working on: {request.task}\n")
        return await super().run(request, record)


def test_a_session_with_its_own_spawn_delegate_lists_the_sub_agent_tools(tmp_path: Path) -> None:
    from octos_tools.profile import build_registry
    from octos_tools.session import ToolSession

    class Runner:
        async def run(self, request: object, record: object) -> ToolResult:
            return ToolResult.ok("done")

    registry = build_registry(Config(), tmp_path, defer=False)
    plain = ToolSession(registry)
    own = ToolSession(registry, ToolContext(extras={"spawn_delegate": Runner()}))
    assert "spawn_agent" not in [s.name for s in plain.specs()]
    assert "spawn_agent" in [s.name for s in own.specs()]
