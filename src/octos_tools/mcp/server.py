"""Serve a :class:`~octos_tools.registry.ToolRegistry` over MCP (issue 6, DESIGN.md §6).

Built on the low-level ``Server`` of the official ``mcp`` SDK (v2), because our tool list
changes at run time (deferral, LRU eviction, activation): a decorator server would freeze
it at import time.

* ``tools/list`` is the registry's visible specs after the seed's housekeeping
  (:meth:`~octos_tools.session.ToolSession.before_model_request`: ``tick`` → ``auto_evict``
  → ``specs``). Policy, deferral and the context filter are already applied by
  ``specs()``. Each tool carries ``title`` and the annotations ``readOnlyHint`` (Safe) and
  ``destructiveHint`` (Exclusive). Results carry ``ttlMs: 0``: a client must not cache a
  list that changes.
* ``tools/call`` runs :meth:`~octos_tools.registry.ToolRegistry.execute` with a
  :class:`~octos_tools.context.ToolContext` (call id ``mcp-<request id>``, the workspace,
  a progress reporter forwarding to MCP ``notifications/progress`` when the request has a
  ``progressToken``). The result is the tool's text plus ``structuredContent`` = its
  ``structured_metadata``. Every failure, including ``unknown_tool`` and
  ``policy_denied``, is an ``isError`` result whose text starts ``Error [<kind>]:``: the
  model can read and correct it (MCP's rule for tool errors; we keep protocol errors for
  malformed requests only).
* Exclusive calls are serialised with one lock (arrival order), Safe calls run freely:
  the seed's batch rule carried across concurrent MCP requests.
* ``notifications/tools/list_changed``: every registry mutation wakes a watcher task that
  compares the visible names with the last announced ones; when they differ it tells
  every client that accepts it. Two protocol eras coexist in SDK v2:

  - 2025 handshake connections (``initialize``) get the notification pushed on their
    standalone channel (the stdio pipe, the HTTP GET stream);
  - 2026-07-28 connections are stateless per request and may not be pushed to unasked:
    they receive it only on a ``subscriptions/listen`` stream they opened
    (``tools_list_changed``), which we serve with the SDK's ``ListenHandler``.

Transports: stdio (default) and streamable HTTP (:func:`serve_http`). Nothing here writes
to stdout except the stdio transport itself.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from .. import __version__
from ..context import ProgressReporter, ToolContext, ToolPermissions
from ..errors import ErrorKind
from ..session import ToolSession
from ..tool import ToolResult, ToolSpec

if TYPE_CHECKING:
    from mcp.server.connection import Connection
    from mcp.server.context import ServerRequestContext
    from mcp.shared._stream_protocols import ReadStream, WriteStream

    from ..registry import ToolRegistry

__all__ = [
    "LOOPBACK_HOSTS",
    "OctosMcpServer",
    "bind_socket",
    "is_loopback",
    "result_to_mcp",
    "spec_to_mcp",
]

logger = logging.getLogger("octos_tools.mcp.server")

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Hosts the HTTP transport binds without ``--allow-remote``."""

SERVER_INSTRUCTIONS = (
    "octos-tools: file, search, edit and shell tools confined to one workspace. Paths are "
    "relative to the workspace root. Failed calls return an error result whose text starts "
    "with 'Error [<kind>]:'; read it and correct the call. Some tool groups are deferred to "
    "save context: calling a deferred tool (or activate_tools) loads it, and the tool list "
    "changes (notifications/tools/list_changed)."
)


