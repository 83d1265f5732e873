"""Sessions over streamable HTTP, in one server process (the Python SDK client, loopback):
each HTTP session keeps its own activations and hears only its own ``list_changed``;
stateless (2026-07-28) requests see the configured defaults; and a multi-file patch is never
seen half applied by the session's concurrent reads."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp import Client
from octos_tools.mcp.http import bind_socket
from octos_tools.mcp.server import OctosMcpServer
from octos_tools.profile import build_registry
from tests.mcp.http_serve import transport

TOKEN = "sessions-test-token-0123456789"

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[OctosMcpServer, str, Path]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    registry = build_registry(None, ws)
    server = OctosMcpServer(registry)
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    ready = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: server.serve_http(
                "127.0.0.1", port, sock=sock, token=TOKEN, on_ready=lambda _u: ready.set()
            )
        )
        with anyio.fail_after(20):
            await ready.wait()
        yield server, f"http://127.0.0.1:{port}/mcp", ws
        tg.cancel_scope.cancel()
    await registry.aclose()


def _names(listing: types.ListToolsResult) -> set[str]:
    return {t.name for t in listing.tools}


async def test_http_sessions_keep_their_own_activations(
    served: tuple[OctosMcpServer, str, Path],
) -> None:
    server, url, _ws = served
    heard = {"a": 0, "b": 0}

    def counter(key: str) -> Any:
        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                heard[key] += 1

        return on_message

    async with (
        Client(transport(url, TOKEN), mode="legacy", message_handler=counter("a")) as a,
        Client(transport(url, TOKEN), mode="legacy", message_handler=counter("b")) as b,
    ):
        first_a, first_b = _names(await a.list_tools()), _names(await b.list_tools())
        assert first_a == first_b
        assert "web_fetch" not in first_a and "shell" not in first_a
        for client, group in ((a, "group:web"), (b, "group:runtime")):
            done = await client.call_tool("activate_tools", {"tools": [group]})
            assert not done.is_error
        with anyio.fail_after(10):
            while heard["a"] < 1 or heard["b"] < 1:
                await anyio.sleep(0.02)
        now_a, now_b = _names(await a.list_tools()), _names(await b.list_tools())
        assert "web_fetch" in now_a and "shell" not in now_a
        assert "shell" in now_b and "web_fetch" not in now_b
        # Listing again and again is a read: nothing changes, nobody is told anything.
        told = dict(heard)
        for _ in range(5):
            assert _names(await a.list_tools()) == now_a
        await anyio.sleep(0.2)
        assert heard == told
        assert len(server.sessions.live) == 2
    # Clients that leave end their sessions (the SDK deletes them): their views go too.
    with anyio.fail_after(10):
        while server.sessions.live:
            await anyio.sleep(0.05)


async def test_stateless_requests_see_the_configured_defaults(
    served: tuple[OctosMcpServer, str, Path],
) -> None:
    server, url, _ws = served
    async with Client(transport(url, TOKEN)) as client:  # the SDK's default: 2026-07-28, no session
        before = _names(await client.list_tools())
        assert before == set(server.visible_names())
        done = await client.call_tool("activate_tools", {"tools": ["group:web"]})
        assert not done.is_error
        assert _names(await client.list_tools()) == before
        # A deferred tool is still callable by name in a stateless request.
        ran = await client.call_tool("shell", {"command": "echo stateless-ok"})
        assert not ran.is_error
        text = ran.content[0]
        assert isinstance(text, types.TextContent) and "stateless-ok" in text.text


async def test_reads_never_see_a_multi_file_patch_half_applied(
    served: tuple[OctosMcpServer, str, Path],
) -> None:
    _server, url, ws = served
    files = [f"f{i:02d}.txt" for i in range(12)]
    for name in files:
        (ws / name).write_text("marker-old\n")

    def patch(old: str, new: str) -> str:
        body = "".join(
            f"*** Update File: {name}\n@@\n-marker-{old}\n+marker-{new}\n" for name in files
        )
        return f"*** Begin Patch\n{body}*** End Patch\n"

    mixed: list[str] = []
    seen: set[str] = set()
    async with Client(transport(url, TOKEN), mode="legacy") as client:

        async def read_all() -> None:
            result = await client.call_tool("grep", {"pattern": "marker-", "path": "."})
            text = result.content[0]
            assert isinstance(text, types.TextContent)
            kinds = {k for k in ("old", "new") if f"marker-{k}" in text.text}
            seen.update(kinds)
            if len(kinds) != 1:
                mixed.append(text.text)

        async def patches() -> None:
            for i in range(6):
                old, new = ("old", "new") if i % 2 == 0 else ("new", "old")
                done = await client.call_tool("apply_patch", {"patch": patch(old, new)})
                assert not done.is_error, done.content

        async with anyio.create_task_group() as tg:
            tg.start_soon(patches)
            for _ in range(40):
                tg.start_soon(read_all)
                await anyio.sleep(0.005)
    assert mixed == []
    assert seen  # the reads did run


async def test_a_stateless_select_says_call_by_name_and_never_claims_a_load(
    served: tuple[OctosMcpServer, str, Path],
) -> None:
    _server, url, _ws = served
    async with Client(transport(url, TOKEN)) as client:  # 2026-07-28: each request on its own
        before = _names(await client.list_tools())
        found = await client.call_tool("tool_search", {"query": "select:web_fetch"})
        assert not found.is_error
        text = found.content[0]
        assert isinstance(text, types.TextContent)
        assert "Loaded" not in text.text and "now in your tool list" not in text.text
        assert "Call web_fetch by name" in text.text
        assert _names(await client.list_tools()) == before
    # a 2025 session does load it, and says so
    async with Client(transport(url, TOKEN), mode="legacy") as legacy:
        found = await legacy.call_tool("tool_search", {"query": "select:web_fetch"})
        text = found.content[0]
        assert isinstance(text, types.TextContent) and "Loaded" in text.text
        assert "web_fetch" in _names(await legacy.list_tools())


async def test_the_audit_log_names_each_http_session(
    served: tuple[OctosMcpServer, str, Path], tmp_path: Path
) -> None:
    import json

    from octos_tools.audit import AuditLog

    server, url, _ws = served
    log = tmp_path / "audit.jsonl"
    server.registry.set_audit(AuditLog(log))
    async with (
        Client(transport(url, TOKEN), mode="legacy") as a,
        Client(transport(url, TOKEN), mode="legacy") as b,
    ):
        for client in (a, b, a):
            done = await client.call_tool("list_dir", {"path": "."})
            assert not done.is_error
        live = {s.tools.session_id for s in server.sessions.live}
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    sessions = [line["session"] for line in lines]
    assert len(sessions) == 3 and all(sessions)  # never empty under serve
    assert sessions[0] == sessions[2] != sessions[1]  # stable per session, one per client
    assert set(sessions) == live  # the MCP session ids (Mcp-Session-Id)
