"""Discovery tools: ``activate_tools``, ``tool_search``, ``tool_suggest``, ``read_task_output``.

Many tools, few tokens (seed §6.2.3–6.2.5): a host defers low-use groups so the first model
request stays small, and every deferred tool stays one call away. These tools let the model
find and load what it needs, and read the output of background (spawn-only) tasks in
pieces instead of flooding its context.

* ``activate_tools`` (reference §2.6) loads deferred tools, a whole group at a time, and
  lists the deferred tools the policy allows in its own description. It is registered by
  :func:`octos_tools.profile.apply_deferral` only when something is deferred, not by
  :func:`register`.
* ``tool_search`` / ``tool_suggest`` (reference §1.6) rank the registry's *live* catalog
  (:meth:`~octos_tools.registry.ToolRegistry.catalog`, rebuilt after every mutation, so a
  tool registered later is found). Unlike octos, deferred tools are included and marked
  ``"state": "deferred"`` with how to load them; a policy-denied tool never appears, nor
  do the discovery tools themselves (:data:`DISCOVERY_TOOLS`). The ranking is
  :func:`score_catalog` (a BM25F score, documented there).
* ``read_task_output`` (reference §6.4) reads a task's log with ``head``, ``tail``,
  ``grep``, ``line_range`` or ``file`` modes: 1–500 lines, at most :data:`MAX_OUTPUT_BYTES`
  bytes of UTF-8 (cut on a character boundary), ``tail`` read backwards from the end so a
  huge log is never read whole, a handle of another session refused, and ``file`` mode
  limited to the task's recorded output files, opened through the
  :class:`~octos_tools.workspace.Workspace` (no symlink followed, nothing outside the root).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from ..config import Config
from ..context import ToolContext
from ..errors import ErrorKind, ToolError
from ..policy import GROUP_DESCRIPTIONS, first_group_of
from ..registry import CatalogEntry, ToolRegistry
from ..tasks import TaskRecord
from ..tool import ConcurrencyClass, JSONObject, Tool, ToolResult, ToolSpec
from ._base import int_arg

if TYPE_CHECKING:
    from ..workspace import Workspace

__all__ = [
    "DEFAULT_LINES",
    "DISCOVERY_TOOLS",
    "MAX_LINES",
    "MAX_OUTPUT_BYTES",
    "ActivateToolsTool",
    "ReadTaskOutputTool",
    "ScoredEntry",
    "ToolSearchTool",
    "ToolSuggestTool",
    "register",
    "score_catalog",
    "tokenize",
]

# ---------------------------------------------------------------------------- activate_tools


def _registry_of(ctx: ToolContext) -> ToolRegistry:
    # the calling session's view when there is one (core hook: activation is per session)
    registry = ctx.session if ctx.session is not None else ctx.registry
    if registry is None:
        raise ToolError(
            ErrorKind.NOT_CONFIGURED,
            "no tool registry is attached to this call; discovery tools only work when run "
            "through a ToolRegistry",
        )
    return registry  # type: ignore[return-value]


def _loadable_deferred(registry: ToolRegistry) -> list[str]:
    """Deferred names that would be visible once activated (policy and context filter)."""
    return [n for n in registry.deferred_names() if registry.is_visible_post_activation(n)]


class ActivateToolsTool(Tool):
    """``activate_tools {tools?: [names], group?: "group:NAME"}`` (reference §2.6).

    * No arguments: lists the deferred tools the policy allows, by group.
    * ``tools``: each name loads its whole first group (as octos does; a name in no group
      loads alone); a ``group:`` entry loads that group.
    * ``group``: the legacy form, one group (or one name).

    The result names what was loaded and what was already active; a policy-denied or
    unknown name is never loaded nor listed (``no_match`` when nothing matched). Activated
    tools count as used now, so the LRU gives them the full idle threshold before eviction.
    No tags, Safe; the description lists the deferred tools (:meth:`spec_for`).
    """

    name = "activate_tools"
    title = "Load deferred tools"
    description = (
        "Load tools that are available but not yet in your tool list. Call with no "
        "arguments to list them; pass `tools` (names) to load them; a tool that belongs to "
        "a group loads its whole group. Calling a deferred tool directly also loads it."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "tools": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 128},
                "maxItems": 64,
                "description": "Tool names (or group:NAME) to load.",
            },
            "group": {
                "type": "string",
                "minLength": 1,
                "maxLength": 128,
                "description": "A group to load, e.g. group:web (legacy form).",
            },
        },
        "additionalProperties": False,
    }
    tags = ()
    concurrency_class = ConcurrencyClass.SAFE

    def spec_for(self, registry: Any) -> ToolSpec:
        """The spec whose description lists the currently deferred, policy-allowed tools
        (unchanged when none are deferred)."""
        spec = self.spec()
        if not hasattr(registry, "is_visible_post_activation"):  # a registry or a session
            return spec
        names = _loadable_deferred(registry)
        if not names:
            return spec
        suffix = (
            f"\n\nCurrently deferred tools available to load: {', '.join(names)}. "
            'Call this tool with `tools: ["<name>"]` to load them.'
        )
        return ToolSpec(
            name=spec.name,
            description=spec.description + suffix,
            input_schema=spec.input_schema,
            title=spec.title,
            read_only=spec.read_only,
            destructive=spec.destructive,
            tags=spec.tags,
        )

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        """Run ``activate_tools`` (see the class docstring).

        Raises:
            ToolError: ``no_match`` when nothing matched; ``not_configured`` without a
                registry.
        """
        registry = _registry_of(ctx)
        requested: list[str] = list(args.get("tools") or [])
        group = args.get("group")
        if group:
            requested.append(group)
        if not requested:
            return _list_deferred(registry)

        loaded: set[str] = set()
        already: set[str] = set()
        unmatched: list[str] = []
        for item in dict.fromkeys(requested):
            target = _activation_target(registry, item)
            if target is None:
                unmatched.append(item)
                continue
            activated = registry.activate(target)
            loaded.update(activated)
            named = registry.groups.get(item, (item,))
            already.update(n for n in named if n in registry and n not in activated)
        loaded_list = sorted(n for n in loaded if registry.is_visible_post_activation(n))
        already_list = sorted(
            n for n in already - loaded if n in registry and registry.is_visible(n)
        )
        if not loaded_list and not already_list:
            raise ToolError(
                ErrorKind.NO_MATCH,
                f"no loadable tool matched {', '.join(unmatched) or 'the request'}. Call "
                "activate_tools with no arguments to see what can be loaded, or tool_search "
                "to find a tool by what it does.",
            )
        parts: list[str] = []
        if loaded_list:
            parts.append(f"Loaded {len(loaded_list)} tool(s): {', '.join(loaded_list)}.")
        if already_list:
            parts.append(f"Already active: {', '.join(already_list)}.")
        if unmatched:
            parts.append(f"Not found: {', '.join(unmatched)}.")
        return ToolResult.ok(
            " ".join(parts),
            structured_metadata={
                "loaded": loaded_list,
                "already_active": already_list,
                "not_found": unmatched,
            },
        )


def _activation_target(registry: ToolRegistry, item: str) -> str | None:
    """The group or name to activate for one requested entry, or ``None`` (no match).

    A policy-denied or unregistered name matches nothing: it is neither loaded nor named.
    """
    if item in registry.groups:
        members = [n for n in registry.groups[item] if n in registry]
        return item if any(registry.evaluate(n).allowed for n in members) else None
    if item not in registry or not registry.evaluate(item).allowed:
        return None
    return registry.group_of(item) or item


def _list_deferred(registry: ToolRegistry) -> ToolResult:
    names = _loadable_deferred(registry)
    if not names:
        return ToolResult.ok("All tools are already active.", structured_metadata={"deferred": []})
    by_group: dict[str, list[str]] = {}
    for name in names:
        by_group.setdefault(first_group_of(name) or "", []).append(name)
    lines = ["Available tools to load:"]
    for group, members in by_group.items():
        if group:
            label = f"{group} ({GROUP_DESCRIPTIONS.get(group, group)})"
        else:
            label = "other"
        lines.append(f"- {label}: {', '.join(members)}")
    lines.append('Call activate_tools with {"tools": ["name", ...]} to load them.')
    return ToolResult.ok("\n".join(lines), structured_metadata={"deferred": names})


# ---------------------------------------------------------------------------- ranking

_TOKEN_RE = re.compile(r"[a-z0-9]+")

_STOPWORDS = frozenset(
    "a an and any are as at be by can could do does for from get how i in into is it its "
    "me my of on or please should so some that the their them then there this to tool tools "
    "use using want we what when which will with would you your need needs".split()
)

#: Field weights of the BM25F score (name words count most, then tags, then description).
FIELD_WEIGHTS = {"name": 3.0, "tags": 2.0, "description": 1.0}
BM25_K1 = 1.2
BM25_B = 0.75
PREFIX_WEIGHT = 0.5
EXACT_NAME_BONUS = 10.0
NAME_CONTAINS_BONUS = 3.0


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-case words of ``text`` for ranking.

    Splits on anything but ASCII letters and digits (so ``exec_command`` gives ``exec`` and
    ``command``), drops one-letter words and common English stop words, and strips plural
    endings (``files`` → ``file``, ``queries`` → ``query``).
    """
    words = _TOKEN_RE.findall(text.lower())
    return [_stem(w) for w in words if len(w) >= 2 and w not in _STOPWORDS]


