"""Host sessions: :class:`ToolSession`, the one way a host runs tool calls.

A session is the only per-session object: it owns its activation / deferral / LRU state
(a :class:`~octos_tools.view.ToolView`) over one shared
:class:`~octos_tools.registry.ToolRegistry` store of tools and policies: one session per
agent loop, per ``octos-tools call``, per MCP connection (each stdio connection, each HTTP
session), and the registry's default session behind its conveniences. What one session
activates, evicts or hides never changes another's tools.

Placement of the LRU housekeeping (octos ``ToolLifecycle``): *before* each model request,
not after tool calls: ``tick``, then evict, then the specs, so evictions shape the next
request's tool declarations::

    session = ToolSession(registry)
    while True:
        specs = session.before_model_request()      # tick → evict → specs
        if session.changed:
            ...                                       # e.g. MCP tools/list_changed
        calls = await model(specs)
        results = await session.after_tool_calls(calls)

:meth:`ToolSession.specs` is a pure read (an MCP ``tools/list``): nothing ticks, nothing is
evicted. Concurrency: Safe calls of a session run together; an Exclusive call runs alone
(no other call of the session overlaps it, whether the calls come in one batch or as
concurrent :meth:`ToolSession.call` s).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._listeners import Listeners
from .context import ToolContext
from .execution import ToolCall, execute_batch
from .hooks import HooksOwner
from .lifecycle import ToolLifecycle
from .pipeline import run_call
from .policy import PolicyDecision
from .tool_types import Tool, ToolResult, ToolSpec
from .view import ToolView

if TYPE_CHECKING:
    from .hooks import HookSet
    from .registry import CatalogEntry, ToolRegistry
    from .tasks import TaskSupervisor

__all__ = ["SPEC_WARNING_THRESHOLD", "ToolSession"]

logger = logging.getLogger("octos_tools.session")

SPEC_WARNING_THRESHOLD = 25
"""More visible specs than this on the first request logs a warning (octos does the same:
a model offered that many tools chooses worse)."""


class ToolSession(HooksOwner):
    """One host session over a shared :class:`~octos_tools.registry.ToolRegistry`.

    Args:
        registry: the shared registry (tools, policies, groups, configured defaults).
        ctx: the base context of every call (workspace, session key, approval
            callbacks, ...); each call gets a copy with its own ``tool_call_id``, with
            ``registry`` and ``session`` set. When ``None`` a context with the registry's
            workspace and session key is used.
        evict: let :meth:`before_model_request` evict idle tools (``False`` for hosts
            without a signal of model turns, e.g. ``serve``: the list then only grows by
            activations).
        owns_registry: :meth:`aclose` closes the registry too (its tools, processes and
            background tasks). Leave it ``False`` when several sessions share the
            registry: the host closes it once, after the last session.
        lifecycle: this session's LRU state; default a copy of the registry's settings
            and base tools with fresh counters.
        session_id: a stable id of this session for hooks (``session_id``) and the audit
            log (``session``): the MCP session id under ``serve`` over HTTP; default the
            context's ``session_key``, else 32 random hex digits.

    Attributes:
        registry: the shared registry.
        view: this session's :class:`~octos_tools.view.ToolView`.
        ctx: the base context.
        evict: whether :meth:`before_model_request` evicts.
        requests: how many times :meth:`before_model_request` ran.
        changed: whether the specs returned by the last :meth:`before_model_request`
            differ (names, order or descriptions) from the ones it returned before; ``True``
            after the first request. Changes caused by tool calls in between (auto
            activation, ``activate_tools``) are included, since the comparison is with the
            previously *returned* list.
        evicted: the names the last :meth:`before_model_request` evicted (``[]`` if none).
        list_persists: whether what a call activates reaches the client's next tool list
            (``False`` for the throwaway session of a 2026-07-28 stateless MCP request:
            ``tool_search select:`` then says to call the tool by name instead of claiming
            a load).
    """

    list_persists: bool = True

    def __init__(
        self,
        registry: ToolRegistry,
        ctx: ToolContext | None = None,
        *,
        evict: bool = True,
        owns_registry: bool = False,
        lifecycle: ToolLifecycle | None = None,
        session_id: str | None = None,
    ) -> None:
        self.registry = registry
        self.view = ToolView(
            registry,
            lifecycle if lifecycle is not None else registry.lifecycle.copy_settings(),
            owner=self,
        )
        self.view.on_change = self._fire
        registry.attach_view(self.view)
        self.ctx = registry.context_for(ctx, self)
        self._session_id = session_id
        self._random_id = uuid.uuid4().hex
        self.evict = evict
        self.owns_registry = owns_registry
        self.requests = 0
        self.changed = False
        self.evicted: list[str] = []
        self._listeners: Listeners[ToolSession] = Listeners(logger, "session listener")
        self._last_specs: list[ToolSpec] | None = None
        self._last_view: tuple[tuple[str, str], ...] | None = None
        self._closed = False

    @property
    def session_id(self) -> str:
        """The stable id of this session: the ``session_id`` it was made with (the MCP
        session id under ``serve`` over HTTP), else its context's ``session_key``, else 32
        random hex digits drawn when the session was made."""
        return self._session_id or self.ctx.session_key or self._random_id

    # ------------------------------------------------------------------ model turns

    def before_model_request(self) -> list[ToolSpec]:
        """Housekeeping before one model request: tick → evict (unless ``evict`` is off)
        → :meth:`specs` (the octos ``ToolLifecycle`` order).

        Sets :attr:`changed` and :attr:`evicted`.

        Returns:
            The specs to declare in the request (cached; read-only).
        """
        view = self.view
        view.tick()
        self.evicted = view.auto_evict() if self.evict else []
        if self.evicted:
            logger.debug("evicted idle tools before request: %s", self.evicted)
        specs = view.specs()
        self.requests += 1
        self.changed = self._update_view(specs)
        if self.requests == 1 and len(specs) > SPEC_WARNING_THRESHOLD:
            logger.warning(
                "%d tool specs exposed on the first request (more than %d); consider "
                "deferring groups or a tool policy",
                len(specs),
                SPEC_WARNING_THRESHOLD,
            )
        return specs

    def specs(self) -> list[ToolSpec]:
        """The specs of this session's visible tools, in registration order.

        A pure read (an MCP ``tools/list``): nothing ticks, nothing is evicted; the same
        list object is returned while nothing changes. Treat it as read-only.
        """
        return self.view.specs()

    def current_specs(self) -> list[ToolSpec]:
        """Same as :meth:`specs` (kept for hosts written before it)."""
        return self.view.specs()

    def specs_changed(self) -> bool:
        """Whether :meth:`specs` differs from the list last returned by
        :meth:`before_model_request` (no side effect)."""
        specs = self.view.specs()
        if specs is self._last_specs:
            return False
        return _view(specs) != self._last_view

    def _update_view(self, specs: list[ToolSpec]) -> bool:
        if specs is self._last_specs:
            return False
        view = _view(specs)
        changed = view != self._last_view
        self._last_specs = specs
        self._last_view = view
        return changed

    # ------------------------------------------------------------------ calls

    def call(
        self,
        name: str,
        arguments: str | bytes | Mapping[str, Any] | None = None,
        *,
        tool_call_id: str = "",
        ctx: ToolContext | None = None,
    ) -> Coroutine[Any, Any, ToolResult]:
        """Run one tool call (an MCP ``tools/call``, one call of a batch) through the
        pipeline of :mod:`octos_tools.pipeline`, in this session.

        Args:
            name: the tool name the model asked for.
            arguments: the raw argument string exactly as sent, parsed arguments, or
                ``None``.
            tool_call_id: the model's id of the call.
            ctx: a context for this call instead of the session's (``registry`` and
                ``session`` are set on a copy).

        Returns:
            A coroutine (``await session.call(...)``) whose value is the result. Never
            raises for a bad call: failures are failed results. (A plain method returning
            the pipeline's coroutine: one coroutine frame less per call.)
        """
        base = self.ctx if ctx is None else self.registry.context_for(ctx, self)
        if tool_call_id != base.tool_call_id:
            base = base.for_call(tool_call_id)
        return run_call(self.view, name, arguments, base)

    async def after_tool_calls(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """Run one model turn's tool calls with
        :func:`~octos_tools.execution.execute_batch` (Safe calls concurrently, a batch with
        an Exclusive call serially, cancelling after a failure).

        Returns:
            One result per call, in call order.
        """
        return await execute_batch(self, calls)

    # ------------------------------------------------------------------ this session's state

    @property
    def lifecycle(self) -> ToolLifecycle:
        """This session's LRU state."""
        return self.view.lifecycle

    def activate(self, names: str | Iterable[str]) -> list[str]:
        """Un-defer groups (``"group:web"``) or single names in this session only.

        Returns:
            The names activated, in order (``[]`` when none was deferred).
        """
        items = [names] if isinstance(names, str) else list(names)
        activated: list[str] = []
        for item in items:
            activated.extend(n for n in self.view.activate(item) if n not in activated)
        return activated

    def deferred_names(self) -> list[str]:
        """This session's deferred tool names, sorted."""
        return self.view.deferred_names()

    def is_deferred(self, name: str) -> bool:
        """Whether ``name`` is deferred in this session."""
        return self.view.is_deferred(name)

    def hide(self, names: Iterable[str]) -> None:
        """Leave ``names`` out of this session's specs (e.g. ``request_user_input`` for a
        client without elicitation). They stay callable by name."""
        self.view.hide(names)

    def is_visible(self, name: str) -> bool:
        """Whether ``name`` is in this session's :meth:`specs`."""
        return self.view.is_visible(name)

    def is_visible_post_activation(self, name: str) -> bool:
        """Whether ``name`` would be in :meth:`specs` once activated."""
        return self.view.is_visible_post_activation(name)

    def visible_names(self) -> list[str]:
        """Names in :meth:`specs`, in registration order."""
        return self.view.visible_names()

    def catalog(self) -> list[CatalogEntry]:
        """This session's live catalog (states as this session sees them)."""
        return self.view.catalog()

    def tick(self) -> int:
        """Advance this session's LRU iteration."""
        return self.view.tick()

    def auto_evict(self) -> list[str]:
        """Evict this session's idlest tools over ``max_active``; returns their names."""
        return self.view.auto_evict()

    # ------------------------------------------------------------------ shared registry reads

    def evaluate(self, name: str) -> PolicyDecision:
        """The registry's policy verdict for ``name`` (policies are shared)."""
        return self.registry.evaluate(name)

    def get(self, name: str) -> Tool | None:
        """The registered tool called ``name``, or ``None``."""
        return self.registry.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.registry

    @property
    def groups(self) -> Mapping[str, tuple[str, ...]]:
        """The registry's group table."""
        return self.registry.groups

    def group_of(self, name: str) -> str | None:
        """The first group of the registry's table containing ``name``."""
        return self.registry.group_of(name)

    @property
    def supervisor(self) -> TaskSupervisor:
        """The registry's background task supervisor."""
        return self.registry.supervisor

    # ------------------------------------------------------------------ hooks

    @property
    def hooks(self) -> HookSet:
        """This session's own hooks (a :class:`~octos_tools.hooks.HookSet`), run after the
        registry's (:attr:`ToolRegistry.hooks <octos_tools.registry.ToolRegistry.hooks>`)
        around this session's calls only."""
        return self.view.hooks

    # ------------------------------------------------------------------ listeners

    def add_listener(self, callback: Callable[[ToolSession], None]) -> None:
        """Call ``callback(session)`` after every change that may change this session's
        :meth:`specs`: a mutation of the shared registry or a change of this session's own
        state (activation, eviction, hiding). Other sessions' changes do not call it.
        Hosts use it for MCP ``notifications/tools/list_changed``."""
        self._listeners.add(callback)

    def remove_listener(self, callback: Callable[[ToolSession], None]) -> None:
        """Undo :meth:`add_listener` (no error if absent)."""
        self._listeners.remove(callback)

    def _fire(self) -> None:
        self._listeners.fire(self)

    # ------------------------------------------------------------------ teardown

    async def aclose(self) -> None:
        """End the session: release what it started, stop its listeners and detach its view
        from the registry.

        Every tool of the registry gets :meth:`Tool.session_closed
        <octos_tools.tool_types.Tool.session_closed>` with this session (command sessions and
        browsers the session's calls started are closed there). The shared registry's
        tools themselves (and their processes, connections, background tasks of other
        sessions) are closed only when the session owns the registry
        (``owns_registry=True``): other sessions may still be using them. Idempotent.
        """
        if self._closed:
            return
        self._closed = True
        self._listeners.clear()
        self.registry.detach_view(self.view)
        seen: set[int] = set()
        for tool in self.registry.tools():
            if id(tool) in seen:
                continue
            seen.add(id(tool))
            try:
                await tool.session_closed(self)
            except Exception:
                logger.exception("tool %r failed to release a closed session", tool.name)
        if self.owns_registry:
            await self.registry.aclose()

    async def __aenter__(self) -> ToolSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _view(specs: Sequence[ToolSpec]) -> tuple[tuple[str, str], ...]:
    return tuple((s.name, s.description) for s in specs)
