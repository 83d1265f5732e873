"""Helpers shared by the file tools' tests; their root and ws fixtures are in conftest.py."""

from __future__ import annotations

from typing import Any

from octos_tools.config import Config
from octos_tools.context import ToolContext
from octos_tools.tool_types import Tool, ToolResult
from octos_tools.workspace import Workspace


async def call(tool_cls: type[Tool], ws: Workspace, args: dict[str, Any], **ctx: Any) -> ToolResult:
    tool = tool_cls(ws, Config())  # type: ignore[call-arg]
    from octos_tools.errors import ToolError

    try:
        return await tool.execute_with_context(ToolContext(workspace=ws, **ctx), args)
    except ToolError as exc:
        return ToolResult.from_error(exc)
