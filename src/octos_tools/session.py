"""Loop placement for hosts: :class:`ToolSession` (seed §6.2.4, reference §6.5).

The seed places LRU housekeeping *before* each model request, not after tool calls: the
loop calls ``tick()``, then ``auto_evict()``, then ``specs()``, so evictions shape the
next request's tool declarations. A :class:`ToolSession` wraps one registry and one base
:class:`~octos_tools.context.ToolContext` and does exactly that, so the MCP server and the
agent loop share one implementation::

    session = ToolSession(registry)
    while True:
        specs = session.before_model_request()      # tick → auto_evict → specs
        if session.changed:
            ...                                       # e.g. MCP tools/list_changed
        calls = await model(specs)
        results = await session.after_tool_calls(calls)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from .context import ToolContext
from .execution import ToolCall, execute_batch
from .registry import ToolRegistry
from .tool import ToolResult, ToolSpec

__all__ = ["SPEC_WARNING_THRESHOLD", "ToolSession"]

logger = logging.getLogger("octos_tools.session")

SPEC_WARNING_THRESHOLD = 25
"""More visible specs than this on the first request logs a warning (octos does the same:
a model offered that many tools chooses worse, reference §6.5)."""


class ToolSession:
    """One host session over a :class:`~octos_tools.registry.ToolRegistry`.

    Args:
        registry: the registry the session serves (its LRU state is per session).
        ctx: the base context of every call (workspace, session key, approval
            callbacks, ...); each call gets a copy with its own ``tool_call_id``. When
            ``None`` a context with the registry's workspace and session key is used.

    Attributes:
        registry: the wrapped registry.
        ctx: the base context.
        requests: how many times :meth:`before_model_request` ran.
        changed: whether the specs returned by the last :meth:`before_model_request`
            differ (names, order or descriptions) from the ones it returned before; ``True``
            after the first request. Changes caused by tool calls in between (auto
            activation, ``activate_tools``) are included, since the comparison is with the
            previously *returned* list.
        evicted: the names the last :meth:`before_model_request` evicted (``[]`` if none).
    """

    def __init__(self, registry: ToolRegistry, ctx: ToolContext | None = None) -> None:
        self.registry = registry
        self.ctx = (
            ctx
            if ctx is not None
            else ToolContext(
                workspace=registry.workspace, session_key=registry.session_key, registry=registry
            )
        )
        self.requests = 0
        self.changed = False
        self.evicted: list[str] = []
        self._last_specs: list[ToolSpec] | None = None
        self._last_view: tuple[tuple[str, str], ...] | None = None

    def before_model_request(self) -> list[ToolSpec]:
        """Housekeeping before one model request: ``tick()`` → ``auto_evict()`` →
        ``specs()`` (seed §6.2.4 order).

        Sets :attr:`changed` and :attr:`evicted`.

        Returns:
            The specs to declare in the request (the registry's cached list; read-only).
        """
        self.registry.tick()
        self.evicted = self.registry.auto_evict()
        if self.evicted:
            logger.debug("evicted idle tools before request: %s", self.evicted)
        specs = self.registry.specs()
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

    def current_specs(self) -> list[ToolSpec]:
        """The specs as they are now, without ticking (e.g. for an MCP ``tools/list`` that
        is not tied to a model request)."""
        return self.registry.specs()

    def specs_changed(self) -> bool:
        """Whether the registry's specs differ from the ones last returned by
        :meth:`before_model_request` (no side effect on the LRU)."""
        specs = self.registry.specs()
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

    async def after_tool_calls(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """Run one model turn's tool calls with :func:`~octos_tools.execution.execute_batch`
        (Safe calls concurrently, any Exclusive call makes the batch serial).

        Args:
            calls: the calls in the model's order.

        Returns:
            One result per call, in call order.
        """
        return await execute_batch(self.registry, calls, self.ctx)

    async def call(
        self,
        name: str,
        arguments: str | bytes | Mapping[str, Any] | None = None,
        *,
        tool_call_id: str = "",
    ) -> ToolResult:
        """Run one tool call outside a batch (an MCP ``tools/call``), with the session's
        context. Never raises for a bad call: failures are failed results."""
        return await self.registry.execute(name, arguments, self.ctx.for_call(tool_call_id))

    async def aclose(self) -> None:
        """Close the registry (tools, processes, background tasks)."""
        await self.registry.aclose()


def _view(specs: Sequence[ToolSpec]) -> tuple[tuple[str, str], ...]:
    return tuple((s.name, s.description) for s in specs)
