"""Context economy of the default profile (issue: first request, reachability, stable bytes,
discovery quality), with every built-in and a mounted 14-tool MCP server.

The server is ``tests/mcp_servers/tracker.py`` (an issue tracker and notebook written with
the official SDK), mounted through the configuration's ``mcp_servers`` as a host would.
Token counts are exact (``o200k_base`` via ``bpe-openai``, the ``tokens`` extra) on the
model-facing form: compact JSON of ``[{name, description, parameters}]``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from octos_tools.config import Config
from octos_tools.errors import ErrorKind
from octos_tools.mcp.client import mount_mcp_servers
from octos_tools.policy import GROUPS
from octos_tools.profile import DEFAULT_LISTED, build_registry
from octos_tools.registry import ToolRegistry
from octos_tools.session import ToolSession
from octos_tools.tokens import measure_specs, request_json

pytestmark = [pytest.mark.timeout(180), pytest.mark.anyio]

TRACKER = Path(__file__).parent / "mcp_servers" / "tracker.py"
BUDGET = 1800
"""Most o200k_base tokens of the default profile's first request."""
MIN_REACHABLE = 40
SHARED = Path(os.environ.get("OCTOS_SHARED") or Path(__file__).resolve().parents[2] / "shared")
TASKS = SHARED / "discovery" / "tasks.json"


@pytest.fixture(autouse=True)
def _restore_groups() -> Iterator[None]:
    """Mounting registers ``group:mcp:tracker`` process-wide; undo it after each test."""
    saved = dict(GROUPS)
    yield
    GROUPS.clear()
    GROUPS.update(saved)


def _config(**extra: Any) -> Config:
    """The tracker mounted, and a search provider configured (web_search can work: only
    tools that can work are listed or found)."""
    server = {"command": sys.executable, "args": [str(TRACKER)], "defer": True}
    web = {"search_providers": [{"kind": "searxng", "url": "http://127.0.0.1:9"}]}
    return Config.from_mapping({"mcp_servers": {"tracker": server}, "web": web, **extra})


@pytest.fixture
async def mounted(tmp_path: Path) -> AsyncIterator[ToolRegistry]:
    """The default serve profile: every built-in plus the tracker server, mounted."""
    config = _config()
    registry = build_registry(config, tmp_path)
    async with mount_mcp_servers(registry, config) as mounts:
        assert mounts.failures == {}
        assert len(mounts.tools["tracker"]) == 14
        yield registry
    await registry.aclose()


def _bind_a_delegate(registry: ToolRegistry) -> None:
    """A host that runs sub-agents (the agent loop), so the sub-agent tools can work; it
    is never asked to run one here."""
    from octos_tools.builtins.agents import bind_spawn_delegate

    class _Delegate:
        async def run(self, request: Any, record: Any) -> Any:
            raise AssertionError("not called")

    assert bind_spawn_delegate(registry, _Delegate())


def _exact() -> None:
    pytest.importorskip("bpe_openai", reason="exact counts need the tokens extra (bpe-openai)")


@pytest.mark.slow
async def test_first_request_fits_the_budget(mounted: ToolRegistry) -> None:
    _exact()
    specs = ToolSession(mounted).before_model_request()
    report = measure_specs(specs, "o200k_base", exact=True)
    per_tool = ", ".join(f"{n} {t}" for n, t in report.per_tool.items())
    assert report.total <= BUDGET, f"{report.total} tokens: {per_tool}"


