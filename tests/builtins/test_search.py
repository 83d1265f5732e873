"""The search tools as a family: classes, rg found, registration order."""

from __future__ import annotations

import os

import pytest

from octos_tools.builtins import search
from octos_tools.config import Config
from octos_tools.tool_types import ConcurrencyClass
from octos_tools.workspace import Workspace

LINKED_ROOT = True  # the root fixture adds notes.txt and links out (conftest.py)

pytestmark = pytest.mark.anyio


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
