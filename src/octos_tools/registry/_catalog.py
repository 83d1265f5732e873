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
    """

    name: str
    description: str
    tags: tuple[str, ...]
    group: str | None
    state: str
    concurrency: str
    spawn_only: bool
