"""A restartable connection to one mounted MCP server (the official SDK ``Client``).

Every call has a timeout (``timeout_secs``). A server that hangs gives ``timeout``, one that
died or cannot start gives ``unavailable``, both within the timeout; the broken connection is
stopped and a fresh process is started on the next call. A read-only call that finds the
connection already closed is retried once on a fresh one.

The server's ``notifications/tools/list_changed`` (2025 handshake servers) and its
``subscriptions/listen`` tool events (2026-07-28 servers) call ``on_tools_changed``.

A stdio server in ``workspace-write`` can write the workspace: the git guard
(:mod:`octos_tools.sandbox._git_guard`) runs over it as over a command. One view per
connection, taken before its first process starts and kept across restarts, is checked
after each call (:meth:`McpConnection.guard_notes`, its lines appended to the call's
result), in the background while a process lives (:mod:`octos_tools.sandbox._guard_ticker`)
and when a process exits (those lines are logged and come with the next call).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import mcp_types as types

from ..config import McpServerConfig
from ..errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from mcp import Client

    from ..context import ToolContext
    from ..sandbox import ServerSpawn
    from ..sandbox._git_guard import GuardWatch

__all__ = ["McpConnection"]

logger = logging.getLogger("octos_tools.mcp.client")

_STOP_GRACE_SECS = 8.0
"""How long a stopping server may take (stdin close, 2 s wait, SIGTERM, 2 s, SIGKILL)."""


@dataclass(eq=False)
class _Generation:
    """One running server process / HTTP session, from start to stop."""

    number: int
    client: Client | None = None
    ready: anyio.Event = field(default_factory=anyio.Event)
    stop: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope | None = None
    error: BaseException | None = None
    broken: bool = False


def _sandboxed(
    cfg: McpServerConfig,
    cwd: str | None,
    workspace: str | None,
    read_only_paths: tuple[str, ...] = (),
    secret_paths: tuple[str, ...] = (),
) -> ServerSpawn:
    """The stdio server's command line and extra environment in its own sandbox
    (``[mcp_servers.NAME] sandbox``, default ``read-only`` with a private writable home and
    temp folder; ``network`` default on; credential stores unreadable: docs/sandbox.md),
    with the git guard's view in ``workspace-write``; ``read_only_paths`` (the host's
    config file) stay as they are, ``secret_paths`` (its MCP token file) unreadable.

    Raises:
        ToolError: ``sandbox_unavailable`` when the mode cannot be enforced here.
    """
    from ..sandbox import SandboxMode, SandboxSettings, ServerSpawn, wrap_server

    assert cfg.command is not None
    argv = [cfg.command, *cfg.args]
    mode = SandboxMode(cfg.sandbox)
    if mode is SandboxMode.DANGER_FULL_ACCESS:
        return ServerSpawn(argv, dict(cfg.env))
    from .. import trusted_programs

    program = trusted_programs.which(cfg.command) or cfg.command
    settings = SandboxSettings(
        mode=mode,
        network=cfg.network,
        private_home=True,
        read_only_paths=read_only_paths,
        secret_paths=secret_paths,
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **cfg.env}
    return wrap_server([program, *cfg.args], cwd or os.getcwd(), env, settings, workspace)


class McpConnection:
    """A restartable connection to one configured MCP server.

    Args:
        name: the server name from the config.
        config: its :class:`~octos_tools.config.McpServerConfig`.
        task_group: the task group that owns the connection tasks (from
            :class:`McpMounts`).
        cwd: working directory for a stdio server without ``cwd`` (the workspace root).
        read_only_paths: files a sandboxed stdio server may not change (the host's config
            file: guarded like a command's).
        secret_paths: files it may not read (the host's MCP token file).

    Attributes:
        starts: how many times a server was started (1 + restarts).
    """

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        task_group: anyio.abc.TaskGroup,
        *,
        cwd: str | None = None,
        on_tools_changed: Callable[[], Awaitable[None]] | None = None,
        read_only_paths: tuple[str, ...] = (),
        secret_paths: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.read_only_paths = read_only_paths
        self.secret_paths = secret_paths
        self.on_tools_changed = on_tools_changed
        self.config = config
        self.cwd = cwd
        self.starts = 0
        self._tg = task_group
        self._gen: _Generation | None = None
        self._lock = anyio.Lock()
        self._closed = False
        self._cap: Any = None
        self._guard: GuardWatch | None = None
        self._guard_pending: list[str] = []

    def _make_client(self) -> Client:
        from mcp import Client, StdioServerParameters

        cfg = self.config
        target: Any
        if cfg.url is not None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            # The SDK's defaults: 30 s to connect/write, 300 s to read (event streams).
            http = httpx2.AsyncClient(
                headers=dict(cfg.headers), timeout=httpx2.Timeout(30.0, read=300.0)
            )
            target = _HttpTransport(streamable_http_client(cfg.url, http_client=http), http)
        else:
            assert cfg.command is not None
            from .stdio_client import CappedStdioTransport, ReplyCap

            spawn = _sandboxed(
                cfg, cfg.cwd or self.cwd, self.cwd, self.read_only_paths, self.secret_paths
            )
            argv, env = spawn.argv, spawn.env
            if spawn.guard is not None:
                if self._guard is None:
                    self._guard = spawn.guard
                else:  # a restart: the view goes on, on what no process could write
                    self._guard.keep_read_only(spawn.guard)
            params = StdioServerParameters(
                command=argv[0], args=argv[1:], env=env or None, cwd=cfg.cwd or self.cwd
            )
            # our reader: linear in the reply, capped at max_reply_bytes
            self._cap = ReplyCap(cfg.max_reply_bytes)
            target = CappedStdioTransport(params, self._cap)
        return Client(
            target, cache=None, client_info=_client_info(), message_handler=self._on_message
        )

    async def _on_message(self, message: Any) -> None:
        """The SDK's message handler: a handshake-era ``tools/list_changed`` notification
        calls :attr:`on_tools_changed` (in the background: the handler must not block)."""
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed()

    def _tools_changed(self) -> None:
        callback = self.on_tools_changed
        if callback is not None and not self._closed:

            async def run() -> None:
                await callback()

            self._tg.start_soon(run)

    async def _listen(self, client: Client) -> None:
        """Follow a 2026-07-28 server's tool events on a ``subscriptions/listen`` stream
        (a handshake-era server refuses it: its notifications come by the message handler)."""
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    self._tools_changed()
        except Exception as exc:  # noqa: BLE001 - not supported, or the stream dropped
            logger.debug("MCP server %r: no listen stream (%r)", self.name, exc)

    async def _own(self, gen: _Generation) -> None:
        """Task body owning one generation's SDK client (enter and exit in one task)."""
        with anyio.CancelScope() as scope:
            gen.scope = scope
            tick: int | None = None
            try:
                made = self._make_client()
                if self._guard is not None:
                    from ..sandbox._guard_ticker import ticker

                    tick = ticker().add(self._guard)
                async with made as client, anyio.create_task_group() as tg:
                    gen.client = client
                    if self.on_tools_changed is not None:
                        tg.start_soon(self._listen, client)
                    gen.ready.set()
                    await gen.stop.wait()
                    tg.cancel_scope.cancel()
            except Exception as exc:  # noqa: BLE001 - could not start, or died noisily
                gen.error = exc
                logger.debug("MCP server %r generation %d ended: %r", self.name, gen.number, exc)
            finally:
                gen.client = None
                gen.broken = True
                self._guard_after_exit(tick)
                gen.ready.set()
                gen.done.set()

    @property
    def guarded(self) -> bool:
        """The git guard watches this server (a stdio server in ``workspace-write``)."""
        return self._guard is not None

    def _guard_after_exit(self, tick: int | None) -> None:
        """A process ended: stop its background checks and check once more; the lines
        are logged and kept for the next call's result."""
        if tick is not None:
            from ..sandbox._guard_ticker import ticker

            ticker().remove(tick)
        if self._guard is None:
            return
        lines = self._guard.check()
        for line in lines:
            logger.warning("MCP server %r exited: %s", self.name, line)
        self._guard_pending += lines

    def guard_notes(self) -> list[str]:
        """Run the git guard over what the server wrote (after a call) and return its lines,
        those found since the last call (in the background, at a restart) first; ``[]``
        for a server it does not watch. Never raises."""
        if self._guard is None:
            return []
        lines, self._guard_pending = self._guard_pending, []
        return lines + self._guard.check()

    def _retire(self, gen: _Generation) -> None:
        """Stop ``gen`` in the background (the next call starts a fresh one)."""
        gen.broken = True
        gen.stop.set()
        if not gen.ready.is_set() and gen.scope is not None:
            gen.scope.cancel()  # still starting: nothing to shut down gracefully

        async def watchdog() -> None:
            with anyio.move_on_after(_STOP_GRACE_SECS):
                await gen.done.wait()
                return
            if gen.scope is not None:
                gen.scope.cancel()

        if not gen.done.is_set():
            self._tg.start_soon(watchdog)

    async def client(self) -> Client:
        """The live SDK client, starting (or restarting) the server if needed.

        Raises:
            ToolError: ``unavailable`` if the server cannot start within
                ``startup_timeout_secs`` or the connection was closed.
        """
        if self._closed:
            raise ToolError(ErrorKind.UNAVAILABLE, f"MCP server {self.name!r} has been stopped")
        async with self._lock:
            gen = self._gen
            if gen is None or gen.broken:
                if gen is not None:
                    self._retire(gen)
                self.starts += 1
                gen = _Generation(self.starts)
                self._gen = gen
                self._tg.start_soon(self._own, gen)
        with anyio.move_on_after(self.config.startup_timeout_secs):
            await gen.ready.wait()
        if not gen.ready.is_set():
            self._retire(gen)
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                f"MCP server {self.name!r} did not start within "
                f"{self.config.startup_timeout_secs:g} s",
            )
        client = gen.client
        if client is None:
            reason = _describe(gen.error) if gen.error is not None else "it exited"
            raise ToolError(
                ErrorKind.UNAVAILABLE, f"MCP server {self.name!r} is not available: {reason}"
            )
        return client

    def _mark_broken(self, client: Client) -> None:
        gen = self._gen
        if gen is not None and gen.client is client:
            self._retire(gen)

    async def list_tools(self) -> list[types.Tool]:
        """Every tool of the server (all pages), starting it if needed.

        Raises:
            ToolError: ``unavailable`` or ``timeout``.
        """
        client = await self.client()
        tools: list[types.Tool] = []
        cursor: str | None = None
        try:
            with anyio.fail_after(self.config.startup_timeout_secs):
                for _ in range(1000):
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
        except TimeoutError:
            self._mark_broken(client)
            raise ToolError(
                ErrorKind.TIMEOUT, f"MCP server {self.name!r} did not list its tools in time"
            ) from None
        except Exception as exc:  # noqa: BLE001 - any transport failure means unavailable
            self._mark_broken(client)
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                f"MCP server {self.name!r} failed to list tools: {_describe(exc)}",
            ) from None
        return tools

    async def call_tool(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        ctx: ToolContext | None = None,
        retry_if_closed: bool = False,
    ) -> types.CallToolResult:
        """Call ``tool`` with ``arguments`` under ``timeout_secs``.

        Args:
            tool: the remote tool name.
            arguments: validated arguments.
            ctx: the call's context; its progress reporter receives the remote progress.
            retry_if_closed: retry once on a fresh connection when the current one turns
                out to be closed (only safe for read-only tools).

        Raises:
            ToolError: ``timeout`` (the server did not answer in time; it is restarted on
                the next call) or ``unavailable`` (it died, or could not start).
        """
        timeout = self.config.timeout_secs
        attempts = 2 if retry_if_closed else 1
        for attempt in range(attempts):
            client = await self.client()
            progress = _forward_progress(ctx)
            try:
                with anyio.fail_after(timeout):
                    return await client.call_tool(
                        tool,
                        dict(arguments),
                        read_timeout_seconds=timeout,
                        progress_callback=progress,
                    )
            except TimeoutError:
                self._mark_broken(client)
                raise ToolError(
                    ErrorKind.TIMEOUT,
                    f"MCP server {self.name!r} did not answer {tool!r} within {timeout:g} s; "
                    "the server will be restarted on the next call",
                ) from None
            except Exception as exc:  # noqa: BLE001 - sorted below by MCP error code
                code = getattr(exc, "code", None)
                if code == types.REQUEST_TIMEOUT:
                    self._mark_broken(client)
                    raise ToolError(
                        ErrorKind.TIMEOUT,
                        f"MCP server {self.name!r} did not answer {tool!r} within {timeout:g} s",
                    ) from None
                if code is not None and code != types.CONNECTION_CLOSED:
                    # A protocol-level refusal (unknown tool, invalid params): the server
                    # itself is fine.
                    raise ToolError(
                        ErrorKind.PROCESS_FAILED,
                        f"MCP server {self.name!r} refused {tool!r}: {_describe(exc)}",
                    ) from None
                self._mark_broken(client)
                if self._cap is not None and self._cap.overflowed:
                    raise ToolError(
                        ErrorKind.REPLY_TOO_LARGE,
                        f"MCP server {self.name!r} sent a message of more than "
                        f"{self._cap.limit:,} bytes (mcp_servers.{self.name}.max_reply_bytes) "
                        f"answering {tool!r}; the connection was reset and the server will be "
                        "restarted on the next call",
                    ) from None
                if attempt + 1 < attempts:
                    logger.info("MCP server %r connection closed; retrying once", self.name)
                    continue
                raise ToolError(
                    ErrorKind.UNAVAILABLE,
                    f"MCP server {self.name!r} is not available ({_describe(exc)}); "
                    "it will be restarted on the next call",
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        """Stop the server and wait (bounded) for it to exit."""
        self._closed = True
        gen = self._gen
        self._gen = None
        if gen is None:
            return
        gen.stop.set()
        if not gen.ready.is_set() and gen.scope is not None:
            gen.scope.cancel()
        with anyio.move_on_after(_STOP_GRACE_SECS):
            await gen.done.wait()
        if not gen.done.is_set() and gen.scope is not None:
            gen.scope.cancel()
            with anyio.move_on_after(2.0):
                await gen.done.wait()


class _HttpTransport:
    """Wrap the SDK's streamable-HTTP transport so our ``httpx2`` client closes with it."""

    def __init__(self, transport: Any, http: Any) -> None:
        self._transport = transport
        self._http = http
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> Any:
        await self._stack.enter_async_context(self._http)
        return await self._stack.enter_async_context(self._transport)

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._stack.__aexit__(*exc_info)


def _forward_progress(ctx: ToolContext | None) -> Any:
    if ctx is None or ctx.progress is None:
        return None

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        await ctx.report_progress(progress, total, message)

    return forward


def _client_info() -> types.Implementation:
    from .. import __version__

    return types.Implementation(name="octos-tools", version=__version__)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        inner = exc.exceptions[0] if exc.exceptions else exc
        return _describe(inner)
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text
