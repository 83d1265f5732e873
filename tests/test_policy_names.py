"""Policy names (octos_tools.policy_names): a deny that leaves a tool doing the same job
is warned about by ``policy explain``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from octos_tools.cli import app
from octos_tools.policy_names import same_job_warnings

NAMES = {"exec_command", "shell", "bash", "write_stdin", "web_fetch", "read_file"}


def test_same_job_warnings() -> None:
    denied = {"exec_command", "bash"}
    [line] = same_job_warnings(lambda n: n not in denied, NAMES)
    assert "exec_command, bash denied but shell, write_stdin can still run commands" in line
    assert "'group:runtime'" in line
    [web] = same_job_warnings(lambda n: n != "web_fetch", NAMES)
    assert "reach the network" in web and "curl" in web
    # in a sandbox mode a denied web turns the commands' network off: nothing to warn about
    assert same_job_warnings(lambda n: n != "web_fetch", NAMES, commands_confined=True) == []
    everything = {"exec_command", "shell", "bash", "write_stdin", "web_fetch"}
    assert same_job_warnings(lambda n: n not in everything, NAMES) == []
    assert same_job_warnings(lambda n: True, NAMES) == []


def test_policy_explain_warns_about_exec_star(tmp_path: Path) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"tool_policy": {"deny": ["exec_*"]}}))
    result = CliRunner().invoke(
        app, ["policy", "explain", "shell", "-w", str(tmp_path), "-c", str(cfg), "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["allowed"] is True
    assert any("shell" in w and "group:runtime" in w for w in doc["warnings"])
    assert "warning:" in result.stderr
    cfg.write_text(json.dumps({"tool_policy": {"deny": ["group:runtime"]}}))
    clean = CliRunner().invoke(
        app, ["policy", "explain", "shell", "-w", str(tmp_path), "-c", str(cfg), "--json"]
    )
    assert json.loads(clean.stdout)["warnings"] == []


def test_policy_explain_says_nothing_of_the_network_when_commands_are_confined(
    tmp_path: Path,
) -> None:
    cfg = tmp_path / "c.json"
    for mode, warned in (("workspace-write", False), ("danger-full-access", True)):
        cfg.write_text(
            json.dumps({"tool_policy": {"deny": ["group:web"]}, "sandbox": {"mode": mode}})
        )
        result = CliRunner().invoke(
            app,
            ["policy", "explain", "exec_command", "-w", str(tmp_path), "-c", str(cfg), "--json"],
        )
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert any("reach the network" in w for w in doc["warnings"]) is warned, mode
