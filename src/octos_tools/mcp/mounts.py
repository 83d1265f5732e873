"""Mount other MCP servers' tools into a :class:`~octos_tools.registry.ToolRegistry`
(``mcp_servers`` in the config).

Each ``mcp_servers`` entry (stdio ``command``/``args``/``env``/``cwd``, or a streamable-HTTP
``url`` with ``headers``) is started with the official ``mcp`` SDK client, its tools listed
and registered as ordinary tools:

* name ``<server>__<tool>`` (:func:`~octos_tools.mcp.names.mounted_tool_name`); **a name that
  is already registered is never overwritten**: the newcomer gets a hash suffix;
* tags ``mcp`` and ``mcp:<server>``; group ``group:mcp:<server>`` (of this registry only) so
  ``tool_policy`` can allow or deny a whole server and ``defer: true`` can defer it;
* concurrency Safe iff the remote tool says ``readOnlyHint: true``, else Exclusive;
* the input schema is kept whole (``$defs`` / ``$ref`` included) and validated by the
  registry before a call leaves the process;
* results: text in ``output``, images / audio / resources kept on ``ToolResult.content``; a
  remote ``isError`` is a failure of kind ``remote_error``
  (:func:`~octos_tools.mcp.results.call_result_to_tool_result`);
* when the server says its tool list changed, the list is read again: new tools are
  registered, changed ones replaced, vanished ones removed.

:class:`McpMounts` (an async context manager; use :func:`mount_mcp_servers`) owns every
connection and stops all servers cleanly on exit. Servers that fail to start are reported in
:attr:`McpMounts.failures` and skipped, so one broken entry does not stop the host.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types

from ..config import Config, McpServerConfig
from ..errors import ToolError
from ..tool_types import ConcurrencyClass, Tool, ToolResult
from .connection import McpConnection
from .names import mounted_tool_name
from .results import call_result_to_tool_result

if TYPE_CHECKING:
    from ..context import ToolContext
    from ..registry import ToolRegistry


def server_is_read_only(config: McpServerConfig | None) -> bool:
    """Whether the mounted server ``config`` runs where it cannot write: a stdio server under
    the read-only sandbox (``[mcp_servers.NAME] sandbox = "read-only"``, the default). An
    HTTP server, or one in another mode, is not confined: under ``--read-only`` none of its
    tools is kept, whatever its ``readOnlyHint`` says."""
    if config is None or config.url is not None:
        return False
    return getattr(config, "sandbox", None) == "read-only"


__all__ = ["McpMounts", "McpTool", "mount_mcp_servers", "server_is_read_only"]

logger = logging.getLogger("octos_tools.mcp.client")


class McpTool(Tool):
    """One tool of a mounted MCP server, as a registry tool; its results are untrusted
    content (:attr:`~octos_tools.tool_types.Tool.content_trust`).

    Args:
        name: the registry name (see :func:`mounted_tool_name`).
        remote: the remote ``Tool`` as listed.
        connection: the server's :class:`McpConnection`.
    """

    content_trust = "untrusted"

    def __init__(self, name: str, remote: types.Tool, connection: McpConnection) -> None:
        server = connection.name
        ann = remote.annotations
        read_only = bool(ann is not None and ann.read_only_hint)
        self.name = name
        self.remote = remote
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
        """Call the remote tool; see :meth:`McpConnection.call_tool` for the failures.
        For a server the git guard watches (``workspace-write``), its lines (what the
        server planted for git to run, undone) end the result and are listed in
        ``structured_metadata["sandbox_guard"]``, also when the call failed."""
        try:
            result = await self.connection.call_tool(
                self.remote_name,
                args,
                ctx=ctx,
                retry_if_closed=self.concurrency_class is ConcurrencyClass.SAFE,
            )
        except ToolError as exc:
            lines = self.connection.guard_notes()
            if not lines:
                raise
            text = "".join(f"\n{line}" for line in lines)
            raise ToolError(
                exc.kind, exc.message + text, **exc.details, sandbox_guard=lines
            ) from None
        out = call_result_to_tool_result(result, self.server, self.remote_name)
        lines = self.connection.guard_notes()
        if lines:
            out.output += "".join(f"\n{line}" for line in lines)
            out.structured_metadata = {**(out.structured_metadata or {}), "sandbox_guard": lines}
        return out

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
        read_only_paths: files sandboxed stdio servers may not change (the host's config
            file); secret_paths: files they may not read (its MCP token file).

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
        read_only_paths: tuple[str, ...] = (),
        secret_paths: tuple[str, ...] = (),
    ) -> None:
        self.registry = registry
        self.read_only_paths = read_only_paths
        self.secret_paths = secret_paths
        self.servers = dict(servers)
        self.cwd = cwd
        self.read_only = read_only
        self.connections: dict[str, McpConnection] = {}
        self.tools: dict[str, list[str]] = {}
        self.failures: dict[str, str] = {}
        self.refreshes = 0
        self._stack: AsyncExitStack | None = None
        self._refresh_locks: dict[str, anyio.Lock] = {}

    async def __aenter__(self) -> McpMounts:
        stack = AsyncExitStack()
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.push_async_callback(self._stop_all)
        self._stack = stack
        try:
            listed: dict[str, list[types.Tool]] = {}

            async def start(name: str, cfg: McpServerConfig) -> None:
                conn = McpConnection(
                    name,
                    cfg,
                    tg,
                    cwd=self.cwd,
                    on_tools_changed=lambda: self.refresh(name),
                    read_only_paths=self.read_only_paths,
                    secret_paths=self.secret_paths,
                )
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
            if not self._mountable(remote, server):
                continue
            name = mounted_tool_name(server, remote.name, self.registry)
            if name != f"{server}__{remote.name}":
                logger.warning(
                    "MCP tool %r of server %r is mounted as %r", remote.name, server, name
                )
            if self._register_tool(server, name, remote, conn):
                names.append(name)
        self.tools[server] = names
        group = f"group:mcp:{server}"
        self.registry.add_group(group, names, f"Tools of the MCP server {server!r}")
        # Hard policies remove tools (octos: a denied tool is never registered); apply them
        # to the newcomers too.
        refused = set(self.registry.enforce_hard_policies())
        if refused:
            self.tools[server] = [n for n in names if n not in refused]
        if conn.config.defer:
            self.registry.defer_group(group)
        logger.info("mounted %d tools of MCP server %r", len(self.tools[server]), server)

    async def refresh(self, server: str) -> None:
        """Read ``server``'s tool list again and bring the registry in line: new tools are
        registered, changed ones replaced (same registry name), vanished ones removed.

        Called when the server says its list changed; a failure to list is logged and the
        tools stay as they were.
        """
        conn = self.connections.get(server)
        if conn is None or server not in self.tools:
            return
        lock = self._refresh_locks.setdefault(server, anyio.Lock())
        async with lock:
            try:
                remote_tools = await conn.list_tools()
            except ToolError as exc:
                logger.warning("MCP server %r: tool list not refreshed: %s", server, exc.message)
                return
            self.refreshes += 1
            current = {
                tool.remote_name: name
                for name in self.tools[server]
                if isinstance(tool := self.registry.get(name), McpTool)
            }
            wanted = {r.name: r for r in remote_tools if self._mountable(r, server)}
            deferred = any(self.registry.is_deferred(n) for n in current.values())
            names: list[str] = []
            for remote_name, name in current.items():
                if remote_name not in wanted:
                    self.registry.unregister(name)
            for remote in wanted.values():
                name = current.get(remote.name) or mounted_tool_name(
                    server, remote.name, self.registry
                )
                old = self.registry.get(name)
                if isinstance(old, McpTool) and old.remote == remote:
                    names.append(name)
                    continue
                if not self._register_tool(server, name, remote, conn):
                    continue
                names.append(name)
                if deferred and remote.name not in current:
                    self.registry.defer([name])
            refused = set(self.registry.enforce_hard_policies())
            self.tools[server] = [n for n in names if n not in refused]
            self.registry.add_group(
                f"group:mcp:{server}", self.tools[server], f"Tools of the MCP server {server!r}"
            )
            logger.info("MCP server %r: %d tools after refresh", server, len(self.tools[server]))

    def _register_tool(
        self, server: str, name: str, remote: types.Tool, conn: McpConnection
    ) -> bool:
        """Register ``remote`` as ``name``; a tool the registry refuses (a bad schema) is
        logged and skipped, never stopping the host. Returns whether it was registered."""
        try:
            self.registry.register(McpTool(name, remote, conn), check_schema=True)
        except Exception as exc:  # noqa: BLE001 - a bad schema must not stop the host
            logger.warning("MCP tool %r of server %r skipped: %s", remote.name, server, exc)
            return False
        return True

    def _mountable(self, remote: types.Tool, server: str) -> bool:
        """Under ``--read-only``, a tool counts as writing nothing only when it says so
        (``readOnlyHint``) AND its server cannot write anyway (:func:`server_is_read_only`):
        a hint is the server's claim, not a guarantee."""
        if not self.read_only:
            return True
        ann = remote.annotations
        hinted = ann is not None and bool(ann.read_only_hint)
        return hinted and server_is_read_only(self.servers.get(server))

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
    are mounted. ``cwd`` defaults to the registry's workspace root. A sandboxed stdio
    server may not change the file ``config`` was read from, nor read its MCP token file.
    """
    root = cwd
    token = config.serve.auth_token_file
    if root is None and registry.workspace is not None:
        root = str(registry.workspace.root)
    # a server whose entry says nothing about deferral follows lifecycle.defer: mounted
    # tools are one call away (tool_search finds them), so the first request does not grow
    # with the servers mounted
    servers = {
        name: entry
        if entry.defer is not None
        else entry.model_copy(update={"defer": config.lifecycle.defer})
        for name, entry in config.mcp_servers.items()
    }
    return McpMounts(
        registry,
        servers,
        cwd=os.fspath(root) if root is not None else None,
        read_only=config.read_only,
        read_only_paths=(os.path.abspath(config.source_path),) if config.source_path else (),
        secret_paths=(os.path.abspath(os.path.expanduser(token)),) if token else (),
    )
