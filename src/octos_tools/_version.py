"""The package version (one place; read by the CLI and the MCP server and client)."""

__version__ = "0.1.0"
