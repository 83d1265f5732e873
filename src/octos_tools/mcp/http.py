"""The streamable-HTTP transport of ``octos-tools serve`` (MCP specification, *Base
protocol → Transports → Streamable HTTP*), on the SDK's session manager and uvicorn.

* One endpoint, ``/mcp`` by default; any other path gets a ``404`` whose JSON body names
  the endpoint's URL (a client configured with the wrong path learns the right one).
* Request bodies over the limit get ``413`` (the SDK's check).
* Who may call is decided by :mod:`octos_tools.mcp.auth`: a bearer token on every request
  (checked first, by :class:`~octos_tools.mcp.auth.RequireBearer`), then the Host / Origin
  lists (the SDK's checks).
* How many connections are held, and for how long, by :mod:`octos_tools.mcp.connections`
  (uvicorn's h11 protocol with a :class:`~octos_tools.mcp.connections.ConnectionGate`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from .connections import ConnectionGate, ConnectionLimits

if TYPE_CHECKING:
    from mcp.server.lowlevel.server import Server
    from mcp.server.transport_security import TransportSecuritySettings

__all__ = ["HttpOptions", "bind_socket", "serve_http_app"]

logger = logging.getLogger("octos_tools.mcp.http")


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``.

    Bound before the server starts so that a busy port or a bad address is a plain
    ``OSError`` the caller can report in one line (uvicorn would ``sys.exit(3)`` from
    inside the event loop).

    Raises:
        OSError: the address cannot be resolved or bound (``EADDRINUSE`` when taken).
    """
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    return socket.create_server((host.strip("[]"), port), family=family, backlog=2048)


class HttpOptions:
    """How :func:`serve_http_app` serves.

    Args:
        host: the bound address (names the URL and decides nothing else here).
        port: the TCP port; ``0`` picks a free one.
        path: the endpoint path.
        json_response: answer plain JSON instead of SSE where the protocol allows.
        security: the Host / Origin checks (:func:`~octos_tools.mcp.auth.transport_security`).
        token: the bearer token every request must carry, or ``None`` for none (only
            with ``no_auth``).
        no_auth: serve without a token (``--no-auth``; loopback only).
        max_body_bytes: the request body limit in bytes.
        limits: the connection caps and timeouts.

    Raises:
        ValueError: ``token`` is ``None`` without ``no_auth``, or ``no_auth`` on a remote
            bind (a programmer's mistake: every bind is authenticated).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 8765,
        *,
        path: str = "/mcp",
        json_response: bool = False,
        security: TransportSecuritySettings | None = None,
        token: str | None = None,
        no_auth: bool = False,
        max_body_bytes: int = 4 * 1024 * 1024,
        limits: ConnectionLimits | None = None,
    ) -> None:
        from .auth import is_loopback

        if token is None and not no_auth:
            raise ValueError("an HTTP bind needs a bearer token (or no_auth=True on loopback)")
        if no_auth and not is_loopback(host):
            raise ValueError(f"no_auth is for loopback binds only, not {host!r}")
        self.host = host
        self.port = port
        self.path = path
        self.json_response = json_response
        self.security = security
        self.token = None if no_auth else token
        self.max_body_bytes = max_body_bytes
        self.limits = limits or ConnectionLimits()


class _QuietStop(logging.Filter):
    """On uvicorn's logger once it is stopping: the requests it cancels at the end of
    its graceful shutdown (a call still running, an open event stream) are the point of
    stopping, not errors; their ``CancelledError`` tracebacks and uvicorn's "Cancel N running
    task(s)" line go to our logger at INFO, one line each. Everything else passes."""

    def __init__(self, server: Any) -> None:
        super().__init__()
        self.server = server

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.server.should_exit:  # set by a stop request or uvicorn's own signal handler
            return True
        exc = record.exc_info[1] if record.exc_info else None
        cancelled = isinstance(exc, asyncio.CancelledError) or (
            isinstance(exc, BaseExceptionGroup) and exc.split(asyncio.CancelledError)[1] is None
        )
        if cancelled or "graceful shutdown exceeded" in record.getMessage():
            logger.info("stopping: %s", record.getMessage().splitlines()[0])
            return False
        return True


def _url(host: str, port: int, path: str) -> str:
    shown = f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host
    return f"http://{shown}:{port}{path}"


