"""The README's examples work as written: the config block loads, the library example runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from octos_tools.config import load_config

ROOT = Path(__file__).resolve().parents[1]


def block(lang: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)
    assert len(found) == 1, f"expected one ```{lang} block in README.md"
    return found[0]


def test_config_example_loads(tmp_path: Path) -> None:
    cfg_file = tmp_path / "octos.toml"
    cfg_file.write_text(block("toml"), encoding="utf-8")
    cfg = load_config(cfg_file)
    assert cfg.workspace is not None and Path(cfg.workspace) == tmp_path
    assert "group:runtime" in cfg.tool_policy.deny and "files" in cfg.mcp_servers


def test_library_example_runs(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(block("python"), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, capture_output=True, timeout=120, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "'5'" in proc.stdout and "1│ # octos-tools" in proc.stdout
