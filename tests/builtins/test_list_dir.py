"""list_dir: entries, links shown as links, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from octos_tools.builtins import search
from octos_tools.config import Config
from octos_tools.workspace import Workspace

from .tool_helpers import call_in as run
from .tool_helpers import kind

LINKED_ROOT = True  # the root fixture adds notes.txt and links out (conftest.py)

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------ list_dir


async def test_list_dir_shows_links_as_links(root: Path, ws: Workspace) -> None:
    (root / "sub").mkdir()
    (root / ".hidden").write_text("h")
    res = await run(search.ListDirTool(ws), ws, {"path": "."})
    assert res.success
    lines = res.output.splitlines()
    assert lines[0] == "6 entries in .:"
    assert lines[1] == "[dir]  sub/"
    assert lines[2].startswith("[file] .hidden") and "(1 bytes)" in lines[2]
    assert lines[3].startswith("[file] notes.txt")
    assert [x.split()[1] for x in lines[4:]] == ["leak", "linkdir", "rel"]
    assert all(x.startswith("[link]") for x in lines[4:])
    assert "secret" not in res.output
    (root / "empty").mkdir()
    res = await run(search.ListDirTool(ws), ws, {"path": "empty"})
    assert res.success and "empty" in res.output


async def test_list_dir_refusals(root: Path, ws: Workspace, tmp_path: Path) -> None:
    for path, k in [
        ("linkdir", "symlink_refused"),
        ("rel", "symlink_refused"),
        (str(tmp_path / "ws_secret"), "path_outside_workspace"),
        ("../ws_secret", "path_outside_workspace"),
        ("\x00", "invalid_arguments"),
        ("notes.txt", "not_a_directory"),
        ("missing", "not_found"),
    ]:
        res = await run(search.ListDirTool(ws), ws, {"path": path})
        assert kind(res) == k, path
        assert "secret.txt" not in res.output and "key.txt" not in res.output


async def test_list_dir_path_defaults_to_root_through_registry(root: Path, ws: Workspace) -> None:
    from octos_tools.registry import ToolRegistry

    registry = ToolRegistry(ws)
    search.register(registry, ws, Config())
    result = await registry.execute("list_dir", "{}")
    assert result.success, result.output
    assert "notes.txt" in result.output