class _WrongPath:
    """ASGI wrapper: a request for any path but the endpoint gets a ``404`` naming it."""

    def __init__(self, app: Any, path: str, url: Callable[[], str]) -> None:
        self.app = app
        self.path = path
        self.url = url

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path", "").rstrip("/") == self.path.rstrip("/"):
            await self.app(scope, receive, send)
            return
        url = self.url()
        body = json.dumps(
            {
                "error": "not_found",
                "message": f"no MCP endpoint at {scope.get('path', '')!r}; the endpoint is {url}",
                "endpoint": url,
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 404,
                "headers": [(b"content-type", b"application/json"), (b"link", f"<{url}>".encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def serve_http_app(
    server: Server[Any],
    options: HttpOptions,
    *,
    on_ready: Callable[[str], Awaitable[None] | None] | None = None,
    sock: socket.socket | None = None,
    on_stop: Callable[[], None] | None = None,
    gate: ConnectionGate | None = None,
    stop: anyio.Event | None = None,
) -> None:
    """Serve ``server`` over streamable HTTP until cancelled, the process is told to stop
    or ``stop`` is set.

    Args:
        server: the SDK's low-level server.
        options: see :class:`HttpOptions`.
        on_ready: called with the endpoint URL once the socket listens.
        sock: an already listening socket (:func:`bind_socket`) to serve instead of
            binding ``options.host:options.port``.
        on_stop: called when uvicorn has stopped.
        gate: the connection bookkeeping to use (default: a new one of
            ``options.limits``; tests read its counts).
        stop: when set, uvicorn shuts down gracefully (open connections closed, the app's
            lifespan ended) and this returns: the way to stop on a signal (cancelling
            instead interrupts the lifespan, and Starlette logs the ``CancelledError``).
    """
    import uvicorn

    from .auth import RequireBearer
    from .connections import protocol_for
    from .disconnect import CancelOnDisconnect
    from .request_body import KeepBody
    from .rpc_errors import RecoverIds

    gate = gate or ConnectionGate(options.limits)
    app = server.streamable_http_app(
        streamable_http_path=options.path,
        json_response=options.json_response,
        host=options.host,
        transport_security=options.security,
        max_request_body_size=options.max_body_bytes,
    )
    bound: list[int] = [options.port]
    wrapped = RequireBearer(
        _WrongPath(
            KeepBody(CancelOnDisconnect(RecoverIds(app)), options.max_body_bytes),
            options.path,
            lambda: _url(options.host, bound[0], options.path),
        ),
        options.token,
        on_admit=gate.admit,
    )
    config = uvicorn.Config(
        wrapped,
        host=options.host,
        port=options.port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=2,
        http=protocol_for(gate),
        timeout_keep_alive=options.limits.idle_timeout,
        h11_max_incomplete_event_size=options.limits.max_header_bytes,
        # asyncio accepts up to `backlog` sockets per wake-up before any connection_made
        # runs: a small batch keeps a flood from exhausting the file limit in one go
        backlog=options.limits.accept_batch,
    )
    uv = uvicorn.Server(config)

    async def run_uvicorn() -> None:
        try:
            await uv.serve(sockets=[sock] if sock is not None else None)
        finally:
            if on_stop is not None:
                on_stop()
            tg.cancel_scope.cancel()

    quiet = _QuietStop(uv)

    async def stop_when_told(event: anyio.Event) -> None:
        await event.wait()
        uv.should_exit = True

    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addFilter(quiet)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_uvicorn)
            if stop is not None:
                tg.start_soon(stop_when_told, stop)
            while not uv.started and not uv.should_exit:
                await anyio.sleep(0.02)
            if uv.started:
                bound[0] = _bound_port(uv) or options.port
                if on_ready is not None:
                    maybe = on_ready(_url(options.host, bound[0], options.path))
                    if maybe is not None:
                        await maybe
    finally:
        # the requests uvicorn cancelled log their end after it returned: let them first
        with anyio.CancelScope(shield=True), anyio.move_on_after(2):
            while uv.server_state.tasks:
                await anyio.sleep(0.02)
        uvicorn_log.removeFilter(quiet)


def _bound_port(server: Any) -> int | None:
    for srv in getattr(server, "servers", None) or ():
        for sock in getattr(srv, "sockets", None) or ():
            name = sock.getsockname()
            if isinstance(name, tuple) and len(name) >= 2:
                return int(name[1])
    return None
