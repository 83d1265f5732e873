"""Every error reply carries the request's id whenever it can be read (mcp/rpc_errors.py),
over stdio and streamable HTTP: a request with no method, a lone surrogate escape, params
that are not an object; a response or notification gets no answer."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
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


@contextlib.asynccontextmanager
async def _http_session(
    workspace: Path, token: str
) -> AsyncIterator[tuple[httpx.AsyncClient, str, dict[str, str]]]:
    """``serve --http`` on a loopback port, initialized: ``(client, url, headers)`` where the
    headers carry the token and the session."""
    registry = build_registry(None, workspace)
    server = OctosMcpServer(registry)
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
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
            yield http, url, {**headers, **session}
        tg.cancel_scope.cancel()
    await registry.aclose()


@pytest.mark.anyio
async def test_http_answers_each_bad_request_with_its_id(workspace: Path) -> None:
    async with _http_session(workspace, "rpc-errors-token-0123456789") as (http, url, headers):
        for raw, rid, code in CASES:
            answer = await http.post(url, content=raw, headers=headers)
            assert answer.status_code == 400
            reply = answer.json()
            assert reply["id"] == rid and reply["error"]["code"] == code, (raw, reply)
            assert int(answer.headers["content-length"]) == len(answer.content)


# ---------------------------------------------------------------- fuzz: one reply, right id

NO_REPLY = object()
"""The expected id of a message that gets no answer (a response, a notification)."""


def _fuzz_cases(count: int = 300) -> list[tuple[bytes, object]]:
    """``count`` malformed messages, each with the id its one answer must carry (``None``
    when the id cannot be read or is invalid) or :data:`NO_REPLY`. Built from a fixed seed:
    a valid id (a fresh integer or string each) with something else broken, an invalid id,
    text that is not JSON, batches, and responses that need no answer."""
    import json
    import random

    rnd = random.Random(25)
    cases: list[tuple[bytes, object]] = []
    serial = 1000

    def fresh_id() -> int | str:
        nonlocal serial
        serial += 1
        return serial if rnd.random() < 0.5 else f"req-{serial}"

    def with_valid_id() -> tuple[bytes, object]:
        rid = fresh_id()
        message: dict[str, object] = {"jsonrpc": "2.0", "id": rid, "method": "tools/list"}
        broken = rnd.choice(
            ["no_method", "method_type", "params", "version", "surrogate", "unknown", "order"]
        )
        if broken == "no_method":
            del message["method"]
        elif broken == "method_type":
            message["method"] = rnd.choice([5, None, [], {"a": 1}, True])
        elif broken == "params":
            message["params"] = rnd.choice([[1], "x", 5, True])
        elif broken == "version":
            message["jsonrpc"] = rnd.choice(["1.0", 2, None, "2"])
        elif broken == "unknown":
            message["method"] = f"no/such/method/{serial}"
        elif broken == "order":  # the id last, params before it
            message = {"jsonrpc": "2.0", "method": 7, "params": {"x": [1, 2]}, "id": rid}
        raw = json.dumps(message).encode()
        if broken == "surrogate":
            raw = raw[:-1] + b',"params":{"name":"read_file","arguments":{"path":"\\udc80"}}}'
        return raw, rid

    def with_invalid_id() -> tuple[bytes, object]:
        bad = rnd.choice([None, {"a": 1}, [1], [], 1.5, True, False, {}])
        method = rnd.choice(["ping", "tools/list", "tools/call", "initialize"])
        return json.dumps({"jsonrpc": "2.0", "id": bad, "method": method}).encode(), None

    def not_json() -> tuple[bytes, object]:
        valid = json.dumps({"jsonrpc": "2.0", "id": fresh_id(), "method": "ping"}).encode()
        cut = rnd.randrange(1, len(valid) - 1)
        return rnd.choice([valid[:cut], valid + b"x", b"{" + valid, b"nul", b'"text"']), None

    def batch() -> tuple[bytes, object]:
        inner = {"jsonrpc": "2.0", "id": fresh_id(), "method": "ping"}
        return rnd.choice([b"[]", json.dumps([inner]).encode(), b"[1, 2]"]), None

    def no_reply() -> tuple[bytes, object]:
        rid = fresh_id()
        return json.dumps({"jsonrpc": "2.0", "id": rid, "result": {}}).encode(), NO_REPLY

    makers = [with_valid_id] * 5 + [with_invalid_id] * 3 + [not_json, batch, no_reply]
    while len(cases) < count:
        cases.append(rnd.choice(makers)())
    return cases


def test_fuzz_cases_cover_what_they_claim() -> None:
    cases = _fuzz_cases()
    expected = [rid for _raw, rid in cases]
    assert len(cases) == 300
    assert sum(rid is None for rid in expected) > 60
    assert sum(rid is NO_REPLY for rid in expected) > 10
    assert sum(isinstance(rid, str) for rid in expected) > 40
    assert b'{"jsonrpc": "2.0", "id": null, "method": "ping"}' in {raw for raw, _ in cases}
    assert b"[]" in {raw for raw, _ in cases}


def test_stdio_answers_every_malformed_request_once_with_its_id(peer: StdioPeer) -> None:
    peer.initialize()
    cases = _fuzz_cases()
    for raw, _rid in cases:
        peer.send(raw)
    peer.send({"jsonrpc": "2.0", "id": "sentinel", "method": "ping"})
    replies: list[dict[str, object]] = []
    while not any(r.get("id") == "sentinel" for r in replies):
        replies.append(peer.recv())
    try:  # stragglers: a request's own handler may answer after the sentinel
        while True:
            replies.append(peer.recv(timeout=1.0))
    except AssertionError:
        pass
    ids = [r.get("id") for r in replies if r.get("id") != "sentinel"]
    assert all("error" in r for r in replies if r.get("id") != "sentinel")
    for _raw, rid in cases:
        if rid is None:
            continue
        assert ids.count(rid) == (0 if rid is NO_REPLY else 1), (_raw, rid, ids.count(rid))
    assert ids.count(None) == sum(rid is None for _raw, rid in cases)
    assert len(ids) == sum(rid is not NO_REPLY for _raw, rid in cases)


def _messages_of(answer: httpx.Response) -> list[dict[str, object]]:
    import json

    if not answer.content:
        return []
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        found = []
        for line in answer.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                message = json.loads(line[5:])
                if "method" not in message:  # not a server notification
                    found.append(message)
        return found
    parsed = answer.json()
    return parsed if isinstance(parsed, list) else [parsed]


@pytest.mark.anyio
async def test_http_answers_every_malformed_request_once_with_its_id(workspace: Path) -> None:
    async with _http_session(workspace, "rpc-errors-fuzz-token-0123456789") as (http, url, headers):
        for raw, rid in _fuzz_cases():
            answer = await http.post(url, content=raw, headers=headers)
            messages = _messages_of(answer)
            if rid is NO_REPLY:
                assert answer.status_code == 202 and messages == [], (raw, answer.text)
                continue
            assert len(messages) == 1, (raw, answer.status_code, answer.text)
            assert messages[0]["id"] == rid and "error" in messages[0], (raw, messages)
            assert "validation error" not in answer.text.lower(), (raw, answer.text)


def test_invalid_id_error_names_what_the_id_was() -> None:
    from octos_tools.mcp.rpc_errors import invalid_id_error

    for raw, kind in [
        ('{"jsonrpc":"2.0","id":null,"method":"ping"}', "null"),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', "an object"),
        ('{"jsonrpc":"2.0","id":[1],"method":"ping"}', "an array"),
        ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', "a number with a fraction"),
        ('{"jsonrpc":"2.0","id":true,"method":"ping"}', "a boolean"),
        ('{"jsonrpc":"2.0","id":1e3,"method":"ping"}', "a number with a fraction"),
        ('{"jsonrpc":"2.0","method":"ping","id" : 2.0}', "a number with a fraction"),
    ]:
        reply = invalid_id_error(raw)
        assert reply is not None and reply.id is None and reply.error.code == -32600
        assert reply.error.message.endswith(f"(got {kind})")
    # a real notification, a valid request and a response need no such answer
    assert (
        invalid_id_error(
            '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}'
        )
        is None
    )
    assert invalid_id_error('{"jsonrpc":"2.0","id":1,"method":"ping"}') is None
    nested = '{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"id":{"a":null}}}'
    assert invalid_id_error(nested) is None  # only the message's own id counts
    assert invalid_id_error('{"jsonrpc":"2.0","id":-3 ,"method":"ping"}') is None
    assert invalid_id_error('{"jsonrpc":"2.0","id":null,"result":{}}') is None


def _invalid_id_cancel(request_id: int, bad_id: object) -> dict[str, object]:
    """A ``notifications/cancelled`` with an ``id`` member: a request whose id is invalid.
    Were it taken for a notification, it would cancel the call ``request_id``."""
    return {
        "jsonrpc": "2.0",
        "id": bad_id,
        "method": "notifications/cancelled",
        "params": {"requestId": request_id},
    }


SLOW_CALL = {"cmd": "sleep 1; echo finished-late"}


@pytest.mark.parametrize("bad_id", [{"a": 1}, 1.5])
def test_stdio_an_invalid_id_is_an_invalid_request_not_a_notification(
    peer: StdioPeer, bad_id: object
) -> None:
    peer.initialize()
    peer.send(
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "exec_command", "arguments": SLOW_CALL},
        }
    )
    peer.send(_invalid_id_cancel(5, bad_id))
    refused = peer.recv()
    assert refused["id"] is None and refused["error"]["code"] == -32600, refused
    answer = peer.recv_id(5, timeout=30)
    assert "finished-late" in answer["result"]["content"][0]["text"], answer


@pytest.mark.anyio
@pytest.mark.parametrize("bad_id", [{"a": 1}, 1.5])
async def test_http_an_invalid_id_is_an_invalid_request_not_a_notification(
    workspace: Path, bad_id: object
) -> None:
    """JSON-RPC 2.0 §5: a request with an invalid id is answered ``-32600`` with id ``null``;
    the SDK never sees it (it would take it for a notification and cancel call 5)."""
    async with _http_session(workspace, "rpc-errors-id-token-0123456789") as (http, url, headers):
        call = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "exec_command", "arguments": SLOW_CALL},
        }
        answers: dict[str, httpx.Response] = {}

        async def slow() -> None:
            answers["call"] = await http.post(url, json=call, headers=headers)

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await anyio.sleep(0.3)  # the command runs
            refused = await http.post(url, json=_invalid_id_cancel(5, bad_id), headers=headers)
        assert refused.status_code == 400, refused.text
        (error,) = _messages_of(refused)
        assert error["id"] is None and error["error"]["code"] == -32600, error  # type: ignore[index]
        (result,) = _messages_of(answers["call"])
        assert "finished-late" in str(result.get("result")), result
