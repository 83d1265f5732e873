"""The search tools as a family: classes, rg found, registration order."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins import search
from octos_tools.config import Config
from octos_tools.tool import ConcurrencyClass, ToolResult
from octos_tools.workspace import Workspace

from .tool_helpers import call_in as run

pytestmark = pytest.mark.anyio

ENGINES = ["rg", "python"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "ws"
    r.mkdir()
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("TOPSECRET\n")
    (tmp_path / "ws_secret").mkdir()
    (tmp_path / "ws_secret" / "key.txt").write_text("TOPSECRET\n")
    (r / "notes.txt").write_text("hello\nworld\n")
    (r / "leak").symlink_to(out / "secret.txt")
    (r / "linkdir").symlink_to(out)
    (r / "rel").symlink_to("../outside")
    return r


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root)


async def grep(ws: Workspace, engine: str, **args: Any) -> ToolResult:
    tool = search.GrepTool(ws, Config())
    tool.engine = engine
    return await run(tool, ws, args)


PARITY = [
    {"pattern": "hello"},
    {"pattern": "hello", "ignore_case": True},
    {"pattern": "print", "context": 1},
    {"pattern": "return", "context": 2, "path": "src"},
    {"pattern": "hel+o", "file_pattern": "*.py"},
    {"pattern": "hello", "file_pattern": "*.{py,ts}"},
    {"pattern": "hello", "path": "src/util.py"},
    {"pattern": "hello", "path": "nested"},
    {"pattern": "hello", "path": "logs"},
    {"pattern": "hello", "path": "nested/deeper"},
    {"pattern": "hello", "path": "build"},
    {"pattern": "hello", "path": "logs/x.log"},
    {"pattern": r"^\s+return\b"},
    {"pattern": "again$"},
    {"pattern": "^hello"},
    {"pattern": r"world\b"},
    {"pattern": "nomatchanywhere"},
]


def test_tool_classes_follow_octos() -> None:
    for cls, name in [
        (search.GlobTool, "glob"),
        (search.GrepTool, "grep"),
        (search.ListDirTool, "list_dir"),
    ]:
        assert cls.name == name
        assert cls.tags == ("search", "code")
        assert cls.concurrency_class is ConcurrencyClass.SAFE
        assert cls.cwd_bound


def test_rg_binary_is_found() -> None:
    rg = search.find_rg()
    assert rg is not None and os.access(rg, os.X_OK)


async def test_registry_order(ws: Workspace) -> None:
    from octos_tools.registry import ToolRegistry

    reg = ToolRegistry(workspace=ws)
    search.register(reg, ws, Config())
    assert reg.names() == ["glob", "grep", "list_dir"]
    res = await reg.execute("grep", '{"pattern": "hel+o"}')
    assert res.success and "notes.txt:1: hello" in res.output