@dataclass(frozen=True, slots=True)
class ScoredEntry:
    """A catalog entry with its ranking score (higher is better)."""

    entry: CatalogEntry
    score: float


@dataclass(frozen=True, slots=True)
class _Doc:
    entry: CatalogEntry
    fields: dict[str, Counter[str]]
    length: float


def _doc(entry: CatalogEntry) -> _Doc:
    fields = {
        "name": Counter(tokenize(entry.name)),
        "tags": Counter(t for tag in entry.tags for t in tokenize(tag)),
        "description": Counter(tokenize(entry.description)),
    }
    length = sum(FIELD_WEIGHTS[f] * sum(c.values()) for f, c in fields.items())
    return _Doc(entry, fields, length)


def _term_frequency(doc: _Doc, term: str) -> float:
    tf = 0.0
    for field, counts in doc.fields.items():
        weight = FIELD_WEIGHTS[field]
        tf += weight * counts.get(term, 0)
        if len(term) >= 3:
            tf += (
                PREFIX_WEIGHT
                * weight
                * sum(c for word, c in counts.items() if word != term and word.startswith(term))
            )
    return tf


def score_catalog(entries: Sequence[CatalogEntry], query: str) -> list[ScoredEntry]:
    """Rank ``entries`` for ``query``; entries scoring 0 are left out.

    The score is BM25F over three fields of each tool, with :func:`tokenize` applied to the
    query and to the fields:

    * weighted term frequency ``tf = 3·n_name + 2·n_tags + 1·n_description`` (a query word
      that is only a prefix of a tool word, three letters or more, counts half);
    * ``idf = ln(1 + (N − df + 0.5) / (df + 0.5))`` over the ``N`` entries given;
    * per query word ``idf · tf·(k1+1) / (tf + k1·(1 − b + b·len/avg_len))`` with
      ``k1 = 1.2``, ``b = 0.75`` and ``len`` the weighted word count of the tool;
    * plus :data:`EXACT_NAME_BONUS` (10) when the whole query is the tool name (spaces read
      as ``_``) and :data:`NAME_CONTAINS_BONUS` (3) when the name contains it (octos ranks
      names first the same way, reference §1.6).

    Ties sort by name. An empty query scores nothing (callers list the catalog instead).
    """
    terms = list(dict.fromkeys(tokenize(query)))
    phrase = "_".join(query.lower().split())
    if not terms and not phrase:
        return []
    docs = [_doc(e) for e in entries]
    n_docs = len(docs)
    avg_len = (sum(d.length for d in docs) / n_docs) if n_docs else 1.0
    avg_len = avg_len or 1.0
    tfs = {term: [_term_frequency(d, term) for d in docs] for term in terms}
    scored: list[ScoredEntry] = []
    for index, doc in enumerate(docs):
        score = 0.0
        for term in terms:
            tf = tfs[term][index]
            if tf <= 0:
                continue
            df = sum(1 for x in tfs[term] if x > 0)
            idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
            norm = BM25_K1 * (1 - BM25_B + BM25_B * doc.length / avg_len)
            score += idf * tf * (BM25_K1 + 1) / (tf + norm)
        name = doc.entry.name.lower()
        if phrase and name == phrase:
            score += EXACT_NAME_BONUS
        elif len(phrase) >= 3 and phrase in name:
            score += NAME_CONTAINS_BONUS
        if score > 0:
            scored.append(ScoredEntry(doc.entry, round(score, 4)))
    scored.sort(key=lambda s: (-s.score, s.entry.name))
    return scored


