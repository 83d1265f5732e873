"""``glob``: workspace paths matching a glob pattern, under the walk rule of ``grep``."""

from __future__ import annotations

import os
import stat as stat_mod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field

from ...errors import ErrorKind, PathError, ToolError
from ...tool_types import ToolResult
from ...typed import ToolArgs
from ...workspace import text as textcodec
from ._budget import Budget
from ._globmatch import GlobMatcher, State, components, glob_patterns
from ._search_tool import SearchTool, check_nul, not_entered_note
from ._walk import Found, walk

if TYPE_CHECKING:
    from ...context import ToolContext
    from ...workspace import Workspace

__all__ = ["GlobTool"]

_MAX_LINKS = 50


class GlobTool(SearchTool):
    """``glob {pattern, limit=100}``: workspace paths matching a glob pattern.

    ``*``, ``?``, ``[...]`` within a component, ``**`` across directories, ``{a,b}``
    alternatives; case-sensitive; hidden files included. Absolute patterns and ``..``
    components are refused (``invalid_arguments``). The files are those ``grep`` searches
    (:mod:`._rules`: ``.gitignore`` honoured, ``.git`` never entered, internal files
    hidden, virtual environments and ``node_modules`` not entered unless the pattern's
    literal leading folders name them: metadata ``not_entered``); symbolic links are named,
    never followed: a link to a folder that the pattern would enter is named with its
    target (metadata ``links_not_followed``). A name equal to a pattern component matches
    it literally (``app/[id]/page.tsx``, ``{a,b}/x.ts``). Results come in sorted depth-first
    order; directories end with ``/``.
    Matching is ``O(path components × pattern components)`` per entry, whatever the
    number of ``**``.

    Source: octos ``crates/octos-agent/src/tools/glob_tool.rs`` (scoped variant), with
    grep's ignore rules added.
    """

    name = "glob"
    title = "Find files by pattern"
    description = (
        "Find workspace files by path glob, e.g. 'src/**/*.py'. Honours .gitignore; folders "
        "end with '/'."
    )

    class Args(ToolArgs):
        pattern: str = Field(description="Glob, relative to the workspace root.")
        limit: int = Field(100, ge=1, description="Most paths to return.")

    async def run(self, args: GlobTool.Args, ctx: ToolContext | None) -> ToolResult:
        ws = self.workspace_for(ctx)
        pattern, limit = args.pattern, args.limit
        check_nul(pattern, "pattern")
        if not pattern.strip():
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "pattern is empty")
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"glob pattern {pattern!r} is absolute or contains '..'; use a pattern "
                "relative to the workspace root",
            )
        patterns = [components(p) for p in glob_patterns(pattern)]
        if any(".." in comps for comps in patterns):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, f"glob pattern {pattern!r} expands to a '..' path"
            )
        patterns = [p for p in patterns if p]
        matcher = GlobMatcher(patterns)
        explicit = _literal_dirs(patterns)
        from ..._progress import heartbeat

        async with heartbeat(ctx, f"matching {pattern[:60]!r}"):
            found = await self._bounded(lambda b: _glob(ws, matcher, limit, b, explicit))
        results, more, skipped = found.paths, found.more, found.skipped
        note = ""
        if skipped:
            names = ", ".join(f"{textcodec.display(p)}/ ({r})" for p, r in skipped[:5])
            extra = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
            note = f"\n\n[folders not listed: {names}{extra}]"
        meta: dict[str, Any] = {"pattern": pattern, "count": len(results)}
        if skipped:
            meta["skipped"] = [{"path": textcodec.display(p), "reason": r} for p, r in skipped[:50]]
        if found.not_entered:
            meta["not_entered"] = [
                {"path": textcodec.display(p), "reason": r} for p, r in found.not_entered[:50]
            ]
            note += not_entered_note(found.not_entered, "a pattern starting '{}/' searches it")
        if found.links:
            meta["links_not_followed"] = [
                {"path": textcodec.display(p), "reason": r} for p, r in found.links
            ]
            names = "; ".join(f"{textcodec.display(p)} ({r})" for p, r in found.links[:5])
            extra = f" and {len(found.links) - 5} more" if len(found.links) > 5 else ""
            note += f"\n\n[symbolic links to folders, not followed: {names}{extra}]"
        if not results:
            return ToolResult.ok(
                f"No files found matching pattern: {pattern}{note}", structured_metadata=meta
            )
        head = f"Found {len(results)} path(s)" + (
            f" (limited to {limit}; more exist)" if more else ""
        )
        meta["truncated"] = more
        meta["paths"] = [textcodec.display(r) for r in results]
        return ToolResult.ok(
            head + ":\n" + "\n".join(textcodec.display(r) for r in results) + note,
            structured_metadata=meta,
        )


