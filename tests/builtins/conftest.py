"""Fixtures shared by the built-in tool tests (plain helpers live in the ``_*_helpers`` modules)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

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