# ---------------------------------------------------------------------------- tool_search

_SUMMARY_CHARS = 300


def _summary(description: str) -> str:
    text = " ".join(description.split())
    if len(text) <= _SUMMARY_CHARS:
        return text
    return text[: _SUMMARY_CHARS - 1].rstrip() + "…"


def _load_hint(registry: ToolRegistry, entries: Sequence[CatalogEntry]) -> str | None:
    """How to load the deferred tools among ``entries``, said once per result (it used to be
    repeated in every deferred match), or ``None`` when none is deferred."""
    if not any(e.state == "deferred" for e in entries):
        return None
    direct = (
        'a "deferred" tool is not in your tool list yet: call it directly (it loads on first use)'
    )
    if "activate_tools" in registry and registry.is_visible("activate_tools"):
        return f'{direct}, or activate_tools {{"tools": ["name", ...]}} (loads each one\'s group)'
    return direct


def _entry_json(
    registry: ToolRegistry, entry: CatalogEntry, *, score: float | None, full: bool
) -> JSONObject:
    item: JSONObject = {
        "name": entry.name,
        "description": entry.description if full else _summary(entry.description),
        "tags": list(entry.tags),
        "state": entry.state,
    }
    if entry.group:
        item["group"] = entry.group
    if entry.spawn_only:
        item["spawn_only"] = True
    if score is not None:
        item["score"] = score
    if full:
        tool = registry.get(entry.name)
        if tool is not None:
            item["input_schema"] = tool.input_schema
    return item


