"""One :class:`~octos_tools.session.ToolSession` per MCP session.

What an MCP session is depends on the transport (MCP specification, *Base protocol →
Lifecycle* and *Transports*):

* **stdio**: the whole connection (one client per server process), whatever the protocol
  era;
* **streamable HTTP, 2025 handshake**: one ``Mcp-Session-Id`` (one SDK ``Connection``); its
  session ends when the client deletes it or goes idle;
* **2026-07-28 stateless requests**: no session at all, so each request gets a fresh view of
  the configured defaults; activations it causes do not outlive it (nor does the
  concurrency rule reach across such requests).

Every :class:`McpSession` is a view over the one shared registry: its own activations,
deferrals and hidden tools. ``tools/list`` is a pure read of that view; eviction (the LRU)
runs only when the config asks for it (``serve.evict``), after a call, never on a list.
When a session's listed names change, :meth:`McpSessions.refresh` tells that client
(``notifications/tools/list_changed``) and no other.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import mcp_types as types

from ..session import ToolSession
from ..tool_types import ToolResult, ToolSpec

if TYPE_CHECKING:
    from ..context import ToolContext
    from ..registry import ToolRegistry

__all__ = [
    "AGENT_TOOLS",
    "McpSession",
    "McpSessions",
    "output_schema_of",
    "spec_to_mcp",
    "unusable_tools",
]

logger = logging.getLogger("octos_tools.mcp.sessions")

AGENT_TOOLS = ("spawn_agent", "send_input", "resume_agent", "wait_agent", "close_agent", "delegate")
"""Tools that need a host able to run a sub-agent (a spawn delegate)."""


def spec_to_mcp(spec: ToolSpec, output_schema: dict[str, Any] | None = None) -> types.Tool:
    """The MCP ``Tool`` for a :class:`~octos_tools.tool_types.ToolSpec` (name, title, description,
    ``inputSchema`` kept whole, annotations ``title``/``readOnlyHint``/``destructiveHint``),
    with ``outputSchema`` when the tool declares one."""
    data = spec.to_mcp()
    if output_schema is not None:
        data["outputSchema"] = output_schema
    return types.Tool.model_validate(data, by_name=False)


def output_schema_of(tool: Any) -> dict[str, Any] | None:
    """The ``output_schema`` a tool declares (a JSON Schema object), or ``None``.

    A tool that declares one promises a structured result: its ``structured_metadata`` is
    then sent whole as MCP ``structuredContent`` (MCP specification, *Tools → Output
    schema*). None of the built-ins declares one.
    """
    schema = getattr(tool, "output_schema", None)
    return dict(schema) if isinstance(schema, dict) and schema.get("type") == "object" else None


def unusable_tools(registry: ToolRegistry, ctx: ToolContext) -> list[str]:
    """Registered tools that cannot work for any MCP client of ``registry``.

    The ``*_agent`` tools (and ``delegate``) when no spawn delegate is bound (nothing can
    run a sub-agent); ``read_task_output`` when, besides, no tool is spawn-only (nothing can
    produce a task handle to read).
    """
    spawner = registry.get("spawn_agent")
    hub = getattr(spawner, "hub", None)
    has_delegate = getattr(hub, "delegate", None) is not None or (
        ctx.extras.get("spawn_delegate") is not None
    )
    hidden: list[str] = []
    if not has_delegate:
        hidden.extend(n for n in AGENT_TOOLS if n in registry)
        if not registry.spawn_only_names() and "read_task_output" in registry:
            hidden.append("read_task_output")
    return hidden


@dataclass(eq=False)
class McpSession:
    """One MCP session's view of the registry.

    Attributes:
        tools: its :class:`~octos_tools.session.ToolSession` (activations, deferrals and
            hidden tools of this session only; calls ordered by its concurrency rule).
        push: sends ``notifications/tools/list_changed`` to this client, or ``None`` when
            it cannot be told (a stateless request).
        elicitation: the client declared form-mode elicitation and can be asked
            (``request_user_input`` is listed and wired to it).
        listed: the names last returned by ``tools/list`` (or announced), ``None`` before
            the first list.
    """

    tools: ToolSession
    push: Callable[[], Awaitable[None]] | None = None
    elicitation: bool = False
    listed: tuple[str, ...] | None = None
    _mcp_tools: list[types.Tool] = field(default_factory=list)
    _specs_seen: list[ToolSpec] | None = None

    def specs(self) -> list[ToolSpec]:
        """The specs this client sees now (a pure read)."""
        return self.tools.specs()

    def list_tools(self) -> list[types.Tool]:
        """``tools/list``: the MCP tools of :meth:`specs` (converted once per change of the
        specs); remembers their names as :attr:`listed`."""
        specs = self.tools.specs()
        if specs is not self._specs_seen:
            registry = self.tools.registry
            self._mcp_tools = [
                spec_to_mcp(s, output_schema_of(registry.get(s.name))) for s in specs
            ]
            self._specs_seen = specs
        self.listed = tuple(t.name for t in self._mcp_tools)
        return list(self._mcp_tools)


class McpSessions:
    """The MCP sessions of one server, over one registry.

    Args:
        registry: the shared registry.
        base_ctx: the context every session's calls start from (each session gets its own
            ``state`` dict: ``update_plan``'s plan is per session).
        evict: let the LRU evict idle tools after each call. Off by default: an MCP server
            sees no model turns.
        hide: names hidden from every session (see :func:`unusable_tools`);
            ``request_user_input`` is hidden per session unless the client can be asked,
            and listed (activated if deferred) when it can.

    Attributes:
        live: the sessions being followed for ``list_changed``.
        announcements: how many ``tools/list_changed`` notifications were sent.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        base_ctx: ToolContext,
        *,
        evict: bool = False,
        hide: Iterable[str] = (),
    ) -> None:
        self.registry = registry
        self.base_ctx = base_ctx
        self.evict = evict
        self.always_hidden = frozenset(hide)
        self.live: set[McpSession] = set()
        self.announcements = 0
        self._dirty: set[McpSession] = set()
        self._wake = anyio.Event()

    def open(
        self,
        *,
        push: Callable[[], Awaitable[None]] | None = None,
        elicitation: bool = False,
        keep: bool = True,
        session_id: str | None = None,
    ) -> McpSession:
        """A new session view.

        Args:
            push: how to tell this client its list changed, or ``None``.
            elicitation: the client can be asked questions (form-mode elicitation).
            keep: follow it for ``list_changed`` until :meth:`close` (``False`` for a
                stateless request's throwaway view, closed after the request).
            session_id: the MCP session id (``Mcp-Session-Id``), or ``None`` (stdio, a
                stateless request): the :class:`~octos_tools.session.ToolSession` makes
                one. Hooks and the audit log name the session by it.
        """
        ctx = replace(self.base_ctx, state={})
        tools = ToolSession(self.registry, ctx, evict=self.evict, session_id=session_id)
        tools.list_persists = keep
        hidden = set(self.always_hidden)
        if not elicitation:
            hidden.add("request_user_input")
        elif tools.is_deferred("request_user_input"):
            tools.activate("request_user_input")  # it works for this client: list it
        tools.hide(hidden)
        session = McpSession(tools, push=push, elicitation=elicitation)
        if keep:
            self.live.add(session)
            tools.add_listener(lambda _s: self._changed(session))
        return session

    def _changed(self, session: McpSession) -> None:
        self._dirty.add(session)
        self._wake.set()

    async def close(self, session: McpSession) -> None:
        """End ``session`` (its client left): stop following it, detach its view."""
        self.live.discard(session)
        self._dirty.discard(session)
        await session.tools.aclose()

    async def call(
        self, session: McpSession, name: str, arguments: Any, ctx: ToolContext
    ) -> ToolResult:
        """Run one ``tools/call`` in ``session`` with the per-request context ``ctx``; then
        (with ``evict``) the LRU housekeeping, and this session's ``list_changed`` check."""
        result = await session.tools.call(name, arguments, tool_call_id=ctx.tool_call_id, ctx=ctx)
        if self.evict:
            session.tools.before_model_request()
        await self.refresh(session)
        return result

    async def refresh(self, session: McpSession) -> None:
        """Tell ``session``'s client its list changed, if its visible names differ from the
        ones it last listed (nothing before its first list, nothing when it cannot be
        told)."""
        self._dirty.discard(session)
        if session.push is None or session.listed is None:
            return
        names = tuple(s.name for s in session.specs())
        if names == session.listed:
            return
        session.listed = names
        self.announcements += 1
        try:
            await session.push()
        except Exception:
            logger.debug("tools/list_changed could not be sent", exc_info=True)

    async def follow(self) -> None:
        """Run for the life of a transport: refresh each session whose view changed (a
        mutation of the shared registry, such as a mounted server's new tools, or the
        session's own activations)."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            await anyio.lowlevel.checkpoint()  # coalesce a burst of changes into one
            for session in list(self._dirty):
                if session in self.live:
                    await self.refresh(session)
            self._dirty.clear()
