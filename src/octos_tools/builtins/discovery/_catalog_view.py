"""What the discovery tools see and change: the caller's view of the tool catalog.

Activation is per session: deferral is read and changed in the call's ``ctx.session`` (a
:class:`~octos_tools.session.ToolSession`, e.g. one MCP connection; the registry's default
session for :meth:`ToolRegistry.execute <octos_tools.registry.ToolRegistry.execute>`). A
context without a session (a tool run directly) uses the registry's default session. The
catalog is every
tool a policy allows, deferred ones included, never a denied one
(:meth:`~octos_tools.registry.ToolRegistry.catalog`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...context import ToolContext
from ...errors import ErrorKind, ToolError
from ...registry import CatalogEntry, ToolRegistry
from ...tool_types import JSONObject
from ._hints import BUILTIN_HINTS, hints_of
from ._ranking import Document, rank

if TYPE_CHECKING:
    from ...session import ToolSession

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
    """The caller's view: the session of the call (``ctx.session``, else the registry's
    default session), read and changed through its public methods; the group table is
    the registry's.

    Args:
        ctx: the call's context.

    Raises:
        ToolError: ``not_configured`` without a registry.
    """

    def __init__(self, ctx: ToolContext | None) -> None:
        self.registry = registry_of(ctx)
        session = ctx.session if ctx is not None else None
        self.session: ToolSession = (
            session if session is not None else self.registry.default_session
        )
        self.list_persists = self.session.list_persists
        """Whether an activation outlives this call (``False`` for a 2026-07-28 stateless
        HTTP request: its view is thrown away, so no list changes)."""

    @property
    def groups(self) -> Mapping[str, tuple[str, ...]]:
        """The group table: ``group:NAME -> members``."""
        return self.registry.groups

    def group_of(self, name: str) -> str | None:
        """The first group containing ``name``, or ``None``."""
        return self.registry.group_of(name)

    def catalog(self) -> list[CatalogEntry]:
        """Every allowed tool with its state for this caller (``active`` / ``deferred`` /
        ``hidden``), in registration order."""
        return self.session.catalog()

    def is_deferred(self, name: str) -> bool:
        """Whether ``name`` is deferred for this caller."""
        return self.session.is_deferred(name)

    def listed(self) -> set[str]:
        """Names in this caller's tool list."""
        return set(self.session.visible_names())

    def is_loadable(self, name: str) -> bool:
        """Whether ``name`` would be listed once activated (policy and filters allow it)."""
        return self.session.is_visible_post_activation(name)

    def allowed(self, name: str) -> bool:
        """Registered and allowed by every policy."""
        return name in self.registry and self.registry.evaluate(name).allowed

    def activate(self, names: Iterable[str]) -> list[str]:
        """Load deferred ``names`` (tool names or ``group:`` names) into this caller's
        list; returns the names activated."""
        activated: list[str] = []
        for name in dict.fromkeys(names):
            activated.extend(n for n in self.session.activate(name) if n not in activated)
        return activated

    def loadable_deferred(self) -> list[str]:
        """Deferred names that would be listed once activated, sorted."""
        return sorted(
            e.name for e in self.catalog() if e.state == "deferred" and self.is_loadable(e.name)
        )

    def refused(self) -> list[tuple[str, str, Document]]:
        """Tools this caller cannot run, each with why and its ranking document: denied by
        a policy (registered or removed by a hard policy), unable to work here, or hidden
        for this client. Never offered; named when a query asks for them."""
        out: list[tuple[str, str, Document]] = []
        for entry, doc in zip(self.catalog(), self.documents(self.catalog()), strict=True):
            if entry.unavailable is not None:
                out.append((entry.name, f"unavailable here: {entry.unavailable}", doc))
            elif entry.session_hidden:
                out.append((entry.name, "not available to this client", doc))
        registry = self.registry
        for name in registry.names():
            decision = registry.evaluate(name)
            if not decision.allowed:
                tool = registry.get(name)
                if tool is None:
                    continue
                doc = self.documents([_entry_of(name, tool.description, tool.tags)])[0]
                out.append((name, f"denied by the {decision.source or 'tool policy'}", doc))
        for name, (_cls, tags) in registry.removed_by_policy().items():
            doc = Document(name, "", tags, BUILTIN_HINTS.get(name, ()))
            out.append((name, "denied by the tool policy", doc))
        return out

    def documents(self, entries: Sequence[CatalogEntry]) -> list[Document]:
        """The ranking documents of ``entries``: name, title and description, tags, search
        hints and the words of the input schema."""
        docs: list[Document] = []
        for entry in entries:
            tool = self.registry.get(entry.name)
            title = (tool.title or "") if tool is not None else ""
            hints = hints_of(tool) if tool is not None else ()
            params = _schema_words(tool.input_schema) if tool is not None else ""
            text = f"{title}. {entry.description}"
            docs.append(Document(entry.name, text, entry.tags, hints, params))
        return docs

    def entry_json(self, entry: CatalogEntry, *, score: float | None, full: bool) -> JSONObject:
        """One result: name, description (a 300-character summary unless ``full``), state,
        group, and the arguments (``full``: the input schema; else the argument names,
        optional ones ending in ``?``)."""
        item: JSONObject = {
            "name": entry.name,
            "description": entry.description if full else _summary(entry.description),
            "state": entry.state,
        }
        group = self.group_of(entry.name)
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


def _entry_of(name: str, description: str, tags: Sequence[str]) -> CatalogEntry:
    return CatalogEntry(name, description, tuple(tags), None, "denied", "safe", False)


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
    """Rank catalog ``entries`` for ``query`` (:func:`._ranking.rank` over each entry's name,
    description, tags and the built-in hints of its name), best first; entries scoring 0
    are left out."""
    docs = [Document(e.name, e.description, e.tags, BUILTIN_HINTS.get(e.name, ())) for e in entries]
    return [ScoredEntry(entries[s.index], s.score) for s in rank(docs, query)]