def _clamp(value: Any, default: int, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        return default
    return max(low, min(high, value))


def _dumps(data: JSONObject) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


DISCOVERY_TOOLS = frozenset({"activate_tools", "tool_search", "tool_suggest"})
"""Left out of ``tool_search`` / ``tool_suggest`` rankings (ours): the model is already
using them, and their descriptions ("tools", "task", "find") match almost any query, so
``tool_suggest {"task": "run the test suite"}`` would rank itself first."""


def _select(registry: ToolRegistry, spec: str, key: str, query: str) -> ToolResult:
    wanted = [n.strip() for n in spec.split(",") if n.strip()]
    by_name = {e.name: e for e in registry.catalog()}
    found = [by_name[n] for n in dict.fromkeys(wanted) if n in by_name]
    missing = [n for n in dict.fromkeys(wanted) if n not in by_name]
    data: JSONObject = {
        key: query,
        "matches": [_entry_json(registry, e, score=None, full=True) for e in found],
        "total": len(by_name),
    }
    if missing:
        data["not_found"] = missing
    hint = _load_hint(registry, found)
    if hint:
        data["load"] = hint
    return ToolResult.ok(
        _dumps(data),
        structured_metadata={"codex_tool": "tool_search", "matches": [e.name for e in found]},
    )


class ToolSearchTool(Tool):
    """``tool_search {query, limit=8}`` over the live catalog (reference §1.6, ours for
    deferred tools and ``select:``).

    ``limit`` is clamped to 1–32. An empty (or blank) query is refused with
    ``invalid_arguments`` (ours; octos lists the first ``limit`` entries in registration
    order, which tells the model nothing), as ``tool_suggest`` refuses an empty task.
    ``select:a,b`` returns exactly those tools with full descriptions and input schemas.
    Results carry ``name``, ``description`` (first 300 characters), ``tags``, ``state``
    (``active`` / ``deferred`` / ``hidden``), ``group`` and ``score``; when any result is
    deferred, one top-level ``load`` says how to load such tools. Policy-denied tools are
    never in the catalog. The discovery tools themselves (:data:`DISCOVERY_TOOLS`:
    ``tool_search``, ``tool_suggest``, ``activate_tools``) are left out of the ranked results,
    as a model that is searching already has them; ``select:`` still returns them when named
    exactly, and ``total`` counts the whole catalog. Output is compact JSON.
    """

    name = "tool_search"
    title = "Search tools"
    description = (
        "Search all available tools, including deferred ones that are not in your tool list "
        "yet, by words in their name, description and tags. Use `select:name1,name2` to get "
        "the full description and input schema of exact tools."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1000,
                "description": "Words describing the tool you need, or select:a,b.",
            },
            "limit": {
                "type": "integer",
                "description": "Most results to return (default 8, clamped to 1-32).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    tags = ("code", "discovery")
    concurrency_class = ConcurrencyClass.SAFE

    default_limit = 8
    key = "query"

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        """Search the catalog of ``ctx.registry``.

        Raises:
            ToolError: ``not_configured`` without a registry; ``invalid_arguments`` for an
                empty or blank query/task.
        """
        registry = _registry_of(ctx)
        query = str(args.get(self.key, "")).strip()
        if not query:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{self.key!r} is empty: give a few words describing the tool you need "
                "(e.g. 'fetch a web page', 'run tests'), or select:name1,name2 for exact tools",
            )
        limit = _clamp(args.get("limit"), self.default_limit, 1, 32)
        if query.lower().startswith("select:"):
            return _select(registry, query[len("select:") :], self.key, query)
        catalog = registry.catalog()
        searchable = [e for e in catalog if e.name not in DISCOVERY_TOOLS]
        chosen = score_catalog(searchable, query)[:limit]
        results = [_entry_json(registry, s.entry, score=s.score, full=False) for s in chosen]
        list_key = "matches" if self.key == "query" else "suggestions"
        data: JSONObject = {self.key: query, list_key: results, "total": len(catalog)}
        hint = _load_hint(registry, [s.entry for s in chosen])
        if hint:
            data["load"] = hint
        if not results:
            data["hint"] = (
                "nothing matched; try other or fewer words (a tool's name, or a group word "
                "such as web, fs, runtime, search)"
            )
        return ToolResult.ok(
            _dumps(data),
            structured_metadata={
                "codex_tool": self.name,
                self.key: query,
                list_key: [r["name"] for r in results],
            },
        )


class ToolSuggestTool(ToolSearchTool):
    """``tool_suggest {task, limit=5}``: the tools that best fit a task described in prose.

    Same ranking as :class:`ToolSearchTool` (stop words such as "I want to" are ignored),
    so the discovery tools themselves (``tool_search``, ``tool_suggest``,
    ``activate_tools``) are never suggested; the result lists ``suggestions`` with their
    scores.
    """

    name = "tool_suggest"
    title = "Suggest tools for a task"
    description = (
        "Describe a task in a sentence and get the tools best suited to it, including "
        "deferred tools not yet in your tool list, with how to load them."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "minLength": 1,
                "maxLength": 2000,
                "description": "What you want to do.",
            },
            "limit": {
                "type": "integer",
                "description": "Most suggestions to return (default 5, clamped to 1-32).",
            },
        },
        "required": ["task"],
        "additionalProperties": False,
    }
    default_limit = 5
    key = "task"


