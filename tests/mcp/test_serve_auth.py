"""HTTP serving: the bearer token of remote binds, the Host / Origin lists, a wrong path.

The remote code path is exercised on loopback: the server is told it is bound to a
documentation address (192.0.2.10, RFC 5737) while it really listens on a 127.0.0.1 socket.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from octos_tools.errors import ConfigError
from octos_tools.mcp.auth import TOKEN_ENV, load_token, transport_security
from octos_tools.mcp.http import bind_socket
from octos_tools.mcp.server import OctosMcpServer
from octos_tools.profile import build_registry
from tests.mcp.test_server_robustness import INIT, MCP_HEADERS, _headers, _start_http, _stop

pytestmark = [pytest.mark.timeout(90)]

TOKEN = "s3cret-token-for-tests-0123456789"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    return ws


def _result(response: httpx.Response) -> dict[str, object]:
    body = response.text
    data = body.split("data: ", 1)[1] if "data: " in body else body
    message: dict[str, object] = json.loads(data.strip().splitlines()[0])
    return message


@pytest.mark.anyio
async def test_remote_bind_checks_token_host_and_origin_on_every_request(
    workspace: Path,
) -> None:
    registry = build_registry(None, workspace)
    server = OctosMcpServer(registry)
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    good = {**MCP_HEADERS, "Host": "good.example"}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with anyio.create_task_group() as tg:
        ready = anyio.Event()
        tg.start_soon(
            lambda: server.serve_http(
                "192.0.2.10",
                port,
                sock=sock,
                token=TOKEN,
                allowed_hosts=["good.example"],
                allowed_origins=["https://app.example"],
                on_ready=lambda _url: ready.set(),
            )
        )
        with anyio.fail_after(20):
            await ready.wait()
        async with httpx.AsyncClient(timeout=20) as http:
            missing = await http.post(url, json=INIT, headers=good)
            assert missing.status_code == 401
            assert "bearer" in missing.headers.get("www-authenticate", "").lower()
            wrong = await http.post(
                url, json=INIT, headers={**good, "Authorization": "Bearer nope-nope-nope-nope"}
            )
            assert wrong.status_code == 401
            ok = await http.post(url, json=INIT, headers={**good, **auth})
            assert ok.status_code == 200, ok.text
            assert "result" in _result(ok)
            session = ok.headers["mcp-session-id"]
            # Every request is checked, also inside an established session.
            listed = await http.post(
                url,
                json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                headers={**good, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"},
            )
            assert listed.status_code == 401
            evil_host = await http.post(url, json=INIT, headers={**good, **auth, "Host": "evil"})
            assert evil_host.status_code == 421
            evil_origin = await http.post(
                url, json=INIT, headers={**good, **auth, "Origin": "https://evil.example"}
            )
            assert evil_origin.status_code == 403
            app_origin = await http.post(
                url, json=INIT, headers={**good, **auth, "Origin": "https://app.example"}
            )
            assert app_origin.status_code == 200
        tg.cancel_scope.cancel()
    await registry.aclose()


def test_wrong_path_says_where_the_endpoint_is(workspace: Path) -> None:
    proc, url = _start_http(workspace)
    try:
        root = url.rsplit("/", 1)[0]
        for path in ("/", "/sse", "/mcp/v1"):
            response = httpx.post(root + path, json=INIT, headers=_headers(), timeout=20)
            assert response.status_code == 404
            assert response.json()["endpoint"] == url
            assert url in response.json()["message"]
    finally:
        _stop(proc)


def _serve(workspace: Path, *args: str, env: dict[str, str] | None = None) -> str:
    environ = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "octos_tools", "serve", "-w", str(workspace), "-t", "http", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        env={**environ, **(env or {})},
    )
    assert done.returncode == 2
    assert done.stdout == b""
    err = done.stderr.decode()
    assert "Traceback" not in err
    return err


@pytest.mark.slow  # four server starts
def test_remote_bind_without_token_refuses_to_start(workspace: Path, tmp_path: Path) -> None:
    err = _serve(workspace, "--host", "0.0.0.0", "--port", "0", "--allow-remote")
    assert "without authentication" in err and TOKEN_ENV in err
    assert len(err.strip().splitlines()) == 1
    err = _serve(workspace, "--host", "0.0.0.0", "--port", "0")
    assert "--allow-remote" in err
    short = tmp_path / "token"
    short.write_text("abc\n")
    short.chmod(0o600)
    config = tmp_path / "octos.toml"
    config.write_text(f'[serve]\nauth_token_file = "{short}"\n')
    err = _serve(workspace, "--host", "0.0.0.0", "--allow-remote", "-c", str(config))
    assert "at least 16 characters" in err
    # A token but a wildcard bind with no allowed_hosts: we cannot know the Host names.
    err = _serve(workspace, "--host", "0.0.0.0", "--allow-remote", env={TOKEN_ENV: TOKEN})
    assert "allowed_hosts" in err


def test_load_token_sources(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\nignored\n")
    path.chmod(0o644)
    with pytest.raises(ConfigError) as refused:  # as OpenSSH refuses an unprotected key
        load_token(str(path), environ={})
    assert str(refused.value) == (
        f"serve.auth_token_file {path}: other users can read or change it (mode 0644); "
        f"refusing to start: run 'chmod 600 {path}'"
    )
    path.chmod(0o620)
    with pytest.raises(ConfigError, match="mode 0620"):
        load_token(str(path), environ={})
    path.chmod(0o600)
    assert load_token(str(path), environ={}) == TOKEN
    assert load_token(str(path), environ={TOKEN_ENV: "from-the-environment-123"}) == (
        "from-the-environment-123"
    )
    assert load_token(None, environ={}) is None
    with pytest.raises(ConfigError, match=r"cannot read|regular file"):
        load_token(str(tmp_path / "absent"), environ={})
    with pytest.raises(ConfigError, match="no spaces"):
        load_token(None, environ={TOKEN_ENV: "has a space in the middle here"})


def test_serve_refuses_a_token_file_others_can_read(workspace: Path, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o640)
    config = tmp_path / "octos.toml"
    config.write_text(f'[serve]\nauth_token_file = "{token_file}"\n')
    err = _serve(workspace, "--port", "0", "-c", str(config))
    assert len(err.strip().splitlines()) == 1, err
    assert str(token_file) in err and "mode 0640" in err and "chmod 600" in err


def test_transport_security_lists() -> None:
    loop = transport_security("127.0.0.2")
    assert "127.0.0.2:*" in loop.allowed_hosts and "localhost:*" in loop.allowed_hosts
    assert "http://127.0.0.2:*" in loop.allowed_origins
    remote = transport_security("192.0.2.10", allowed_hosts=["box.example", "box.example:9000"])
    assert set(remote.allowed_hosts) == {
        "192.0.2.10",
        "192.0.2.10:*",
        "box.example",
        "box.example:*",
        "box.example:9000",
    }
    assert remote.allowed_origins == []
    with pytest.raises(ConfigError, match="allowed_hosts"):
        transport_security("0.0.0.0")
