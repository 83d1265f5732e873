"""Each framework page in docs/ runs as written: its ```python blocks, in order, as one
script in a fresh interpreter (the examples use the frameworks' scripted models; no network)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PAGES = {
    "pydantic-ai.md": "pydantic_ai",
    "openai-agents.md": "agents",
    "langchain.md": "langchain_core",
}


def python_blocks(page: str) -> list[str]:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_examples_run(page: str, tmp_path: Path) -> None:
    pytest.importorskip(PAGES[page])
    blocks = python_blocks(page)
    assert blocks, f"docs/{page} has no python example"
    script = tmp_path / "example.py"
    script.write_text("\n\n".join(blocks), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        timeout=240,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