# ---------------------------------------------------------------------------- read_task_output

DEFAULT_LINES = 50
"""Lines returned by ``head`` / ``tail`` when ``lines`` is not given (octos)."""
MAX_LINES = 500
"""Most lines of one read (octos: ``lines`` and ``line_range`` span clamp at 500)."""
MAX_OUTPUT_BYTES = 4096
"""Output cap of one read, in UTF-8 bytes, marker included (octos: 4 KiB)."""
DEFAULT_MAX_MATCHES = 20
MAX_MATCHES = 100
_TRUNCATED = "\n…[truncated]"
_CHUNK = 64 * 1024
_MAX_LINE_SCAN = 64 * 1024
"""Bytes of one line kept for matching and display; the rest of a longer line is skipped."""
_MAX_TAIL_SCAN = 1024 * 1024
"""``tail`` reads at most this many bytes back from the end (octos: the last 1 MiB)."""
_READ_MODES = ("head", "tail", "grep", "line_range", "file")


def _cap(text: str, limit: int = MAX_OUTPUT_BYTES) -> tuple[str, bool]:
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text, False
    room = limit - len(_TRUNCATED.encode("utf-8"))
    return data[:room].decode("utf-8", "ignore") + _TRUNCATED, True


def _iter_lines(fh: BinaryIO) -> Iterator[bytes]:
    """Lines of ``fh`` without their ``\\n``, each cut to :data:`_MAX_LINE_SCAN` bytes,
    read in chunks so a huge line never sits in memory whole."""
    pending = bytearray()
    overflow = False
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            break
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            piece = chunk[start:] if nl < 0 else chunk[start:nl]
            if not overflow:
                pending += piece[: _MAX_LINE_SCAN - len(pending)]
                overflow = len(pending) >= _MAX_LINE_SCAN
            if nl < 0:
                break
            yield bytes(pending)
            pending.clear()
            overflow = False
            start = nl + 1
    if pending:
        yield bytes(pending)


