"""docs/mcp.md works as written: each code block is run here or marked ``fragment``; the
config reference loads, the Python example runs, the host snippets parse and name real
``serve`` options."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from octos_tools.config import load_config

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "mcp.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", flags=re.S | re.M)


def blocks() -> list[tuple[str, str]]:
    return FENCE.findall(DOC.read_text(encoding="utf-8"))


def one(info: str) -> str:
    found = [body for lang, body in blocks() if lang == info]
    assert len(found) == 1, f"expected one ```{info} block in docs/mcp.md"
    return found[0]


def test_every_block_is_run_here_or_marked_a_fragment() -> None:
    infos = [info for info, _ in blocks()]
    assert infos, "no code blocks found"
    for info in infos:
        assert info in ("toml", "python") or info.endswith(" fragment"), info


def test_config_reference_loads(tmp_path: Path) -> None:
    path = tmp_path / "octos.toml"
    path.write_text(one("toml"), encoding="utf-8")
    cfg = load_config(path)
    assert cfg.serve.allowed_hosts == ["devbox.example:8765"]
    assert cfg.serve.defer is True and cfg.serve.evict is False
    assert set(cfg.mcp_servers) == {"files", "search"}


def test_python_example_runs(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(one("python"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith("tools listed") and int(lines[0].split()[0]) >= 10
    assert "hello from the workspace" in lines[1]
    assert lines[2] == "1"


def test_host_snippets_parse_and_use_real_options() -> None:
    help_text = subprocess.run(
        [sys.executable, "-m", "octos_tools", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    ).stdout
    seen = 0
    for info, body in blocks():
        if info == "json fragment":
            args = json.loads(body)["mcpServers"]["octos-tools"]["args"]
        elif info == "toml fragment":
            args = tomllib.loads(body)["mcp_servers"]["octos-tools"]["args"]
        else:
            continue
        seen += 1
        assert args[0] == "serve"
        for option in (a for a in args if a.startswith("--")):
            assert option in help_text, option
    assert seen == 3
