"""End to end over streamable HTTP (loopback): 20 concurrent clients × 50 calls each.

Every call must be answered with its own file's content: none lost, none mixed up, no
error. Also checks the loopback-only rule of ``serve --transport http``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from anyio.abc import Process

from mcp import Client
from octos_tools.mcp.auth import TOKEN_ENV
from tests.cli_helpers import run_in_process
from tests.mcp.http_serve import transport

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

TOKEN = "load-test-token-0123456789"
CLIENTS = 20
CALLS_PER_CLIENT = 50


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for i in range(CLIENTS):
        d = ws / f"dir{i:02d}"
        d.mkdir(parents=True)
        for j in range(5):
            (d / f"file{j}.txt").write_text(f"client {i} file {j}\nmarker-{i}-{j}\n")
    return ws


@pytest.fixture
async def http_server(workspace: Path) -> AsyncIterator[str]:
    process: Process = await anyio.open_process(
        [
            sys.executable,
            *("-m", "octos_tools", "serve", "--workspace", str(workspace)),
            *("--transport", "http", "--host", "127.0.0.1", "--port", "0"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env={**os.environ, TOKEN_ENV: TOKEN},  # a configured token is honoured on loopback
    )
    url = None
    buffered = b""
    assert process.stderr is not None
    try:
        with anyio.fail_after(60):
            while url is None:
                chunk = await process.stderr.receive()
                buffered += chunk
                match = re.search(rb"listening on (http://\S+/mcp)", buffered)
                if match:
                    url = match.group(1).decode()
        yield url
    finally:
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGTERM)
            with anyio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
        await process.aclose()


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.mark.slow  # load test: 1,000 calls
async def test_twenty_clients_fifty_calls_each(http_server: str) -> None:
    answered: dict[tuple[int, int], str] = {}
    errors: list[str] = []

    async def one_client(i: int) -> None:
        async with Client(transport(http_server, TOKEN)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"read_file", "list_dir"} <= names
            for k in range(CALLS_PER_CLIENT):
                j = k % 5
                if k % 10 == 9:
                    result = await client.call_tool("list_dir", {"path": f"dir{i:02d}"})
                    expect = f"file{j}.txt"
                else:
                    result = await client.call_tool(
                        "read_file", {"path": f"dir{i:02d}/file{j}.txt"}
                    )
                    expect = f"marker-{i}-{j}"
                text = _text(result)
                if result.is_error or expect not in text:
                    errors.append(f"client {i} call {k}: {text[:200]}")
                answered[(i, k)] = text

    async with anyio.create_task_group() as tg:
        for i in range(CLIENTS):
            tg.start_soon(one_client, i)

    assert errors == []
    assert len(answered) == CLIENTS * CALLS_PER_CLIENT

    # Failures are isError results naming the kind, on the same server.
    async with Client(transport(http_server, TOKEN)) as client:
        result = await client.call_tool("read_file", {"path": "../outside.txt"})
        assert result.is_error
        assert _text(result).startswith("Error [path_outside_workspace]")
        assert result.structured_content is None
        assert result.meta is not None
        meta = result.meta["io.octos-tools/result"]["structured_metadata"]
        assert meta["error"]["kind"] == "path_outside_workspace"
        unknown = await client.call_tool("no_such_tool", {})
        assert unknown.is_error
        assert "unknown_tool" in _text(unknown)
        bad = await client.call_tool("read_file", {"path": 3})
        assert bad.is_error
        assert "invalid_arguments" in _text(bad)


def test_non_loopback_bind_needs_allow_remote(tmp_path: Path) -> None:
    proc = run_in_process(
        *("serve", "--workspace", str(tmp_path)),
        *("--transport", "http", "--host", "0.0.0.0", "--port", "0"),
    )
    assert proc.returncode == 2
    assert b"--allow-remote" in proc.stderr
    assert proc.stdout == b""


def test_bad_transport_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_in_process("serve", "-w", str(tmp_path), "-t", "pigeon")
    assert proc.returncode == 2
    assert b"stdio" in proc.stderr


async def test_sigterm_exits_cleanly_with_clients_connected(tmp_path: Path) -> None:
    """SIGTERM on ``serve --transport http`` with a session open and a command running:
    the process leaves within seconds, code 0 (or 143), with no traceback on stderr (uvicorn
    shuts down gracefully instead of having its lifespan cancelled) and its token file
    removed."""
    from tests.mcp.http_serve import start_http

    ws = tmp_path / "ws"
    ws.mkdir()
    argv = [sys.executable, "-m", "octos_tools", "serve", "-t", "http", "-p", "0"]
    serve = start_http([*argv, "-w", str(ws)], start_new_session=True)
    assert serve.token_file is not None and serve.token_file.exists()
    try:
        async with Client(transport(serve.url, serve.token)) as client:
            await client.list_tools()
            async with anyio.create_task_group() as tg:

                async def long_call() -> None:
                    with anyio.move_on_after(30):
                        try:
                            await client.call_tool("exec_command", {"cmd": "sleep 30"})
                        except Exception:  # the server went away: expected
                            pass

                tg.start_soon(long_call)
                await anyio.sleep(1.5)  # the command runs
                serve.proc.send_signal(signal.SIGTERM)
                with anyio.fail_after(25):
                    while serve.proc.poll() is None:
                        await anyio.sleep(0.05)
                tg.cancel_scope.cancel()
    except Exception:  # the client's own teardown after the server left
        pass
    finally:
        if serve.proc.poll() is None:
            serve.proc.kill()
        serve.proc.wait(10)
    assert serve.proc.stderr is not None
    rest = serve.proc.stderr.read().decode()
    assert serve.proc.returncode in (0, 143), rest
    assert "Traceback" not in rest and "CancelledError" not in rest, rest
    assert not serve.token_file.exists()
