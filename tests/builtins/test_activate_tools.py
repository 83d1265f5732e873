"""activate_tools: loading deferred groups into the caller's view."""

from __future__ import annotations

import pytest

from octos_tools.builtins.discovery import (
    ActivateToolsTool,
)
from octos_tools.context import ToolContext
from octos_tools.errors import ErrorKind, ToolError
from octos_tools.policy import ToolPolicy
from octos_tools.registry import ToolRegistry

from ._discovery_helpers import _call, _registry

# ------------------------------------------------------------------------------ fixtures


# ------------------------------------------------------------------------------ activate_tools


def _activate_description(registry: ToolRegistry) -> str:
    return next(s.description for s in registry.specs() if s.name == "activate_tools")


def test_activate_tools_description_never_lists_deferred_names() -> None:
    registry = _registry()
    text = _activate_description(registry)
    assert text == ActivateToolsTool.description
    for name in ("exec_command", "shell", "web_fetch", "web_search", "write_stdin"):
        assert name not in text
    registry.activate("group:runtime")
    assert _activate_description(registry) == text


@pytest.mark.anyio
async def test_activate_tools_without_arguments_lists_by_group() -> None:
    registry = _registry()
    result = await _call(registry, "activate_tools", {})
    assert result.success
    assert "group:runtime" in result.output and "exec_command" in result.output
    assert result.structured_metadata is not None
    assert result.structured_metadata["deferred"] == [
        "exec_command",
        "shell",
        "web_fetch",
        "web_search",
        "write_stdin",
    ]
    registry.activate("group:runtime")
    registry.activate("group:web")
    result = await _call(registry, "activate_tools", {})
    assert result.output == "All tools are already active."


@pytest.mark.anyio
async def test_activate_tools_loads_the_whole_group_and_reports_already_active() -> None:
    registry = _registry()
    result = await _call(registry, "activate_tools", {"tools": ["exec_command", "read_file"]})
    assert result.success
    assert result.output == (
        "Loaded 3 tool(s): exec_command, shell, write_stdin. Already active: read_file."
    )
    assert {"shell", "exec_command", "write_stdin"} <= set(registry.visible_names())
    assert registry.is_deferred("web_fetch")
    again = await _call(registry, "activate_tools", {"group": "group:runtime"})
    assert again.output == "Already active: exec_command, shell, write_stdin."


@pytest.mark.anyio
async def test_activate_tools_unknown_and_denied_names_match_nothing() -> None:
    registry = _registry()
    registry.set_provider_policy(ToolPolicy(deny=["web_fetch"]))
    result = await _call(registry, "activate_tools", {"tools": ["web_fetch", "nope"]})
    assert result.error_kind is ErrorKind.NO_MATCH
    assert registry.is_deferred("web_fetch") and registry.is_deferred("web_search")
    # web_search's group also holds the denied web_fetch: loading it never names web_fetch
    result = await _call(registry, "activate_tools", {"tools": ["web_search", "nope"]})
    assert result.success
    assert "web_fetch" not in result.output
    assert result.output == "Loaded 1 tool(s): web_search. Not found: nope."
    unknown_group = await _call(registry, "activate_tools", {"group": "group:nothing"})
    assert unknown_group.error_kind is ErrorKind.NO_MATCH


@pytest.mark.anyio
async def test_activated_tools_get_lru_grace() -> None:
    registry = _registry()
    registry.lifecycle.max_active = 3
    registry.lifecycle.idle_threshold = 2
    for _ in range(5):
        registry.tick()
    await _call(registry, "activate_tools", {"tools": ["exec_command"]})
    registry.tick()
    evicted = registry.auto_evict()
    assert "read_file" in evicted  # idle since iteration 0
    assert not {"shell", "exec_command", "write_stdin"} & set(evicted)
    assert {"shell", "exec_command", "write_stdin"} <= set(registry.visible_names())


@pytest.mark.anyio
async def test_activate_tools_without_registry_is_not_configured() -> None:
    with pytest.raises(ToolError) as info:
        await ActivateToolsTool().execute_with_context(ToolContext(), {})
    assert info.value.kind is ErrorKind.NOT_CONFIGURED
