"""Agent loop against a scripted fake model server, over both wire formats."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from octos_tools.agent import (
    Agent,
    AgentEvent,
    ProviderAuthError,
    ProviderStatusError,
    StopReason,
)
from octos_tools.policy import GROUPS
from octos_tools.profile import build_registry
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import ConcurrencyClass, JSONObject, Tool, ToolResult

from .fake_model import DIALECTS, Dialect, FakeModelServer, Reply, fake_model_server


@pytest.fixture(params=DIALECTS, ids=lambda d: d.name)
def dialect(request: pytest.FixtureRequest) -> Dialect:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with fake_model_server() as s:
        yield s


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    return tmp_path


class Rendezvous(Tool):
    """Two calls that each wait for the other: they only both succeed if run concurrently."""

    name = "meet"
    description = "Wait for the partner call."
    concurrency_class = ConcurrencyClass.SAFE
    timeout = 20.0

    def __init__(self) -> None:
        self.input_schema: JSONObject = {
            "type": "object",
            "properties": {"who": {"type": "string", "enum": ["a", "b"]}},
            "required": ["who"],
            "additionalProperties": False,
        }
        self.events = {"a": anyio.Event(), "b": anyio.Event()}

    async def execute(self, args: JSONObject) -> ToolResult:
        who = args["who"]
        other = "b" if who == "a" else "a"
        self.events[who].set()
        await self.events[other].wait()
        return ToolResult.ok(f"{who} met {other}")


async def _run(
    dialect: Dialect,
    server: FakeModelServer,
    registry: ToolRegistry,
    prompt: str,
    **kwargs: Any,
) -> Any:
    provider_kwargs = kwargs.pop("provider_kwargs", {})
    async with dialect.provider(server.url, **provider_kwargs) as provider:
        agent = Agent(registry, provider, **kwargs)
        return await agent.run(prompt)


@pytest.mark.anyio
async def test_reads_a_real_file_then_answers(
    dialect: Dialect, server: FakeModelServer, workspace: Path
) -> None:
    registry = build_registry(workspace=workspace)
    server.script(
        dialect.calls_reply([("call_1", "read_file", {"path": "notes.txt"})], usage=(11, 3)),
        dialect.text_reply("It lists alpha and beta.", usage=(20, 7)),
    )
    result = await _run(dialect, server, registry, "What is in notes.txt?", system="Be brief.")
    assert result.stop_reason is StopReason.COMPLETED
    assert result.text == "It lists alpha and beta."
    assert result.iterations == 2
    assert (result.usage.input_tokens, result.usage.output_tokens) == (31, 10)
    assert [r.path for r in server.requests] == [dialect.path, dialect.path]
    [(call_id, content, is_error)] = dialect.results(server.bodies[1])
    assert call_id == "call_1" and not is_error
    assert "1│ alpha" in content and "2│ beta" in content
    [record] = result.tool_results
    assert record.iteration == 1 and record.call.name == "read_file" and record.result.success
    # The transcript is what the server saw last, plus the final answer.
    sent = server.bodies[1]["messages"]
    if dialect.name == "openai":
        sent = sent[1:]  # the system message is not part of the transcript
    assert result.messages[:-1] == sent
    await registry.aclose()


@pytest.mark.anyio
async def test_parallel_safe_calls_run_concurrently_and_pair_up(
    dialect: Dialect, server: FakeModelServer, workspace: Path
) -> None:
    registry = build_registry(workspace=workspace)
    registry.register(Rendezvous())
    server.script(
        dialect.calls_reply(
            [
                ("c1", "meet", {"who": "a"}),
                ("c2", "read_file", {"path": "notes.txt"}),
                ("c3", "meet", {"who": "b"}),
            ]
        ),
        dialect.text_reply("done"),
    )
    result = await _run(dialect, server, registry, "go")
    results = dialect.results(server.bodies[1])
    assert [r[0] for r in results] == ["c1", "c2", "c3"]
    assert results[0][1:] == ("a met b", False)
    assert "alpha" in results[1][1] and not results[1][2]
    assert results[2][1:] == ("b met a", False)
    assert [r.call.id for r in result.tool_results] == ["c1", "c2", "c3"]
    await registry.aclose()


@pytest.mark.anyio
async def test_exclusive_batch_is_serial_and_a_failure_cancels_the_rest(
    dialect: Dialect, server: FakeModelServer, workspace: Path
) -> None:
    registry = build_registry(workspace=workspace)
    server.script(
        dialect.calls_reply(
            [
                ("e1", "edit_file", {"path": "gone.txt", "old_string": "a", "new_string": "b"}),
                ("e2", "write_file", {"path": "new.txt", "content": "x"}),
            ]
        ),
        dialect.text_reply("gave up"),
    )
    result = await _run(dialect, server, registry, "edit")
    (id1, text1, err1), (id2, text2, err2) = dialect.results(server.bodies[1])
    assert (id1, id2) == ("e1", "e2")
    assert err1 and text1.startswith("Error [not_found]")
    assert err2 and text2.startswith("Error [cancelled]")
    assert not (workspace / "new.txt").exists()
    assert [r.result.error_kind for r in result.tool_results] == ["not_found", "cancelled"]
    await registry.aclose()


@pytest.mark.anyio
async def test_tool_errors_reach_the_model_as_errors(
    dialect: Dialect, server: FakeModelServer, workspace: Path
) -> None:
    registry = build_registry(workspace=workspace)
    server.script(
        dialect.calls_reply(
            [
                ("t1", "read_file", {"path": "missing.txt"}),
                ("t2", "no_such_tool", {}),
                ("t3", "read_file", {"path": "../outside.txt"}),
            ]
        ),
        dialect.text_reply("sorry"),
    )
    result = await _run(dialect, server, registry, "read")
    results = dialect.results(server.bodies[1])
    assert [r[0] for r in results] == ["t1", "t2", "t3"]
    assert all(r[2] for r in results)  # is_error true / "Error [...]" content
    assert results[0][1].startswith("Error [not_found]")
    assert results[1][1].startswith("Error [unknown_tool]")
    assert results[2][1].startswith("Error [path_outside_workspace]")
    if dialect.name == "anthropic":  # the flag itself, not only the text
        blocks = server.bodies[1]["messages"][-1]["content"]
        assert [b["is_error"] for b in blocks] == [True, True, True]
    assert result.text == "sorry" and result.stop_reason is StopReason.COMPLETED
    await registry.aclose()


@pytest.mark.anyio
async def test_a_deferred_tool_called_by_the_model_activates_its_group(
    dialect: Dialect, server: FakeModelServer, workspace: Path
) -> None:
    registry = build_registry(workspace=workspace)
    assert registry.is_deferred("shell")  # the default profile lists exec_command instead
    server.script(
        dialect.calls_reply([("x1", "shell", {"command": "echo hi-from-shell"})]),
        dialect.text_reply("ran it"),
    )
    runtime = [n for n in GROUPS["group:runtime"] if n in registry and registry.is_deferred(n)]
    result = await _run(dialect, server, registry, "run echo")
    first, second = (dialect.tool_names(b) for b in server.bodies)
    assert runtime and not set(runtime) & set(first)
    assert set(runtime) <= set(second)
    [(call_id, content, is_error)] = dialect.results(server.bodies[1])
    assert call_id == "x1" and not is_error and "hi-from-shell" in content
    assert result.text == "ran it"
    await registry.aclose()


@pytest.mark.anyio
async def test_max_iterations_stops_the_loop(
    dialect: Dialect, server: FakeModelServer, workspace: Path
) -> None:
    registry = build_registry(workspace=workspace)
    server.script(
        *(dialect.calls_reply([(f"m{i}", "read_file", {"path": "notes.txt"})]) for i in range(5))
    )
    result = await _run(dialect, server, registry, "loop", max_iterations=3)
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert result.iterations == 3 and len(server.requests) == 3
    assert [r.call.id for r in result.tool_results] == ["m0", "m1", "m2"]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 15)
    # Every call of the last turn has its result in the transcript (resumable).
    last = result.messages[-1]
    if dialect.name == "openai":
        assert last == {"role": "tool", "tool_call_id": "m2", "content": "1│ alpha\n2│ beta"}
    else:
        assert last["content"][0]["tool_use_id"] == "m2"
    await registry.aclose()


@pytest.mark.anyio
async def test_http_500_is_retried_then_succeeds(
    dialect: Dialect, server: FakeModelServer, workspace: Path
) -> None:
    registry = build_registry(workspace=workspace)
    server.script(
        Reply({"error": {"message": "overloaded"}}, status=500),
        Reply({"error": {"message": "slow down"}}, status=429, headers={"retry-after": "0"}),
        dialect.text_reply("hello"),
    )
    result = await _run(dialect, server, registry, "hi")
    assert result.text == "hello"
    assert len(server.requests) == 3
    assert server.bodies[0] == server.bodies[1] == server.bodies[2]
    await registry.aclose()


@pytest.mark.anyio
async def test_http_401_raises_the_typed_error_without_retrying(
    dialect: Dialect, server: FakeModelServer, workspace: Path
) -> None:
    registry = build_registry(workspace=workspace)
    server.script(
        Reply(
            {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}},
            status=401,
        )
    )
    with pytest.raises(ProviderAuthError) as info:
        await _run(dialect, server, registry, "hi")
    assert info.value.status == 401 and info.value.attempts == 1
    assert isinstance(info.value, ProviderStatusError)
    assert "bad key" in str(info.value) and "API key" in str(info.value)
    assert len(server.requests) == 1
    await registry.aclose()


@pytest.mark.anyio
async def test_event_hook_sees_requests_tool_starts_and_results(
    dialect: Dialect, server: FakeModelServer, workspace: Path
) -> None:
    registry = build_registry(workspace=workspace)
    events: list[AgentEvent] = []

    async def hook(event: AgentEvent) -> None:
        events.append(event)

    server.script(
        dialect.calls_reply(
            [("h1", "read_file", {"path": "notes.txt"}), ("h2", "glob", {"pattern": "*.txt"})]
        ),
        dialect.text_reply("ok"),
    )
    await _run(dialect, server, registry, "look", on_event=hook)
    assert [(e.kind, e.iteration) for e in events] == [
        ("model_request", 1),
        ("model_response", 1),
        ("tool_start", 1),
        ("tool_start", 1),
        ("tool_result", 1),
        ("tool_result", 1),
        ("model_request", 2),
        ("model_response", 2),
    ]
    assert "read_file" in events[0].tools
    assert [c.id for c in events[1].calls] == ["h1", "h2"]
    assert [e.call.id for e in events[2:6] if e.call] == ["h1", "h2", "h1", "h2"]
    assert events[4].result is not None and events[4].result.success
    assert events[7].text == "ok"
    await registry.aclose()


@pytest.mark.anyio
async def test_a_sync_hook_works_and_runs_continue_the_conversation(
    dialect: Dialect, server: FakeModelServer, workspace: Path
) -> None:
    registry = build_registry(workspace=workspace)
    kinds: list[str] = []
    server.script(dialect.text_reply("first"), dialect.text_reply("second"))
    async with dialect.provider(server.url) as provider:
        agent = Agent(registry, provider, on_event=lambda e: kinds.append(e.kind))
        one = await agent.run("hello")
        two = await agent.run("again")
        assert (one.text, two.text) == ("first", "second")
        assert two.iterations == 1
        sent = server.bodies[1]["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "user"]
        assert sent[0]["content"] == "hello" and sent[2]["content"] == "again"
        assert len(two.messages) == 4
        agent.reset()
        assert agent.messages == []
    assert kinds == ["model_request", "model_response"] * 2
    await registry.aclose()


def test_max_iterations_must_be_positive(workspace: Path) -> None:
    registry = build_registry(workspace=workspace)
    provider = DIALECTS[0].provider("http://127.0.0.1:9")
    with pytest.raises(ValueError, match="max_iterations"):
        Agent(registry, provider, max_iterations=0)


@pytest.mark.anyio
async def test_a_failing_hook_ends_the_run(server: FakeModelServer, workspace: Path) -> None:
    registry = build_registry(workspace=workspace)
    dialect = DIALECTS[0]
    server.script(dialect.text_reply("never seen"))

    def hook(event: AgentEvent) -> None:
        raise RuntimeError(f"host bug at {event.kind}")

    with pytest.raises(RuntimeError, match="model_request"):
        await _run(dialect, server, registry, "hi", on_event=hook)
    assert server.requests == []
    await registry.aclose()


@pytest.mark.anyio
async def test_the_approve_callback_decides_a_risky_command(
    dialect: Dialect, server: FakeModelServer, workspace: Path
) -> None:
    """The agent loop's approval channel is its ``approve=`` callback: asked with the exact
    command; no leaves the folder, yes removes it."""
    from octos_tools.context import ApprovalRequest

    registry = build_registry(workspace=workspace)
    asked: list[ApprovalRequest] = []
    for answer in (False, True):
        (workspace / "build").mkdir(exist_ok=True)

        async def approve(request: ApprovalRequest, answer: bool = answer) -> bool:
            asked.append(request)
            return answer

        server.script(
            dialect.calls_reply([("call_1", "exec_command", {"cmd": "rm -fr build"})]),
            dialect.text_reply("ok"),
        )
        result = await _run(dialect, server, registry, "clean up", approve=approve)
        [record] = result.tool_results
        if answer:
            assert record.result.success and not (workspace / "build").exists()
        else:
            assert record.result.error_kind == "approval_denied"
            assert (workspace / "build").exists()
    assert [r.action for r in asked] == ["rm -fr build", "rm -fr build"]
    assert all(r.reason == "it matches the safety rule 'rm -rf'" for r in asked)
    await registry.aclose()
