"""Provider formats: parse a model turn's calls, run them, answer in the provider's shape."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from octos_tools.execution import ToolCall, execute_batch
from octos_tools.formats import anthropic, openai
from octos_tools.function_tool import tool
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import ToolResult


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(add)
    return registry


def _fn_call(call_id: str, name: str, arguments: str) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_specs_lists() -> None:
    registry = _registry()
    (o,) = openai.tools_to_openai(registry.specs())
    assert o["type"] == "function"
    assert o["function"]["name"] == "add"
    assert o["function"]["parameters"]["required"] == ["a", "b"]
    (a,) = anthropic.tools_to_anthropic(registry.specs())
    assert a["name"] == "add"
    assert a["input_schema"]["properties"]["a"]["type"] == "integer"


@pytest.mark.anyio
async def test_openai_chat_round_trip() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            _fn_call("c1", "add", '{"a":1,"b":2}'),
            _fn_call("c2", "add", '{"a":1,'),
            _fn_call("c3", "nope", "{}"),
        ],
    }
    calls = openai.parse_tool_calls(message)
    assert [c.id for c in calls] == ["c1", "c2", "c3"]
    assert calls[1].arguments == '{"a":1,'  # raw: the registry reports invalid JSON itself
    results = await execute_batch(_registry(), calls)
    answers = openai.tool_messages(calls, results)
    assert answers[0] == {"role": "tool", "tool_call_id": "c1", "content": "3"}
    assert answers[1]["tool_call_id"] == "c2"
    assert answers[1]["content"].startswith("Error [invalid_json]")
    assert answers[2]["content"].startswith("Error [unknown_tool]")
    json.dumps(answers)  # plain JSON, ready to send


def test_openai_sdk_objects_and_responses_items() -> None:
    sdk_message = SimpleNamespace(
        tool_calls=[
            SimpleNamespace(
                id="x", type="function", function=SimpleNamespace(name="add", arguments="{}")
            )
        ]
    )
    assert openai.parse_tool_calls(sdk_message) == [ToolCall("x", "add", "{}")]
    assert openai.parse_tool_calls({"role": "assistant", "content": "hi"}) == []
    items = [
        {"type": "reasoning", "id": "r1"},
        {"type": "function_call", "call_id": "fc1", "name": "add", "arguments": '{"a":2,"b":2}'},
        {"type": "message", "content": []},
    ]
    calls = openai.parse_tool_calls(items)
    assert calls == [ToolCall("fc1", "add", '{"a":2,"b":2}')]
    out = openai.function_call_outputs(calls, [ToolResult.ok("4")])
    assert out == [{"type": "function_call_output", "call_id": "fc1", "output": "4"}]
    with pytest.raises(ValueError, match="id"):
        openai.parse_tool_calls({"tool_calls": [{"type": "function", "function": {"name": "a"}}]})
    with pytest.raises(ValueError, match="pair"):
        openai.tool_messages(calls, [])


@pytest.mark.anyio
async def test_anthropic_round_trip() -> None:
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me add."},
            {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 20, "b": 22}},
            {"type": "tool_use", "id": "t2", "name": "add", "input": {"a": "x", "b": 1}},
        ],
    }
    calls = anthropic.parse_tool_uses(message)
    assert calls == [
        ToolCall("t1", "add", {"a": 20, "b": 22}),
        ToolCall("t2", "add", {"a": "x", "b": 1}),
    ]
    results = await execute_batch(_registry(), calls)
    reply = anthropic.tool_results_message(calls, results)
    assert reply["role"] == "user"
    first, second = reply["content"]
    assert first == {"type": "tool_result", "tool_use_id": "t1", "content": "42", "is_error": False}
    assert second["tool_use_id"] == "t2"
    assert second["is_error"] is True
    assert second["content"].startswith("Error [invalid_arguments]")


def test_anthropic_edge_cases() -> None:
    assert anthropic.parse_tool_uses({"role": "assistant", "content": "plain text"}) == []
    block = SimpleNamespace(type="tool_use", id="s1", name="add", input={"a": 1, "b": 1})
    assert anthropic.parse_tool_uses([block]) == [ToolCall("s1", "add", {"a": 1, "b": 1})]
    empty = anthropic.tool_result_block("s1", ToolResult.ok(""))
    assert empty["content"] == "(no output)"  # providers refuse empty tool content
    with pytest.raises(ValueError, match="name"):
        anthropic.parse_tool_uses([{"type": "tool_use", "id": "z", "input": {}}])


def test_spec_shapes_live_in_formats_and_the_spec_delegates() -> None:
    from octos_tools.formats import mcp as mcp_format
    from octos_tools.tool_types import ToolSpec

    spec = ToolSpec("grep", "Search.", {"type": "object", "properties": {}}, read_only=True)
    assert spec.to_openai() == openai.spec_to_openai(spec)
    assert spec.to_anthropic() == anthropic.spec_to_anthropic(spec)
    assert spec.to_mcp() == mcp_format.spec_to_mcp(spec)
    assert openai.spec_to_responses(spec) == {
        "type": "function",
        "name": "grep",
        "description": "Search.",
        "parameters": {"type": "object", "properties": {}},
    }
    assert mcp_format.spec_to_mcp(spec)["annotations"] == {
        "title": "grep",
        "readOnlyHint": True,
        "destructiveHint": False,
    }
    assert mcp_format.tools_to_mcp([spec]) == [spec.to_mcp()]
