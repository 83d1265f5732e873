"""Mount other MCP servers' tools into a registry: the public surface.

The work is done in :mod:`~octos_tools.mcp.mounts` (registering, following changes),
:mod:`~octos_tools.mcp.connection` (one restartable SDK client per server),
:mod:`~octos_tools.mcp.names` and :mod:`~octos_tools.mcp.results`.
"""

from __future__ import annotations

from .connection import McpConnection
from .mounts import McpMounts, McpTool, mount_mcp_servers
from .names import mounted_tool_name
from .results import call_result_to_tool_result

__all__ = [
    "McpConnection",
    "McpMounts",
    "McpTool",
    "call_result_to_tool_result",
    "mount_mcp_servers",
    "mounted_tool_name",
]
