"""The agent loop's native sub-agents (agent/spawn.py) against a scripted OpenAI-compatible
model served on loopback: parent and child are real agent loops over HTTP, told apart by
their conversation's first user message."""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from octos_tools.agent import Agent
from octos_tools.builtins.agents import bind_spawn_delegate, has_spawn_delegate
from octos_tools.profile import build_registry
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import JSONObject, TokenUsage, Tool, ToolResult
from octos_tools.workspace import Workspace

from .fake_model import FakeModelServer, OpenAIDialect, Reply, fake_model_server

OPENAI = OpenAIDialect()
Step = Reply | dict[str, Any] | Callable[[dict[str, Any]], Reply | dict[str, Any]]
PARENT = "parent task"


def first_user(body: dict[str, Any]) -> str:
    return next(str(m["content"]) for m in body["messages"] if m["role"] == "user")


def tool_json(body: dict[str, Any]) -> dict[str, Any]:
    """The last tool result of the request, decoded (agent tools answer JSON)."""
    content = [m for m in body["messages"] if m["role"] == "tool"][-1]["content"]
    return json.loads(content)  # type: ignore[no-any-return]


def tool_text(body: dict[str, Any]) -> str:
    return str([m for m in body["messages"] if m["role"] == "tool"][-1]["content"])


def tools_of(body: dict[str, Any]) -> list[str]:
    return OPENAI.tool_names(body)


def call(name: str, args: dict[str, Any], cid: str = "c1") -> dict[str, Any]:
    return OPENAI.calls_reply([(cid, name, args)])  # type: ignore[no-any-return]


