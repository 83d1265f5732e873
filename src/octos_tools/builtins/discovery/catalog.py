"""What the discovery tools see and change: the caller's view of the tool catalog.

Activation is per session: when a call comes with ``ctx.session`` (a
:class:`~octos_tools.session.ToolSession`, e.g. one MCP connection), deferral is read and
changed there; otherwise on the registry itself (its default view). The catalog is every
tool a policy allows, deferred ones included, never a denied one
(:meth:`~octos_tools.registry.ToolRegistry.catalog`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...context import ToolContext
from ...errors import ErrorKind, ToolError
from ...policy import first_group_of
from ...registry import CatalogEntry, ToolRegistry
from ...tool import JSONObject
from .hints import BUILTIN_HINTS, hints_of
from .ranking import Document, rank

__all__ = ["DISCOVERY_TOOLS", "ScoredEntry", "View", "registry_of", "score_catalog"]

DISCOVERY_TOOLS = frozenset({"activate_tools", "tool_search", "tool_suggest"})
"""Left out of ranked results: the model is already using them, and their descriptions
("tools", "task", "find") match almost any query."""

_SUMMARY_CHARS = 300


def registry_of(ctx: ToolContext | None) -> ToolRegistry:
    """The registry of the call.

    Raises:
        ToolError: ``not_configured`` when the call has none.
    """
    registry = ctx.registry if ctx is not None else None
    if registry is None:
        raise ToolError(
            ErrorKind.NOT_CONFIGURED,
            "no tool registry is attached to this call; discovery tools only work when run "
            "through a ToolRegistry",
        )
    return registry


def _summary(description: str) -> str:
    text = " ".join(description.split())
    if len(text) <= _SUMMARY_CHARS:
        return text
    return text[: _SUMMARY_CHARS - 1].rstrip() + "…"


class View:
    """The caller's view: ``ctx.session`` when set, else the registry.

    Args:
        ctx: the call's context.

    Raises:
        ToolError: ``not_configured`` without a registry.
    """

    def __init__(self, ctx: ToolContext | None) -> None:
        self.registry = registry_of(ctx)
        self.session: Any = getattr(ctx, "session", None)

    def is_deferred(self, name: str) -> bool:
        """Whether ``name`` is deferred for this caller."""
        if self.session is not None:
            return bool(self.session.is_deferred(name))
        return self.registry.is_deferred(name)

    def listed(self) -> set[str]:
        """Names in this caller's tool list."""
        if self.session is not None:
            specs = getattr(self.session, "specs", None) or self.session.current_specs
            return {s.name for s in specs()}
        return {s.name for s in self.registry.specs()}

    def activate(self, names: Iterable[str]) -> list[str]:
        """Load deferred ``names`` (tool names or ``group:`` names) into this caller's
        list; returns the names activated."""
        wanted = list(dict.fromkeys(names))
        if self.session is not None:
            return list(self.session.activate(wanted))
        activated: list[str] = []
        for name in wanted:
            activated.extend(self.registry.activate(name))
        return list(dict.fromkeys(activated))

    def loadable_deferred(self) -> list[str]:
        """Deferred names that would be listed once activated (policy and context filter
        allow them), sorted."""
        registry = self.registry
        return sorted(
            e.name
            for e in registry.catalog()
            if self.is_deferred(e.name) and registry.is_visible_post_activation(e.name)
        )

    def state(self, entry: CatalogEntry, listed: set[str]) -> str:
        """``active`` (listed), ``deferred`` (one call away) or ``hidden`` (callable, not
        listed)."""
        if self.is_deferred(entry.name):
            return "deferred"
        return "active" if entry.name in listed else "hidden"

    def documents(self, entries: list[CatalogEntry]) -> list[Document]:
        """The ranking documents of ``entries`` (name, description and title, tags, hints)."""
        docs: list[Document] = []
        for entry in entries:
            tool = self.registry.get(entry.name)
            title = (tool.title or "") if tool is not None else ""
            hints = hints_of(tool) if tool is not None else ()
            params = _schema_words(tool.input_schema) if tool is not None else ""
            text = f"{title}. {entry.description}"
            docs.append(Document(entry.name, text, entry.tags, hints, params))
        return docs

    def entry_json(
        self, entry: CatalogEntry, state: str, *, score: float | None, full: bool
    ) -> JSONObject:
        """One result: name, description (a 300-character summary unless ``full``), state,
        group, and the arguments (``full``: the input schema; else the argument names,
        optional ones ending in ``?``)."""
        item: JSONObject = {
            "name": entry.name,
            "description": entry.description if full else _summary(entry.description),
            "state": state,
        }
        group = first_group_of(entry.name)
        if group:
            item["group"] = group
        if entry.spawn_only:
            item["spawn_only"] = True
        tool = self.registry.get(entry.name)
        if tool is not None:
            if full:
                item["input_schema"] = tool.input_schema
            else:
                item["args"] = _arg_names(tool.input_schema)
        if score is not None:
            item["score"] = score
        return item


def _schema_words(schema: JSONObject) -> str:
    """Argument names, descriptions and string enum values of a schema's top level."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return ""
    words: list[str] = []
    for name, prop in properties.items():
        words.append(str(name))
        if isinstance(prop, dict):
            if isinstance(prop.get("description"), str):
                words.append(prop["description"])
            enum = prop.get("enum")
            if isinstance(enum, list):
                words.extend(v for v in enum if isinstance(v, str))
    return " ".join(words)


def _arg_names(schema: JSONObject) -> list[str]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return []
    required = set(schema.get("required") or ())
    return [n if n in required else f"{n}?" for n in properties]


@dataclass(frozen=True, slots=True)
class ScoredEntry:
    """A catalog entry with its ranking score (higher is better)."""

    entry: CatalogEntry
    score: float


def score_catalog(entries: Sequence[CatalogEntry], query: str) -> list[ScoredEntry]:
    """Rank catalog ``entries`` for ``query`` (:func:`.ranking.rank` over each entry's name,
    description, tags and the built-in hints of its name), best first; entries scoring 0
    are left out."""
    docs = [Document(e.name, e.description, e.tags, BUILTIN_HINTS.get(e.name, ())) for e in entries]
    return [ScoredEntry(entries[s.index], s.score) for s in rank(docs, query)]
