"""Helpers shared by the discovery tools' tests: a registry of stand-ins named like the
runtime and web tools, a call through it, the search answer's data."""

from __future__ import annotations

import os
from typing import Any

from octos_tools.builtins import discovery
from octos_tools.builtins.discovery import (
    ActivateToolsTool,
)
from octos_tools.context import ToolContext
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import JSONObject, ToolResult
from octos_tools.workspace import Workspace

from ..helpers import EchoTool


def _stand_in(name: str, description: str, tags: tuple[str, ...] = ()) -> EchoTool:
    return EchoTool(name, description=description, tags=tags)


def _registry(workspace: Workspace | None = None, *, session_key: str = "s1") -> ToolRegistry:
    """Discovery tools plus stand-ins named like the runtime and web tools (the names
    matter: deferral and activation go by the seed's group table)."""
    registry = ToolRegistry(workspace, session_key=session_key)
    registry.register(_stand_in("read_file", "Read a text file of the workspace.", ("fs",)))
    registry.register(_stand_in("grep", "Search file contents with a regex.", ("search",)))
    registry.register(
        _stand_in("shell", "Run a shell command and return its output.", ("runtime",))
    )
    registry.register(
        _stand_in("exec_command", "Start a program in a pseudo-terminal session.", ("runtime",))
    )
    registry.register(_stand_in("write_stdin", "Type into a running session.", ("runtime",)))
    registry.register(_stand_in("web_search", "Search the internet for pages.", ("web",)))
    registry.register(
        _stand_in("web_fetch", "Download a web page and convert it to markdown.", ("web",))
    )
    discovery.register(registry, workspace or Workspace(os.getcwd()), _config())
    registry.defer_group("group:runtime")
    registry.defer_group("group:web")
    registry.register(ActivateToolsTool())
    return registry


def _config() -> Any:
    from octos_tools.config import Config

    return Config()


async def _call(registry: ToolRegistry, name: str, args: JSONObject, **ctx: Any) -> ToolResult:
    context = ToolContext(**ctx) if ctx else None
    return await registry.execute(name, args, context)


def _json(result: ToolResult) -> JSONObject:
    """The search answer's data (kept in the metadata; the output is readable text)."""
    assert result.success, result.output
    assert not result.output.lstrip().startswith("{"), "the model reads text, not JSON"
    data = (result.structured_metadata or {})["result"]
    assert isinstance(data, dict)
    for item in data.get("matches", data.get("suggestions", [])):
        assert item["name"] in result.output
    return data