def _decode(line: bytes) -> str:
    return line.decode("utf-8", "replace").rstrip("\r")


def _head(fh: BinaryIO, lines: int) -> str:
    out: list[str] = []
    size = 0
    for raw in _iter_lines(fh):
        out.append(_decode(raw))
        size += len(raw) + 1
        if len(out) >= lines or size > MAX_OUTPUT_BYTES:
            break
    return "\n".join(out)


def _tail(fh: BinaryIO, lines: int) -> str:
    """The last ``lines`` lines, reading backwards in chunks from the end (at most
    :data:`_MAX_TAIL_SCAN` bytes, and no more than needed for the lines or the cap)."""
    end = fh.seek(0, os.SEEK_END)
    if end == 0:
        return ""
    fh.seek(end - 1)
    trailing_newline = fh.read(1) == b"\n"
    stop = end - 1 if trailing_newline else end
    data = b""
    pos = stop
    budget = min(_MAX_TAIL_SCAN, MAX_OUTPUT_BYTES * 4 + _CHUNK)
    while pos > 0 and data.count(b"\n") < lines and stop - pos < budget:
        step = min(_CHUNK, pos)
        pos -= step
        fh.seek(pos)
        data = fh.read(step) + data
    parts = data.split(b"\n")
    if pos > 0 and len(parts) > lines:
        parts = parts[1:]  # first piece may be a partial line
    kept = parts[-lines:]
    text = "\n".join(_decode(p) for p in kept)
    data_bytes = text.encode("utf-8", "replace")
    if len(data_bytes) > MAX_OUTPUT_BYTES:
        # keep the end, which is what tail is for, cut on a character boundary
        room = MAX_OUTPUT_BYTES - len(_TRUNCATED.encode("utf-8"))
        text = "…[truncated]\n" + data_bytes[-(room):].decode("utf-8", "ignore")
    return text


def _grep(fh: BinaryIO, pattern: str, max_matches: int) -> str:
    needle = pattern.encode("utf-8")
    hits: list[str] = []
    for number, raw in enumerate(_iter_lines(fh), start=1):
        if needle in raw:
            hits.append(f"{number}:{_decode(raw)}")
            if len(hits) >= max_matches:
                break
    if not hits:
        return f'(no matches for "{pattern}")'
    return "\n".join(hits)


