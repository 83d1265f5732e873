"""The one-shot call path (``octos-tools call NAME``): a registry of only the built-in
families the call needs (``profile.build_call_registry``), and the default configuration
built without validation (``config.default_config``). The table behind it must equal what
the families register, and a call must end exactly as it would with the whole registry."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from octos_tools.builtins import (
    BUILTIN_TOOLS,
    FAMILIES,
    FAMILY_TOOLS,
    families_for,
    register_builtins,
)
from octos_tools.cli import app
from octos_tools.config import Config, default_config, load_config
from octos_tools.profile import build_call_registry, build_registry
from octos_tools.registry import ToolRegistry
from octos_tools.session import ToolSession
from octos_tools.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return root


# ---------------------------------------------------------------- the family table


def test_table_lists_every_family_in_order() -> None:
    assert list(FAMILY_TOOLS) == FAMILIES
    names = [n for tools in FAMILY_TOOLS.values() for n in tools]
    assert len(names) == len(set(names)), "a tool listed under two families"


@pytest.mark.parametrize("family", FAMILIES)
def test_table_equals_what_each_family_registers(
    family: str, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Registered, or recorded as missing its extra: exactly the table's names."""
    missing: dict[str, str] = {}
    module = importlib.import_module(f"octos_tools.builtins.{family}")
    monkeypatch.setattr("octos_tools.builtins.MISSING_EXTRAS", missing)
    if hasattr(module, "MISSING_EXTRAS"):
        monkeypatch.setattr(module, "MISSING_EXTRAS", missing)
    registry = ToolRegistry(Workspace(ws))
    module.register(registry, registry.workspace, Config())
    assert set(registry.names()) | set(missing) == set(FAMILY_TOOLS[family])


def test_table_covers_the_whole_registry(ws: Path) -> None:
    registry = build_registry(Config(), ws)
    assert set(registry.names()) <= BUILTIN_TOOLS
    assert "activate_tools" in registry.names()  # registered by deferral, listed in the table


def test_families_for() -> None:
    assert families_for("read_file") == ["files"]
    assert families_for("apply_patch") == ["files", "patch"]  # it delegates to diff_edit
    assert families_for("exec_command") == ["runtime"]
    for name in ("tool_search", "tool_suggest", "activate_tools", "read_task_output"):
        assert families_for(name) is None, name
    for name in ("spawn_agent", "delegate", "wait_agent"):
        assert families_for(name) is None, name
    assert families_for("read_fil") is None  # unknown: the full list of suggestions
    assert families_for("mcp__files__read") is None


def test_register_builtins_refuses_an_unknown_family(ws: Path) -> None:
    registry = ToolRegistry(Workspace(ws))
    with pytest.raises(ValueError, match="nope"):
        register_builtins(registry, registry.workspace, families=["files", "nope"])


def test_call_registry_holds_only_the_needed_families(ws: Path) -> None:
    registry = build_call_registry("apply_patch", Config(), ws)
    assert set(registry.names()) == {"read_file", "diff_edit", "edit_file", "write_file"} | {
        "apply_patch"
    }
    full = build_call_registry("tool_search", Config(), ws)
    assert set(full.names()) == set(build_registry(Config(), ws).names())


def test_call_registry_with_plugins_is_the_whole_registry(ws: Path) -> None:
    config = Config(plugins=["no-such-plugin"])
    registry = build_call_registry("read_file", config, ws)
    assert "exec_command" in registry


