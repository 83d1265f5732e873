"""The web family: registration order, tags, the missing extra, the registry."""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from octos_tools.builtins import web
from octos_tools.config import Config
from octos_tools.tool import Tool

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------------- test server

Route = tuple[int, dict[str, str], bytes]


@dataclass
class Server:
    """A loopback HTTP server serving fixed routes and recording every request."""

    routes: dict[str, Route | Callable[[BaseHTTPRequestHandler], Route]]
    host: str = "127.0.0.1"
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # method, path, Host
    bodies: list[bytes] = field(default_factory=list)
    port: int = 0

    def url(self, path: str = "/", host: str | None = None) -> str:
        h = host or (f"[{self.host}]" if ":" in self.host else self.host)
        return f"http://{h}:{self.port}{path}"

    def hits(self, path: str) -> int:
        return sum(1 for _, p, _ in self.requests if p.split("?")[0] == path)


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            server.bodies.append(self.rfile.read(length) if length else b"")
            server.requests.append((self.command, self.path, self.headers.get("Host", "")))
            route = server.routes.get(self.path.split("?")[0])
            if route is None:
                status, headers, body = 404, {"Content-Type": "text/plain"}, b"no such route"
            elif callable(route):
                status, headers, body = route(self)
            else:
                status, headers, body = route
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            if "Content-Length" not in headers:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = _serve
        do_POST = _serve

    return Handler


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

        httpd = HTTPServer((host, 0), _handler(srv))
        srv.port = httpd.server_address[1]
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        started.append(httpd)
        return srv

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


def page(body: str | bytes, ctype: str = "text/html; charset=utf-8", status: int = 200) -> Route:
    data = body.encode() if isinstance(body, str) else body
    return (status, {"Content-Type": ctype}, data)


# -------------------------------------------------------------------------- registration


class FakeRegistry:
    def __init__(self) -> None:
        self.tools: list[Tool] = []

    def register(self, tool: Tool) -> None:
        self.tools.append(tool)


def test_register_order_and_tags(tmp_path: Any) -> None:
    reg = FakeRegistry()
    web.register(reg, None, Config())  # type: ignore[arg-type]
    assert [t.name for t in reg.tools] == ["web_search", "web_fetch"]
    for t in reg.tools:
        assert t.tags == ("web",) and t.concurrency_class.value == "safe" and not t.cwd_bound
        assert t.input_schema["additionalProperties"] is False


def test_register_without_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    missing: dict[str, str] = {}
    monkeypatch.setitem(sys.modules, "markdownify", None)  # makes the import fail
    monkeypatch.setattr(web, "MISSING_EXTRAS", missing)
    reg = FakeRegistry()
    web.register(reg, None, Config())  # type: ignore[arg-type]
    assert reg.tools == []
    assert missing == {"web_search": "web", "web_fetch": "web"}


async def test_through_registry(serve: Callable[..., Server], tmp_path: Any) -> None:
    from octos_tools.registry import ToolRegistry
    from octos_tools.workspace import Workspace

    srv = serve({"/": page("<p>hi there</p>"), "/secret": page("SECRET-Q")})
    reg = ToolRegistry(Workspace(tmp_path))
    web.register(reg, Workspace(tmp_path), Config.from_mapping({"web": {}}))
    refused = await reg.execute("web_fetch", json.dumps({"url": srv.url("/secret")}))
    assert refused.error_kind == "network_refused" and srv.requests == []
    bad = await reg.execute("web_fetch", {"url": srv.url("/"), "extract_mode": "html"})
    assert bad.error_kind == "invalid_arguments"
    count = await reg.execute("web_search", {"query": "x", "count": 11})
    assert count.error_kind == "invalid_arguments"

    reg = ToolRegistry(Workspace(tmp_path))
    cfg = Config.from_mapping({"web": {"allow_private_hosts": True}})
    web.register(reg, Workspace(tmp_path), cfg)
    ok = await reg.execute("web_fetch", {"url": srv.url("/")})
    assert ok.success and ok.output.endswith("hi there")
