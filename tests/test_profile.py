"""Host profile: deferral of a large registry (builtins + test tools), activation on use,
LRU eviction back to the limit, discovery over deferred tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from octos_tools.builtins import register_builtins
from octos_tools.config import Config, LifecycleConfig
from octos_tools.errors import ErrorKind
from octos_tools.lifecycle import ToolLifecycle
from octos_tools.policy import ToolPolicy
from octos_tools.profile import DEFAULT_LISTED, apply_deferral, apply_policies, build_registry
from octos_tools.registry import ToolRegistry
from octos_tools.session import ToolSession
from octos_tools.workspace import Workspace

from .helpers import EchoTool

TOTAL_TOOLS = 45


def _big_registry(tmp_path: Path, config: Config | None = None) -> ToolRegistry:
    """The builtins plus test tools, 45 tools in all, then the host profile's deferral."""
    config = config or Config()
    workspace = Workspace(tmp_path)
    registry = ToolRegistry(
        workspace,
        lifecycle=ToolLifecycle(
            config.lifecycle.max_active, config.lifecycle.idle_threshold, DEFAULT_LISTED
        ),
        session_key="host",
    )
    register_builtins(registry, workspace, config)
    # These builtins are always registered in this build; the tests below rely on them.
    for name in ("exec_command", "write_stdin", "shell", "bash", "web_fetch", "web_search"):
        assert name in registry, name
    assert "spawn_agent" in registry
    extra = TOTAL_TOOLS - len(registry) - 2  # + barcode_scanner; activate_tools is the 45th
    assert extra > 0, "more builtins than the test budget; raise TOTAL_TOOLS"
    for i in range(extra):
        registry.register(
            EchoTool(f"extra_{i:02d}", description=f"Test tool number {i} for the profile.")
        )
    registry.register(
        EchoTool("barcode_scanner", description="Decode a QR barcode from a photograph.")
    )
    apply_policies(registry, config)
    apply_deferral(registry, config)
    return registry


def test_first_request_lists_the_default_set_and_defers_the_rest(tmp_path: Path) -> None:
    registry = _big_registry(tmp_path)
    assert len(registry) == TOTAL_TOOLS
    names = registry.visible_names()
    assert len(names) <= registry.lifecycle.max_active
    assert [n for n in names if n in DEFAULT_LISTED] == [
        n for n in registry.names() if n in DEFAULT_LISTED
    ]
    assert set(DEFAULT_LISTED) <= set(names)
    # your own tools fill the remaining slots in registration order, the rest is deferred
    extras = [n for n in registry.names() if n.startswith("extra_")]
    assert [n for n in names if n not in DEFAULT_LISTED] == extras[: 15 - len(DEFAULT_LISTED)]
    for deferred in (
        "activate_tools",
        "tool_suggest",
        "shell",
        "bash",
        "diff_edit",
        "web_fetch",
        "spawn_agent",
        "read_task_output",
        "barcode_scanner",
    ):
        assert deferred in registry
        assert registry.is_deferred(deferred), deferred
        assert deferred not in names


@pytest.mark.anyio
async def test_calling_a_deferred_alias_runs_and_shows_its_group(tmp_path: Path) -> None:
    registry = _big_registry(tmp_path)
    try:
        assert registry.is_deferred("shell")
        result = await registry.execute("shell", {"command": "echo deferred-ok"})
        assert result.success, result.output
        assert "deferred-ok" in result.output
        visible = registry.visible_names()
        for name in ("shell", "exec_command", "write_stdin", "bash"):
            assert name in visible
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_ten_idle_requests_evict_unused_non_base_tools_back_to_the_limit(
    tmp_path: Path,
) -> None:
    registry = _big_registry(tmp_path)
    session = ToolSession(registry)
    try:
        session.before_model_request()
        result = await session.call("activate_tools", {"tools": ["web_fetch", "spawn_agent"]})
        assert result.success
        grown = session.view.active_names()
        assert len(grown) > registry.lifecycle.max_active
        evicted: list[str] = []
        for _ in range(10):
            specs = session.before_model_request()
            evicted += session.evicted
        active = session.view.active_names()
        base = registry.lifecycle.base_tools
        assert len(active) == registry.lifecycle.max_active
        assert len(specs) <= registry.lifecycle.max_active
        assert sorted(evicted) == sorted(set(grown) - set(active))
        assert not set(evicted) & base
        for name in base:
            assert name in registry
            assert not session.is_deferred(name)
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_search_finds_deferred_and_never_policy_denied(tmp_path: Path) -> None:
    config = Config.from_mapping(
        {"tool_policy_by_provider": {"acme": {"deny": ["web_search"]}}, "provider": "acme"}
    )
    registry = _big_registry(tmp_path, config)
    try:
        found = await registry.execute("tool_search", {"query": "photograph"})
        data = found.structured_metadata["result"]
        assert data["matches"][0]["name"] == "barcode_scanner"
        assert data["matches"][0]["state"] == "deferred"
        assert "web_search" in registry
        for query in ("web_search", "search the web", "internet"):
            answer = await registry.execute("tool_search", {"query": query})
            out = answer.structured_metadata["result"]
            assert "\n- web_search" not in answer.output
            assert "web_search" not in [m["name"] for m in out["matches"]]
        listing = await registry.execute("activate_tools", {})
        assert "web_search" not in listing.output
        description = next(s.description for s in registry.specs() if s.name == "activate_tools")
        assert "web_search" not in description
        refused = await registry.execute("activate_tools", {"tools": ["web_search"]})
        assert refused.error_kind is ErrorKind.NO_MATCH
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_hard_policy_removed_tool_not_in_discovery(tmp_path: Path) -> None:
    registry = _big_registry(tmp_path)
    try:
        registry.apply_policy(ToolPolicy(deny=["barcode_scanner"]))
        answer = await registry.execute("tool_search", {"query": "barcode"})
        assert answer.structured_metadata["result"]["matches"] == []
        # never offered; named only to say it is denied (what was asked for is refused)
        assert "Not for you: barcode_scanner: denied by the tool policy" in answer.output
        assert answer.output.count("barcode_scanner") == 1
        assert "barcode_scanner" not in (await registry.execute("activate_tools", {})).output
    finally:
        await registry.aclose()


