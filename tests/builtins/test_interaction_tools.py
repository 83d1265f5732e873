"""update_plan and request_user_input (builtins/interaction/)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from octos_tools.builtins.interaction import PLAN_STATE_KEY, RequestUserInputTool, UpdatePlanTool
from octos_tools.context import ToolContext
from octos_tools.errors import ErrorKind, ToolError
from octos_tools.registry import ToolRegistry


@pytest.mark.anyio
async def test_update_plan_stores_and_echoes_once() -> None:
    ctx = ToolContext()
    plan = [
        {"step": "read the code", "status": "completed"},
        {"step": "write the fix", "status": "in_progress"},
        {"step": "run tests", "status": "pending"},
    ]
    result = await UpdatePlanTool().execute_with_context(
        ctx, {"explanation": "found the bug", "plan": plan}
    )
    assert result.success
    assert ctx.state[PLAN_STATE_KEY] == {"explanation": "found the bug", "plan": plan}
    assert result.output.count("write the fix") == 1
    assert "[x] read the code" in result.output and "[>] write the fix" in result.output
    assert "1/3 completed" in result.output
    meta = result.structured_metadata
    assert meta is not None and meta["plan"] == plan  # a list, not nested as plan.plan
    # a new plan replaces the old one
    await UpdatePlanTool().execute_with_context(ctx, {"plan": plan[:1]})
    assert ctx.state[PLAN_STATE_KEY]["plan"] == plan[:1]


@pytest.mark.anyio
async def test_update_plan_empty_plan_says_cleared_without_a_dangling_colon() -> None:
    ctx = ToolContext()
    await UpdatePlanTool().execute_with_context(ctx, {"plan": [{"step": "a", "status": "pending"}]})
    result = await UpdatePlanTool().execute_with_context(ctx, {"plan": []})
    assert result.success and result.output == "Plan cleared: it has no steps now."
    assert ctx.state[PLAN_STATE_KEY]["plan"] == []
    why = await UpdatePlanTool().execute_with_context(ctx, {"explanation": "done", "plan": []})
    assert why.output == "done\nPlan cleared: it has no steps now."


@pytest.mark.anyio
async def test_update_plan_rejects_two_in_progress_and_bad_status() -> None:
    registry = ToolRegistry()
    registry.register(UpdatePlanTool())
    two = [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]
    result = await registry.execute("update_plan", {"plan": two})
    assert result.error_kind is ErrorKind.INVALID_ARGUMENTS and "one step" in result.output
    bad = await registry.execute("update_plan", {"plan": [{"step": "a", "status": "done"}]})
    assert bad.error_kind is ErrorKind.INVALID_ARGUMENTS
    blank = await registry.execute("update_plan", {"plan": [{"step": " ", "status": "pending"}]})
    assert blank.error_kind is ErrorKind.INVALID_ARGUMENTS
    await registry.aclose()


@pytest.mark.anyio
async def test_request_user_input_with_and_without_channel() -> None:
    tool = RequestUserInputTool()
    assert tool.blocks_on_human_input
    args = {"questions": [{"question": "Which DB?", "options": [{"label": "sqlite"}]}]}
    no_channel = await tool.execute_with_context(ToolContext(), args)
    assert not no_channel.success and no_channel.error_kind is ErrorKind.UNAVAILABLE
    meta = no_channel.structured_metadata
    assert meta is not None and meta["host_response_channel"] == "not_attached"
    asked: list[dict[str, Any]] = []

    async def answer(request: dict[str, Any]) -> Any:
        asked.append(request)
        return {"answers": ["sqlite"]}

    got = await tool.execute_with_context(ToolContext(user_input=answer), args)
    assert got.success and "sqlite" in got.output
    assert asked == [args]
    with pytest.raises(ToolError) as info:
        await tool.execute_with_context(ToolContext(user_input=answer), {"prompt": "  "})
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS


@pytest.mark.anyio
async def test_typed_arguments_of_the_interaction_tools() -> None:
    """Arguments declared once (pydantic): a JSON-encoded plan string is decoded once, null
    means absent, unknown fields and wrong types are refused naming the field."""
    registry = ToolRegistry()
    registry.register(UpdatePlanTool())
    registry.register(RequestUserInputTool())
    encoded = '[{"step": "a", "status": "pending"}]'
    r = await registry.execute("update_plan", {"plan": encoded, "explanation": None})
    assert r.success and "[ ] a" in r.output
    r = await registry.execute("update_plan", {"plan": [{"step": "a", "status": "x", "n": 1}]})
    assert r.error_kind is ErrorKind.INVALID_ARGUMENTS
    assert "plan.0.status" in r.output and "plan.0.n" in r.output
    r = await registry.execute("update_plan", {"steps": []})
    assert r.error_kind is ErrorKind.INVALID_ARGUMENTS and "'plan'" in r.output
    r = await registry.execute("request_user_input", {"questions": []})
    assert r.error_kind is ErrorKind.INVALID_ARGUMENTS
    r = await registry.execute("request_user_input", {"prompt": 5})
    assert r.error_kind is ErrorKind.INVALID_ARGUMENTS and "got a number" in r.output
    await registry.aclose()


def test_interaction_schemas_are_inline_and_strict() -> None:
    """No $ref/$defs (some hosts do not resolve them), no anyOf-null, every object closed."""
    for tool in (UpdatePlanTool(), RequestUserInputTool()):
        text = json.dumps(tool.input_schema)
        assert "$ref" not in text and "$defs" not in text and '"null"' not in text
        assert text.count('"additionalProperties": false') == text.count('"properties"')
    steps = UpdatePlanTool.input_schema["properties"]["plan"]["items"]
    assert steps["required"] == ["step", "status"]
    assert steps["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
