"""The LangChain adapter in a small ``bind_tools`` agent loop driven by LangChain's own
``GenericFakeChatModel`` (no network)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from octos_tools.adapters.langchain import OctosLangChainTools, OctosTool
from octos_tools.session import ToolSession
from octos_tools.tool_types import ToolResult

from .conftest import EDITED, SCRIPT, expected_outcome

pytestmark = pytest.mark.anyio


class _ScriptedChat(GenericFakeChatModel):
    """GenericFakeChatModel with ``bind_tools`` recording what the model was offered."""

    offered: list[list[dict[str, Any]]] = []  # noqa: RUF012

    def bind_tools(self, tools: Sequence[BaseTool], **kwargs: Any) -> _ScriptedChat:
        self.offered.append([convert_to_openai_tool(t) for t in tools])
        return self


def _replies() -> Iterator[AIMessage]:
    for i, (name, args) in enumerate(SCRIPT, 1):
        if isinstance(args, str):  # what a chat model makes of arguments that are not JSON
            yield AIMessage(
                content="",
                invalid_tool_calls=[
                    {
                        "type": "invalid_tool_call",
                        "name": name,
                        "args": args,
                        "id": f"call-{i}",
                        "error": "not JSON",
                    }
                ],
            )
        else:
            yield AIMessage(
                content="", tool_calls=[{"name": name, "args": args, "id": f"call-{i}"}]
            )
    yield AIMessage(content="done")


async def test_agent_loop_reads_edits_is_refused_and_recovers(
    session: ToolSession, workspace: Path
) -> None:
    octos = OctosLangChainTools(session)
    chat = _ScriptedChat(messages=_replies())
    chat.offered = []
    messages: list[BaseMessage] = [HumanMessage("edit notes.txt")]
    answers: list[ToolMessage] = []
    for _ in range(20):
        reply = await chat.bind_tools(octos.tools()).ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls and not reply.invalid_tool_calls:
            break
        results = await octos.arun_tool_calls(reply)
        answers.extend(results)
        messages.extend(results)

    assert messages[-1].content == "done"
    assert (workspace / "notes.txt").read_bytes() == EDITED
    assert [a.tool_call_id for a in answers] == [f"call-{i}" for i in range(1, len(SCRIPT) + 1)]
    for i, answer in enumerate(answers):
        assert expected_outcome(i) in str(answer.content), answer
    statuses = [a.status for a in answers]
    assert statuses == ["success", "error", "error", "success", "error", "success"]
    assert isinstance(answers[0].artifact, ToolResult) and answers[0].artifact.success
    assert "Do not retry" in str(answers[4].content)
    offered = [[t["function"]["name"] for t in tools] for tools in chat.offered]
    # shell was deferred: not offered, ran when called by name, offered from then on
    assert "shell" not in offered[0] and "shell" in offered[-1]
    assert all("grep" not in names for names in offered)
    assert len(session.ticks) == len(offered)  # housekeeping once per model request


async def test_tools_carry_our_schemas_unvalidated(session: ToolSession) -> None:
    octos = OctosLangChainTools(session)
    tools = octos.tools()
    specs = {s.name: s for s in session.current_specs()}
    assert [t.name for t in tools] == list(specs)
    for tool in tools:
        assert isinstance(tool, OctosTool)
        assert tool.args_schema == specs[tool.name].input_schema
        assert convert_to_openai_tool(tool)["function"]["parameters"] == tool.args_schema
    read = octos.get("read_file")
    assert read is octos.get("read_file")  # cached while the spec does not change
    # "2" for an integer: LangChain does not coerce (dict schema), our rules refuse it
    message = await read.ainvoke(
        {
            "type": "tool_call",
            "id": "x1",
            "name": "read_file",
            "args": {"path": "notes.txt", "start_line": "2"},
        }
    )
    assert message.status == "error" and "[invalid_arguments]" in message.content
    unknown = await octos.get("no_such_tool").ainvoke(
        {"type": "tool_call", "id": "x2", "name": "no_such_tool", "args": {}}
    )
    assert unknown.status == "error" and "[unknown_tool]" in unknown.content
    hidden = await octos.get("grep").ainvoke(
        {"type": "tool_call", "id": "x3", "name": "grep", "args": {"pattern": "a"}}
    )
    assert hidden.status == "error" and "[policy_denied]" in hidden.content


async def test_tool_call_id_reaches_the_session(session: ToolSession) -> None:
    from octos_tools.tool_types import JSONObject, Tool

    seen: list[str] = []

    class Spy(Tool):
        name = "spy"
        description = "Record the call id."
        input_schema: JSONObject = {"type": "object", "properties": {}}  # noqa: RUF012

        async def execute_with_context(self, ctx: Any, args: JSONObject) -> ToolResult:
            seen.append(ctx.tool_call_id)
            return ToolResult.ok("seen")

    session.registry.register(Spy())
    octos = OctosLangChainTools(session)
    msg = await octos.get("spy").ainvoke(
        {"type": "tool_call", "id": "abc", "name": "spy", "args": {}}
    )
    assert msg.content == "seen" and seen == ["abc"]
    with pytest.raises(NotImplementedError, match="async only"):
        octos.get("spy").invoke({})


async def test_images_become_content_blocks(session: ToolSession) -> None:
    from octos_tools.tool_types import ImageContent, JSONObject, Tool

    class Picture(Tool):
        name = "picture"
        description = "Return a tiny picture."
        input_schema: JSONObject = {"type": "object", "properties": {}}  # noqa: RUF012

        async def execute(self, args: JSONObject) -> ToolResult:
            return ToolResult(output="a picture", content=[ImageContent(b"PNG", "image/png")])

    session.registry.register(Picture())
    msg = (
        await OctosLangChainTools(session)
        .get("picture")
        .ainvoke({"type": "tool_call", "id": "p", "name": "picture", "args": {}})
    )
    assert msg.content[0] == {"type": "text", "text": "a picture"}
    assert msg.content[1] == {"type": "image", "base64": "UE5H", "mime_type": "image/png"}


async def test_for_sub_agent_tools_keep_the_allow_list_and_drop_sub_agent_tools(
    tmp_path: Path,
) -> None:
    from octos_tools.profile import build_registry

    (tmp_path / "notes.txt").write_text("alpha\n")
    registry = build_registry(workspace=tmp_path)
    octos = OctosLangChainTools(registry)
    child = octos.for_sub_agent(["read_file", "spawn_agent"])
    assert [t.name for t in child.tools()] == ["read_file"]
    assert "alpha" in str(await child.get("read_file").ainvoke({"path": "notes.txt"}))
    deeper = await child.session.call("spawn_agent", {"message": "deeper"})
    assert deeper.error_kind is not None and deeper.error_kind.value == "policy_denied"
    assert child.session.ctx.spawn_depth == 1
    await child.aclose()
    await octos.aclose()
    await registry.aclose()


async def test_human_in_the_loop_request_and_decisions(
    session: ToolSession, workspace: Path
) -> None:
    """approval_requests gives the human-in-the-loop interrupt's payload; a reject
    decision runs nothing (approval_denied), an approve decision runs that call; no
    decision and no channel: approval_required."""
    octos = OctosLangChainTools(session)
    (workspace / "build").mkdir()
    call = {"name": "exec_command", "args": {"cmd": "rm -Rf build; echo gone"}, "id": "c1"}
    message = AIMessage(content="", tool_calls=[call])
    safe = AIMessage(content="", tool_calls=[{**call, "args": {"cmd": "echo hi"}}])
    assert octos.approval_requests(safe) is None
    request = octos.approval_requests(message)
    assert request is not None
    [action] = request["action_requests"]
    assert action["name"] == "exec_command" and "rm -Rf build" in action["description"]
    assert request["review_configs"][0]["allowed_decisions"] == ["approve", "reject"]

    [none] = await octos.arun_tool_calls(message)
    assert none.status == "error" and "approval_required" in str(none.content)
    [no] = await octos.arun_tool_calls(message, [{"type": "reject", "message": "keep it"}])
    assert no.status == "error" and "approval_denied" in str(no.content)
    assert (workspace / "build").exists()
    [yes] = await octos.arun_tool_calls(message, [{"type": "approve"}])
    assert yes.status != "error" and "gone" in str(yes.content)
    assert not (workspace / "build").exists()
