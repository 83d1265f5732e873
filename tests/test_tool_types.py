"""The tool model: Tool is abstract, ToolResult helpers, TokenUsage, ToolSpec formats."""

from __future__ import annotations

import pytest

from octos_tools.errors import ErrorKind, ToolError
from octos_tools.tool_types import ConcurrencyClass, JSONObject, TokenUsage, Tool, ToolResult


def test_tool_is_abstract() -> None:
    with pytest.raises(TypeError, match="neither"):
        Tool()

    class Nothing(Tool):
        name = "nothing"

    with pytest.raises(TypeError, match="Nothing"):
        Nothing()

    class Legacy(Tool):
        name = "legacy"

        async def execute(self, args: JSONObject) -> ToolResult:
            return ToolResult.ok("x")

    assert Legacy().concurrency_class is ConcurrencyClass.SAFE


def test_token_usage_adds_up() -> None:
    total = TokenUsage(10, 5) + TokenUsage(1, 2)
    assert total == TokenUsage(input_tokens=11, output_tokens=7)
    assert total.total_tokens == 18
    assert ToolResult(tokens_used=total).to_dict()["tokens_used"] == {
        "input_tokens": 11,
        "output_tokens": 7,
    }


def test_failure_shape() -> None:
    res = ToolResult.failure(ErrorKind.NO_MATCH, "nothing", metadata={"hint": "x"})
    assert not res.success
    assert res.error == {"kind": "no_match", "message": "nothing"}
    assert res.error_kind is ErrorKind.NO_MATCH
    assert res.structured_metadata == {"hint": "x", "error": res.error}
    assert res.output == "Error [no_match]: nothing"
    err = ToolResult.from_error(ToolError("timeout", "slow", seconds=3))
    assert err.error_kind is ErrorKind.TIMEOUT and err.structured_metadata
    assert err.structured_metadata["seconds"] == 3
    assert ToolResult.ok("fine").error is None


def test_spec_formats() -> None:
    class Writer(Tool):
        name = "writer"
        description = "Writes."
        title = "Writer"
        concurrency_class = ConcurrencyClass.EXCLUSIVE
        input_schema: JSONObject = {"type": "object", "properties": {}}  # noqa: RUF012

        async def execute(self, args: JSONObject) -> ToolResult:
            return ToolResult.ok("")

    spec = Writer().spec()
    assert spec.to_openai() == {
        "type": "function",
        "function": {"name": "writer", "description": "Writes.", "parameters": spec.input_schema},
    }
    assert spec.to_anthropic() == {
        "name": "writer",
        "description": "Writes.",
        "input_schema": spec.input_schema,
    }
    mcp = spec.to_mcp()
    assert mcp["inputSchema"] == spec.input_schema and mcp["title"] == "Writer"
    assert mcp["annotations"] == {"title": "Writer", "readOnlyHint": False, "destructiveHint": True}
