"""CLI output checked in process (typer's CliRunner): token figures, missing extras, spinner."""

from __future__ import annotations

import importlib.util
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from octos_tools.builtins import MISSING_EXTRAS
from octos_tools.cli import app
from octos_tools.tokens import count_tokens


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


def test_tools_tokens_table_and_total(ws: Path) -> None:
    result = CliRunner().invoke(app, ["tools", "--tokens", "--workspace", str(ws)])
    assert result.exit_code == 0, result.output
    out = result.output
    line = next(x for x in out.splitlines() if x.startswith("first request:"))
    data = json.loads(CliRunner().invoke(app, ["tools", "--json", "--workspace", str(ws)]).stdout)
    assert "tokens" in out and data["tokenizer"] in " ".join(out.split())
    total = data["first_request_tokens"]
    assert f"{total} tokens" in line
    visible = [row for row in data["tools"] if row["state"] == "visible"]
    assert f"in {len(visible)} visible specs" in line
    # the total is the whole list's JSON (brackets and commas too): a few tokens more
    assert abs(total - sum(row["tokens"] for row in visible)) <= len(visible) + 2
    assert all(row["tokens"] is None for row in data["tools"] if row["state"] != "visible")


def test_count_tokens_is_the_documented_estimate() -> None:
    assert count_tokens("") == 0
    assert count_tokens("abcd") == 1
    assert count_tokens("abcde") == 2
    assert count_tokens("é" * 2) == 1  # 4 UTF-8 bytes


def test_tools_names_the_extra_of_a_missing_tool(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] in {"markdownify", "tree_sitter_language_pack"}:
            return None
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr("octos_tools.builtins.MISSING_EXTRAS", MISSING_EXTRAS)
    MISSING_EXTRAS.clear()
    try:
        result = CliRunner().invoke(app, ["tools", "--workspace", str(ws)])
        assert result.exit_code == 0, result.output
        assert "not installed: web_fetch (pip install 'octos-tools[web]')" in result.output
        assert "not installed: code_structure (pip install 'octos-tools[code]')" in result.output
        data = json.loads(CliRunner().invoke(app, ["tools", "--json", "-w", str(ws)]).stdout)
        missing = {m["name"]: m["extra"] for m in data["missing"]}
        assert missing["web_fetch"] == "web" and missing["code_structure"] == "code"
        assert "web_fetch" not in {row["name"] for row in data["tools"]}
    finally:
        MISSING_EXTRAS.clear()


def test_spinner_on_a_terminal_for_calls_over_a_second(ws: Path) -> None:
    """On an interactive terminal a call that takes longer than 1 s shows a progress line."""
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "octos_tools",
            "call",
            "exec_command",
            '{"cmd": "sleep 2.5; echo done"}',
            "--workspace",
            str(ws),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=child,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "100"},
    )
    os.close(child)
    out, _ = proc.communicate(timeout=120)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    terminal = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0
    assert "done" in out.decode()
    assert "running exec_command" in terminal