def is_loopback(host: str) -> bool:
    """Whether ``host`` names a loopback address (``127.0.0.0/8``, ``::1``, ``localhost``)."""
    import ipaddress

    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` for :meth:`OctosMcpServer.serve_http`.

    Bound before the server starts so that a busy port or a bad address is a plain
    ``OSError`` the caller can report in one line (uvicorn would ``sys.exit(3)`` from
    inside the event loop).

    Raises:
        OSError: the address cannot be resolved or bound (``EADDRINUSE`` when taken).
    """
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    return socket.create_server((host.strip("[]"), port), family=family, backlog=2048)


def _transport_security(host: str) -> TransportSecuritySettings | None:
    """Host/Origin checks against DNS rebinding for a loopback bind (MCP transport spec:
    servers on localhost must validate ``Origin``). The SDK enables them only for the
    literal hosts ``127.0.0.1``, ``localhost`` and ``::1``; every loopback address gets
    them here. ``None`` (no checks) for a remote bind, whose public names we cannot know."""
    if not is_loopback(host):
        return None
    bare = host.strip("[]")
    names = {"127.0.0.1", "localhost", "[::1]", f"[{bare}]" if ":" in bare else bare}
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted(names | {f"{n}:*" for n in names}),
        allowed_origins=sorted({f"http://{n}" for n in names} | {f"http://{n}:*" for n in names}),
    )


class _Server(Server[Any]):
    """The SDK's low-level server, announcing ``tools.listChanged`` in every handshake.

    The streamable-HTTP session manager builds the ``initialize`` result with
    ``create_initialization_options()`` and no arguments, which would say
    ``listChanged: false`` over HTTP although we do send the notification.
    """

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> Any:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


def _invalid_line_reply(exc: Exception) -> types.JSONRPCError | None:
    """The JSON-RPC error answering a stdio line the SDK could not decode, or ``None``
    when none is due (a malformed notification or response: JSON-RPC 2.0 §4.1, §5).

    ``-32700`` (id null) for text that is not JSON; ``-32602`` for a request whose
    ``params`` are not an object; ``-32600`` for anything else. The request id is
    recovered when the envelope has a usable one, so the client is not left waiting.
    """
    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors()
    if any(e["type"] == "json_invalid" for e in errors):
        return _rpc_error(None, -32700, "Parse error: the line is not valid JSON")
    envelope = next((e["input"] for e in errors if isinstance(e.get("input"), dict)), None)
    if envelope is None:
        return _rpc_error(None, -32600, "Invalid request: not a JSON-RPC 2.0 message object")
    if "method" not in envelope:
        has_outcome = "result" in envelope or "error" in envelope
        return None if has_outcome else _rpc_error(None, -32600, "Invalid request")
    rid = envelope.get("id")
    if "id" not in envelope:
        return None
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        return _rpc_error(None, -32600, "Invalid request: id must be a string or an integer")
    if (
        envelope.get("jsonrpc") == "2.0"
        and isinstance(envelope.get("method"), str)
        and "params" in envelope
        and not isinstance(envelope["params"], dict)
    ):
        return _rpc_error(rid, -32602, "Invalid params: params must be an object")
    return _rpc_error(rid, -32600, "Invalid request: not a valid JSON-RPC 2.0 request")


def _rpc_error(rid: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message)
    )


class _AnsweringReadStream:
    """A stdio read stream that answers undecodable lines instead of dropping them.

    The SDK's stdio transport turns a line it cannot decode into an ``Exception`` item,
    which the dispatcher only logs: a client that sent a malformed request would wait
    forever. Here each such item gets its JSON-RPC error on ``write_stream``.
    """

    def __init__(
        self,
        inner: ReadStream[SessionMessage | Exception],
        write_stream: WriteStream[SessionMessage],
    ) -> None:
        self._inner = inner
        self._write = write_stream

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            reply = _invalid_line_reply(item)
            logger.debug("undecodable stdio line (%s); answered: %s", item, reply is not None)
            if reply is not None:
                await self._write.send(SessionMessage(reply))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _AnsweringReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _AnsweringReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def spec_to_mcp(spec: ToolSpec) -> types.Tool:
    """The MCP ``Tool`` for a :class:`~octos_tools.tool.ToolSpec` (name, title, description,
    ``inputSchema`` kept whole, annotations ``title``/``readOnlyHint``/``destructiveHint``)."""
    return types.Tool.model_validate(spec.to_mcp(), by_name=False)


def _json_safe(value: Any) -> Any:
    """``value`` if it is plain JSON, else a JSON round trip with ``str`` for the rest."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))


def result_to_mcp(result: ToolResult) -> types.CallToolResult:
    """Convert a :class:`~octos_tools.tool.ToolResult` into an MCP ``CallToolResult``.

    Success: one text block with ``output``. Failure: ``isError`` with text that starts
    ``Error [<kind>]: <message>`` (the tool's own output follows when it differs).
    ``structuredContent`` is ``structured_metadata`` (a JSON object) when present, with
    ``file_modified`` / ``files_to_send`` added under those keys when set and absent.
    """
    text = result.output
    if not result.success:
        err = result.error or {}
        kind = str(err.get("kind") or ErrorKind.INTERNAL_ERROR.value)
        message = str(err.get("message") or text or "the tool failed")
        head = f"Error [{kind}]: {message}"
        if not text.startswith(f"Error [{kind}]"):
            text = head if not text or text == message else f"{head}\n\n{text}"
    structured: dict[str, Any] | None = None
    if result.structured_metadata is not None:
        structured = dict(result.structured_metadata)
    if result.file_modified and (structured is None or "file_modified" not in structured):
        structured = structured or {}
        structured["file_modified"] = result.file_modified
    if result.files_to_send and (structured is None or "files_to_send" not in structured):
        structured = structured or {}
        structured["files_to_send"] = list(result.files_to_send)
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=_json_safe(structured) if structured is not None else None,
        is_error=not result.success,
    )


class OctosMcpServer:
    """An MCP server exposing one registry.

    Args:
        registry: the registry to serve (built with
            :func:`~octos_tools.profile.build_registry`; MCP servers of the config already
            mounted).
        name: the server name announced to clients.
        read_only: also mark every call's :class:`~octos_tools.context.ToolPermissions`
            read-only (the ``--read-only`` preset removes Exclusive tools already; this is
            the second lock).
        instructions: the ``instructions`` text sent to clients.

    Attributes:
        server: the SDK's low-level ``Server``.
        session: the :class:`~octos_tools.session.ToolSession` doing the LRU housekeeping.
        announcements: how many ``tools/list_changed`` announcements were made.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        name: str = "octos-tools",
        read_only: bool = False,
        instructions: str = SERVER_INSTRUCTIONS,
    ) -> None:
        self.registry = registry
        base_ctx = ToolContext(
            workspace=registry.workspace,
            session_key=registry.session_key,
            registry=registry,
            permissions=ToolPermissions(
                mode="read_only" if read_only else "workspace_write", read_only=read_only
            ),
        )
        self.session = ToolSession(registry, base_ctx)
        self.bus = InMemorySubscriptionBus()
        self.listen_handler = ListenHandler(self.bus)
        self.server: Server[Any] = _Server(
            name,
            version=__version__,
            title="octos-tools",
            instructions=instructions,
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
            on_subscriptions_listen=self.listen_handler,
            get_tool_input_schema=self._input_schema,
        )
        # No OpenTelemetry exporter is ever installed here; skip the per-message span.
        self.server.middleware = []
        self.announcements = 0
        self._exclusive = anyio.Lock()
        self._calls_running = 0
        self._dirty = anyio.Event()
        self._announced: tuple[str, ...] = tuple(s.name for s in self.session.specs())
        self._specs_seen: list[ToolSpec] | None = None
        self._tools_cache: list[types.Tool] = []
        self._legacy: dict[int, Connection] = {}
        self.session.add_listener(self._on_mutation)

    # ------------------------------------------------------------------ handlers

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self.registry.get(name)
        return dict(tool.input_schema) if tool is not None else None

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._remember_connection(ctx)
        specs = self.session.before_model_request()
        if specs is not self._specs_seen:
            self._tools_cache = [spec_to_mcp(s) for s in specs]
            self._specs_seen = specs
        return types.ListToolsResult(tools=list(self._tools_cache), ttl_ms=0)

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        self._remember_connection(ctx)
        call_ctx = replace(
            self.session.ctx,
            tool_call_id=f"mcp-{ctx.request_id}" if ctx.request_id is not None else "mcp",
            progress=_progress_reporter(ctx),
        )
        args = params.arguments if params.arguments is not None else {}
        self._calls_running += 1
        try:
            # the session orders calls (an Exclusive call runs alone)
            result = await self.session.call(
                params.name, args, tool_call_id=call_ctx.tool_call_id, ctx=call_ctx
            )
        finally:
            self._calls_running -= 1
        return result_to_mcp(result)

    # ------------------------------------------------------------------ list_changed

    def _remember_connection(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Keep handshake-era connections to push ``tools/list_changed`` to later.

        The SDK exposes the connection only privately on the per-request session; when it
        is not there (another SDK version) such clients get no push, only fresh lists.
        """
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        connection: Connection | None = getattr(ctx.session, "_connection", None)
        if connection is None or id(connection) in self._legacy:
            return
        key = id(connection)
        self._legacy[key] = connection
        connection.exit_stack.callback(self._legacy.pop, key, None)

    def _on_mutation(self, _source: object) -> None:
        self._dirty.set()

    def visible_names(self) -> tuple[str, ...]:
        """The names ``tools/list`` would return now (without LRU housekeeping)."""
        return tuple(s.name for s in self.session.specs())

    async def _watch_changes(self) -> None:
        """Announce ``tools/list_changed`` whenever the visible set differs from the last
        announced one (runs for the life of a transport)."""
        while True:
            await self._dirty.wait()
            self._dirty = anyio.Event()
            await anyio.lowlevel.checkpoint()  # coalesce a burst of mutations into one
            names = self.visible_names()
            if names == self._announced:
                continue
            self._announced = names
            await self.announce_tools_changed()

    async def announce_tools_changed(self) -> None:
        """Send ``tools/list_changed`` to every client that accepts it (both eras)."""
        self.announcements += 1
        logger.debug("tool list changed; notifying %d legacy connection(s)", len(self._legacy))
        await self.bus.publish(ToolsListChanged())
        for connection in list(self._legacy.values()):
            await connection.send_tool_list_changed()

    # ------------------------------------------------------------------ transports

    def initialization_options(self) -> Any:
        """The ``initialize`` result payload (tools ``listChanged: true``)."""
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    async def serve_stdio(self, *, exit_on_signal: bool = False) -> None:
        """Serve one client over this process's stdin/stdout until it closes stdin.

        A line that is not a valid JSON-RPC message is answered with a JSON-RPC error
        (``-32700`` / ``-32600`` / ``-32602``) and serving goes on.

        Args:
            exit_on_signal: for a server process (``octos-tools serve``): on SIGTERM,
                SIGINT or SIGHUP cancel the running calls (their processes are killed),
                close the registry and end the process. The SDK reads stdin in a worker
                thread that no cancellation can interrupt while the client keeps the pipe
                open, so the process leaves with ``os._exit(128 + signal)`` once the
                cleanup is done (bounded: 10 s for the calls, 10 s for the registry).
        """
        from mcp.server.stdio import stdio_server

        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch_changes)
            if exit_on_signal:
                tg.start_soon(self._exit_on_signal, tg.cancel_scope)
            async with stdio_server() as (read_stream, write_stream):
                answering = _AnsweringReadStream(read_stream, write_stream)
                await self.server.run(answering, write_stream, self.initialization_options())
            self.listen_handler.close()
            tg.cancel_scope.cancel()

    async def _exit_on_signal(self, scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as sigs:
            signum = await anext(sigs)
        logger.info("signal %d: cancelling %d running call(s)", signum, self._calls_running)
        scope.cancel()
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(10):
                while self._calls_running:
                    await anyio.sleep(0.02)
            with anyio.move_on_after(10):
                await self.registry.aclose()
        sys.stderr.flush()
        os._exit(128 + int(signum))

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8765,
        *,
        path: str = "/mcp",
        json_response: bool = False,
        on_ready: Callable[[str], Awaitable[None] | None] | None = None,
        sock: socket.socket | None = None,
    ) -> None:
        """Serve streamable HTTP at ``http://host:port{path}`` until cancelled.

        Args:
            host: the address to bind (the CLI refuses non-loopback hosts without
                ``--allow-remote``).
            port: the TCP port; ``0`` picks a free one (the URL passed to ``on_ready``
                names it).
            path: the endpoint path.
            json_response: answer plain JSON instead of SSE where the protocol allows.
            on_ready: called with the endpoint URL once the socket listens.
            sock: an already listening socket (:func:`bind_socket`) to serve instead of
                binding ``host:port``; ``host`` still decides the Host/Origin checks.

        Loopback hosts get the DNS-rebinding protection (``Host`` and ``Origin`` must name
        a loopback address: a page of another origin in a browser cannot drive the server).
        """
        import uvicorn

        app = self.server.streamable_http_app(
            streamable_http_path=path,
            json_response=json_response,
            host=host,
            transport_security=_transport_security(host),
        )
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=2,
        )
        server = uvicorn.Server(config)

        async def run_uvicorn() -> None:
            try:
                await server.serve(sockets=[sock] if sock is not None else None)
            finally:
                self.listen_handler.close()
                tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch_changes)
            tg.start_soon(run_uvicorn)
            while not server.started and not server.should_exit:
                await anyio.sleep(0.02)
            if server.started and on_ready is not None:
                bound = _bound_port(server) or port
                shown = f"[{host}]" if ":" in host else host
                maybe = on_ready(f"http://{shown}:{bound}{path}")
                if maybe is not None:
                    await maybe


def _bound_port(server: Any) -> int | None:
    for srv in getattr(server, "servers", None) or ():
        for sock in getattr(srv, "sockets", None) or ():
            name = sock.getsockname()
            if isinstance(name, tuple) and len(name) >= 2:
                return int(name[1])
    return None


def _progress_reporter(
    ctx: ServerRequestContext[Any, Any],
) -> ProgressReporter:
    async def report(progress: float, total: float | None, message: str | None) -> None:
        # A no-op when the request carried no progressToken (the SDK checks).
        await ctx.session.report_progress(progress, total, message)

    return report


async def run_server(
    registry: ToolRegistry,
    *,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    read_only: bool = False,
    stderr: Any = None,
    sock: socket.socket | None = None,
    exit_on_signal: bool = False,
) -> None:
    """Serve ``registry`` on ``transport`` (``"stdio"`` or ``"http"``) until the client
    leaves (stdio) or the process is interrupted (HTTP). Status lines go to ``stderr``.

    ``sock``: HTTP, a socket from :func:`bind_socket` to serve on. ``exit_on_signal``:
    stdio, see :meth:`OctosMcpServer.serve_stdio` (only for a process of its own)."""
    err = stderr if stderr is not None else sys.stderr
    server = OctosMcpServer(registry, read_only=read_only)
    names: Sequence[str] = server.visible_names()
    if transport == "stdio":
        logger.info("serving %d visible tools over stdio", len(names))
        await server.serve_stdio(exit_on_signal=exit_on_signal)
        return

    def ready(url: str) -> None:
        print(f"octos-tools: MCP server listening on {url} ({len(names)} tools)", file=err)
        err.flush()

    await server.serve_http(host, port, on_ready=ready, sock=sock)
