"""Mount other MCP servers' tools into a :class:`~octos_tools.registry.ToolRegistry`
(issue 6, ``mcp_servers`` in the config).

Each ``mcp_servers`` entry (stdio ``command``/``args``/``env``/``cwd``, or a streamable-HTTP
``url`` with ``headers``) is started with the official ``mcp`` SDK client, its tools listed
and registered as ordinary tools:

* name ``<server>__<tool>``, sanitised to ``^[a-zA-Z0-9_-]{1,64}$`` (the rule shared by
  OpenAI, Anthropic and MCP clients) by :func:`mounted_tool_name`: invalid characters
  become ``_``; a name that had to change or be cut gets ``_`` + 8 hex digits of the
  SHA-256 of the original ``<server>__<tool>``, so two tools never collapse into one.
  **A name that is already registered is never overwritten**: the newcomer gets a
  different hash suffix (and a warning is logged); the existing tool stays.
* tags ``mcp`` and ``mcp:<server>``; group ``group:mcp:<server>``
  (:meth:`~octos_tools.registry.ToolRegistry.add_group`, this registry only) so
  ``tool_policy`` can allow or deny a whole server and ``defer: true`` can defer it;
* concurrency Safe iff the remote tool says ``readOnlyHint: true``, else Exclusive;
* the input schema is kept whole (``$defs`` / ``$ref`` included) and validated by the
  registry before a call leaves the process;
* every call has a timeout (``timeout_secs``). A server that hangs gives ``timeout``, one
  that died or cannot start gives ``unavailable``, both within the timeout; the broken
  connection is stopped and a fresh process is started on the next call. A read-only
  call that finds the connection already closed is retried once on a fresh one.

:class:`McpMounts` (an async context manager; use :func:`mount_mcp_servers`) owns every
connection and stops all servers cleanly on exit: stdin closed, then the SDK's
terminate/kill escalation for a process that does not leave.

Not done: a mounted server's own ``tools/list_changed`` is not followed (the tool set is
read once at mount time); servers that fail to start are reported in
:attr:`McpMounts.failures` and skipped, so one broken entry does not stop the host.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
from collections.abc import Container, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import mcp_types as types

from ..config import Config, McpServerConfig
from ..errors import ErrorKind, ToolError
from ..tool import ConcurrencyClass, Tool, ToolResult

if TYPE_CHECKING:
    from mcp import Client

    from ..context import ToolContext
    from ..registry import ToolRegistry

__all__ = [
    "McpConnection",
    "McpMounts",
    "McpTool",
    "call_result_to_tool_result",
    "mount_mcp_servers",
    "mounted_tool_name",
]

logger = logging.getLogger("octos_tools.mcp.client")

_VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_CHAR = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LEN = 8
_MAX_NAME = 64
_STOP_GRACE_SECS = 8.0
"""How long a stopping server may take (stdin close, 2 s wait, SIGTERM, 2 s, SIGKILL)."""


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_HASH_LEN]


def mounted_tool_name(server: str, tool: str, taken: Container[str] = ()) -> str:
    """The registry name of ``tool`` of MCP server ``server``.

    ``<server>__<tool>`` when that is already valid and free; otherwise invalid characters
    become ``_``, the base is cut to leave room for ``_<8 hex>`` (SHA-256 of the original
    name; on a collision with ``taken``, of the original plus ``#<n>``).

    Args:
        server: the configured server name.
        tool: the remote tool name (any string).
        taken: names already in use (a registry, a set).

    Returns:
        A name matching ``^[a-zA-Z0-9_-]{1,64}$`` not in ``taken``.
    """
    raw = f"{server}__{tool}"
    if _VALID.match(raw) and raw not in taken:
        return raw
    base = _INVALID_CHAR.sub("_", raw)[: _MAX_NAME - _HASH_LEN - 1]
    seed = raw
    attempt = 0
    while True:
        name = f"{base}_{_short_hash(seed)}"
        if name not in taken:
            return name
        attempt += 1
        seed = f"{raw}#{attempt}"


def _content_text(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        size = len(block.data) * 3 // 4
        return f"[{kind} {block.mime_type}, about {size} bytes, not shown]"
    if isinstance(block, types.ResourceLink):
        return f"[resource {block.uri}]"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            return res.text
        if isinstance(res, types.BlobResourceContents):
            size = len(base64.b64decode(res.blob, validate=False)) if res.blob else 0
            return f"[binary resource {res.uri}, {size} bytes, not shown]"
    return f"[{getattr(block, 'type', 'unknown')} content]"


def call_result_to_tool_result(result: types.CallToolResult, server: str, tool: str) -> ToolResult:
    """Convert a remote ``CallToolResult`` into a :class:`~octos_tools.tool.ToolResult`.

    Text blocks are joined with newlines (other blocks become one-line placeholders);
    ``structuredContent`` goes to ``structured_metadata["structured_content"]`` (and is
    the output when there is no text). An ``isError`` result becomes a failure of kind
    ``process_failed`` carrying the remote text.
    """
    texts = [_content_text(block) for block in result.content]
    output = "\n".join(t for t in texts if t)
    meta: dict[str, Any] = {"mcp_server": server, "mcp_tool": tool}
    if result.structured_content is not None:
        meta["structured_content"] = result.structured_content
        if not output:
            output = json.dumps(result.structured_content, ensure_ascii=False)
    if result.is_error:
        return ToolResult.failure(
            ErrorKind.PROCESS_FAILED,
            f"MCP server {server!r} tool {tool!r} reported an error: {output or '(no text)'}",
            metadata=meta,
        )
    return ToolResult.ok(output, structured_metadata=meta)


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


class McpConnection:
    """A restartable connection to one configured MCP server.

    Args:
        name: the server name from the config.
        config: its :class:`~octos_tools.config.McpServerConfig`.
        task_group: the task group that owns the connection tasks (from
            :class:`McpMounts`).
        cwd: working directory for a stdio server without ``cwd`` (the workspace root).

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
    ) -> None:
        self.name = name
        self.config = config
        self.cwd = cwd
        self.starts = 0
        self._tg = task_group
        self._gen: _Generation | None = None
        self._lock = anyio.Lock()
        self._closed = False

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
            target = StdioServerParameters(
                command=cfg.command,
                args=list(cfg.args),
                env=dict(cfg.env) or None,
                cwd=cfg.cwd or self.cwd,
            )
        return Client(target, cache=None, client_info=_client_info())

    async def _own(self, gen: _Generation) -> None:
        """Task body owning one generation's SDK client (enter and exit in one task)."""
        with anyio.CancelScope() as scope:
            gen.scope = scope
            try:
                async with self._make_client() as client:
                    gen.client = client
                    gen.ready.set()
                    await gen.stop.wait()
            except Exception as exc:  # noqa: BLE001 - could not start, or died noisily
                gen.error = exc
                logger.debug("MCP server %r generation %d ended: %r", self.name, gen.number, exc)
            finally:
                gen.client = None
                gen.broken = True
                gen.ready.set()
                gen.done.set()

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


