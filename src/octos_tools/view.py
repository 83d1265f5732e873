"""One session's state over the shared :class:`~octos_tools.registry.ToolRegistry` store.

A :class:`ToolView` holds what one host session changes by itself: which configured-deferred
tools it activated, which tools its LRU evicted, which it hides, its
:class:`~octos_tools.lifecycle.ToolLifecycle` counters, its spec cache, its call plans and
the lock that orders its calls. Tools, policies, groups and the *configured* deferred set
stay in the registry and are shared by every view; the view reads them through the
registry's public methods only. Each :class:`~octos_tools.session.ToolSession` has its own
view (the registry's conveniences use its default session's), so one MCP client's
activations never change another client's tool list (MCP spec 2025-06-18, "Tools":
``tools/list`` is a read).

Deferred in a view = (configured deferred and not activated here) or evicted here.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .concurrency import ReadWriteLock
from .hooks import HookSet
from .lifecycle import ToolLifecycle
from .registry import CatalogEntry, ToolRegistry
from .tool_types import ToolSpec

if TYPE_CHECKING:
    from ._call_plan import CallPlan
    from .stages import CallStages

__all__ = ["ToolView"]

logger = logging.getLogger("octos_tools.view")

_SHARED_SPECS: weakref.WeakKeyDictionary[ToolRegistry, tuple[int, list[ToolSpec]]] = (
    weakref.WeakKeyDictionary()
)
"""registry -> (its revision, the spec list of a view with no state of its own): a fresh
session (a stateless HTTP request's) sees the configured defaults, so such views share
one list."""


class ToolView:
    """One session's activation / deferral / LRU state over a shared registry.

    Args:
        registry: the shared registry.
        lifecycle: this view's LRU state (settings and counters).
        owner: what :meth:`~octos_tools.tool_types.Tool.spec_for` receives when specs are built
            (the :class:`~octos_tools.session.ToolSession`); its ``ctx`` is the base
            context :meth:`unavailable_reason` asks a tool with.

    Attributes:
        registry: the shared registry.
        lifecycle: this view's :class:`~octos_tools.lifecycle.ToolLifecycle`.
        lock: the :class:`~octos_tools.concurrency.ReadWriteLock` ordering this view's
            calls (the Safe / Exclusive rule of :mod:`octos_tools.concurrency`).
        on_change: called (no arguments) after each change of this view's own state and
            after each mutation of the registry; the owner uses it to tell its listeners.
        plans: the pipeline's :class:`~octos_tools._call_plan.CallPlan` per tool name
            (``None``: the general way), emptied at every change.
        hooks: the :class:`~octos_tools.hooks.HookSet` of this view's session only (the
            registry's hooks apply too, first).
        stages: what :mod:`octos_tools.stages` runs around this view's calls, or ``None``.
    """

    __slots__ = (
        "__weakref__",
        "_activated",
        "_catalog",
        "_evicted",
        "_hidden",
        "_specs",
        "_specs_key",
        "_version",
        "hooks",
        "lifecycle",
        "lock",
        "on_change",
        "owner",
        "plans",
        "registry",
        "stages",
    )

    def __init__(self, registry: ToolRegistry, lifecycle: ToolLifecycle, *, owner: Any) -> None:
        self.registry = registry
        self.lifecycle = lifecycle
        self.owner = owner
        self.lock = ReadWriteLock()
        self.on_change: Callable[[], None] | None = None
        self._activated: set[str] = set()
        self._evicted: set[str] = set()
        self._hidden: frozenset[str] = frozenset()
        self._version = 0
        self._specs: list[ToolSpec] | None = None
        self._specs_key = (-1, -1)
        self._catalog: tuple[tuple[int, int], list[CatalogEntry]] | None = None
        self.plans: dict[str, CallPlan | None] = {}
        self.hooks = HookSet(self.refresh_stages)
        self.stages: CallStages | None = None

    # ------------------------------------------------------------------ stages

    def refresh_stages(self) -> None:
        """Recompute :attr:`stages` from the registry's hooks, tracing and audit log and
        this view's own :attr:`hooks` (``None`` when there is none of them: the pipeline's
        usual path)."""
        registry = self.registry
        hooks = registry.hooks.as_tuple() + self.hooks.as_tuple()
        if not hooks and registry.tracing is None and registry.audit is None:
            self.stages = None
            return
        from .stages import build_stages

        self.stages = build_stages(hooks, registry.tracing, registry.audit)

    # ------------------------------------------------------------------ change tracking

    @property
    def version(self) -> int:
        """A number that changes on every change of this view's own state."""
        return self._version

    def registry_changed(self) -> None:
        """The registry mutated (called by it for every attached view): plans and caches
        are dropped, :attr:`on_change` is called."""
        self._changed()

    def _changed(self) -> None:
        self._version += 1
        self.plans.clear()
        callback = self.on_change
        if callback is not None:
            try:
                callback()
            except Exception:
                logger.exception("view listener failed")

    def forget_activation(self, names: Iterable[str]) -> None:
        """Drop this view's activation of ``names`` (the registry deferred them again)."""
        self._activated.difference_update(names)

    def forget_eviction(self, names: Iterable[str]) -> None:
        """Drop this view's eviction of ``names`` (they became spawn-only: never evicted)."""
        self._evicted.difference_update(names)

    # ------------------------------------------------------------------ deferral

    def is_deferred(self, name: str) -> bool:
        """Whether ``name`` is deferred in this view (one call or activation away)."""
        if name in self._evicted:
            return True
        return name not in self._activated and self.registry.is_configured_deferred(name)

    def deferred_names(self) -> list[str]:
        """Deferred registered names, sorted."""
        return sorted(n for n in self.registry.names() if self.is_deferred(n))

    def activate(self, group_or_name: str) -> list[str]:
        """Un-defer a whole group (of the registry's group table) or a single name, here.

        Activated names count as used now, so the LRU does not evict them again at the very
        next request (each gets ``idle_threshold`` requests of grace, group siblings too).

        Returns:
            The names activated (``[]`` when none was deferred).
        """
        registry = self.registry
        members = registry.groups.get(group_or_name, (group_or_name,))
        activated = [n for n in members if n in registry and self.is_deferred(n)]
        if activated:
            for name in activated:
                self.lifecycle.record_use(name)
                self._evicted.discard(name)
                if registry.is_configured_deferred(name):
                    self._activated.add(name)
            self._changed()
        return activated

    def auto_activate(self, name: str) -> None:
        """Activate the first group of a deferred ``name`` a call named (or the name alone
        when it is in no group): deferral saves tokens, it is not a permission."""
        group = self.registry.group_of(name)
        activated = self.activate(group) if group is not None else []
        if name not in activated:
            self.activate(name)

    def hide(self, names: Iterable[str]) -> None:
        """Leave ``names`` out of this view's specs (e.g. a tool the connected client cannot
        serve). Hidden tools stay callable by name and do not count towards the LRU."""
        hidden = self._hidden | frozenset(names)
        if hidden != self._hidden:
            self._hidden = hidden
            self._changed()

    @property
    def hidden_names(self) -> frozenset[str]:
        """The names :meth:`hide` left out."""
        return self._hidden

    # ------------------------------------------------------------------ LRU

    def active_names(self) -> list[str]:
        """Registered − deferred − spawn-only − hidden, in registration order (the LRU's
        view)."""
        registry = self.registry
        return [
            n
            for n in registry.names()
            if not registry.is_spawn_only(n) and n not in self._hidden and not self.is_deferred(n)
        ]

    def tick(self) -> int:
        """Advance the LRU iteration (once before every model request)."""
        return self.lifecycle.tick()

    def auto_evict(self) -> list[str]:
        """Defer, in this view, the idlest tools over ``max_active`` (octos
        ``ToolLifecycle``: base and spawn-only tools are never evicted).

        Returns:
            The names evicted.
        """
        evicted = self.lifecycle.find_evictable(self.active_names())
        if evicted:
            self._evicted.update(evicted)
            self._changed()
            logger.debug("evicted idle tools: %s", evicted)
        return evicted

    # ------------------------------------------------------------------ visibility

    def is_visible_post_activation(self, name: str) -> bool:
        """Would be in :meth:`specs` if it were not deferred."""
        registry = self.registry
        tool = registry.get(name)
        return (
            tool is not None
            and name not in self._hidden
            and registry.passes_filter(tool)
            and registry.evaluate(name).allowed
        )

    def is_visible(self, name: str) -> bool:
        """Registered, not deferred, not hidden, allowed by policy, shown by the context
        filter, and able to work here (no
        :meth:`~octos_tools.registry.ToolRegistry.unavailable_reason`: a tool that can
        only fail is not listed; it stays callable by name)."""
        return (
            not self.is_deferred(name)
            and self.is_visible_post_activation(name)
            and self.unavailable_reason(name) is None
        )

    def unavailable_reason(self, name: str) -> str | None:
        """The registry's :meth:`~octos_tools.registry.ToolRegistry.unavailable_reason`,
        asked again with this session's base context when it is not ``None`` and the
        context has extras (what a session may bring the tool: the agent loop's spawn
        delegate)."""
        registry = self.registry
        reason = registry.unavailable_reason(name)
        if reason is None:
            return None
        ctx = getattr(self.owner, "ctx", None)
        tool = registry.get(name)
        if ctx is None or not ctx.extras or tool is None:  # nothing the session brings
            return reason
        return tool.unavailable_reason(ctx)

    def specs(self) -> list[ToolSpec]:
        """The specs of visible tools, in registration order.

        A pure read: nothing ticks, nothing is evicted. The same list object is returned
        while neither the registry nor this view changes, so hosts can detect a change
        with ``is``; treat it as read-only.
        """
        registry = self.registry
        ctx = getattr(self.owner, "ctx", None)
        if not (self._activated or self._evicted or self._hidden) and not (
            ctx is not None and ctx.extras  # extras may make a tool work here
        ):
            # A session with no state of its own (a fresh one, a stateless HTTP request)
            # sees the configured defaults: one list shared by every such view.
            revision = registry.revision
            shared = _SHARED_SPECS.get(registry)
            if shared is not None and shared[0] == revision:
                return shared[1]
            specs = self._build_specs()
            _SHARED_SPECS[registry] = (revision, specs)
            return specs
        key = (registry.revision, self._version)
        cached = self._specs
        if cached is not None and key == self._specs_key:
            return cached
        specs = self._build_specs()
        self._specs = specs
        self._specs_key = key
        return specs

    def _build_specs(self) -> list[ToolSpec]:
        owner = self.owner
        return [
            tool.spec_for(owner) for tool in self.registry.tools() if self.is_visible(tool.name)
        ]

    def visible_names(self) -> list[str]:
        """Names in :meth:`specs`, in registration order (no spec is built for this)."""
        return [name for name in self.registry.names() if self.is_visible(name)]

    def catalog(self) -> list[CatalogEntry]:
        """The live catalog: every tool a policy allows, deferred ones included, never a
        denied one (rebuilt after each change). Entries say why a tool cannot work here
        (``unavailable``) and whether this session hides it (``session_hidden``)."""
        registry = self.registry
        key = (registry.revision, self._version)
        if self._catalog is not None and self._catalog[0] == key:
            return self._catalog[1]
        entries: list[CatalogEntry] = []
        for tool in registry.tools():
            name = tool.name
            if not registry.evaluate(name).allowed:
                continue
            if self.is_deferred(name):
                state = "deferred"
            elif name in self._hidden or not registry.passes_filter(tool):
                state = "hidden"
            else:
                state = "active"
            entries.append(
                CatalogEntry(
                    name=name,
                    description=tool.description,
                    tags=tuple(tool.tags),
                    group=registry.group_of(name),
                    state=state,
                    concurrency=tool.concurrency_class.value,
                    spawn_only=registry.is_spawn_only(name),
                    unavailable=self.unavailable_reason(name),
                    session_hidden=name in self._hidden,
                )
            )
        self._catalog = (key, entries)
        return entries
