"""``tool_search`` (the one listed discovery tool) and ``tool_suggest`` (its alias).

``tool_search {query, limit=8}`` ranks the caller's catalog for a task sentence or a few
words (:mod:`._ranking`) and answers compact JSON: ``matches`` with each tool's name, a
300-character summary of its description, its ``state`` (``active`` / ``deferred`` /
``hidden``), group and argument names (optional ones end in ``?``), and one ``load`` line
when a match is deferred. ``select:a,b`` returns exactly those tools with their full
description and input schema, and loads the deferred ones into the caller's tool list
(for hosts that only call listed tools); calling a deferred tool by name loads it too.

``tool_suggest {task, limit=5}`` is the same ranking under the older name and argument;
it is kept callable but not listed by the default profile. Neither ever shows a
policy-denied tool, nor the discovery tools themselves (:data:`._catalog_view.DISCOVERY_TOOLS`)
in ranked results.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pydantic import Field

from ...context import ToolContext
from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...typed import ToolArgs, TypedTool
from ._catalog_view import DISCOVERY_TOOLS, View
from ._ranking import Document, rank

__all__ = ["MAX_LIMIT", "ToolSearchTool", "ToolSuggestTool"]

MAX_LIMIT = 32
"""Most results one search returns (``limit`` is clamped to 1..32)."""


def _render(data: JSONObject, key: str, list_key: str) -> str:
    """Readable text of a search answer (the same data stays in ``structured_metadata``
    under ``"result"``): one line per tool, its state when not listed, its arguments
    (optional ones end in ``?``) and description; with ``select:``, its input schema."""
    items: list[JSONObject] = data.get(list_key, [])
    lines: list[str] = []
    if items:
        lines.append(
            f"{len(items)} tool(s) for {data[key]!r} ({data.get('total', len(items))} in "
            "the catalog):"
        )
    else:
        lines.append(f"No tool matches {data[key]!r}.")
    for item in items:
        state = item.get("state", "active")
        where = "" if state == "active" else f" [{state}]"
        args = ", ".join(item.get("args", []))
        head = f"- {item['name']}{where}" + (f"({args})" if "args" in item else "")
        lines.append(f"{head}: {item.get('description', '')}")
        schema = item.get("input_schema")
        if schema is not None:
            compact = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
            lines.append(f"  input schema: {compact}")
    if data.get("loaded"):
        lines.append(f"Loaded (now in your tool list): {', '.join(data['loaded'])}.")
    if data.get("call_by_name"):
        lines.append(
            f"Call {', '.join(data['call_by_name'])} by name: a call works, though your tool "
            "list does not change (this server answers each request on its own)."
        )
    for item in data.get("refused", []):
        lines.append(f"Not for you: {item['name']}: {item['why']}; do not call it.")
    if data.get("not_found"):
        lines.append(f"No tool of these names: {', '.join(data['not_found'])}.")
    for extra in ("load", "hint"):
        if data.get(extra):
            lines.append(str(data[extra]))
    return "\n".join(lines)


def _load_hint(any_deferred: bool, list_persists: bool) -> str | None:
    if not any_deferred:
        return None
    if not list_persists:
        return (
            'a "deferred" tool is not in your tool list: call it by name (that works), or '
            "search select:name for its input schema"
        )
    return (
        'a "deferred" tool is not in your tool list yet: call it by name (it loads on first '
        "use), or search select:name to load it and get its input schema"
    )


_REFUSED_RANK = 3
"""A tool the caller cannot run is named when it ranks this high for the query."""


class _SearchArgs(ToolArgs):
    query: str = Field(
        min_length=1, max_length=1000, description="The task in a few words, or select:a,b"
    )
    limit: int = Field(8, description="Most results")


class _SuggestArgs(ToolArgs):
    task: str = Field(min_length=1, max_length=2000, description="What you want to do.")
    limit: int = Field(5, description="Most suggestions")


class ToolSearchTool(TypedTool):
    """``tool_search {query, limit=8}``: find a tool for a task (module docstring).

    Errors: ``invalid_arguments`` for a blank query; ``not_configured`` without a
    registry. ``limit`` is clamped to 1..:data:`MAX_LIMIT`.
    """

    name = "tool_search"
    title = "Search tools"
    description = (
        "Find a tool for a task, including tools not in your list (web, MCP servers). Call "
        "a result by name; select:a,b gives their schemas."
    )
    Args: ClassVar[type[ToolArgs]] = _SearchArgs
    tags = ("code", "discovery")
    concurrency_class = ConcurrencyClass.SAFE
    search_hints = ("discover", "find a tool", "deferred", "load tools")

    key: ClassVar[str] = "query"
    list_key: ClassVar[str] = "matches"

    async def run(self, args: Any, ctx: ToolContext | None) -> ToolResult:
        """Rank the catalog for the query, or ``select:`` exact tools.

        Raises:
            ToolError: ``invalid_arguments`` for a blank query; ``not_configured``.
        """
        view = View(ctx)
        query = str(getattr(args, self.key)).strip()
        if not query:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{self.key!r} is empty: give a few words describing the task (e.g. 'fetch a "
                "web page', 'run tests'), or select:name1,name2 for exact tools",
            )
        limit = max(1, min(MAX_LIMIT, args.limit))
        if query.lower().startswith("select:"):
            return self._select(view, query)
        catalog = view.catalog()
        searchable = [e for e in catalog if e.name not in DISCOVERY_TOOLS and e.runnable]
        docs = view.documents(searchable)
        ranked = rank(docs, query)[:limit]
        results = [view.entry_json(searchable[s.index], score=s.score, full=False) for s in ranked]
        total = sum(1 for e in catalog if e.runnable)
        data: JSONObject = {self.key: query, self.list_key: results, "total": total}
        refused = _refused_for(view, docs, query)
        if refused:
            data["refused"] = refused
        hint = _load_hint(any(r["state"] == "deferred" for r in results), view.list_persists)
        if hint:
            data["load"] = hint
        if not results:
            data["hint"] = (
                "nothing matched; try other or fewer words (what the tool acts on: file, "
                "web page, command, agent...)"
            )
        return ToolResult.ok(
            _render(data, self.key, self.list_key),
            structured_metadata={
                "codex_tool": self.name,
                self.key: query,
                self.list_key: [r["name"] for r in results],
                "result": data,
            },
        )

    def _select(self, view: View, query: str) -> ToolResult:
        wanted = list(dict.fromkeys(n.strip() for n in query[7:].split(",") if n.strip()))
        refusals = {name: why for name, why, _doc in view.refused()}
        by_name = {e.name: e for e in view.catalog() if e.runnable}
        missing = [n for n in wanted if n not in by_name and n not in refusals]
        deferred = [n for n in wanted if n in by_name and view.is_deferred(n)]
        # a stateless request's view is thrown away: loading would claim a change of the
        # list that never happens, so the answer says to call the tool by name instead
        loaded = view.activate(deferred) if view.list_persists else []
        catalog = [e for e in view.catalog() if e.runnable]  # states after loading
        by_name = {e.name: e for e in catalog}
        found = [by_name[n] for n in wanted if n in by_name]
        data: JSONObject = {
            self.key: query,
            self.list_key: [view.entry_json(e, score=None, full=True) for e in found],
            "total": len(catalog),
        }
        if loaded:
            data["loaded"] = loaded
        if deferred and not view.list_persists:
            data["call_by_name"] = deferred
        refused = [{"name": n, "why": refusals[n]} for n in wanted if n in refusals]
        if refused:
            data["refused"] = refused
        if missing:
            data["not_found"] = missing
        return ToolResult.ok(
            _render(data, self.key, self.list_key),
            structured_metadata={
                "codex_tool": "tool_search",
                self.list_key: [e.name for e in found],
                "loaded": loaded,
                "result": data,
            },
        )


def _refused_for(view: View, offered: list[Document], query: str) -> list[JSONObject]:
    """The tools the caller cannot run that rank in the top :data:`_REFUSED_RANK` for
    ``query`` among every tool (what was asked for is denied or unavailable here), with
    why; ``[]`` when the best tools for the query are all runnable."""
    refused = view.refused()
    if not refused:
        return []
    docs = offered + [doc for _name, _why, doc in refused]
    top = rank(docs, query)[:_REFUSED_RANK]
    out: list[JSONObject] = []
    for scored in top:
        if scored.index >= len(offered):
            name, why, _doc = refused[scored.index - len(offered)]
            if all(item["name"] != name for item in out):
                out.append({"name": name, "why": why})
    return out


class ToolSuggestTool(ToolSearchTool):
    """``tool_suggest {task, limit=5}``: :class:`ToolSearchTool` under its older name."""

    name = "tool_suggest"
    title = "Suggest tools for a task"
    description = (
        "Describe a task in a sentence and get the tools best suited to it, including "
        "deferred tools not yet in your tool list."
    )
    Args: ClassVar[type[ToolArgs]] = _SuggestArgs
    key: ClassVar[str] = "task"
    list_key: ClassVar[str] = "suggestions"
