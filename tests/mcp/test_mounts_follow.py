"""A mounted server that changes: its ``list_changed`` refreshes our registry; its images
reach ``ToolResult.content`` and are passed on when we serve them; its ``isError`` is
``remote_error``.

The fixture server (the SDK's low-level ``Server``, both protocol eras) starts with
``picture``, ``fail`` and ``grow``; ``grow`` adds a tool ``extra`` and removes ``fail``,
then says so (pushed to handshake clients, published to 2026-07-28 listeners).
"""

from __future__ import annotations

import base64
import sys
import textwrap
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from mcp import Client
from octos_tools.config import Config
from octos_tools.errors import ErrorKind
from octos_tools.mcp.client import mount_mcp_servers
from octos_tools.mcp.server import OctosMcpServer
from octos_tools.profile import build_registry
from octos_tools.tool_types import ImageContent

pytestmark = [pytest.mark.timeout(120), pytest.mark.anyio]

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

SERVER = textwrap.dedent(
    """
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel.server import NotificationOptions, Server
    from mcp.server.stdio import stdio_server
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

    PNG = PNG_B64
    obj = {"type": "object", "properties": {}}
    tools = {
        "picture": types.Tool(name="picture", description="A picture.", input_schema=obj),
        "fail": types.Tool(name="fail", description="Always fails.", input_schema=obj),
        "grow": types.Tool(name="grow", description="Change the tool set.", input_schema=obj),
    }
    bus = InMemorySubscriptionBus()

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=list(tools.values()))

    async def call_tool(ctx, params):
        if params.name == "picture":
            return types.CallToolResult(content=[
                types.TextContent(text="one pixel"),
                types.ImageContent(data=PNG, mime_type="image/png"),
            ])
        if params.name == "fail":
            return types.CallToolResult(content=[types.TextContent(text="disk on fire")],
                                        is_error=True)
        if params.name == "grow":
            tools["extra"] = types.Tool(name="extra", description="New.", input_schema=obj)
            tools.pop("fail", None)
            await ctx.session.send_tool_list_changed()
            await bus.publish(ToolsListChanged())
            return types.CallToolResult(content=[types.TextContent(text="grown")])
        return types.CallToolResult(content=[types.TextContent(text="extra ran")])

    server = Server("changing", on_list_tools=list_tools, on_call_tool=call_tool,
                    on_subscriptions_listen=ListenHandler(bus))

    async def main():
        async with stdio_server() as (r, w):
            await server.run(r, w, server.create_initialization_options(
                NotificationOptions(tools_changed=True)))

    anyio.run(main)
    """
).replace("PNG_B64", repr(base64.b64encode(PNG).decode()))


async def test_refresh_media_and_remote_error(tmp_path: Path) -> None:
    script = tmp_path / "changing.py"
    script.write_text(SERVER)
    ws = tmp_path / "ws"
    ws.mkdir()
    config = Config.from_mapping(
        {"mcp_servers": {"ch": {"command": sys.executable, "args": [str(script)]}}}
    )
    registry = build_registry(config, ws, builtins=False)
    async with mount_mcp_servers(registry, config) as mounts:
        assert sorted(mounts.tools["ch"]) == ["ch__fail", "ch__grow", "ch__picture"]

        picture = await registry.execute("ch__picture", {})
        assert picture.success and picture.output == "one pixel"
        assert picture.content == [ImageContent(PNG, "image/png")]

        failed = await registry.execute("ch__fail", {})
        assert not failed.success
        assert failed.error_kind is ErrorKind.REMOTE_ERROR
        assert "disk on fire" in failed.output

        # Served by us, the image is passed on as MCP image content.
        server = OctosMcpServer(registry)
        async with Client(server.server, mode="legacy") as client:
            served = await client.call_tool("ch__picture", {})
            assert not served.is_error
            kinds = [type(block) for block in served.content]
            assert kinds == [types.TextContent, types.ImageContent]
            image = served.content[1]
            assert isinstance(image, types.ImageContent)
            assert base64.b64decode(image.data) == PNG

        grown = await registry.execute("ch__grow", {})
        assert grown.success
        with anyio.fail_after(20):
            while "ch__extra" not in registry:
                await anyio.sleep(0.05)
        assert "ch__fail" not in registry
        assert sorted(mounts.tools["ch"]) == ["ch__extra", "ch__grow", "ch__picture"]
        assert "ch__extra" in registry.groups["group:mcp:ch"]
        extra = await registry.execute("ch__extra", {})
        assert extra.success and extra.output == "extra ran"
    await registry.aclose()
