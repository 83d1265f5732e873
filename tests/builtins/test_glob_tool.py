"""glob: patterns, braces, links never crossed, refusals and the limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from octos_tools.builtins import search
from octos_tools.workspace import Workspace

from .tool_helpers import call_in as run
from .tool_helpers import kind

LINKED_ROOT = True  # the root fixture adds notes.txt and links out (conftest.py)

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------ glob


@pytest.fixture
def code_tree(root: Path) -> Path:
    for rel in ["src/a.py", "src/b.ts", "src/c.tsx", "src/deep/d.py", ".cfg/e.py", "top.py"]:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x\n")
    return root


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("*.py", ["top.py"]),
        ("**/*.py", ["top.py", ".cfg/e.py", "src/a.py", "src/deep/d.py"]),
        ("src/*.{ts,tsx}", ["src/b.ts", "src/c.tsx"]),
        ("src/**", ["src/a.py", "src/b.ts", "src/c.tsx", "src/deep/", "src/deep/d.py"]),
        ("src/?.py", ["src/a.py"]),
        ("src/[ab].*", ["src/a.py", "src/b.ts"]),
        ("src/a.py", ["src/a.py"]),
        ("./src/deep/*.py", ["src/deep/d.py"]),
    ],
)
async def test_glob_patterns(
    code_tree: Path, ws: Workspace, pattern: str, expected: list[str]
) -> None:
    res = await run(search.GlobTool(ws), ws, {"pattern": pattern})
    assert res.success
    assert res.structured_metadata is not None
    got = res.structured_metadata["paths"]
    assert sorted(got) == sorted(expected)
    again = await run(search.GlobTool(ws), ws, {"pattern": pattern})
    assert again.structured_metadata is not None and again.structured_metadata["paths"] == got


async def test_glob_never_crosses_links(root: Path, ws: Workspace) -> None:
    res = await run(search.GlobTool(ws), ws, {"pattern": "**/*.txt"})
    assert "notes.txt" in res.output and "secret" not in res.output
    res = await run(search.GlobTool(ws), ws, {"pattern": "linkdir/*"})
    assert "No files found" in res.output
    res = await run(search.GlobTool(ws), ws, {"pattern": "**/*"})
    assert "secret" not in res.output
    assert {"leak", "linkdir", "rel", "notes.txt"} <= set(res.output.splitlines()[1:])


async def test_glob_refusals_and_limit(code_tree: Path, ws: Workspace) -> None:
    for pattern in ["../*", "/etc/*.conf", "src/../../*", "{..,src}/*", "*\x00*", ""]:
        res = await run(search.GlobTool(ws), ws, {"pattern": pattern})
        assert kind(res) == "invalid_arguments", pattern
    res = await run(search.GlobTool(ws), ws, {"pattern": "*\x00*"})
    assert "NUL" in res.output
    res = await run(search.GlobTool(ws), ws, {"pattern": "**/*", "limit": 3})
    assert res.output.startswith("Found 3 path(s) (limited to 3; more exist)")
    res = await run(search.GlobTool(ws), ws, {"pattern": "*.nothing"})
    assert res.success and "No files found" in res.output


def test_brace_expansion() -> None:
    assert search.expand_braces("*.{ts,tsx}") == ["*.ts", "*.tsx"]
    assert search.expand_braces("{a,{b,c}}/x") == ["a/x", "b/x", "c/x"]
    assert search.expand_braces("lit{eral}") == ["lit{eral}"]
    assert search.glob_match(["a", "b", "c.py"], ["**", "*.py"])
    assert not search.glob_match(["a", "c.py"], ["*.py"])
