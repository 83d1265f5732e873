"""MCP tool declarations as plain JSON (no SDK import).

The ``Tool`` object of ``tools/list`` (MCP specification 2025-06-18, "Tools": ``name``,
``title``, ``description``, ``inputSchema``, ``annotations`` with ``readOnlyHint`` /
``destructiveHint``). The server (:mod:`octos_tools.mcp.server`) turns it into the SDK's
type; results are converted there.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..tool_types import JSONObject, ToolSpec

__all__ = ["spec_to_mcp", "tools_to_mcp"]


def spec_to_mcp(spec: ToolSpec) -> JSONObject:
    """The MCP ``Tool`` object of ``spec``: Safe tools are ``readOnlyHint: true``,
    Exclusive ones ``destructiveHint: true``; the title defaults to the name."""
    title = spec.title or spec.name
    return {
        "name": spec.name,
        "title": title,
        "description": spec.description,
        "inputSchema": spec.input_schema,
        "annotations": {
            "title": title,
            "readOnlyHint": spec.read_only,
            "destructiveHint": spec.destructive,
        },
    }


def tools_to_mcp(specs: Iterable[ToolSpec]) -> list[JSONObject]:
    """The ``tools`` array of a ``tools/list`` result (:func:`spec_to_mcp` each)."""
    return [spec_to_mcp(spec) for spec in specs]
