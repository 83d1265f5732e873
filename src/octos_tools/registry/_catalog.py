"""One entry of the live catalog that ``tool_search`` / ``tool_suggest`` rank."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CatalogEntry"]


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One tool of the live catalog read by ``tool_search`` / ``tool_suggest``.

    Attributes:
        name: the tool name.
        description: its description.
        tags: its tags.
        group: the first policy group containing it, or ``None``.
        state: ``"active"`` (in specs), ``"deferred"`` (one call away) or ``"hidden"``
            (hidden by the context filter or the session, but callable).
        concurrency: ``"safe"`` or ``"exclusive"``.
        spawn_only: the tool runs in the background and returns a task handle.
        unavailable: why the tool cannot work here
            (:meth:`~octos_tools.tool_types.Tool.unavailable_reason`), or ``None``.
        session_hidden: the session hides it (its client cannot serve it, e.g.
            ``request_user_input`` without MCP elicitation).
    """

    name: str
    description: str
    tags: tuple[str, ...]
    group: str | None
    state: str
    concurrency: str
    spawn_only: bool
    unavailable: str | None = None
    session_hidden: bool = False

    @property
    def runnable(self) -> bool:
        """Whether a call can work for this session (able to work here, not hidden by
        the session): what the discovery tools offer."""
        return self.unavailable is None and not self.session_hidden