def _line_range(fh: BinaryIO, start: int, end: int) -> str:
    out: list[str] = []
    size = 0
    for number, raw in enumerate(_iter_lines(fh), start=1):
        if number < start:
            continue
        if number > end:
            break
        out.append(_decode(raw))
        size += len(raw) + 1
        if size > MAX_OUTPUT_BYTES:
            break
    return "\n".join(out)


def _int_arg(mode: JSONObject, key: str) -> int | None:
    return int_arg(mode, key, label=f"mode.{key}")


def _read_stream(fh: BinaryIO, mode: JSONObject) -> str:
    """Apply a ``head`` / ``tail`` / ``grep`` / ``line_range`` mode to an open file.

    Raises:
        ToolError: ``invalid_arguments`` for a bad mode.
    """
    kind = mode.get("kind", "head")
    if kind in ("head", "tail"):
        lines = _int_arg(mode, "lines")
        count = DEFAULT_LINES if lines is None else max(1, min(MAX_LINES, lines))
        return _head(fh, count) if kind == "head" else _tail(fh, count)
    if kind == "grep":
        pattern = mode.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "grep mode needs a non-empty `pattern` string"
            )
        limit = _int_arg(mode, "max_matches")
        count = DEFAULT_MAX_MATCHES if limit is None else max(1, min(MAX_MATCHES, limit))
        return _grep(fh, pattern, count)
    if kind == "line_range":
        start = _int_arg(mode, "start")
        end = _int_arg(mode, "end")
        if start is None or end is None:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "line_range mode needs `start` and `end` (1-based)"
            )
        if start < 1 or end < 1:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "line numbers start at 1")
        if end < start:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, f"end line {end} is before start line {start}"
            )
        if end - start + 1 > MAX_LINES:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"line range {start}-{end} spans {end - start + 1} lines; read at most "
                f"{MAX_LINES} at a time",
            )
        return _line_range(fh, start, end)
    if kind == "file":
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            "file mode cannot be nested in file mode (the inner mode says how to read the file)",
        )
    raise ToolError(
        ErrorKind.INVALID_ARGUMENTS,
        f"unknown mode kind {kind!r}; use one of {', '.join(_READ_MODES)}",
    )


_LINE_MODE_KEYS = frozenset({"kind", "lines", "pattern", "max_matches", "start", "end"})
"""Keys a head / tail / grep / line_range mode may hold (the inner mode of ``file``)."""