@dataclass(slots=True)
class _Found:
    paths: list[str]
    more: bool
    skipped: list[tuple[str, str]] = field(default_factory=list)
    not_entered: list[tuple[str, str]] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)


def _link_reason(ws: Workspace, found: Found) -> str | None:
    """Why the symbolic link ``found`` is not searched, when it names a folder: its
    target inside the workspace (a pattern through it finds nothing, one through the
    target does), or that it leads outside; ``None`` for a link to anything else."""
    try:
        if not stat_mod.S_ISDIR(os.stat(found.name, dir_fd=found.dir_fd).st_mode):
            return None
        target = os.readlink(found.name, dir_fd=found.dir_fd)
    except (OSError, ValueError):
        return None
    parent = os.path.dirname(found.rel)
    real = os.path.realpath(os.path.join(ws.root, parent, target))
    root = os.path.realpath(ws.root)
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        return "a link to a folder outside the workspace"
    inside = os.path.relpath(real, root).replace(os.sep, "/")
    return f"a link to {textcodec.display(inside)}/: use that path"


def _literal_dirs(patterns: list[list[str]]) -> frozenset[str]:
    """The folders the patterns name by their literal leading components (``.venv`` and
    ``.venv/lib`` for ``.venv/lib/**/*.py``): entered even when not entered by default."""
    out: set[str] = set()
    for comps in patterns:
        rel = ""
        for comp in comps[:-1]:
            if any(c in comp for c in "*?[\\"):
                break
            rel = f"{rel}/{comp}" if rel else comp
            out.add(rel)
    return frozenset(out)


def _glob(
    ws: Workspace,
    matcher: GlobMatcher,
    limit: int,
    budget: Budget,
    explicit: frozenset[str] = frozenset(),
) -> _Found:
    """Paths matching ``matcher`` in walk order (the first ``limit``), whether more exist,
    the folders that could not be read and those not entered by default (except
    ``explicit`` ones)."""
    out = _Found([], False)
    states: dict[str, State] = {"": matcher.start()}
    if not matcher.alive(states[""]):
        return out

    def descend(rel: str) -> bool:
        return rel in states

    def on_error(rel: str, exc: OSError) -> None:
        out.skipped.append((rel, exc.strerror or "cannot be read"))

    try:
        for found in walk(
            ws,
            ".",
            budget,
            descend=descend,
            on_error=on_error,
            on_skip=lambda rel, why: out.not_entered.append((rel, why)),
            explicit=explicit,
        ):
            parent = found.rel[: -len(found.name) - 1] if "/" in found.rel else ""
            here = matcher.step(states[parent], found.name)
            if not here:
                continue
            if found.kind == "symlink" and matcher.alive(here):
                why = _link_reason(ws, found)
                if why is not None and len(out.links) < _MAX_LINKS:
                    out.links.append((found.rel, why))
            if found.kind == "dir" and matcher.alive(here):
                states[found.rel] = here
            if matcher.accepts(here):
                if len(out.paths) >= limit:
                    out.more = True
                    return out
                out.paths.append(found.rel + ("/" if found.kind == "dir" else ""))
    except OSError as exc:
        raise PathError(ErrorKind.NOT_FOUND, f"the workspace root cannot be read: {exc}") from None
    return out