@pytest.mark.slow
async def test_forty_tools_reachable_and_the_request_does_not_grow_with_them(
    mounted: ToolRegistry, tmp_path: Path
) -> None:
    _exact()
    _bind_a_delegate(mounted)
    session = ToolSession(mounted)
    specs = session.before_model_request()
    listed = [s.name for s in specs]
    assert listed == [n for n in mounted.names() if n in DEFAULT_LISTED]
    text = request_json(specs)
    # no listed description names the mounted tools (nothing lists the deferred ones)
    assert "tracker" not in text
    # the same profile without the mounted server: the same request, byte for byte
    bare = build_registry(Config(), tmp_path)
    assert request_json(ToolSession(bare).before_model_request()) == text
    await bare.aclose()

    reachable = list(listed)
    for name in mounted.deferred_names():
        found = await session.call("tool_search", {"query": name.replace("_", " "), "limit": 3})
        assert found.success, found.output
        if name not in [m["name"] for m in found.structured_metadata["result"]["matches"]]:
            continue
        # callable: a call reaches the tool (bad arguments are the tool's answer, not a
        # refusal or an unknown name)
        with anyio.fail_after(30):
            result = await session.call(name, {"__probe__": 1})
        assert result.error_kind not in (ErrorKind.UNKNOWN_TOOL, ErrorKind.POLICY_DENIED), (
            name,
            result.output,
        )
        reachable.append(name)
    mounted_names = [n for n in reachable if n.startswith("tracker__")]
    assert len(mounted_names) == 14
    assert len(reachable) >= MIN_REACHABLE, reachable


@pytest.mark.slow
async def test_listed_bytes_are_stable_across_100_requests_with_calls(
    mounted: ToolRegistry, tmp_path: Path
) -> None:
    session = ToolSession(mounted)
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    first = request_json(session.before_model_request())
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "notes.txt"}),
        ("grep", {"pattern": "beta"}),
        ("list_dir", {"path": "."}),
        ("glob", {"pattern": "*.txt"}),
        ("tool_search", {"query": "create an issue in the tracker"}),
        ("update_plan", {"plan": [{"step": "check", "status": "in_progress"}]}),
    ]
    for i in range(100):
        name, args = calls[i % len(calls)]
        result = await session.call(name, args)
        assert result.success, (name, result.output)
        if i % 25 == 0:
            ran = await session.call("exec_command", {"cmd": "echo stable"})
            assert ran.success and "stable" in ran.output
        specs = session.before_model_request()
        assert request_json(specs) == first, f"request {i + 2} changed"
        assert not session.changed
    assert session.evicted == []


def _tasks() -> list[dict[str, Any]]:
    if not TASKS.is_file():
        pytest.skip(f"{TASKS} is absent (the shared folder sits in ../shared beside the repo)")
    data = json.loads(TASKS.read_text(encoding="utf-8"))
    tasks: list[dict[str, Any]] = data["tasks"]
    return tasks


@pytest.mark.slow
async def test_discovery_ranks_the_right_tool_in_the_top_three(mounted: ToolRegistry) -> None:
    tasks = _tasks()
    _bind_a_delegate(mounted)
    session = ToolSession(mounted)
    misses: list[str] = []
    for task in tasks:
        result = await session.call("tool_search", {"query": task["task"], "limit": 3})
        names = [m["name"] for m in result.structured_metadata["result"]["matches"]]
        if not set(names) & set(task["tools"]):
            misses.append(f"{task['task']!r}: wanted {task['tools']}, got {names}")
    hits = len(tasks) - len(misses)
    assert hits >= 0.9 * len(tasks), "\n".join(misses)


SERVE_BUDGET = 1400
"""Most o200k_base tokens of what ``serve`` lists by default to a client without
elicitation (README: "13 tools, about 1,400 tokens")."""


def _undescribed(schema: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for name, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, dict):
            continue
        if not prop.get("description"):
            out.append(prefix + name)
        items = prop.get("items")
        if isinstance(items, dict):
            out.extend(_undescribed(items, f"{prefix}{name}[]."))
    return out


def test_every_parameter_of_every_listable_tool_is_described(tmp_path: Path) -> None:
    registry = build_registry(Config(), tmp_path, defer=False)
    missing = {tool.name: _undescribed(tool.input_schema) for tool in registry.tools()}
    assert {n: m for n, m in missing.items() if m} == {}


def test_serve_default_listing_fits_its_budget(tmp_path: Path) -> None:
    _exact()
    registry = build_registry(Config(), tmp_path)
    specs = [s for s in registry.specs() if s.name != "request_user_input"]
    report = measure_specs(specs, "o200k_base", exact=True)
    assert len(specs) == 13
    assert report.total <= SERVE_BUDGET, report.per_tool