def test_call_process_imports_only_the_needed_family(ws: Path) -> None:
    code = (
        "import sys\n"
        "from octos_tools.config import load_config\n"
        "from octos_tools.profile import build_call_registry\n"
        f"build_call_registry('read_file', load_config(None), {str(ws)!r})\n"
        "fams = sorted(m.split('.')[2] for m in sys.modules\n"
        "              if m.startswith('octos_tools.builtins.') and m.count('.') >= 2)\n"
        "print(' '.join(sorted(set(fams))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert [m for m in out if not m.startswith("_")] == ["files"]


# ---------------------------------------------------------------- same outcome


async def _call(registry: ToolRegistry, tool: str, args: str) -> dict[str, Any]:
    session = ToolSession(registry, owns_registry=True)
    try:
        result = await session.call(tool, args)
    finally:
        await session.aclose()
    return result.to_dict()


def _both(config: Config, ws: Path, tool: str, args: dict[str, Any]) -> tuple[Any, Any]:
    raw = json.dumps(args)

    async def run() -> tuple[Any, Any]:
        fast = await _call(build_call_registry(tool, config, ws), tool, raw)
        full = await _call(build_registry(config, ws), tool, raw)
        return fast, full

    return anyio.run(run)


PATCH = (
    "*** Begin Patch\n*** Update File: notes.txt\n@@\n alpha\n-beta\n+BETA\n gamma\n*** End Patch"
)

CASES: list[tuple[str, dict[str, Any], str, dict[str, Any], str | None]] = [
    # (case, config, tool, arguments, expected error kind or None for success)
    ("read", {}, "read_file", {"path": "notes.txt"}, None),
    ("read-missing", {}, "read_file", {"path": "nope.txt"}, "not_found"),
    ("read-bad-args", {}, "read_file", {"path": 3}, "invalid_arguments"),
    (
        "read-only write",
        {"read_only": True},
        "write_file",
        {"path": "a", "content": "x"},
        "policy_denied",
    ),
    ("read-only patch", {"read_only": True}, "apply_patch", {"input": PATCH}, "policy_denied"),
    (
        "group deny",
        {"tool_policy": {"deny": ["group:fs"]}},
        "read_file",
        {"path": "notes.txt"},
        "policy_denied",
    ),
    (
        "alias deny",
        {"tool_policy": {"deny": ["exec_command"]}},
        "bash",
        {"command": "true"},
        "policy_denied",
    ),
    (
        "wildcard deny",
        {"tool_policy": {"deny": ["read_*"]}},
        "read_file",
        {"path": "notes.txt"},
        "policy_denied",
    ),
    (
        "allow list",
        {"tool_policy": {"allow": ["grep"]}},
        "read_file",
        {"path": "notes.txt"},
        "policy_denied",
    ),
    (
        "require tags",
        {"tool_policy": {"require_tags": ["net"]}},
        "read_file",
        {"path": "notes.txt"},
        "policy_denied",
    ),
    (
        "provider policy",
        {"provider": "p", "tool_policy_by_provider": {"p": {"deny": ["group:search"]}}},
        "grep",
        {"pattern": "beta"},
        "policy_denied",
    ),
    ("context filter", {"context_filter": ["web"]}, "read_file", {"path": "notes.txt"}, None),
    ("unknown tool", {}, "read_fil", {"path": "notes.txt"}, "unknown_tool"),
    ("deferred tool", {}, "image_generation", {"prompt": "a cat"}, "coding_tool_unsupported"),
    (
        "small args limit",
        {"limits": {"max_args_bytes": 8}},
        "read_file",
        {"path": "notes.txt"},
        "args_too_large",
    ),
    ("grep", {}, "grep", {"pattern": "beta"}, None),
    ("update_plan", {}, "update_plan", {"plan": [{"step": "a", "status": "pending"}]}, None),
]


@pytest.mark.parametrize(
    ("config", "tool", "args", "kind"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_a_call_ends_as_with_the_whole_registry(
    ws: Path, config: dict[str, Any], tool: str, args: dict[str, Any], kind: str | None
) -> None:
    fast, full = _both(Config.from_mapping(config), ws, tool, args)
    assert fast == full
    assert fast["success"] is (kind is None), fast
    if kind is not None:
        assert fast["error"]["kind"] == kind


def test_a_patch_through_the_call_registry_applies(ws: Path) -> None:
    registry = build_call_registry("apply_patch", Config(), ws)
    result = anyio.run(_call, registry, "apply_patch", json.dumps({"input": PATCH}))
    assert result["success"], result
    assert (ws / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"


def test_a_command_runs_with_the_runtime_family_alone(ws: Path) -> None:
    registry = build_call_registry("exec_command", Config(), ws)
    assert set(registry.names()) == set(FAMILY_TOOLS["runtime"])
    result = anyio.run(_call, registry, "exec_command", json.dumps({"cmd": "echo hi"}))
    assert result["success"], result
    assert "hi" in result["output"]


# ---------------------------------------------------------------- the command


def test_cli_call_checks_policy_names_against_every_builtin(ws: Path) -> None:
    """A call's registry holds one family; a policy naming a tool of another family is
    still a known name (no warning), and a misspelt one still gets its hint."""
    cfg = ws.parent / "c.json"
    cfg.write_text(json.dumps({"tool_policy": {"deny": ["shell", "web_fetch"]}}))
    runner = CliRunner()
    ok = runner.invoke(
        app, ["call", "read_file", '{"path":"notes.txt"}', "-w", str(ws), "-c", str(cfg)]
    )
    assert ok.exit_code == 0, ok.output
    assert "warning" not in ok.stderr and "beta" in ok.stdout
    cfg.write_text(json.dumps({"tool_policy": {"deny": ["shel"]}}))
    refused = runner.invoke(
        app, ["call", "read_file", '{"path":"notes.txt"}', "-w", str(ws), "-c", str(cfg)]
    )
    assert refused.exit_code == 2  # a misspelt deny is a configuration error
    assert "'shel' names no known tool" in refused.stderr and "'shell'" in refused.stderr
    cfg.write_text(json.dumps({"tool_policy": {"deny": ["Shell"]}}))
    case = runner.invoke(
        app, ["call", "read_file", '{"path":"notes.txt"}', "-w", str(ws), "-c", str(cfg)]
    )
    assert case.exit_code == 2 and "case-sensitive" in case.stderr


def test_cli_call_unknown_tool_names_the_closest(ws: Path) -> None:
    result = CliRunner().invoke(app, ["call", "tool_serch", "{}", "-w", str(ws), "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["error"]["kind"] == "unknown_tool"
    assert "tool_search" in data["error"]["message"]


# ---------------------------------------------------------------- default configuration


def test_default_config_equals_a_validated_one() -> None:
    fast, slow = default_config(), Config()
    assert fast == slow
    assert fast.model_fields_set == slow.model_fields_set == set()
    for name in type(slow).model_fields:
        assert type(getattr(fast, name)) is type(getattr(slow, name)), name
        value = getattr(fast, name)
        if hasattr(value, "model_fields_set"):
            assert value.model_fields_set == set(), name
    assert load_config(None) == slow
    assert fast.model_copy(update={"read_only": True}).read_only is True


def test_default_config_lists_are_not_shared() -> None:
    a, b = default_config(), default_config()
    assert a.deferred_groups == b.deferred_groups
    assert a.deferred_groups is not b.deferred_groups


def test_config_defaults_without_a_factory_are_immutable() -> None:
    """``default_config`` shares such defaults between configurations: they must not be
    mutable (a list or dict default has to be a ``default_factory``)."""
    from octos_tools import config as module

    models = [
        m
        for m in vars(module).values()
        if isinstance(m, type) and issubclass(m, module._Model) and m is not module._Model
    ]
    assert len(models) >= 10
    for model in models:
        for name, info in model.model_fields.items():
            if info.default_factory is None and not info.is_required():
                assert isinstance(info.default, (type(None), bool, int, float, str)), (model, name)


# ---------------------------------------------------------------- one command built


@pytest.mark.parametrize(
    "args",
    [
        ["call", "--help"],
        ["-v", "tools", "--help"],
        ["policy", "--help"],
        ["policy", "explain", "--help"],
        ["contract", "--help"],
        ["serve", "--help"],
        ["--help"],
        ["cal", "x"],
        ["call"],
    ],
)
def test_the_trimmed_app_answers_as_the_whole_app(args: list[str]) -> None:
    from octos_tools.cli import _app_for

    runner = CliRunner()
    trimmed, whole = runner.invoke(_app_for(args), args), runner.invoke(app, args)
    assert (trimmed.exit_code, trimmed.output) == (whole.exit_code, whole.output)


def test_the_trimmed_app_holds_the_named_command_only() -> None:
    from octos_tools.cli import _app_for

    call = _app_for(["-v", "call", "read_file", "{}"])
    assert [c.callback.__name__ for c in call.registered_commands if c.callback] == ["call"]
    assert call.registered_groups == []
    policy = _app_for(["policy", "explain", "shell"])
    assert policy.registered_commands == [] and [g.name for g in policy.registered_groups] == [
        "policy"
    ]
    assert _app_for(["--help"]) is app and _app_for(["nope"]) is app and _app_for([]) is app
    assert len(app.registered_commands) == 4  # the whole app is left as it was
