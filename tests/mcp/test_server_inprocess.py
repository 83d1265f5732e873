"""The MCP server in process (the SDK's in-memory transport): progress forwarding, result
conversion, Exclusive serialisation and list_changed on LRU eviction."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp import Client
from octos_tools.context import ToolContext
from octos_tools.errors import ErrorKind, ToolError
from octos_tools.function_tool import tool
from octos_tools.lifecycle import ToolLifecycle
from octos_tools.mcp.results import META_KEY
from octos_tools.mcp.server import OctosMcpServer, is_loopback, result_to_mcp
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import ToolResult

pytestmark = pytest.mark.anyio


@tool
async def slow_count(ctx: ToolContext, n: int) -> str:
    """Count to n, reporting progress.

    Args:
        n: how far.
    """
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    return f"counted to {n}"


@tool
def broken(reason: str) -> str:
    """Always fails.

    Args:
        reason: why.
    """
    raise ToolError(ErrorKind.NOT_FOUND, f"nothing here: {reason}")


active = 0
peak = 0


@tool(concurrency="exclusive")
async def write_like(tag: str) -> str:
    """Pretend to write.

    Args:
        tag: a label.
    """
    global active, peak
    active += 1
    peak = max(peak, active)
    await anyio.sleep(0.05)
    active -= 1
    return tag


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    for t in (slow_count, broken, write_like):
        registry.register(t)
    return registry


async def test_progress_and_results() -> None:
    server = OctosMcpServer(_registry())
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(server.server, mode="legacy") as client:
        listing = await client.list_tools()
        names = [t.name for t in listing.tools]
        assert names == ["slow_count", "broken", "write_like"]
        ann = {t.name: t.annotations for t in listing.tools}
        assert ann["write_like"] is not None and ann["write_like"].destructive_hint is True
        result = await client.call_tool("slow_count", {"n": 3}, progress_callback=on_progress)
        assert not result.is_error
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        failed = await client.call_tool("broken", {"reason": "x"})
        assert failed.is_error
        text = failed.content[0]
        assert isinstance(text, types.TextContent)
        assert text.text == "Error [not_found]: nothing here: x"
        assert failed.structured_content is None
        assert failed.meta is not None
        assert failed.meta[META_KEY]["structured_metadata"] == {
            "error": {"kind": "not_found", "message": "nothing here: x"}
        }

        # Exclusive calls never overlap, even when the client sends them together.
        async with anyio.create_task_group() as tg:
            for i in range(5):
                tg.start_soon(client.call_tool, "write_like", {"tag": str(i)})
        assert peak == 1


async def test_lists_never_evict() -> None:
    """tools/list is a read: listing again and again changes nothing."""
    registry = ToolRegistry(lifecycle=ToolLifecycle(max_active=1, idle_threshold=1))
    for t in (slow_count, broken, write_like):
        registry.register(t)
    server = OctosMcpServer(registry)
    async with Client(server.server, mode="legacy") as client:
        for _ in range(6):
            listing = await client.list_tools()
            assert [t.name for t in listing.tools] == ["slow_count", "broken", "write_like"]
    assert registry.deferred_names() == []


async def test_eviction_when_asked_announces_list_changed() -> None:
    registry = ToolRegistry(lifecycle=ToolLifecycle(max_active=1, idle_threshold=1))
    for t in (slow_count, broken, write_like):
        registry.register(t)
    server = OctosMcpServer(registry, evict=True)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(server._watch_changes)
        async with Client(server.server, mode="legacy", message_handler=on_message) as client:
            first = await client.list_tools()
            assert len(first.tools) == 3
            for _ in range(3):  # calls are the turns: idle tools over max_active go
                await client.call_tool("slow_count", {"n": 1})
            with anyio.fail_after(5):
                await changed.wait()
            second = await client.list_tools()
            assert [t.name for t in second.tools] == ["slow_count"]
            assert server.announcements >= 1
        tg.cancel_scope.cancel()


def test_result_conversion_and_hosts() -> None:
    ok = result_to_mcp(ToolResult.ok("done", file_modified="a.txt"))
    assert not ok.is_error
    assert ok.structured_content is None
    assert ok.meta == {META_KEY: {"file_modified": "a.txt"}}
    custom = result_to_mcp(
        ToolResult.failure(ErrorKind.TIMEOUT, "too slow", output="partial output")
    )
    assert custom.is_error
    first = custom.content[0]
    assert isinstance(first, types.TextContent)
    assert first.text == "Error [timeout]: too slow\n\npartial output"
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("127.1.2.3")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")


def test_content_blocks_become_mcp_content_and_back() -> None:
    from octos_tools.mcp.results import block_from_mcp
    from octos_tools.tool_types import AudioContent, ImageContent, ResourceContent

    blocks = [
        ImageContent(b"\x89PNG...", "image/png"),
        AudioContent(b"RIFF....", "audio/wav"),
        ResourceContent("file:///a.txt", "text/plain", text="alpha"),
        ResourceContent("file:///b.bin", "application/octet-stream", blob=b"\x00\x01"),
        ResourceContent("https://example.com/c", None),
    ]
    served = result_to_mcp(ToolResult.ok("see below", content=list(blocks)))
    kinds = [type(b).__name__ for b in served.content]
    assert kinds == [
        "TextContent",
        "ImageContent",
        "AudioContent",
        "EmbeddedResource",
        "EmbeddedResource",
        "ResourceLink",
    ]
    assert [block_from_mcp(b) for b in served.content[1:]] == blocks
    # An image alone: no empty text block in front of it.
    only = result_to_mcp(ToolResult.ok("", content=[blocks[0]]))
    assert [type(b).__name__ for b in only.content] == ["ImageContent"]


async def test_structured_content_only_for_tools_with_an_output_schema() -> None:
    from octos_tools.tool_types import Tool

    class Measure(Tool):
        name = "measure"
        description = "Measure the thing."
        output_schema = {  # noqa: RUF012
            "type": "object",
            "properties": {"size": {"type": "integer"}},
            "required": ["size"],
        }

        async def execute(self, args: dict[str, Any]) -> ToolResult:
            return ToolResult.ok("size is 3", structured_metadata={"size": 3})

    registry = ToolRegistry()
    registry.register(Measure())
    registry.register(slow_count)
    async with Client(OctosMcpServer(registry).server, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["measure"].output_schema is not None
        assert tools["slow_count"].output_schema is None
        measured = await client.call_tool("measure", {})
        assert measured.structured_content == {"size": 3}
        plain = await client.call_tool("slow_count", {"n": 1})
        assert plain.structured_content is None
