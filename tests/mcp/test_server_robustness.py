"""``octos-tools serve`` as real clients and real mistakes hit it (real processes, loopback).

* a signal (SIGTERM from a client that gives up, Ctrl-C) while a command runs: the server
  exits promptly and leaves no child process behind;
* malformed JSON-RPC lines on stdio get a JSON-RPC error (never silence) and the server
  keeps serving;
* HTTP: a port already in use is a one-line error with exit code 2 and nothing on stdout;
  the 2025 handshake announces ``tools.listChanged``; every loopback address, not only
  ``127.0.0.1``, gets the Host/Origin checks against DNS rebinding.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests.mcp.http_serve import start_http

pytestmark = [pytest.mark.timeout(90)]

SERVE = [sys.executable, "-m", "octos_tools", "serve"]
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "qa", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class StdioPeer:
    """A raw line-level client of ``serve`` over stdio (no SDK: we send what we like)."""

    _buf = b""  # bytes read past the last whole line (subclasses make their own process)

    def __init__(self, workspace: Path) -> None:
        self.proc = subprocess.Popen(
            [*SERVE, "--workspace", str(workspace)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.proc.stdout, selectors.EVENT_READ)

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        line = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def recv(self, timeout: float = 20.0) -> dict[str, Any]:
        # our own line buffer over os.read: a buffered readline may take in several lines
        # at once, and select() then no longer sees the ones already read
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not self._sel.select(left):
                raise AssertionError(f"no message from the server within {timeout} s")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            assert chunk, "the server closed stdout"
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def recv_id(self, request_id: Any, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            message = self.recv(max(0.1, deadline - time.monotonic()))
            if "id" in message and message["id"] == request_id and "method" not in message:
                return message

    def initialize(self) -> None:
        self.send(INIT)
        assert "result" in self.recv_id(1)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    return ws


@pytest.fixture
def peer(workspace: Path) -> Iterator[StdioPeer]:
    p = StdioPeer(workspace)
    try:
        yield p
    finally:
        p.close()


def _group_of(marker: str) -> int | None:
    """The process group of the shell whose command line holds ``marker``."""
    out = subprocess.run(
        ["ps", "-eo", "pgid=,args="], capture_output=True, text=True, check=True
    ).stdout
    for line in out.splitlines():
        pgid, _, args = line.strip().partition(" ")
        if marker in args and "ps -eo" not in args:
            return int(pgid)
    return None


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.mark.slow  # crash test: the server killed by a signal mid-call
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_mid_call_exits_and_leaves_no_child(peer: StdioPeer, signum: int) -> None:
    marker = uuid.uuid4().hex
    peer.initialize()
    peer.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "exec_command", "arguments": {"cmd": f"sleep 300; echo {marker}"}},
        }
    )
    deadline = time.monotonic() + 20
    pgid = None
    while pgid is None and time.monotonic() < deadline:
        pgid = _group_of(marker)
        time.sleep(0.1)
    assert pgid is not None, "the command never started"
    try:
        peer.proc.send_signal(signum)
        try:
            peer.proc.wait(20)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the server did not exit within 20 s of signal {signum}")
        deadline = time.monotonic() + 10
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _group_alive(pgid), "the command's process group outlived the server"
    finally:
        if _group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)


def test_malformed_lines_get_errors_and_serving_goes_on(peer: StdioPeer) -> None:
    peer.initialize()
    peer.send(b"this is not json")
    parse = peer.recv()
    assert parse["id"] is None and parse["error"]["code"] == -32700
    peer.send(b"x" * (2 * 1024 * 1024))  # a huge line that is not JSON either
    assert peer.recv()["error"]["code"] == -32700
    peer.send(b"[]")
    assert peer.recv()["error"]["code"] == -32600
    # A request whose id is readable gets its own error, so the client is not left waiting.
    peer.send({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": "x"})
    assert peer.recv_id(6)["error"]["code"] == -32602
    peer.send({"jsonrpc": "1.0", "id": 7, "method": "tools/list"})
    assert peer.recv_id(7)["error"]["code"] == -32600
    # A malformed notification or response is not answered (JSON-RPC 2.0 §4.1, §5).
    peer.send({"jsonrpc": "2.0", "method": "notifications/x", "params": 3})
    peer.send({"jsonrpc": "2.0", "id": 99, "result": 3})
    peer.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
    assert peer.recv() == {"jsonrpc": "2.0", "id": 8, "result": {}}
    peer.send(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "a.txt"}},
        }
    )
    result = peer.recv_id(9)["result"]
    assert not result["isError"] and "hello" in result["content"][0]["text"]


# ---------------------------------------------------------------------------- HTTP


def _start_http(workspace: Path, host: str = "127.0.0.1") -> tuple[subprocess.Popen[bytes], str]:
    """Start an HTTP serve; its token goes into :data:`MCP_HEADERS`-style headers through
    :func:`_headers` (the last started server's)."""
    served = start_http(
        [
            *SERVE,
            "--workspace",
            str(workspace),
            "--transport",
            "http",
            "--host",
            host,
            "--port",
            "0",
        ]
    )
    _LAST_AUTH.clear()
    _LAST_AUTH.update(served.auth)
    return served.proc, served.url


_LAST_AUTH: dict[str, str] = {}


def _headers(**extra: str) -> dict[str, str]:
    """:data:`MCP_HEADERS` plus the bearer token of the last :func:`_start_http` server."""
    return {**MCP_HEADERS, **_LAST_AUTH, **extra}


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def test_http_port_in_use_is_a_clear_error(workspace: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*SERVE, "--workspace", str(workspace), "--transport", "http", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert done.stdout == b""
    err = done.stderr.decode()
    assert "Traceback" not in err
    assert str(port) in err and "in use" in err, err


def test_http_handshake_announces_list_changed(workspace: Path) -> None:
    proc, url = _start_http(workspace)
    try:
        response = httpx.post(url, json=INIT, headers=_headers(), timeout=20)
        assert response.status_code == 200
        body = response.text
        data = body.split("data: ", 1)[1] if "data: " in body else body
        result = json.loads(data.strip().splitlines()[0])["result"]
        assert result["capabilities"]["tools"]["listChanged"] is True
    finally:
        _stop(proc)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"])
def test_http_loopback_refuses_foreign_origin_and_host(workspace: Path, host: str) -> None:
    proc, url = _start_http(workspace, host)
    try:
        evil_origin = httpx.post(
            url, json=INIT, headers=_headers(Origin="http://evil.example"), timeout=20
        )
        assert evil_origin.status_code == 403
        evil_host = httpx.post(url, json=INIT, headers=_headers(Host="evil.example"), timeout=20)
        assert evil_host.status_code == 421
        own_origin = url.rsplit("/", 1)[0]
        ok = httpx.post(url, json=INIT, headers=_headers(Origin=own_origin), timeout=20)
        assert ok.status_code == 200
    finally:
        _stop(proc)
