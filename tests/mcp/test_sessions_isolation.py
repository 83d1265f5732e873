"""Clients kept apart (builtins/runtime/_exec_sessions.py caps, mcp/sessions.py, mcp/disconnect.py):
one MCP session filling its command-session cap cannot end another's sessions, an MCP session
closed with HTTP DELETE ends its commands with it, and a client that disconnects mid-call
cancels the call and its command."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp import Client
from octos_tools.config import Config
from octos_tools.mcp.http import bind_socket
from octos_tools.mcp.server import OctosMcpServer
from octos_tools.profile import build_registry
from tests.builtins.tool_helpers import living, marker
from tests.mcp.http_serve import transport

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

TOKEN = "isolation-test-token-0123456789"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    config = Config.from_mapping(
        {"shell": {"max_sessions": 8, "max_sessions_per_client": 4}, "lifecycle": {"defer": False}}
    )
    registry = build_registry(config, ws)
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
        yield f"http://127.0.0.1:{port}/mcp"
        tg.cancel_scope.cancel()
    await registry.aclose()


def _meta(result: types.CallToolResult) -> dict[str, Any]:
    assert result.meta is not None
    meta: dict[str, Any] = result.meta["io.octos-tools/result"]["structured_metadata"]
    return meta


async def _start(client: Client, mark: str) -> types.CallToolResult:
    return await client.call_tool("exec_command", {"cmd": f"sleep {mark}", "yield_time_ms": 0})


async def _gone(mark: str, within: float = 10.0) -> bool:
    deadline = anyio.current_time() + within
    while anyio.current_time() < deadline:
        if not living(mark):
            return True
        await asyncio.sleep(0.1)
    return False


async def test_one_client_cannot_evict_another_clients_sessions(served: str) -> None:
    victim_mark, flood_mark = marker(), marker()
    async with (
        Client(transport(served, TOKEN), mode="legacy") as victim,
        Client(transport(served, TOKEN), mode="legacy") as flooder,
    ):
        first = await _start(victim, victim_mark)
        assert not first.is_error
        sid = _meta(first)["session_id"]
        for _ in range(12):  # three times its own cap, more than the whole table
            assert not (await _start(flooder, flood_mark)).is_error
        assert len(living(flood_mark)) <= 4 * 2  # sh + sleep of its own 4 at most
        # the victim's session is alive and still its own
        poll = await victim.call_tool("write_stdin", {"session_id": sid, "yield_time_ms": 0})
        assert not poll.is_error and _meta(poll)["running"] is True
        other = await flooder.call_tool("write_stdin", {"session_id": sid, "yield_time_ms": 0})
        assert other.is_error and "unknown_session" in other.content[0].text  # type: ignore[union-attr]
    # leaving (HTTP DELETE on close) ended both clients' commands
    assert await _gone(victim_mark) and await _gone(flood_mark)


async def test_closing_an_mcp_session_ends_its_commands(served: str) -> None:
    mark = marker()
    async with Client(transport(served, TOKEN), mode="legacy") as client:
        assert not (await _start(client, mark)).is_error
        assert living(mark)
    assert await _gone(mark)


async def test_a_client_that_disconnects_mid_call_cancels_it_and_its_command(
    served: str,
) -> None:
    import httpx2 as httpx

    from tests.mcp.test_server_robustness import INIT, MCP_HEADERS

    mark = marker()
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(timeout=10) as http:
        init = await http.post(served, json=INIT, headers=headers)
        headers["mcp-session-id"] = init.headers["mcp-session-id"]
        headers["mcp-protocol-version"] = "2025-06-18"
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(served, json=note, headers=headers)
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "shell", "arguments": {"command": f"sleep {mark}"}},
        }
        with pytest.raises(httpx.ReadTimeout):  # the client gives up and drops the connection
            await http.post(served, json=call, headers=headers, timeout=2)
        assert await _gone(mark)  # the call was cancelled, its command killed
        # the session itself goes on serving
        ping = await http.post(
            served, json={"jsonrpc": "2.0", "id": 3, "method": "ping"}, headers=headers
        )
        assert ping.status_code == 200
