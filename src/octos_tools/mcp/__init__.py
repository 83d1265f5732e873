"""MCP integration: serve a registry (``octos_tools.mcp.server``) and mount other MCP
servers' tools into one (``octos_tools.mcp.client``).

Importing this package does not import the ``mcp`` SDK; the submodules do.
"""

from __future__ import annotations

__all__: list[str] = []
