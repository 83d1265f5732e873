"""The coding tool contract computed from a live registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octos_tools.builtins import agents, patch, runtime
from octos_tools.builtins.interaction import _interaction_tools as coding
from octos_tools.config import Config, PolicyConfig
from octos_tools.contract import CONTRACT_ID, FEATURE, P0_TOOLS, build_contract
from octos_tools.policy import ToolPolicy
from octos_tools.profile import build_registry
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import JSONObject, Tool, ToolResult
from octos_tools.workspace import Workspace


def coding_registry(root: Path) -> ToolRegistry:
    ws = Workspace(root)
    registry = ToolRegistry(ws)
    for family in (runtime, coding, agents, patch):
        family.register(registry, ws, Config())
    return registry


def statuses(doc: dict[str, object]) -> dict[str, str]:
    required = doc["required_tools"]
    assert isinstance(required, list)
    return {e["name"]: e["status"] for e in required}


def test_ready_with_the_coding_families(tmp_path: Path) -> None:
    doc = build_contract(coding_registry(tmp_path))
    json.dumps(doc)  # serialisable
    assert doc["feature"] == FEATURE and doc["contract_id"] == CONTRACT_ID
    assert doc["status"] == "ready", doc["missing_required_tools"]
    assert doc["required_tool_names"] == [t.name for t in P0_TOOLS]
    assert set(statuses(doc).values()) == {"available"}


def test_incomplete_when_a_p0_tool_is_denied(tmp_path: Path) -> None:
    registry = coding_registry(tmp_path)
    registry.set_provider_policy(ToolPolicy(deny=["exec_command"]))
    doc = build_contract(registry)
    assert doc["status"] == "incomplete"
    assert statuses(doc)["exec_command"] == "disabled_by_policy"
    assert doc["missing_required_tools"] == ["exec_command"]


def test_deferred_missing_and_aliases(tmp_path: Path) -> None:
    registry = coding_registry(tmp_path)
    registry.defer_group("group:sessions")
    doc = build_contract(registry)
    assert statuses(doc)["wait_agent"] == "deferred" and doc["status"] == "ready"
    assert "wait_agent" in doc["deferred_model_tools"]
    registry.unregister("update_plan")
    registry.unregister("spawn_agent")
    registry.unregister("apply_patch")

    class Spawn(Tool):
        name = "spawn"
        input_schema: JSONObject = {"type": "object"}  # noqa: RUF012

        async def execute(self, args: JSONObject) -> ToolResult:
            return ToolResult.ok("")

    registry.register(Spawn())
    doc = build_contract(registry)
    st = statuses(doc)
    assert st["update_plan"] == "missing"
    assert st["spawn_agent"] == "aliased"
    assert st["apply_patch"] == "missing"  # diff_edit / edit_file are not registered here
    assert doc["status"] == "incomplete"
    assert set(doc["missing_required_tools"]) == {"update_plan", "apply_patch"}


@pytest.mark.parametrize("name", ["exec_command", "apply_patch", "wait_agent"])
def test_hard_policy_denial(tmp_path: Path, name: str) -> None:
    registry = coding_registry(tmp_path)
    registry.apply_policy(ToolPolicy(deny=[name]))
    doc = build_contract(registry)
    assert doc["status"] == "incomplete"
    assert statuses(doc)[name] == "disabled_by_policy"
    assert doc["missing_required_tools"] == [name]


@pytest.mark.anyio
async def test_ready_with_the_served_profile(tmp_path: Path) -> None:
    registry = build_registry(Config(), tmp_path)
    try:
        doc = build_contract(registry)
    finally:
        await registry.aclose()
    assert doc["status"] == "ready", doc["missing_required_tools"]
    assert doc["missing_required_tools"] == []
    assert set(statuses(doc).values()) <= {"available", "deferred"}


@pytest.mark.anyio
async def test_served_profile_with_exec_command_denied_is_incomplete(tmp_path: Path) -> None:
    config = Config(tool_policy=PolicyConfig(deny=["exec_command"]))
    registry = build_registry(config, tmp_path)
    try:
        doc = build_contract(registry)
    finally:
        await registry.aclose()
    assert doc["status"] == "incomplete"
    assert statuses(doc)["exec_command"] == "disabled_by_policy"
    assert doc["missing_required_tools"] == ["exec_command"]
