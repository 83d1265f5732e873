"""Fixtures shared by the built-in tool tests (plain helpers live in the ``_*_helpers`` modules)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from octos_tools.config import ShellConfig
from octos_tools.workspace import Workspace

from ._web_helpers import Server, handler_for


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    started: list[ThreadingHTTPServer] = []

    def start(routes: dict[str, Any], host: str = "127.0.0.1") -> Server:
        srv = Server(routes, host)

        class HTTPServer(ThreadingHTTPServer):
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up (timeout tests) is not an error here

        httpd = HTTPServer((host, 0), handler_for(srv))
        srv.port = httpd.server_address[1]
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        started.append(httpd)
        return srv

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The workspace root ``tmp_path/ws``, with a secret in a sibling sharing its prefix
    (``ws_secret/key.txt``). A module that sets ``LINKED_ROOT = True`` (the search family) also
    gets ``notes.txt`` and links out of the root: ``leak`` (a file), ``linkdir`` and ``rel``
    (directories, absolute and relative) into ``tmp_path/outside``."""
    r = tmp_path / "ws"
    r.mkdir()
    linked = getattr(request.module, "LINKED_ROOT", False)
    if linked:
        out = tmp_path / "outside"
        out.mkdir()
        (out / "secret.txt").write_text("TOPSECRET\n")
    (tmp_path / "ws_secret").mkdir()
    (tmp_path / "ws_secret" / "key.txt").write_text("TOPSECRET\n")
    if linked:
        (r / "notes.txt").write_text("hello\nworld\n")
        (r / "leak").symlink_to(out / "secret.txt")
        (r / "linkdir").symlink_to(out)
        (r / "rel").symlink_to("../outside")
    return r


@pytest.fixture
def ws(root: Path) -> Workspace:
    """A :class:`Workspace` on :func:`root`."""
    return Workspace(root)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """A :class:`Workspace` on ``tmp_path`` itself (the discovery tools' tests)."""
    return Workspace(tmp_path)


@pytest.fixture
def cfg() -> ShellConfig:
    """Default shell settings (the command tools' tests)."""
    return ShellConfig()
