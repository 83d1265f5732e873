"""Serve a :class:`~octos_tools.registry.ToolRegistry` over MCP.

Built on the low-level ``Server`` of the official ``mcp`` SDK (v2), because what a client
sees changes at run time (activation, per-session views): a decorator server would freeze
the tool list at import time. The jobs live in small modules:

* :mod:`~octos_tools.mcp.sessions`: one view per MCP session over the shared registry;
  ``tools/list`` is a pure read of it;
* :mod:`~octos_tools.mcp.results`: ``ToolResult`` → ``CallToolResult`` (text and media in
  ``content``, our metadata in ``_meta``, ``isError`` only for failed calls);
* :mod:`~octos_tools.mcp.elicitation`: ``request_user_input`` through MCP elicitation;
* :mod:`~octos_tools.mcp.approval`: the approval channel (elicitation, or the 2026-07-28
  input-required round trip);
* :mod:`~octos_tools.mcp.stdio` and :mod:`~octos_tools.mcp.http` (with
  :mod:`~octos_tools.mcp.auth`): the transports.

``notifications/tools/list_changed``: a client is told when *its* list changes (a deferred
tool it called, ``tool_search`` with ``select:``, a mounted server's new tools). Two protocol eras
coexist in SDK v2: 2025 handshake connections (``initialize``) get the notification pushed
on their connection; 2026-07-28 clients, which may not be pushed to unasked, get it on a
``subscriptions/listen`` stream they opened (the SDK's ``ListenHandler``).

Nothing here writes to stdout except the stdio transport itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .. import __version__
from ..context import ProgressReporter, ToolContext, ToolPermissions
from .approval import InputRequiredApproval, approval_via_elicitation
from .auth import LOOPBACK_HOSTS, is_loopback, issue_token, token_file_path, transport_security
from .elicitation import supports_elicitation, user_input_via_elicitation
from .results import META_KEY, result_to_mcp
from .sessions import McpSession, McpSessions, output_schema_of, spec_to_mcp, unusable_tools
from .stdio import DEFAULT_MAX_MESSAGE_BYTES, stdio_transport

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from mcp.server.connection import Connection
    from mcp.server.context import ServerRequestContext

    from ..registry import ToolRegistry
    from .connections import ConnectionGate, ConnectionLimits
    from .http import bind_socket  # at run time: __getattr__ below

__all__ = [
    "LOOPBACK_HOSTS",
    "META_KEY",
    "OctosMcpServer",
    "bind_socket",
    "is_loopback",
    "result_to_mcp",
    "run_server",
    "server_instructions",
    "spec_to_mcp",
]

logger = logging.getLogger("octos_tools.mcp.server")


def __getattr__(name: str) -> Any:
    """``bind_socket`` from :mod:`.http`, imported on first use: the HTTP stack (uvicorn,
    h11) is not loaded by a stdio ``serve``."""
    if name == "bind_socket":
        from .http import bind_socket

        return bind_socket
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_SESSION_KEY = "octos_tools.mcp_session"


PROFILE_ENV = "OCTOS_TOOLS_SERVE_PROFILE"
"""When set, a stdio ``serve`` runs under :mod:`cProfile` and dumps the stats to this path
on exit (for ``bench/bench_mcp.py --profile``; see bench/README.md)."""


def commands_instructions(sandbox: Any) -> str:
    """What the model is told about its commands: the sandbox mode and engine in force,
    what it allows, and how to ask for more (``sandbox``: the command tools'
    :class:`~octos_tools.sandbox.SandboxSettings`, or ``None`` when none is registered)."""
    from ..errors import ToolError
    from ..sandbox import SandboxMode, SandboxSettings, resolve_engine

    if not isinstance(sandbox, SandboxSettings):
        return ""
    if sandbox.mode is SandboxMode.DANGER_FULL_ACCESS:
        return (
            "Commands (exec_command) are NOT confined (danger-full-access): they run with "
            "this server's user rights and can reach anything that user can. "
        )
    try:
        engine = resolve_engine(sandbox)
    except ToolError:
        return (
            f"Commands cannot run here: no sandbox engine can enforce {sandbox.mode} on this "
            "machine (they answer sandbox_unavailable). "
        )
    if sandbox.mode is SandboxMode.READ_ONLY:
        writes = "they may write only $TMPDIR"
    else:
        writes = "they may write only in the workspace, $TMPDIR and the configured roots"
    if sandbox.network:
        net = "the network is on"
    elif sandbox.egress:
        net = "network only HTTP(S) to " + ", ".join(sandbox.allowed_hosts) + " (via $HTTPS_PROXY)"
    else:
        net = "no network"
    return (
        f"Commands (exec_command) run in the {sandbox.mode} sandbox ({engine}): {writes}; "
        f"git hooks and config and credential stores are protected; {net}. To run one "
        'outside it, call exec_command with sandbox_permissions "require_escalated" and a '
        "justification: a person is asked first. "
    )


def server_instructions(workspace: str | None, sandbox: Any = None) -> str:
    """The ``instructions`` sent to clients: what is confined and how
    (:func:`commands_instructions`), how errors read, and how deferred tools are reached."""
    where = f" ({workspace})" if workspace else ""
    return (
        f"octos-tools. File, search and patch tools are confined to the workspace{where}; "
        "paths are relative to it. "
        + commands_instructions(sandbox)
        + "A failed call returns an error whose text starts 'Error [<kind>]:'; read it and "
        "correct the call. "
        "A command that exits non-zero is not an error: its exit code is in the result. "
        "Some tools are not listed, to save context: tool_search finds them; call them by "
        "name, or load them with tool_search 'select:NAME', and the list changes "
        "(notifications/tools/list_changed)."
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
        instructions: the ``instructions`` text (default :func:`server_instructions`).
        evict: run LRU eviction after each call (``serve.evict``); off by default.
        base_ctx: the context calls start from (default: the registry's workspace and
            session key); a host binds e.g. a spawn delegate in its ``extras``.

    Attributes:
        server: the SDK's low-level ``Server``.
        sessions: the :class:`~octos_tools.mcp.sessions.McpSessions`.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        name: str = "octos-tools",
        read_only: bool = False,
        instructions: str | None = None,
        evict: bool = False,
        base_ctx: ToolContext | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.registry = registry
        ctx = base_ctx or ToolContext(
            workspace=registry.workspace,
            session_key=registry.session_key,
            registry=registry,
        )
        if read_only:
            ctx = replace(ctx, permissions=ToolPermissions(mode="read_only", read_only=True))
        self.sessions = McpSessions(registry, ctx, evict=evict, hide=unusable_tools(registry, ctx))
        self.max_message_bytes = max_message_bytes
        root = str(registry.workspace.root) if registry.workspace is not None else None
        self.bus = InMemorySubscriptionBus()
        self.listen_handler = ListenHandler(self.bus)
        self.server: Server[Any] = _Server(
            name,
            version=__version__,
            title="octos-tools",
            instructions=instructions
            if instructions is not None
            else server_instructions(root, getattr(registry.get("exec_command"), "sandbox", None)),
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
            on_subscriptions_listen=self.listen_handler,
            get_tool_input_schema=self._input_schema,
        )
        # The SDK's per-message OpenTelemetry span (our execute_tool span's parent) only
        # when the registry traces calls: a span costs even with no exporter installed.
        if registry.tracing is None:
            self.server.middleware = []
        self._calls_running = 0
        self._dirty = anyio.Event()
        self._stdio: McpSession | None = None
        self._stdio_mode = False
        self._gone: anyio.Event | None = None
        self._default = self.sessions.open(keep=False)
        self._announced = tuple(s.name for s in self._default.specs())
        self._default.tools.add_listener(self._on_mutation)

    @property
    def announcements(self) -> int:
        """How many ``tools/list_changed`` notifications were sent to sessions."""
        return self.sessions.announcements

    def visible_names(self) -> tuple[str, ...]:
        """The names a new session's ``tools/list`` returns (the configured default view)."""
        return tuple(s.name for s in self._default.specs())

    # ------------------------------------------------------------------ sessions

    def _session_for(
        self, ctx: ServerRequestContext[Any, Any], *, for_call: bool = True
    ) -> tuple[McpSession, bool]:
        """The session of this request, and whether it is a throwaway (a stateless call:
        close it after the request). A stateless list reads the default view itself."""
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        connection: Connection | None = getattr(ctx.session, "_connection", None)
        if self._stdio_mode:
            if self._stdio is None:
                can_ask = not modern and supports_elicitation(ctx.session.client_capabilities)
                push = (
                    self._publish
                    if modern or connection is None
                    else connection.send_tool_list_changed
                )
                self._stdio = self.sessions.open(push=push, elicitation=can_ask)
            return self._stdio, False
        if modern or connection is None:
            if not for_call:
                return self._default, False
            return self.sessions.open(keep=False), True
        session: McpSession | None = connection.state.get(_SESSION_KEY)
        if session is None:
            session = self.sessions.open(
                push=connection.send_tool_list_changed,
                elicitation=supports_elicitation(connection.client_capabilities),
                session_id=connection.session_id,
            )
            connection.state[_SESSION_KEY] = session
            connection.exit_stack.push_async_callback(self.sessions.close, session)
        return session, False

    async def _publish(self) -> None:
        await self.bus.publish(ToolsListChanged())

    # ------------------------------------------------------------------ handlers

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self.registry.get(name)
        return dict(tool.input_schema) if tool is not None else None

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        session, _ = self._session_for(ctx, for_call=False)
        return types.ListToolsResult(tools=session.list_tools(), ttl_ms=0)

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        session, throwaway = self._session_for(ctx)
        # for_call: a field-by-field copy, a tenth of dataclasses.replace on every call
        call_ctx = session.tools.ctx.for_call(
            f"mcp-{ctx.request_id}" if ctx.request_id is not None else "mcp"
        )
        call_ctx.progress = _progress_reporter(ctx)
        call_ctx.user_input = (
            user_input_via_elicitation(ctx.session, ctx.request_id, gone=self._gone)
            if session.elicitation
            else None
        )
        round_trip = self._approval_channel(ctx, params, session, call_ctx)
        args = params.arguments if params.arguments is not None else {}
        self._calls_running += 1
        try:
            result = await self.sessions.call(session, params.name, args, call_ctx)
        finally:
            self._calls_running -= 1
            if throwaway:
                await self.sessions.close(session)
        if round_trip is not None and round_trip.pending is not None:
            return round_trip.input_required()  # nothing ran: the retry asks again
        structured = None
        if result.success and output_schema_of(self.registry.get(params.name)) is not None:
            # the declared schema is the tool's; our trust marks travel in _meta only
            structured = {
                k: v
                for k, v in (result.structured_metadata or {}).items()
                if k not in ("untrusted", "injection")
            }
        return result_to_mcp(result, structured=structured)

    def _approval_channel(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.CallToolRequestParams,
        session: McpSession,
        call_ctx: ToolContext,
    ) -> InputRequiredApproval | None:
        """Attach the approval channel of this call (mcp/approval.py), unless the host's
        base context brought its own: elicitation mid-call for a 2025 client that declared
        it, the input-required round trip for a 2026-07-28 client that declared it, none
        otherwise. Returns the round trip's channel (its ``pending`` read after the call)."""
        if call_ctx.approval is not None:
            return None
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if not supports_elicitation(ctx.session.client_capabilities):
                return None
            channel = InputRequiredApproval(params.input_responses)
            call_ctx.approval = channel
            return channel
        if session.elicitation:
            call_ctx.approval = approval_via_elicitation(
                ctx.session, ctx.request_id, gone=self._gone
            )
        return None

    # ------------------------------------------------------------------ list_changed

    def _on_mutation(self, _source: object) -> None:
        self._dirty.set()

    async def _watch_changes(self) -> None:
        """For the life of a transport: tell each session whose list changed (its own
        activations, or a change of the shared registry such as a mounted server's new
        tools), and the 2026-07-28 listeners when the default view changed."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.sessions.follow)
            await self._watch_default()

    async def _watch_default(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty = anyio.Event()
            await anyio.lowlevel.checkpoint()  # coalesce a burst of mutations into one
            names = self.visible_names()
            if names != self._announced:
                self._announced = names
                if self._stdio is None or self._stdio.push != self._publish:
                    await self._publish()

    # ------------------------------------------------------------------ transports

    def initialization_options(self) -> Any:
        """The ``initialize`` result payload (tools ``listChanged: true``)."""
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    async def serve_stdio(self, *, exit_on_signal: bool = False) -> None:
        """Serve one client over this process's stdin/stdout until it closes stdin; the
        calls already received are finished and answered first.

        A line that is not a valid JSON-RPC message, or is longer than
        ``max_message_bytes``, is answered with a JSON-RPC error and serving goes on.

        Args:
            exit_on_signal: for a server process (``octos-tools serve``): on SIGTERM,
                SIGINT or SIGHUP cancel the running calls (their processes are killed),
                close the registry and end the process. A worker thread blocked reading
                stdin cannot be interrupted while the client keeps the pipe open, so the
                process leaves with ``os._exit(128 + signal)`` once the cleanup is done
                (bounded: 10 s for the calls, 10 s for the registry).
        """
        self._stdio_mode = True
        with self._holding_state_folder():
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_changes)
                if exit_on_signal:
                    tg.start_soon(self._exit_on_signal, tg.cancel_scope)
                async with stdio_transport(self.max_message_bytes) as (reads, writes, eof):
                    self._gone = eof
                    await self.server.run(reads, writes, self.initialization_options())
                self.listen_handler.close()
                tg.cancel_scope.cancel()

    def _holding_state_folder(self) -> contextlib.AbstractContextManager[None]:
        """For the life of a transport, the workspace keeps its state folder between writes
        (:meth:`~octos_tools.workspace.Workspace.holding_state_folder`: a folder removal per
        write costs about 4 ms on ext4)."""
        ws = self.registry.workspace
        return ws.holding_state_folder() if ws is not None else contextlib.nullcontext()

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
        if self.registry.workspace is not None:
            with contextlib.suppress(OSError):
                self.registry.workspace.release_state_folder()  # os._exit skips the unwinding
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
        token: str | None = None,
        no_auth: bool = False,
        allowed_hosts: list[str] | tuple[str, ...] = (),
        allowed_origins: list[str] | tuple[str, ...] = (),
        limits: ConnectionLimits | None = None,
        gate: ConnectionGate | None = None,
        stop: anyio.Event | None = None,
    ) -> None:
        """Serve streamable HTTP at ``http://host:port{path}`` until cancelled or ``stop``
        is set (then it shuts down gracefully: what a signal should do).

        Args:
            host: the address to bind (the CLI refuses non-loopback hosts without
                ``--allow-remote`` and a token).
            port: the TCP port; ``0`` picks a free one (the URL passed to ``on_ready``
                names it).
            path: the endpoint path; any other path answers ``404`` naming it.
            json_response: answer plain JSON instead of SSE where the protocol allows.
            on_ready: called with the endpoint URL once the socket listens.
            sock: an already listening socket (:func:`bind_socket`) to serve instead of
                binding ``host:port``; ``host`` still decides the Host/Origin checks.
            token: the bearer token every request must carry.
            no_auth: serve without a token (loopback only; ``token`` is then ignored).
            allowed_hosts / allowed_origins: see
                :func:`~octos_tools.mcp.auth.transport_security`.
            limits: connection caps and timeouts
                (:class:`~octos_tools.mcp.connections.ConnectionLimits`).
            gate: the connection bookkeeping (default: a new one of ``limits``).
            stop: set it to stop serving gracefully.

        Raises:
            ConfigError: a remote wildcard bind without ``allowed_hosts``.
            ValueError: no ``token`` and no ``no_auth``, or ``no_auth`` on a remote bind.
        """
        from .http import HttpOptions, serve_http_app

        options = HttpOptions(
            host,
            port,
            path=path,
            json_response=json_response,
            security=transport_security(
                host, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins
            ),
            token=token,
            no_auth=no_auth,
            max_body_bytes=self.max_message_bytes,
            limits=limits,
        )
        with self._holding_state_folder():
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_changes)
                await serve_http_app(
                    self.server,
                    options,
                    on_ready=on_ready,
                    sock=sock,
                    on_stop=self.listen_handler.close,
                    gate=gate,
                    stop=stop,
                )
                tg.cancel_scope.cancel()


def _progress_reporter(ctx: ServerRequestContext[Any, Any]) -> ProgressReporter:
    async def report(progress: float, total: float | None, message: str | None) -> None:
        # A no-op when the request carried no progressToken (the SDK checks).
        await ctx.session.report_progress(progress, total, message)

    return report


def _broad_root(root: Path) -> str | None:
    """Why serving ``root`` is risky (the filesystem root, the home folder or above), or
    ``None``."""
    resolved = root.resolve()
    if resolved == Path(resolved.anchor):
        return "the filesystem root"
    try:
        home = Path.home().resolve()
    except RuntimeError:
        return None
    if resolved == home:
        return "your home folder"
    if home.is_relative_to(resolved):
        return f"a folder holding your home folder ({home})"
    return None


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
    evict: bool = False,
    token: str | None = None,
    no_auth: bool = False,
    allowed_hosts: list[str] | tuple[str, ...] = (),
    allowed_origins: list[str] | tuple[str, ...] = (),
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    limits: ConnectionLimits | None = None,
) -> None:
    """Serve ``registry`` on ``transport`` (``"stdio"`` or ``"http"``) until the client
    leaves (stdio) or the process is interrupted (HTTP).

    On start one line goes to ``stderr``: the absolute workspace, the transport (the URL
    for HTTP) and how many tools a new session sees; serving the filesystem root or the home
    folder adds a warning line. See :class:`OctosMcpServer` for the other arguments.

    HTTP without ``token`` and without ``no_auth``: a fresh token is written to a ``0600``
    file (:func:`~octos_tools.mcp.auth.token_file_path` for the bound port), and a line
    before the ``listening on`` line names that file (never the token); the file is
    removed when serving ends. ``no_auth`` prints a warning line instead.
    """
    err = stderr if stderr is not None else sys.stderr
    server = OctosMcpServer(
        registry, read_only=read_only, evict=evict, max_message_bytes=max_message_bytes
    )
    count = len(server.visible_names())
    root = registry.workspace.root if registry.workspace is not None else None
    where = str(root) if root is not None else "(no workspace)"

    def say(line: str) -> None:
        print(line, file=err)
        err.flush()

    if root is not None:
        broad = _broad_root(Path(root))
        if broad is not None:
            say(
                f"octos-tools: warning: the workspace {where} is {broad}: every file there is "
                "open to the client's model. Pass --workspace PROJECT_DIR to serve one project."
            )
    if transport == "stdio":
        say(f"octos-tools: serving {where} over stdio ({count} tools)")
        profile_to = os.environ.get(PROFILE_ENV)
        if not profile_to:
            await server.serve_stdio(exit_on_signal=exit_on_signal)
            return
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
        try:
            await server.serve_stdio(exit_on_signal=exit_on_signal)
        finally:
            profiler.disable()
            profiler.dump_stats(profile_to)
        return

    token_file: Path | None = None
    if no_auth:
        say(
            "octos-tools: warning: --no-auth: any local user or program that can reach "
            f"{host} can call every tool with your rights"
        )
    elif token is None:
        bound = sock.getsockname()[1] if sock is not None else port
        if bound == 0:
            from .http import bind_socket

            sock = bind_socket(host, 0)
            bound = sock.getsockname()[1]
        token_file = token_file_path(root, bound)
        token = issue_token(token_file)
        say(
            f"octos-tools: bearer token in {token_file} (readable by this user only; "
            "send 'Authorization: Bearer <its first line>')"
        )

    def ready(url: str) -> None:
        auth = "" if no_auth else ", bearer token required"
        say(f"octos-tools: serving {where} over HTTP, listening on {url} ({count} tools{auth})")

    stop = anyio.Event()

    async def stop_on_signal(scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as sigs:
            await anext(sigs)
            # uvicorn shuts down gracefully (a cancel would interrupt the app's lifespan,
            # which Starlette logs as a CancelledError traceback); cancel only if it hangs.
            # The receiver stays open: uvicorn raises the signal again once it is done.
            stop.set()
            await anyio.sleep(15)
        scope.cancel()

    try:
        async with anyio.create_task_group() as tg:
            if exit_on_signal:
                tg.start_soon(stop_on_signal, tg.cancel_scope)
            await server.serve_http(
                host,
                port,
                on_ready=ready,
                sock=sock,
                token=token,
                no_auth=no_auth,
                allowed_hosts=allowed_hosts,
                allowed_origins=allowed_origins,
                limits=limits,
                stop=stop,
            )
            tg.cancel_scope.cancel()
    finally:
        if token_file is not None:
            with contextlib.suppress(OSError):
                token_file.unlink()
