"""``octos-tools contract``: the served profile's contract, from a separate process and (for
the policy case) from the same entry point run in process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.cli_helpers import run_in_process


def contract(*args: str, cwd: Path, in_process: bool = False) -> dict[str, Any]:
    if in_process:
        proc = run_in_process("contract", *args, cwd=cwd)
    else:
        proc = subprocess.run(
            [sys.executable, "-m", "octos_tools", "contract", *args],
            input=b"",
            capture_output=True,
            cwd=cwd,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr.decode()
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def test_contract_is_ready_by_default(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    doc = contract("--workspace", str(ws), cwd=tmp_path)
    assert doc["feature"] == "coding.tool_contract.v1"
    assert doc["status"] == "ready", doc["missing_required_tools"]
    assert doc["missing_required_tools"] == []


def test_contract_is_incomplete_when_the_config_denies_exec_command(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    cfg = tmp_path / "octos.json"
    cfg.write_text(json.dumps({"tool_policy": {"deny": ["exec_command"]}}))
    doc = contract("--workspace", str(ws), "--config", str(cfg), cwd=tmp_path, in_process=True)
    assert doc["status"] == "incomplete"
    assert doc["missing_required_tools"] == ["exec_command"]
    status = {e["name"]: e["status"] for e in doc["required_tools"]}
    assert status["exec_command"] == "disabled_by_policy"