def text(answer: str, usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
    return OPENAI.text_reply(answer, usage)


class Conversations:
    """Scripted answers per conversation (keyed by its first user message); a step may be
    a function of the request body. Records every body per conversation."""

    def __init__(self) -> None:
        self.scripts: dict[str, deque[Step]] = {}
        self.bodies: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._lock = threading.Lock()

    def add(self, key: str, *steps: Step) -> None:
        self.scripts[key] = deque(steps)

    def __call__(self, body: Any) -> Reply | dict[str, Any]:
        key = first_user(body)
        with self._lock:
            self.bodies[key].append(body)
            steps = self.scripts.get(key)
            step = steps.popleft() if steps else None
        if step is None:
            return Reply({"error": {"message": f"no script left for {key!r}"}}, status=418)
        return step(body) if callable(step) else step


@pytest.fixture
def talk() -> Conversations:
    return Conversations()


@pytest.fixture
def server(talk: Conversations) -> Iterator[FakeModelServer]:
    with fake_model_server(talk) as s:
        s.models = ["fake-gpt", "fake-mini"]
        yield s


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    return tmp_path


@pytest.fixture
async def registry(workspace: Path) -> AsyncIterator[ToolRegistry]:
    """The built-in tools over ``workspace``, closed after the test."""
    built = build_registry(workspace=str(workspace))
    yield built
    await built.aclose()


class Settle(Tool):
    """``settle``: waits until every sub-agent of ``agent`` has finished (so the next model
    request is made after the background child is done, deterministically)."""

    name = "settle"
    description = "Wait for the sub-agents."

    def __init__(self) -> None:
        self.input_schema: JSONObject = {"type": "object", "properties": {}}
        self.agent: Agent | None = None

    async def execute(self, args: JSONObject) -> ToolResult:
        assert self.agent is not None and self.agent.spawn_delegate is not None
        with anyio.fail_after(10):
            while not all(r.terminal for r in self.agent.spawn_delegate.children):
                await anyio.sleep(0.01)
        return ToolResult.ok("settled")


async def run_parent(
    server: FakeModelServer, registry: ToolRegistry, prompt: str = PARENT, **kwargs: Any
) -> tuple[Agent, Any]:
    async with OPENAI.provider(server.url) as provider:
        agent = Agent(registry, provider, **kwargs)
        settle = registry.get("settle")
        if isinstance(settle, Settle):
            settle.agent = agent
        result = await agent.run(prompt)
    return agent, result


@pytest.mark.anyio
async def test_sync_child_reads_a_file_and_its_text_and_usage_reach_the_parent(
    server: FakeModelServer, talk: Conversations, registry: ToolRegistry
) -> None:
    talk.add(PARENT, call("spawn_agent", {"message": "count notes", "mode": "sync"}), text("ok"))
    talk.add(
        "count notes",
        call("read_file", {"path": "notes.txt"}, "k1"),
        text("notes.txt has 2 lines", usage=(100, 7)),
    )
    agent, result = await run_parent(server, registry)

    assert result.text == "ok"
    [spawn] = result.tool_results
    assert spawn.result.success, spawn.result.output
    status = json.loads(spawn.result.output)
    assert status["status"] == "completed" and status["output"] == "notes.txt has 2 lines"
    child_bodies = talk.bodies["count notes"]
    assert len(child_bodies) == 2
    assert "alpha" in tool_text(child_bodies[1])  # the child read the real file
    # depth 1 is the limit (default max_depth): the child has no sub-agent tools
    assert not {"spawn_agent", "delegate", "wait_agent"} & set(tools_of(child_bodies[0]))
    assert "read_file" in tools_of(child_bodies[0])
    # the child's tokens (10+5 and 100+7) are the parent's tool usage
    assert result.usage == TokenUsage(20, 10)
    assert result.tool_usage == TokenUsage(110, 12)
    assert result.total_usage == TokenUsage(130, 22)
    # its progress streamed into the task log that read_task_output reads
    handle = status["agent_id"]
    log = await agent.session.call("read_task_output", {"task_handle": handle})
    assert log.success, log.output
    assert "→ read_file" in log.output and "← read_file: ok" in log.output
    assert "notes.txt has 2 lines" in log.output


@pytest.mark.anyio
async def test_background_child_is_announced_in_the_parents_next_turn(
    server: FakeModelServer, talk: Conversations, registry: ToolRegistry
) -> None:
    talk.add(
        PARENT,
        call("spawn_agent", {"message": "look around", "label": "scout"}),
        call("settle", {}, "c2"),
        text("thanks"),
    )
    talk.add("look around", text("found 1 file", usage=(50, 3)))
    registry.register(Settle())
    agent, result = await run_parent(server, registry)

    spawned = json.loads(result.tool_results[0].result.output)
    assert spawned["status"] in ("pending", "running")
    second, third = talk.bodies[PARENT][1:]
    note = f"[sub-agent finished] agent {spawned['agent_id']} (scout) ended completed"
    assert not any(note in json.dumps(m) for m in second["messages"])
    [announced] = [m for m in third["messages"] if m["role"] == "user" and note in m["content"]]
    assert "wait_agent" in announced["content"]
    assert third["messages"][-1] == announced  # after the settle call's result
    assert result.tool_usage == TokenUsage(50, 3)
    # the announcement is made once: a later run does not repeat it
    talk.scripts[PARENT].append(text("nothing"))
    async with OPENAI.provider(server.url) as provider:
        agent.provider = provider
        await agent.run("and now?")
    assert json.dumps(talk.bodies[PARENT][-1]["messages"]).count(note) == 1


@pytest.mark.anyio
async def test_a_child_the_model_waited_for_is_not_announced(
    server: FakeModelServer, talk: Conversations, registry: ToolRegistry
) -> None:
    def wait_for_it(body: dict[str, Any]) -> dict[str, Any]:
        return call("wait_agent", {"ids": [tool_json(body)["agent_id"]], "timeout_ms": 5000}, "c2")

    talk.add(PARENT, call("spawn_agent", {"message": "quick"}), wait_for_it, text("done"))
    talk.add("quick", text("quick answer"))
    _, result = await run_parent(server, registry)
    waited = json.loads(result.tool_results[1].result.output)
    assert waited["agents"][0]["output"] == "quick answer" and waited["timed_out"] is False
    last = talk.bodies[PARENT][-1]
    assert not any("[sub-agent finished]" in json.dumps(m) for m in last["messages"])


@pytest.mark.anyio
async def test_a_failed_child_is_a_typed_failure_with_its_output_tail(
    server: FakeModelServer, talk: Conversations, registry: ToolRegistry
) -> None:
    talk.add(PARENT, call("spawn_agent", {"message": "break", "mode": "sync"}), text("noted"))
    talk.add(
        "break",
        call("read_file", {"path": "missing.txt"}, "k1"),
        Reply({"error": {"message": "model overloaded"}}, status=400),
    )
    _, result = await run_parent(server, registry)
    failed = result.tool_results[0].result
    assert not failed.success and failed.error_kind is not None
    assert failed.error_kind.value == "http_error"
    status = json.loads(failed.output)
    assert status["status"] == "failed" and status["error_kind"] == "http_error"
    tail = status["output_tail"]
    assert "← read_file: error not_found" in tail and "model overloaded" in tail
    # the model saw the typed failure
    assert tool_text(talk.bodies[PARENT][1]).startswith("{") and "http_error" in tool_text(
        talk.bodies[PARENT][1]
    )


@pytest.mark.anyio
async def test_a_child_over_its_time_is_stopped_with_timeout(
    server: FakeModelServer, talk: Conversations, registry: ToolRegistry
) -> None:
    talk.add(PARENT, call("spawn_agent", {"message": "dawdle", "mode": "sync"}), text("late"))
    talk.add(
        "dawdle",
        call("list_dir", {"path": "."}, "k1"),
        Reply(text("too late"), delay=3.0),
    )
    with anyio.fail_after(20):
        _, result = await run_parent(server, registry, sub_agent_timeout=1.0)
    failed = result.tool_results[0].result
    assert failed.error_kind is not None and failed.error_kind.value == "timeout"
    status = json.loads(failed.output)
    assert "→ list_dir" in status["output_tail"] and "[failed] timeout" in status["output_tail"]


@pytest.mark.anyio
async def test_close_agent_cancels_a_running_child_and_wait_reports_it(
    server: FakeModelServer, talk: Conversations, registry: ToolRegistry
) -> None:
    def close_it(body: dict[str, Any]) -> dict[str, Any]:
        return call("close_agent", {"id": tool_json(body)["agent_id"]}, "c2")

    def wait_it(body: dict[str, Any]) -> dict[str, Any]:
        return call("wait_agent", {"ids": [tool_json(body)["agent_id"]]}, "c3")

    talk.add(PARENT, call("spawn_agent", {"message": "slow"}), close_it, wait_it, text("ok"))
    talk.add("slow", Reply(text("never seen"), delay=3.0))
    with anyio.fail_after(20):
        _, result = await run_parent(server, registry)
    closed = json.loads(result.tool_results[1].result.output)
    assert closed["closed"] is True and closed["status"] == "cancelled"
    [waited] = json.loads(result.tool_results[2].result.output)["agents"]
    assert waited["status"] == "cancelled" and waited["error_kind"] == "cancelled"
    assert "[sub-agent depth 1] slow" in waited["output_tail"]
    assert "[cancelled]" in waited["output_tail"]


@pytest.mark.anyio
async def test_after_rebind_a_childs_output_is_readable(
    server: FakeModelServer, talk: Conversations, tmp_path: Path
) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    (second / "only-here.txt").write_text("moved\n")

    def read_its_log(body: dict[str, Any]) -> dict[str, Any]:
        return call("read_task_output", {"task_handle": tool_json(body)["agent_id"]}, "c2")

    talk.add(
        PARENT,
        call("spawn_agent", {"message": "read it", "mode": "sync"}),
        read_its_log,
        text("ok"),
    )
    talk.add("read it", call("read_file", {"path": "only-here.txt"}, "k1"), text("it says moved"))
    registry = build_registry(workspace=str(first))
    rebound = registry.rebind_cwd(Workspace(second))
    _, result = await run_parent(server, rebound)
    spawned = json.loads(result.tool_results[0].result.output)
    assert spawned["output"] == "it says moved"
    assert "moved" in tool_text(talk.bodies["read it"][1])  # the child works in the new folder
    log = result.tool_results[1].result
    assert log.success, log.output
    assert "← read_file: ok" in log.output and "it says moved" in log.output
    # one supervisor: the rebound registry's (the old one never saw the child)
    assert rebound.supervisor.get(spawned["agent_id"]) is not None
    assert registry.supervisor.get(spawned["agent_id"]) is None
    await rebound.supervisor.aclose()
    await registry.aclose()


@pytest.mark.anyio
async def test_depth_beyond_the_limit_is_policy_denied(
    server: FakeModelServer, talk: Conversations, registry: ToolRegistry
) -> None:
    talk.add(PARENT, call("spawn_agent", {"message": "nest", "mode": "sync"}), text("ok"))
    talk.add(
        "nest", call("spawn_agent", {"message": "deeper", "mode": "sync"}, "k1"), text("refused")
    )
    _, result = await run_parent(server, registry)
    assert json.loads(result.tool_results[0].result.output)["output"] == "refused"
    assert "Error [policy_denied]" in tool_text(talk.bodies["nest"][1])
    assert "deeper" not in talk.bodies  # no grandchild ever ran


@pytest.mark.anyio
async def test_max_depth_two_runs_a_grandchild_and_sums_every_level(
    server: FakeModelServer, talk: Conversations, registry: ToolRegistry
) -> None:
    talk.add(PARENT, call("spawn_agent", {"message": "nest", "mode": "sync"}), text("ok"))
    talk.add(
        "nest",
        call("spawn_agent", {"message": "deeper", "mode": "sync"}, "k1"),
        text("child done", usage=(20, 2)),
    )
    talk.add(
        "deeper",
        call("spawn_agent", {"message": "deepest", "mode": "sync"}, "g1"),
        text("grandchild done", usage=(30, 3)),
    )
    _, result = await run_parent(server, registry, max_depth=2)
    assert json.loads(result.tool_results[0].result.output)["output"] == "child done"
    assert "spawn_agent" not in tools_of(talk.bodies["deeper"][0])
    assert "Error [policy_denied]" in tool_text(talk.bodies["deeper"][1])
    # child: 10+5 then 20+2; grandchild: 10+5 then 30+3
    assert result.tool_usage == TokenUsage(70, 15)


@pytest.mark.anyio
async def test_a_served_model_is_used_and_another_is_refused_with_the_served_ones(
    server: FakeModelServer, talk: Conversations, registry: ToolRegistry
) -> None:
    talk.add(
        PARENT,
        call("spawn_agent", {"message": "small", "mode": "sync", "model": "fake-mini"}),
        call("spawn_agent", {"message": "big", "mode": "sync", "model": "gpt-9"}, "c2"),
        text("ok"),
    )
    talk.add("small", text("mini here"))
    _, result = await run_parent(server, registry)
    assert talk.bodies["small"][0]["model"] == "fake-mini"
    assert all(b["model"] == "fake-gpt" for b in talk.bodies[PARENT])
    refused = result.tool_results[1].result
    assert refused.error_kind is not None and refused.error_kind.value == "invalid_arguments"
    assert "'gpt-9' is not served" in refused.output and "fake-gpt, fake-mini" in refused.output
    assert "big" not in talk.bodies


@pytest.mark.anyio
async def test_allowed_tools_is_an_allow_list_and_unknown_names_are_refused(
    server: FakeModelServer, talk: Conversations, workspace: Path, registry: ToolRegistry
) -> None:
    talk.add(
        PARENT,
        call("spawn_agent", {"message": "narrow", "mode": "sync", "allowed_tools": ["read_file"]}),
        call("spawn_agent", {"message": "x", "allowed_tools": ["no_such_tool"]}, "c2"),
        text("ok"),
    )
    talk.add("narrow", call("write_file", {"path": "a.txt", "content": "x"}, "k1"), text("no"))
    _, result = await run_parent(server, registry)
    assert tools_of(talk.bodies["narrow"][0]) == ["read_file"]
    assert "Error [policy_denied]" in tool_text(talk.bodies["narrow"][1])
    assert not (workspace / "a.txt").exists()
    refused = result.tool_results[1].result
    assert refused.error_kind is not None and "no_such_tool" in refused.output


@pytest.mark.anyio
async def test_send_input_reaches_a_running_child_and_resume_continues_it(
    server: FakeModelServer, talk: Conversations, registry: ToolRegistry
) -> None:
    def send(body: dict[str, Any]) -> dict[str, Any]:
        agent_id = tool_json(body)["agent_id"]
        return call("send_input", {"id": agent_id, "message": "also say hi"}, "c2")

    def wait(body: dict[str, Any]) -> dict[str, Any]:
        return call("wait_agent", {"ids": [tool_json(body)["agent_id"]]}, "c3")

    def resend(body: dict[str, Any]) -> dict[str, Any]:
        agent_id = tool_json(body)["agents"][0]["agent_id"]
        return call("send_input", {"id": agent_id, "message": "and bye"}, "c4")

    def resume(body: dict[str, Any]) -> dict[str, Any]:
        return call("resume_agent", {"id": tool_json(body)["agent_id"]}, "c5")

    def wait_resumed(body: dict[str, Any]) -> dict[str, Any]:
        return call("wait_agent", {"ids": [tool_json(body)["resumed_agent_id"]]}, "c6")

    talk.add(PARENT, call("spawn_agent", {"message": "greet"}), send, wait, resend, resume)
    talk.scripts[PARENT].extend([wait_resumed, text("ok")])
    talk.add("greet", Reply(text("hello"), delay=1.0), text("hi"), text("bye"))
    with anyio.fail_after(20):
        _, result = await run_parent(server, registry)
    sent = json.loads(result.tool_results[1].result.output)
    assert sent["delivery"] == "live"
    waited = json.loads(result.tool_results[2].result.output)["agents"][0]
    assert waited["output"] == "hi"  # the child read the message before it stopped
    child = talk.bodies["greet"]
    assert child[1]["messages"][-1] == {"role": "user", "content": "also say hi"}
    recorded = json.loads(result.tool_results[3].result.output)
    assert recorded["delivery"] == "recorded"
    resumed = json.loads(result.tool_results[5].result.output)["agents"][0]
    assert resumed["output"] == "bye"
    # the resumed run continues the same conversation
    assert child[2]["messages"][-1] == {"role": "user", "content": "and bye"}
    assert {"role": "assistant", "content": "hi"} in child[2]["messages"]


@pytest.mark.anyio
async def test_a_host_delegate_wins_and_listings_can_tell_a_delegate_is_there(
    server: FakeModelServer, registry: ToolRegistry
) -> None:
    assert not has_spawn_delegate(registry)
    async with OPENAI.provider(server.url) as provider:
        agent = Agent(registry, provider)
        assert agent.spawn_delegate is not None
        assert has_spawn_delegate(registry, agent.session.ctx)
        assert not has_spawn_delegate(registry)  # over MCP nothing would run a child
        assert not Agent(registry, provider, sub_agents=False).spawn_delegate

        class Host:
            async def run(self, request: Any, record: Any) -> ToolResult:
                return ToolResult.ok("host")

        assert bind_spawn_delegate(registry, Host())
        assert has_spawn_delegate(registry)
        assert Agent(registry, provider).spawn_delegate is None


@pytest.mark.anyio
async def test_fork_context_hands_the_child_the_conversation_before_the_spawning_turn(
    server: FakeModelServer, registry: ToolRegistry
) -> None:
    from octos_tools.builtins.agents import SpawnRequest
    from octos_tools.context import ToolContext

    async with OPENAI.provider(server.url) as provider:
        agent = Agent(registry, provider)
        assert agent.spawn_delegate is not None
        agent.messages.extend(
            [
                {"role": "user", "content": "earlier question"},
                {"role": "assistant", "content": "earlier answer"},
                {"role": "user", "content": "now spawn"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c9"}]},
            ]
        )
        request = SpawnRequest(task="t", label="l", fork_context=True)
        prepared = await agent.spawn_delegate.prepare(request, ToolContext())
        assert [m["content"] for m in prepared.history] == [
            "earlier question",
            "earlier answer",
            "now spawn",
        ]
        plain = await agent.spawn_delegate.prepare(SpawnRequest(task="t", label="l"), ToolContext())
        assert plain.history == ()