class ReadTaskOutputTool(Tool):
    """``read_task_output {task_handle, mode}`` (reference §6.4).

    ``mode`` defaults to ``{"kind": "head", "lines": 50}``. Kinds: ``head`` / ``tail``
    (``lines`` 1–500), ``grep`` (plain substring ``pattern``, ``max_matches`` 1–100, hits
    as ``<line>:<text>``), ``line_range`` (``start``..``end`` inclusive, 1-based, at most
    500 lines) and ``file`` (``path`` of one of the task's recorded output files, read with
    an inner ``mode``, default head 50). Output is at most 4 KiB of UTF-8.

    Errors: ``not_found`` (unknown handle; file mode before the task recorded outputs),
    ``permission_denied`` (the task belongs to another session; a path that is not one of
    the task's output files), ``invalid_arguments`` (a bad mode), and the path kinds of the
    :class:`~octos_tools.workspace.Workspace` for ``file`` mode.
    """

    name = "read_task_output"
    title = "Read background task output"
    description = (
        "Read the output of a background task (the task_handle returned by a spawn-only "
        "tool) in small pieces: mode.kind head/tail (lines 1-500), grep (pattern), "
        "line_range (start, end) or file (path of one of the task's output files, with an "
        "inner mode). At most 4 KiB per read."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "task_handle": {"type": "string", "minLength": 1, "maxLength": 200},
            "mode": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": list(_READ_MODES)},
                    "lines": {"type": "integer", "description": "head/tail: 1-500 (default 50)"},
                    "pattern": {"type": "string", "description": "grep: plain text"},
                    "max_matches": {"type": "integer", "description": "grep: 1-100 (default 20)"},
                    "start": {"type": "integer", "description": "line_range: 1-based"},
                    "end": {"type": "integer", "description": "line_range: inclusive"},
                    "path": {"type": "string", "description": "file: a task output file"},
                    "mode": {
                        "type": "object",
                        "description": "file: how to read it (a non-file mode; default head)",
                    },
                },
                "required": ["kind"],
                "additionalProperties": False,
            },
        },
        "required": ["task_handle"],
        "additionalProperties": False,
    }
    tags = ("gateway",)
    concurrency_class = ConcurrencyClass.SAFE

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        """Read a piece of a task's output (see the class docstring).

        Raises:
            ToolError: as listed in the class docstring.
        """
        registry = _registry_of(ctx)
        handle: str = args["task_handle"]
        record = registry.supervisor.get(handle)
        if record is None:
            raise ToolError(ErrorKind.NOT_FOUND, f"no task with handle {handle!r}")
        if record.session_key is not None and record.session_key != ctx.session_key:
            raise ToolError(
                ErrorKind.PERMISSION_DENIED,
                f"task {handle!r} belongs to another session and cannot be read from this one",
            )
        mode: JSONObject = dict(args.get("mode") or {"kind": "head", "lines": DEFAULT_LINES})
        if mode.get("kind") == "file":
            text = self._read_file(ctx, record, mode)
        else:
            with record.output_path.open("rb") as fh:
                text = _read_stream(fh, mode)
        if not text:
            if not record.terminal:
                text = "(no output yet; the task is still running)"
            elif mode.get("kind") == "line_range":
                text = "(no lines in that range; the output is shorter)"
            else:
                text = "(no output)"
        text, truncated = _cap(text)
        return ToolResult.ok(
            text,
            structured_metadata={
                "task_handle": record.id,
                "status": record.status.value,
                "mode": mode.get("kind", "head"),
                "truncated": truncated,
                "output_files": list(record.output_files),
            },
        )

    def _read_file(self, ctx: ToolContext, record: TaskRecord, mode: JSONObject) -> str:
        workspace = ctx.workspace
        if workspace is None:
            raise ToolError(
                ErrorKind.NOT_CONFIGURED, "file mode needs a workspace and this call has none"
            )
        path = mode.get("path")
        if not isinstance(path, str) or not path:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "file mode needs a `path`")
        if not record.output_files:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                "this task has not recorded any output files (yet); read its log with "
                "head, tail or grep, or wait until it finishes",
            )
        allowed: dict[str, str] = {}
        for declared in record.output_files:
            try:
                allowed[workspace.relpath(declared)] = declared
            except ToolError:
                continue  # an output file outside the workspace is not readable here
        rel = workspace.relpath(path)
        if rel not in allowed:
            raise ToolError(
                ErrorKind.PERMISSION_DENIED,
                f"{path!r} is not one of the task's output files; allowed: "
                f"{', '.join(sorted(allowed)) or '(none inside the workspace)'}",
            )
        inner = mode.get("mode") or {"kind": "head", "lines": DEFAULT_LINES}
        if not isinstance(inner, dict):
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "file mode's inner `mode` is an object")
        unknown = sorted(set(inner) - _LINE_MODE_KEYS)
        if unknown:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"file mode's inner `mode` has unknown field(s): {', '.join(unknown)}",
            )
        with workspace.open_read(rel) as fh:
            return _read_stream(fh, inner)


# ---------------------------------------------------------------------------- registration


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``tool_search``, ``tool_suggest`` and ``read_task_output``.

    ``activate_tools`` is not registered here: :func:`octos_tools.profile.apply_deferral`
    adds it only when something is deferred (reference §2.6).
    """
    del workspace, config  # discovery reads ctx.registry and ctx.workspace per call
    registry.register(ToolSearchTool())
    registry.register(ToolSuggestTool())
    registry.register(ReadTaskOutputTool())
