"""Config files: JSON and TOML, errors naming file and key path, safe defaults."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from octos_tools.config import DEFAULT_DEFERRED_GROUPS, Config, load_config
from octos_tools.errors import ConfigError


def test_defaults_are_safe() -> None:
    cfg = load_config(None)
    assert cfg.workspace is None and not cfg.read_only
    assert cfg.tool_policy.to_policy().is_empty()
    assert cfg.lifecycle.max_active == 15 and cfg.lifecycle.idle_threshold == 5
    assert tuple(cfg.deferred_groups) == DEFAULT_DEFERRED_GROUPS
    assert cfg.limits.max_args_bytes == 1_048_576
    assert not cfg.web.allow_private_hosts


def test_json_and_toml_equivalent(tmp_path: Path) -> None:
    data = {
        "tool_policy": {"deny": ["shell"]},
        "tool_policy_by_provider": {"gemini": {"allow": ["group:fs"]}},
        "context_filter": ["code"],
        "lifecycle": {"max_active": 10},
        "mcp_servers": {"files": {"command": "srv", "args": ["-x"]}},
    }
    (tmp_path / "c.json").write_text(json.dumps(data))
    (tmp_path / "c.toml").write_text(
        """
context_filter = ["code"]
[tool_policy]
deny = ["shell"]
[tool_policy_by_provider.gemini]
allow = ["group:fs"]
[lifecycle]
max_active = 10
[mcp_servers.files]
command = "srv"
args = ["-x"]
"""
    )
    a, b = load_config(tmp_path / "c.json"), load_config(tmp_path / "c.toml")
    assert a == b
    assert a.provider_policies()["gemini"].allow == ("group:fs",)


def test_unknown_key_names_path_and_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"tool_policy": {"dney": ["shell"]}}))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "tool_policy.dney" in str(info.value) and "bad.json" in str(info.value)
    assert "unknown key" in str(info.value)


def test_bad_value_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[lifecycle]\nmax_active = 0\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "lifecycle.max_active" in str(info.value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("{not json", "not valid JSON"), ("= nope", "not valid TOML"), ("[1, 2]", "object")],
)
def test_unparseable(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / ("c.json" if text.startswith(("{", "[")) else "c.toml")
    path.write_text(text)
    with pytest.raises(ConfigError, match=fragment):
        load_config(path)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config("/nonexistent/octos.toml")


def test_relative_workspace_resolved_against_config_dir(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"workspace": "ws"}))
    assert load_config(path).workspace == str((tmp_path / "ws").resolve())


def test_mcp_server_needs_exactly_one_transport() -> None:
    with pytest.raises(ConfigError):
        Config.from_mapping({"mcp_servers": {"x": {}}})
    with pytest.raises(ConfigError):
        Config.from_mapping({"mcp_servers": {"x": {"command": "a", "url": "http://h"}}})
    with pytest.raises(ConfigError):
        Config.from_mapping({"mcp_servers": {"bad name": {"command": "a"}}})


@pytest.mark.parametrize(
    "data",
    [
        {"tool_policy": {"deny": ["group:filesytem"]}},
        {"tool_policy_by_provider": {"gemini": {"allow": ["group:nope"]}}},
        {"deferred_groups": ["group:webb"]},
        {"tool_policy": {"deny": ["group:mcp:other"]}},
    ],
)
def test_misspelt_group_is_an_error(data: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="unknown group"):
        Config.from_mapping(data)


def test_known_and_mcp_groups_accepted() -> None:
    cfg = Config.from_mapping(
        {
            "tool_policy": {"deny": ["group:web", "group:mcp:files"], "allow": ["web_*"]},
            "mcp_servers": {"files": {"command": "srv"}},
        }
    )
    assert cfg.unknown_groups() == []


# --- malformed files never crash and never hang (one-line errors naming file and key) ---


def _load_error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message, message
    assert str(path) in message
    return message


@pytest.mark.parametrize(
    ("name", "content", "expect"),
    [
        ("nul.json", '{"workspace": "a\\u0000b"}', "NUL"),
        ("nulraw.toml", 'workspace = "a"\n\x00', "NUL"),
        ("long.json", '{"workspace": "' + "a" * 5000 + '"}', "workspace"),
        ("digits.json", '{"limits": {"max_output_bytes": ' + "9" * 5000 + "}}", "cannot be read"),
        ("digits.toml", "[limits]\nmax_output_bytes = " + "9" * 5000 + "\n", "cannot be read"),
        ("deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nest"),
        ("deep.toml", "a = " + "[" * 100_000 + "]" * 100_000 + "\n", "nest"),
        ("yes.toml", 'read_only = "yes"\n', "read_only"),
        ("space.toml", '[tool_policy]\ndeny = [" shell"]\n', "surrounding spaces"),
        ("shape.json", '{"tool_policy": {"deny": ["exec command"]}}', "tool_policy.deny"),
        ("float.json", '{"limits": {"tool_timeout_secs": 1e999}}', "finite"),
        ("bad.txt", "\xff\xfe", "not"),
        ("top.json", "[1, 2]", "top level"),
    ],
)
def test_malformed_config_is_a_one_line_error(
    tmp_path: Path, name: str, content: str, expect: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    assert expect.lower() in _load_error(path).lower()


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    assert "regular file" in _load_error(fifo)  # returns at once: no writer needed
    assert "regular file" in _load_error(Path("/dev/zero"))
    assert "folder" in _load_error(tmp_path)
    big = tmp_path / "big.toml"
    big.write_bytes(b"# " + b"x" * 2_000_000 + b"\n")
    assert "limit" in _load_error(big)


def test_numbers_take_ints_but_booleans_stay_strict(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("read_only = true\n[limits]\ntool_timeout_secs = 30\n")
    cfg = load_config(path)
    assert cfg.read_only is True and cfg.limits.tool_timeout_secs == 30.0
