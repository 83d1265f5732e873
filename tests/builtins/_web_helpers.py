"""Loopback HTTP servers and route builders shared by the web family's tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from octos_tools.tool_types import ToolResult

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


def handler_for(server: Server) -> type[BaseHTTPRequestHandler]:
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


def page(body: str | bytes, ctype: str = "text/html; charset=utf-8", status: int = 200) -> Route:
    data = body.encode() if isinstance(body, str) else body
    return (status, {"Content-Type": ctype}, data)


def text_of(result: ToolResult) -> str:
    err = result.error or {}
    return result.output + str(err.get("message", "")) + json.dumps(result.structured_metadata)