class McpTool(Tool):
    """One tool of a mounted MCP server, as a registry tool.

    Args:
        name: the registry name (see :func:`mounted_tool_name`).
        remote: the remote ``Tool`` as listed.
        connection: the server's :class:`McpConnection`.
    """

    def __init__(self, name: str, remote: types.Tool, connection: McpConnection) -> None:
        server = connection.name
        ann = remote.annotations
        read_only = bool(ann is not None and ann.read_only_hint)
        self.name = name
        self.remote_name = remote.name
        self.server = server
        self.connection = connection
        self.description = (
            remote.description or f"Tool {remote.name!r} of the MCP server {server!r}."
        )
        self.input_schema = dict(remote.input_schema)
        self.input_schema.setdefault("type", "object")
        title = remote.title or (ann.title if ann is not None else None) or remote.name
        self.title = f"{server}: {title}"
        self.tags = ("mcp", f"mcp:{server}")
        self.concurrency_class = ConcurrencyClass.SAFE if read_only else ConcurrencyClass.EXCLUSIVE
        cfg = connection.config
        # Backstop only: the connection's own timeout fires first with a clearer message.
        self.timeout = cfg.timeout_secs + cfg.startup_timeout_secs + 5.0

    async def execute_with_context(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        """Call the remote tool; see :meth:`McpConnection.call_tool` for the failures."""
        result = await self.connection.call_tool(
            self.remote_name,
            args,
            ctx=ctx,
            retry_if_closed=self.concurrency_class is ConcurrencyClass.SAFE,
        )
        return call_result_to_tool_result(result, self.server, self.remote_name)

    def with_workspace(self, workspace: Any) -> Tool:
        """Mounted tools are not workspace-bound: the same object is shared."""
        return self


class McpMounts:
    """Every mounted MCP server of one host; an async context manager.

    Args:
        registry: the registry to register the tools in.
        servers: name → :class:`~octos_tools.config.McpServerConfig`.
        cwd: default working directory of stdio servers (the workspace root).
        read_only: leave out every tool that is not ``readOnlyHint`` (the ``--read-only``
            preset).

    Attributes:
        connections: server name → :class:`McpConnection` (started ones).
        tools: server name → registry names mounted for it.
        failures: server name → why it could not be mounted.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        servers: Mapping[str, McpServerConfig],
        *,
        cwd: str | None = None,
        read_only: bool = False,
    ) -> None:
        self.registry = registry
        self.servers = dict(servers)
        self.cwd = cwd
        self.read_only = read_only
        self.connections: dict[str, McpConnection] = {}
        self.tools: dict[str, list[str]] = {}
        self.failures: dict[str, str] = {}
        self._stack: AsyncExitStack | None = None

    async def __aenter__(self) -> McpMounts:
        stack = AsyncExitStack()
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.push_async_callback(self._stop_all)
        self._stack = stack
        try:
            listed: dict[str, list[types.Tool]] = {}

            async def start(name: str, cfg: McpServerConfig) -> None:
                conn = McpConnection(name, cfg, tg, cwd=self.cwd)
                self.connections[name] = conn
                try:
                    listed[name] = await conn.list_tools()
                except ToolError as exc:
                    self.failures[name] = exc.message
                    logger.warning("MCP server %r not mounted: %s", name, exc.message)
                    await conn.aclose()

            async with anyio.create_task_group() as starters:
                for name, cfg in self.servers.items():
                    starters.start_soon(start, name, cfg)
            for name in self.servers:  # register in config order, whatever finished first
                if name in listed:
                    self._register(name, listed[name])
        except BaseException:
            await stack.aclose()
            raise
        return self

    def _register(self, server: str, remote_tools: list[types.Tool]) -> None:
        conn = self.connections[server]
        names: list[str] = []
        for remote in remote_tools:
            ann = remote.annotations
            if self.read_only and not (ann is not None and ann.read_only_hint):
                continue
            name = mounted_tool_name(server, remote.name, self.registry)
            if name != f"{server}__{remote.name}":
                logger.warning(
                    "MCP tool %r of server %r is mounted as %r", remote.name, server, name
                )
            tool = McpTool(name, remote, conn)
            try:
                self.registry.register(tool, check_schema=True)
            except Exception as exc:  # noqa: BLE001 - a bad schema must not stop the host
                logger.warning("MCP tool %r of server %r skipped: %s", remote.name, server, exc)
                continue
            names.append(name)
        self.tools[server] = names
        group = f"group:mcp:{server}"
        self.registry.add_group(group, names, f"Tools of the MCP server {server!r}")
        # Hard policies remove tools (reference §2.2); apply them to the newcomers too.
        refused = set(self.registry.enforce_hard_policies())
        if refused:
            self.tools[server] = [n for n in names if n not in refused]
        if conn.config.defer:
            self.registry.defer_group(group)
        logger.info("mounted %d tools of MCP server %r", len(self.tools[server]), server)

    async def _stop_all(self) -> None:
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for conn in self.connections.values():
                    tg.start_soon(conn.aclose)

    async def __aexit__(self, *exc_info: object) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()


def mount_mcp_servers(
    registry: ToolRegistry,
    config: Config,
    *,
    cwd: str | os.PathLike[str] | None = None,
) -> McpMounts:
    """Mount every ``config.mcp_servers`` entry into ``registry``.

    Use as ``async with mount_mcp_servers(registry, config) as mounts: ...``; every server
    is stopped when the block ends. With ``config.read_only`` only ``readOnlyHint`` tools
    are mounted. ``cwd`` defaults to the registry's workspace root.
    """
    root = cwd
    if root is None and registry.workspace is not None:
        root = str(registry.workspace.root)
    return McpMounts(
        registry,
        config.mcp_servers,
        cwd=os.fspath(root) if root is not None else None,
        read_only=config.read_only,
    )


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
