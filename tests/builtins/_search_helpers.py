"""Helpers shared by the search family's tests (grep, glob, list_dir).

Its ``root`` and ``ws`` fixtures are in conftest.py (``LINKED_ROOT = True``)."""

from __future__ import annotations

from typing import Any

from octos_tools.builtins import search
from octos_tools.config import Config
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace

from .tool_helpers import call_in as run

ENGINES = ["rg", "python"]


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
