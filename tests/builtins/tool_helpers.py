"""Helpers shared by the built-in tool tests: call a tool directly, find its processes."""

from __future__ import annotations

import subprocess
import uuid

from octos_tools.context import ToolContext
from octos_tools.errors import ToolError
from octos_tools.tool_types import JSONObject, Tool, ToolResult
from octos_tools.workspace import Workspace


async def call(tool: Tool, args: JSONObject, ctx: ToolContext | None = None) -> ToolResult:
    """Run ``tool`` as the registry would after validation; a raised ToolError becomes its
    failed result."""
    try:
        return await tool.execute_with_context(ctx or ToolContext(), args)
    except ToolError as exc:
        return ToolResult.from_error(exc)


async def call_in(tool: Tool, ws: Workspace, args: JSONObject) -> ToolResult:
    """:func:`call` with a context whose workspace is ``ws``."""
    return await call(tool, args, ToolContext(workspace=ws))


def marker() -> str:
    """A unique sleep duration, so ``ps`` finds only this test's processes."""
    return f"{4000 + uuid.uuid4().int % 5000}.{uuid.uuid4().int % 1000:03d}"


def living(mark: str) -> list[str]:
    """Processes (not zombies) whose command line contains ``mark``."""
    out = subprocess.run(
        ["ps", "-eo", "pid=,stat=,args="], capture_output=True, text=True, check=True
    ).stdout
    found = []
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and mark in parts[2] and not parts[1].startswith("Z"):
            found.append(line.strip())
    return found


def kind(result: ToolResult) -> str | None:
    """The machine-readable error kind of ``result`` (``None`` when it succeeded)."""
    return result.error_kind.value if result.error_kind else None
