"""The pydantic-ai toolset, driven by pydantic-ai's own ``FunctionModel`` (no network)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from octos_tools.adapters.pydantic_ai import OctosToolset
from octos_tools.registry import ToolRegistry
from octos_tools.session import ToolSession
from octos_tools.tool_types import ImageContent, JSONObject, Tool, ToolResult

from .conftest import EDITED, SCRIPT, expected_outcome

pytestmark = pytest.mark.anyio


def _returned(messages: list[ModelMessage]) -> list[tuple[str, str, str]]:
    """(kind, tool name, text) of every tool answer in ``messages``."""
    out = []
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                kind = "retry" if part.outcome == "retried" else part.outcome
                out.append((kind, part.tool_name, part.model_response_str()))
            elif isinstance(part, RetryPromptPart):
                out.append(("retry", part.tool_name or "", part.model_response()))
    return out


async def test_agent_run_reads_edits_is_refused_and_recovers(
    session: ToolSession, workspace: Path
) -> None:
    script = [*SCRIPT, SCRIPT[-1]]  # the refused deferred call is made again
    offered: list[list[str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append(sorted(t.name for t in info.function_tools))
        if not script:
            return ModelResponse(parts=[TextPart("done")])
        name, args = script.pop(0)
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"call-{len(offered)}")])

    agent = Agent(FunctionModel(model), toolsets=[OctosToolset(session)])
    result = await agent.run("edit notes.txt")

    assert result.output == "done"
    assert (workspace / "notes.txt").read_bytes() == EDITED
    answers = _returned(result.all_messages())
    # one answer per scripted call, plus pydantic-ai's own refusal of the deferred 'shell'
    assert [a[1] for a in answers] == [s[0] for s in SCRIPT[:-1]] + ["shell", "shell"]
    for i, (_name, _args) in enumerate(SCRIPT[:-1]):
        assert expected_outcome(i) in answers[i][2], answers[i]
    kinds = [a[0] for a in answers]
    assert kinds[1] == kinds[2] == "retry"  # bad arguments: pydantic-ai's retry convention
    assert kinds[4] == "success"  # policy_denied: plain tool-return text, no retry
    assert "Do not retry" in answers[4][2]
    # 'shell' was deferred: not offered, refused by pydantic-ai, activated, offered, run
    assert "shell" not in offered[0]
    assert answers[5][0] == "retry" and "Unknown tool name" in answers[5][2]
    assert "shell" in offered[-1]
    assert answers[6][0] == "success" and "gamma" in answers[6][2]
    # the provider policy hides grep on every step; write_file is listed (its context denies it)
    assert all("grep" not in names for names in offered)
    assert "write_file" in offered[0]
    assert len(session.ticks) == len(offered)  # housekeeping once per model request


async def test_specs_are_ours_and_argument_validation_is_skipped(session: ToolSession) -> None:
    toolset = OctosToolset(session)
    seen: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not seen:
            seen.update({t.name: t for t in info.function_tools})
            # "2" for an integer: pydantic's lax mode would coerce it; our rules refuse it
            return ModelResponse(
                parts=[ToolCallPart("read_file", {"path": "notes.txt", "start_line": "2"})]
            )
        return ModelResponse(parts=[TextPart("ok")])

    result = await Agent(FunctionModel(model), toolsets=[toolset]).run("x")
    by_name = {s.name: s for s in session.current_specs()}
    assert set(seen) == set(by_name)
    for name, tool_def in seen.items():
        assert tool_def.parameters_json_schema == by_name[name].input_schema
        assert tool_def.description == by_name[name].description
        assert tool_def.sequential == by_name[name].destructive
    answers = _returned(result.all_messages())
    assert answers[0][0] == "retry" and "[invalid_arguments]" in answers[0][2]
    assert "start_line" in answers[0][2]


async def test_discovery_tool_activates_for_the_next_step(session: ToolSession) -> None:
    steps = [
        ("tool_search", {"query": "select:shell"}),
        ("shell", {"command": "echo hi"}),
    ]
    offered: list[set[str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append({t.name for t in info.function_tools})
        if not steps:
            return ModelResponse(parts=[TextPart("done")])
        name, args = steps.pop(0)
        return ModelResponse(parts=[ToolCallPart(name, args)])

    result = await Agent(FunctionModel(model), toolsets=[OctosToolset(session)]).run("x")
    assert "shell" not in offered[0] and "shell" in offered[1]
    answers = _returned(result.all_messages())
    assert answers[1] == ("success", "shell", answers[1][2]) and "hi" in answers[1][2]


class _Picture(Tool):
    name = "picture"
    description = "Return a tiny picture."
    input_schema: JSONObject = {"type": "object", "properties": {}}  # noqa: RUF012

    async def execute(self, args: JSONObject) -> ToolResult:
        return ToolResult(output="a picture", content=[ImageContent(b"\x89PNG-bytes", "image/png")])


async def test_call_tool_directly_maps_results(registry: ToolRegistry) -> None:
    registry.register(_Picture())
    toolset = OctosToolset(registry)  # a registry gets a session of its own
    assert isinstance(toolset.session, ToolSession)

    from pydantic_ai import RunContext
    from pydantic_ai.messages import BinaryContent
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    tools = await toolset.get_tools(ctx)
    value = await toolset.call_tool("picture", {}, ctx, tools["picture"])
    assert value[0] == "a picture"
    assert isinstance(value[1], BinaryContent) and value[1].data == b"\x89PNG-bytes"
    with pytest.raises(ModelRetry, match=r"\[invalid_arguments\]"):
        await toolset.call_tool("read_file", {"nope": 1}, ctx, tools["read_file"])
    missing = await toolset.call_tool("read_file", {"path": "absent.txt"}, ctx, tools["read_file"])
    assert missing.startswith("Error [not_found]")
    raw = tools["read_file"].args_validator.validate_json('{"path": "notes.txt"')
    with pytest.raises(ModelRetry, match=r"\[invalid_json\]"):
        await toolset.call_tool("read_file", raw, ctx, tools["read_file"])
    assert json.loads(json.dumps(tools["read_file"].args_validator.validate_json("{}"))) == {}


async def test_raise_tool_failed_marks_definitive_failures(session: ToolSession) -> None:
    steps = [ToolCallPart("write_file", {"path": "x.txt", "content": "x"})]

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[steps.pop(0)] if steps else [TextPart("ok")])

    toolset = OctosToolset(session, raise_tool_failed=True)
    result = await Agent(FunctionModel(model), toolsets=[toolset]).run("x")
    (answer,) = _returned(result.all_messages())
    assert answer[0] == "failed" and "[policy_denied]" in answer[2]


async def test_sessions_keep_their_own_activation(registry: ToolRegistry) -> None:
    first, second = ToolSession(registry), ToolSession(registry)
    calls = [ToolCallPart("shell", {"command": "echo one"})] * 2
    offered: list[set[str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append({t.name for t in info.function_tools})
        return ModelResponse(parts=[calls.pop(0)] if calls else [TextPart("ok")])

    await Agent(FunctionModel(model), toolsets=[OctosToolset(first)]).run("x")
    assert "shell" in offered[-1] and not first.is_deferred("shell")
    assert second.is_deferred("shell")  # the other session's view did not change
    assert "shell" not in {s.name for s in second.specs()}
    await first.aclose()
    await second.aclose()


async def test_aclose_closes_only_a_session_it_made(registry: ToolRegistry) -> None:
    own = OctosToolset(registry)
    given = ToolSession(registry)
    borrowed = OctosToolset(given)
    await own.aclose()
    await borrowed.aclose()
    result = await given.call("read_file", {"path": "notes.txt"})
    assert result.success  # the given session and the registry still work
    await given.aclose()


async def test_agent_delegation_runs_a_delegate_over_the_sub_agent_toolset(
    tmp_path: Path,
) -> None:
    """pydantic-ai's agent delegation: a parent tool runs a delegate agent whose toolset is
    ``for_sub_agent``'s (allow list kept, octos's sub-agent tools gone), usage shared."""
    from octos_tools.profile import build_registry

    (tmp_path / "notes.txt").write_text("alpha\n")
    registry = build_registry(workspace=tmp_path)
    octos = OctosToolset(registry)
    reader_toolset = octos.for_sub_agent(["read_file", "list_dir"])
    offered: list[list[str]] = []

    def reader_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append(sorted(t.name for t in info.function_tools))
        returned = _returned(messages)
        if not returned:
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": "notes.txt"}, "r1")])
        return ModelResponse(parts=[TextPart(f"notes say: {returned[-1][2].strip()}")])

    reader = Agent(FunctionModel(reader_model), toolsets=[reader_toolset])

    def parent_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = _returned(messages)
        if not returned:
            return ModelResponse(parts=[ToolCallPart("ask_reader", {"question": "notes?"}, "p1")])
        return ModelResponse(parts=[TextPart(returned[-1][2])])

    parent = Agent(FunctionModel(parent_model), toolsets=[octos])

    @parent.tool
    async def ask_reader(ctx: RunContext[None], question: str) -> str:
        return (await reader.run(question, usage=ctx.usage)).output

    result = await parent.run("What do the notes say?")
    assert "alpha" in result.output
    assert offered[0] == ["list_dir", "read_file"]  # the allow list, nothing else
    assert reader_toolset.session.registry.get("spawn_agent") is None
    assert reader_toolset.session.ctx.spawn_depth == 1
    assert result.usage.requests == 4  # the delegate's two requests count in the parent's
    await reader_toolset.aclose()
    await octos.aclose()
    await registry.aclose()


async def test_a_risky_command_is_deferred_for_approval_then_runs_once_approved(
    session: ToolSession, workspace: Path
) -> None:
    """pydantic-ai's human-in-the-loop: ApprovalRequired ends the run with
    DeferredToolRequests; a denial runs nothing, an approval runs that call."""
    from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolDenied

    (workspace / "build").mkdir()
    command = "rm -r -f build && echo gone"

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            call = ToolCallPart("exec_command", {"cmd": command}, tool_call_id="c1")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(
        FunctionModel(model),
        toolsets=[OctosToolset(session)],
        output_type=[str, DeferredToolRequests],  # type: ignore[arg-type]
    )
    first = await agent.run("clean")
    assert isinstance(first.output, DeferredToolRequests)
    assert [c.tool_call_id for c in first.output.approvals] == ["c1"]
    asked = first.output.metadata["c1"]["octos_approval"]
    assert asked["action"] == command and "rm -rf" in asked["reason"]
    assert (workspace / "build").exists()

    no = DeferredToolResults(approvals={"c1": ToolDenied("not now")})
    await agent.run(message_history=first.all_messages(), deferred_tool_results=no)
    assert (workspace / "build").exists()

    yes = DeferredToolResults(approvals={"c1": True})
    done = await agent.run(message_history=first.all_messages(), deferred_tool_results=yes)
    assert not (workspace / "build").exists()
    assert any("gone" in a[2] for a in _returned(done.all_messages()))
