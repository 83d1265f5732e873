"""Every error reply carries the request's id whenever it can be read (mcp/rpc_errors.py),
over stdio and streamable HTTP: a request with no method, a lone surrogate escape, params
that are not an object; a response or notification gets no answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from octos_tools.mcp.http import bind_socket
from octos_tools.mcp.rpc_errors import envelope_error
from octos_tools.mcp.server import OctosMcpServer
from octos_tools.profile import build_registry
from tests.mcp.test_server_robustness import INIT, MCP_HEADERS, StdioPeer

pytestmark = [pytest.mark.timeout(90)]

SURROGATE = (
    b'{"jsonrpc":"2.0","id":8,"method":"tools/call",'
    b'"params":{"name":"read_file","arguments":{"path":"\\ud800"}}}'
)
CASES: list[tuple[bytes, object, int]] = [
    (b'{"jsonrpc":"2.0","id":7}', 7, -32600),
    (b'{"jsonrpc":"2.0","id":"seven","params":{}}', "seven", -32600),
    (SURROGATE, 8, -32700),
    (b'{"jsonrpc":"2.0","id":10,"method":5}', 10, -32600),
    (b'{"jsonrpc":"2.0","id":11,"method":"tools/list","params":[1]}', 11, -32602),
    (b"not json", None, -32700),
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def peer(workspace: Path) -> Iterator[StdioPeer]:
    p = StdioPeer(workspace)
    try:
        yield p
    finally:
        p.close()


def test_envelope_error_reads_the_id_and_skips_what_needs_no_answer() -> None:
    for raw, rid, code in CASES:
        reply = envelope_error(raw, undecodable=code == -32700)
        assert reply is not None, raw
        assert (reply.id, reply.error.code) == (rid, code), raw
    assert envelope_error(b'{"jsonrpc":"2.0","id":3,"result":{}}', undecodable=False) is None
    assert envelope_error(b'{"jsonrpc":"2.0","method":"x","params":5}', undecodable=False) is None


def test_stdio_answers_each_bad_request_with_its_id(peer: StdioPeer) -> None:
    peer.initialize()
    for raw, rid, code in CASES:
        peer.send(raw + b"\n")
        reply = peer.recv()
        assert reply["id"] == rid and reply["error"]["code"] == code, (raw, reply)
    peer.send(b'{"jsonrpc":"2.0","id":99,"result":{}}\n')  # a response: no answer...
    peer.send({"jsonrpc": "2.0", "id": 100, "method": "tools/list"})
    assert peer.recv()["id"] == 100  # ...and serving goes on


@pytest.mark.anyio
async def test_http_answers_each_bad_request_with_its_id(workspace: Path) -> None:
    registry = build_registry(None, workspace)
    server = OctosMcpServer(registry)
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    token = "rpc-errors-token-0123456789"
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    ready = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: server.serve_http(
                "127.0.0.1", port, sock=sock, token=token, on_ready=lambda _u: ready.set()
            )
        )
        with anyio.fail_after(20):
            await ready.wait()
        async with httpx.AsyncClient(timeout=20) as http:
            init = await http.post(url, json=INIT, headers=headers)
            session = {
                "mcp-session-id": init.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-06-18",
            }
            for raw, rid, code in CASES:
                answer = await http.post(url, content=raw, headers={**headers, **session})
                assert answer.status_code == 400
                reply = answer.json()
                assert reply["id"] == rid and reply["error"]["code"] == code, (raw, reply)
                assert int(answer.headers["content-length"]) == len(answer.content)
        tg.cancel_scope.cancel()
    await registry.aclose()
