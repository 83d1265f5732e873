"""The OpenAI Agents SDK adapter, driven by the SDK's own ``agents.testing.ScriptedModel``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from octos_tools.adapters._shared import deferred_names
from octos_tools.session import ToolSession

from .conftest import EDITED, SCRIPT, expected_outcome

if importlib.util.find_spec("agents") is None:
    pytest.skip("openai-agents is not installed", allow_module_level=True)
if TYPE_CHECKING:
    from agents.testing import ModelCall

# The SDK (~1 s of imports) is imported by the tests that run, not at collection, where every
# xdist worker would import it.

pytestmark = pytest.mark.anyio


def _tool_outputs(items: Any) -> dict[str, str]:
    """call_id -> output text of every function_call_output / apply_patch output in ``items``."""
    out: dict[str, str] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and str(item.get("type", "")).endswith("_output"):
            out[str(item.get("call_id"))] = str(item.get("output", ""))
    return out


async def test_agent_run_reads_edits_is_refused_and_recovers(
    session: ToolSession, workspace: Path
) -> None:
    from agents import Agent, Runner
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from octos_tools.adapters.openai_agents import OctosAgentTools

    octos = OctosAgentTools(session)
    script = [*SCRIPT, SCRIPT[-1]]  # the refused deferred call is made again
    offered: list[set[str]] = []
    outputs: dict[str, str] = {}

    def respond(call: ModelCall) -> Any:
        offered.append({t.name for t in call.tools})
        outputs.update(_tool_outputs(call.input))
        if not script:
            return [assistant_message("done")]
        name, args = script.pop(0)
        return [function_call(name, args, call_id=f"call-{len(offered)}")]

    model = ScriptedModel([ModelStep.respond(respond) for _ in range(len(script) + 1)])
    agent = Agent(name="coder", model=model, tools=octos.tools)
    result = await Runner.run(
        agent, "edit notes.txt", run_config=octos.run_config(tracing_disabled=True)
    )

    assert result.final_output == "done"
    assert (workspace / "notes.txt").read_bytes() == EDITED
    for i in range(len(SCRIPT) - 1):
        assert expected_outcome(i) in outputs[f"call-{i + 1}"], outputs
    assert "Do not retry" in outputs["call-5"]
    # 'shell' was deferred: disabled, reported missing and activated, then enabled and run
    assert "shell" not in offered[0]
    assert "loaded now" in outputs["call-6"]
    assert "shell" in offered[6]
    assert "gamma" in outputs["call-7"] and "Exit code: 0" in outputs["call-7"]
    assert all("grep" not in names for names in offered)  # hidden by the provider policy
    assert len(session.ticks) == len(offered)  # housekeeping once per model request
    model.assert_complete()


async def test_function_tools_carry_our_schemas(session: ToolSession) -> None:
    from octos_tools.adapters.openai_agents import OctosAgentTools

    octos = OctosAgentTools(session)
    by_name = {s.name: s for s in session.current_specs()}
    tools = {t.name: t for t in octos.tools}
    assert set(by_name) <= set(tools)
    for name, spec in by_name.items():
        assert tools[name].params_json_schema == spec.input_schema
        assert tools[name].strict_json_schema is False
    # raw JSON strings reach our parser: the model sees our invalid_json message
    from agents.tool_context import ToolContext

    ctx = ToolContext(context=None, tool_name="read_file", tool_call_id="c1", tool_arguments="{")
    text = await tools["read_file"].on_invoke_tool(ctx, "{")
    assert text.startswith("Error [invalid_json]")
    ok = await tools["read_file"].on_invoke_tool(ctx, json.dumps({"path": "notes.txt"}))
    assert "beta" in ok


async def test_without_the_run_config_formatter_other_tool_errors_keep_sdk_text(
    session: ToolSession,
) -> None:
    from octos_tools.adapters.openai_agents import OctosAgentTools

    octos = OctosAgentTools(session)
    config = octos.run_config(tool_error_formatter=lambda args: "theirs")
    from agents.run_config import ToolErrorFormatterArgs

    def args(name: str) -> Any:
        return ToolErrorFormatterArgs(
            kind="tool_not_found",
            tool_type="function",
            tool_name=name,
            call_id="c",
            default_message="Tool not found.",
            run_context=None,  # type: ignore[arg-type]
        )

    assert config.tool_error_formatter is not None
    assert config.tool_error_formatter(args("no_such_tool")) == "theirs"
    assert "loaded now" in config.tool_error_formatter(args("web_fetch"))
    assert "web_fetch" not in deferred_names(session)


async def test_native_apply_patch_call_goes_to_the_workspace_editor(workspace: Path) -> None:
    from agents import Agent, ApplyPatchTool, RunConfig, Runner
    from agents.testing import ModelStep, ScriptedModel, assistant_message

    from octos_tools.adapters.openai_agents import WorkspaceEditor

    editor = WorkspaceEditor(workspace)
    patch_call = {
        "type": "apply_patch_call",
        "call_id": "p1",
        "status": "completed",
        "operation": {
            "type": "update_file",
            "path": "notes.txt",
            "diff": "@@\n alpha\n-beta\n+gamma\n",
        },
    }
    seen: list[Any] = []

    def second(call: ModelCall) -> Any:
        seen.append(call.input)
        return [assistant_message("patched")]

    model = ScriptedModel([[patch_call], ModelStep.respond(second)])
    agent = Agent(name="coder", model=model, tools=[ApplyPatchTool(editor=editor)])
    result = await Runner.run(agent, "patch it", run_config=RunConfig(tracing_disabled=True))
    assert result.final_output == "patched"
    assert (workspace / "notes.txt").read_bytes() == EDITED
    assert "Updated notes.txt" in json.dumps(seen[0], default=str)


async def test_images_are_returned_as_tool_output_images(session: ToolSession) -> None:
    from agents import ToolOutputImage, ToolOutputText
    from agents.tool_context import ToolContext

    from octos_tools.adapters.openai_agents import OctosAgentTools
    from octos_tools.tool_types import ImageContent, JSONObject, Tool, ToolResult

    class Picture(Tool):
        name = "picture"
        description = "Return a tiny picture."
        input_schema: JSONObject = {"type": "object", "properties": {}}  # noqa: RUF012

        async def execute(self, args: JSONObject) -> ToolResult:
            return ToolResult(output="a picture", content=[ImageContent(b"PNG", "image/png")])

    session.registry.register(Picture())
    tool = next(t for t in OctosAgentTools(session).tools if t.name == "picture")
    ctx = ToolContext(context=None, tool_name="picture", tool_call_id="p", tool_arguments="{}")
    out = await tool.on_invoke_tool(ctx, "{}")
    assert out[0] == ToolOutputText(text="a picture")
    assert out[1] == ToolOutputImage(image_url="data:image/png;base64,UE5H")


async def test_refresh_adds_tools_registered_later(session: ToolSession) -> None:
    from octos_tools.adapters.openai_agents import OctosAgentTools
    from tests.helpers import EchoTool

    octos = OctosAgentTools(session)
    tools = octos.tools
    session.registry.register(EchoTool("late_echo"))
    assert "late_echo" not in {t.name for t in tools}
    assert octos.refresh() is tools
    late = next(t for t in tools if t.name == "late_echo")
    assert late.is_enabled(None, None)  # type: ignore[operator]
    assert [t.name for t in tools].count("late_echo") == 1
    octos.refresh()
    assert [t.name for t in tools].count("late_echo") == 1


async def test_agents_as_tools_run_a_sub_agent_over_for_sub_agent(tmp_path: Path) -> None:
    """The SDK's own delegation (``Agent.as_tool``): the sub-agent's tools come from
    ``for_sub_agent`` (allow list kept, octos's sub-agent tools gone, depth + 1)."""
    from agents import Agent, Runner
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from octos_tools.adapters.openai_agents import OctosAgentTools
    from octos_tools.profile import build_registry

    (tmp_path / "notes.txt").write_text("alpha\n")
    registry = build_registry(workspace=tmp_path)
    octos = OctosAgentTools(registry)
    reader_tools = octos.for_sub_agent(["read_file"])
    offered: list[set[str]] = []
    outputs: dict[str, str] = {}

    def reader_step(call: ModelCall) -> Any:
        offered.append({t.name for t in call.tools})
        outputs.update(_tool_outputs(call.input))
        if not outputs:
            return [function_call("read_file", {"path": "notes.txt"}, call_id="r1")]
        return [assistant_message(f"notes: {outputs['r1'].strip()}")]

    reader = Agent(
        name="reader",
        model=ScriptedModel([ModelStep.respond(reader_step), ModelStep.respond(reader_step)]),
        tools=reader_tools.tools,
    )
    parent_outputs: dict[str, str] = {}

    def parent_step(call: ModelCall) -> Any:
        parent_outputs.update(_tool_outputs(call.input))
        if not parent_outputs:
            return [function_call("ask_reader", {"input": "notes?"}, call_id="p1")]
        return [assistant_message(parent_outputs["p1"])]

    parent = Agent(
        name="lead",
        model=ScriptedModel([ModelStep.respond(parent_step), ModelStep.respond(parent_step)]),
        tools=[*octos.tools, reader.as_tool(tool_name="ask_reader", tool_description="Ask.")],
    )
    result = await Runner.run(
        parent, "What do the notes say?", run_config=octos.run_config(tracing_disabled=True)
    )
    assert "alpha" in result.final_output
    assert offered[0] == {"read_file"}
    assert reader_tools.session.registry.get("spawn_agent") is None
    assert reader_tools.session.ctx.spawn_depth == 1
    await reader_tools.aclose()
    await octos.aclose()
    await registry.aclose()


async def test_a_risky_command_interrupts_the_run_for_approval(
    session: ToolSession, workspace: Path
) -> None:
    """needs_approval: the run stops with an interruption; rejecting runs nothing,
    approving runs that exact call."""
    from agents import Agent, Runner
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from octos_tools.adapters.openai_agents import OctosAgentTools

    command = "rm --recursive --force build && echo gone"
    for approve in (False, True):
        (workspace / "build").mkdir(exist_ok=True)
        octos = OctosAgentTools(session)
        outputs: dict[str, str] = {}

        def respond(call: ModelCall, outputs: dict[str, str] = outputs) -> Any:
            outputs.update(_tool_outputs(call.input))
            return [assistant_message("done")]

        model = ScriptedModel(
            [
                ModelStep.respond(
                    lambda _c: [function_call("exec_command", {"cmd": command}, call_id="c1")]
                ),
                ModelStep.respond(respond),
            ]
        )
        agent = Agent(name="coder", model=model, tools=octos.tools)
        config = octos.run_config(tracing_disabled=True)
        first = await Runner.run(agent, "clean", run_config=config)
        assert [i.tool_name for i in first.interruptions] == ["exec_command"]
        assert (workspace / "build").exists()
        state = first.to_state()
        for item in first.interruptions:
            (state.approve if approve else state.reject)(item)
        final = await Runner.run(agent, state, run_config=config)
        assert final.final_output == "done"
        assert (workspace / "build").exists() is not approve
        if approve:
            assert any("gone" in text for text in outputs.values()), outputs