def test_no_deferral_when_switched_off(tmp_path: Path) -> None:
    config = Config(lifecycle=LifecycleConfig(defer=False))
    registry = _big_registry(tmp_path, config)
    assert registry.deferred_names() == []
    assert "activate_tools" not in registry
    unavailable = registry.unavailable()
    assert set(unavailable) >= {"image_generation", "web_search", "spawn_agent"}
    assert len(registry.specs()) == len(registry) - len(unavailable)
    assert len(registry) == TOTAL_TOOLS - 1


def test_small_registry_is_not_deferred(tmp_path: Path) -> None:
    registry = ToolRegistry(Workspace(tmp_path))
    for i in range(5):
        registry.register(EchoTool(f"t{i}"))
    assert apply_deferral(registry, Config()) == []
    assert "activate_tools" not in registry


def test_overflow_keeps_base_tools_and_registration_order(tmp_path: Path) -> None:
    registry = ToolRegistry(Workspace(tmp_path), lifecycle=ToolLifecycle(4, 5, ["z_base"]))
    for name in ("a", "b", "c", "d", "e", "f", "z_base"):
        registry.register(EchoTool(name))
    config = Config(lifecycle=LifecycleConfig(max_active=4))
    deferred = apply_deferral(registry, config)
    assert deferred == ["d", "e", "f"]
    assert registry.visible_names() == ["a", "b", "c", "z_base"]
    assert registry.is_deferred("activate_tools")


def test_build_registry_default_profile_lists_the_default_set(tmp_path: Path) -> None:
    registry = build_registry(Config(), tmp_path)
    names = registry.visible_names()
    assert names == [n for n in registry.names() if n in DEFAULT_LISTED]
    assert set(names) == set(DEFAULT_LISTED)
    assert "activate_tools" in registry and registry.is_deferred("activate_tools")
    assert registry.lifecycle.base_tools == set(DEFAULT_LISTED)
    # every other tool is deferred, none denied: all of them reachable
    assert sorted(set(registry.names()) - set(names)) == registry.deferred_names()


def test_no_defer_override_lists_everything(tmp_path: Path) -> None:
    registry = build_registry(Config(), tmp_path, defer=False)
    assert registry.deferred_names() == []
    # everything that can work is listed; what can only fail is not (still callable)
    unavailable = registry.unavailable()
    assert registry.visible_names() == [n for n in registry.names() if n not in unavailable]
    assert {"web_search", "image_generation", "spawn_agent", "close_agent"} <= set(unavailable)
    assert "activate_tools" not in registry
    off = build_registry(Config(lifecycle=LifecycleConfig(defer=False)), tmp_path)
    assert off.visible_names() == registry.visible_names()


def test_configured_deferred_groups_and_base_tools_are_honoured(tmp_path: Path) -> None:
    config = Config.from_mapping(
        {"deferred_groups": ["group:search"], "base_tools": ["read_file", "web_fetch"]}
    )
    registry = build_registry(config, tmp_path)
    for name in ("glob", "grep", "list_dir"):
        assert registry.is_deferred(name)
    assert "web_fetch" in registry.visible_names()  # a base tool is never deferred
