"""MCP integration: serve a registry to MCP hosts and mount other MCP servers into one.

* serving: :mod:`~octos_tools.mcp.server` (``OctosMcpServer``, ``run_server``), built from
  :mod:`~octos_tools.mcp.sessions` (one view per MCP session), :mod:`~octos_tools.mcp.results`
  (``ToolResult`` ↔ MCP results), :mod:`~octos_tools.mcp.elicitation`
  (``request_user_input``), :mod:`~octos_tools.mcp.stdio`, :mod:`~octos_tools.mcp.http` and
  :mod:`~octos_tools.mcp.auth` (transports, bearer token, Host/Origin);
* mounting: :mod:`~octos_tools.mcp.client` (``mount_mcp_servers``), built from
  :mod:`~octos_tools.mcp.mounts`, :mod:`~octos_tools.mcp.connection` and
  :mod:`~octos_tools.mcp.names`.

Importing this package does not import the ``mcp`` SDK; the submodules do.
"""

from __future__ import annotations

__all__: list[str] = []
