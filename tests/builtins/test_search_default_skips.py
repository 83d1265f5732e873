"""Virtual environments and node_modules are not entered by default, in glob and in both grep
engines, even without a .gitignore; a search that starts inside one searches it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins import search
from octos_tools.config import Config
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace

from .tool_helpers import call_in as call

pytestmark = pytest.mark.anyio

FILES = {
    ".venv/pyvenv.cfg": "home = /usr/bin\n",
    ".venv/lib/python3.11/site-packages/pkg/mod.py": "needle venv\n",
    "backend/env/pyvenv.cfg": "home = /usr/bin\n",
    "backend/env/lib/deep.py": "needle backend venv\n",
    "node_modules/x/a.py": "needle node\n",
    "web/node_modules/y/b.js": "needle web node\n",
    "src/a.py": "needle app\n",
    "backend/api.py": "needle api\n",
    "plain/.venv/tool.py": "needle not a venv\n",
}
PROJECT = {"src/a.py", "backend/api.py", "plain/.venv/tool.py"}
NOT_ENTERED = {".venv", "backend/env", "node_modules", "web/node_modules"}


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "w"
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for i in range(150):  # more venv files than glob's limit
        (root / ".venv" / "lib" / f"m{i}.py").write_text("needle many\n")
    return Workspace(root)


async def grep(ws: Workspace, engine: str, **args: Any) -> ToolResult:
    tool = search.GrepTool(ws, Config())
    tool.engine = engine
    return await call(tool, ws, {"pattern": "needle", "limit": 1000, **args})


def files_of(res: ToolResult) -> set[str]:
    lines = res.output.splitlines()[2:]
    return {ln.split(":", 1)[0] for ln in lines if ":" in ln and not ln.startswith("[")}


async def test_glob_finds_the_project_not_the_venv(ws: Workspace) -> None:
    res = await call(search.GlobTool(ws), ws, {"pattern": "**/*.py"})
    assert res.structured_metadata is not None
    paths = res.structured_metadata["paths"]
    assert set(paths) == PROJECT and ".venv/" in res.output
    entered = {e["path"] for e in res.structured_metadata["not_entered"]}
    assert {".venv", "backend/env", "node_modules"} <= entered
    assert res.output.count("not entered by default") == 1
    res = await call(search.GlobTool(ws), ws, {"pattern": "**/a.py"})
    assert res.structured_metadata is not None
    assert res.structured_metadata["paths"] == ["src/a.py"]


async def test_grep_finds_the_project_not_the_venv_with_both_engines(ws: Workspace) -> None:
    outs = []
    for engine in ("rg", "python"):
        res = await grep(ws, engine)
        assert res.structured_metadata is not None
        assert files_of(res) == PROJECT, engine
        entered = {e["path"] for e in res.structured_metadata["not_entered"]}
        assert entered == NOT_ENTERED, engine
        assert "path='.venv'" in res.output or "path='backend/env'" in res.output
        outs.append(res.output)
    assert outs[0] == outs[1]


@pytest.mark.parametrize("engine", ["rg", "python"])
async def test_a_search_inside_a_venv_or_node_modules_works(ws: Workspace, engine: str) -> None:
    res = await grep(ws, engine, path=".venv")
    assert ".venv/lib/python3.11/site-packages/pkg/mod.py" in files_of(res)
    assert len(files_of(res)) == 151
    res = await grep(ws, engine, path="node_modules/x")
    assert files_of(res) == {"node_modules/x/a.py"}
    res = await grep(ws, engine, path="web")
    assert files_of(res) == set()
    assert res.structured_metadata is not None
    assert res.structured_metadata["not_entered"][0]["path"] == "web/node_modules"
    res = await grep(ws, engine, path="backend")
    assert files_of(res) == {"backend/api.py"}


async def test_a_glob_naming_the_folder_searches_it(ws: Workspace) -> None:
    res = await call(search.GlobTool(ws), ws, {"pattern": ".venv/lib/**/*.py", "limit": 500})
    assert res.structured_metadata is not None
    assert ".venv/lib/python3.11/site-packages/pkg/mod.py" in res.structured_metadata["paths"]
    assert "not_entered" not in res.structured_metadata
    res = await call(search.GlobTool(ws), ws, {"pattern": "node_modules/x/*.py"})
    assert res.structured_metadata is not None
    assert res.structured_metadata["paths"] == ["node_modules/x/a.py"]


async def test_a_venv_below_the_scan_depth_is_searched_by_both_engines(ws: Workspace) -> None:
    deep = Path(ws.root) / "a" / "b" / "venv"
    deep.mkdir(parents=True)
    (deep / "pyvenv.cfg").write_text("x\n")
    (deep / "deep.py").write_text("needle deep\n")
    outs = [await grep(ws, engine) for engine in ("rg", "python")]
    for res in outs:
        assert "a/b/venv/deep.py" in files_of(res)
    assert outs[0].output == outs[1].output


async def test_venv_names_with_glob_characters_are_excluded_exactly(tmp_path: Path) -> None:
    for name in ("v[1]", "e*", "a b", "x{y,z}", "!bang"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyvenv.cfg").write_text("x\n")
        (tmp_path / name / "m.py").write_text("needle venv\n")
    for name in ("ey", "v1", "xy"):  # what an unescaped glob would also exclude
        (tmp_path / name).mkdir()
        (tmp_path / name / "k.py").write_text("needle kept\n")
    ws = Workspace(tmp_path)
    outs = [await grep(ws, engine) for engine in ("rg", "python")]
    assert files_of(outs[0]) == {"ey/k.py", "v1/k.py", "xy/k.py"}
    assert outs[0].output == outs[1].output
