"""The discovery tools as a family: registration, the caller's view."""

from __future__ import annotations

from pathlib import Path

import pytest

from octos_tools.builtins import discovery
from octos_tools.builtins.discovery import (
    hints_of,
)
from octos_tools.registry import ToolRegistry
from octos_tools.workspace import Workspace

from ..helpers import EchoTool
from ._discovery_helpers import _config, _json


def test_hints_come_from_the_tool_else_the_builtin_table() -> None:
    class Hinted(EchoTool):
        search_hints = ("own", "words")

    assert hints_of(Hinted("grep")) == ("own", "words")
    assert "usages" in hints_of(EchoTool("grep"))
    assert hints_of(EchoTool("unknown_tool")) == ()


def test_register_adds_three_tools_without_activate_tools(tmp_path: Path) -> None:
    registry = ToolRegistry()
    discovery.register(registry, Workspace(tmp_path), _config())
    assert registry.names() == ["tool_search", "tool_suggest", "read_task_output"]


@pytest.mark.anyio
async def test_discovery_acts_on_the_calling_session_only(tmp_path: Path) -> None:
    from octos_tools.profile import build_registry
    from octos_tools.session import ToolSession

    registry = build_registry(_config(), tmp_path)
    a, b = ToolSession(registry), ToolSession(registry)
    try:
        data = _json(await a.call("tool_search", {"query": "select:web_fetch"}))
        assert data["loaded"] == ["web_fetch"]
        assert data["matches"][0]["state"] == "active"
        assert not a.is_deferred("web_fetch")
        assert b.is_deferred("web_fetch") and registry.is_deferred("web_fetch")
        assert "web_fetch" in [s.name for s in a.before_model_request()]
        assert "web_fetch" not in [s.name for s in b.before_model_request()]
        seen_by_b = _json(await b.call("tool_search", {"query": "fetch a web page"}))
        states = {m["name"]: m["state"] for m in seen_by_b["matches"]}
        assert states["web_fetch"] == "deferred"
        loaded = await b.call("activate_tools", {"tools": ["diff_edit"]})
        assert loaded.success and "diff_edit" in loaded.output
        assert not b.is_deferred("diff_edit") and a.is_deferred("diff_edit")
        # a tool that cannot work here (no spawn delegate) is never "loaded"
        refused = await b.call("activate_tools", {"tools": ["spawn_agent"]})
        assert refused.error_kind == "no_match" and "Loaded" not in refused.output
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_with_commands_denied_a_shell_request_offers_nothing_unrunnable_and_says_so(
    tmp_path: Path,
) -> None:
    from octos_tools.config import Config
    from octos_tools.profile import build_registry
    from octos_tools.session import ToolSession

    config = Config.from_mapping({"tool_policy": {"deny": ["group:runtime"]}})
    registry = build_registry(config, tmp_path)
    session = ToolSession(registry)
    unavailable = set(registry.unavailable())
    assert {"resume_agent", "close_agent"} <= unavailable
    for tool in ("tool_search", "tool_suggest"):
        key = "query" if tool == "tool_search" else "task"
        result = await session.call(tool, {key: "run a shell command", "limit": 8})
        data = result.structured_metadata["result"]
        offered = [m["name"] for m in data.get("matches", data.get("suggestions", []))]
        assert not set(offered) & (unavailable | {"exec_command", "shell", "bash"}), offered
        refused = {r["name"]: r["why"] for r in data["refused"]}
        assert "denied" in refused["exec_command"]
        assert "Not for you: exec_command: denied" in result.output
    await registry.aclose()
