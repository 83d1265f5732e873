"""``grep``: regular-expression search of file contents (rg engine, Python fallback)."""

from __future__ import annotations

import dataclasses
import stat as stat_mod
from typing import TYPE_CHECKING, Any

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from ...errors import ErrorKind, PathError, ToolError
from ...tool_types import ToolResult
from ...typed import ToolArgs
from ...workspace import text as textcodec
from ._budget import Budget
from ._hits import GrepQuery, GrepResult
from ._pygrep import grep_python
from ._rg import find_rg, grep_rg
from ._rules import hidden_prefix, is_internal_path
from ._search_tool import SearchTool, check_nul, not_entered_note
from ._walk import skipped_folders

if TYPE_CHECKING:
    from ...context import ToolContext
    from ...workspace import Workspace

__all__ = ["MAX_GREP_LINE_CHARS", "GrepTool", "format_grep"]

MAX_GREP_LINE_CHARS = 300
"""grep cuts matched lines longer than this (characters)."""
_MAX_META_PATHS = 50


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class GrepTool(SearchTool):
    """``grep {pattern, path?, file_pattern?, limit=50, context=0, ignore_case=false}``.

    Regular-expression search of file contents, line by line, over the files ``glob``
    lists (:mod:`._rules`: ``.gitignore`` honoured, hidden files searched, ``.git`` and
    internal files skipped, symlinks never followed); binary files skipped. Results are
    sorted by path; with more than ``limit`` matches, the first ``limit`` of those found
    are shown (which ones may vary between runs: the search is parallel and stops early).
    ``file_pattern`` is a glob on the file *name* (``*.py``, ``*.{ts,tsx}``). Paths in the
    output are workspace-relative. An invalid regex is ``invalid_arguments``. Uses ``rg``
    when available (Rust regex syntax), else Python's :mod:`re` syntax; what rg cannot
    open for the length of its path (over ``PATH_MAX``, 4,096 bytes) is searched by the
    Python engine, what cannot be read at all is named in the output. The call stops at
    its time limit (``timeout``), rg and the Python engine's matching process with it.

    Virtual environments and ``node_modules`` folders are not entered unless ``path`` is
    inside one (:mod:`._rules`).

    Metadata: ``matches``, ``files``, ``truncated``, ``engine``, ``binary_skipped`` (up to
    50 paths) and, when some were, ``skipped`` and ``not_entered`` (folders not entered by
    default, within two levels of ``path``; up to 50 ``{"path", "reason"}`` each).

    Source: octos ``crates/octos-agent/src/tools/grep_tool.rs`` (arguments and output
    format); the engines are ours.
    """

    name = "grep"
    title = "Search file contents"
    description = "Regex search of file contents; honours .gitignore, skips binary files."

    class Args(ToolArgs):
        pattern: str = Field(description="Regular expression.")
        path: str = Field(".", description="File or directory.", json_schema_extra=_no_default)
        file_pattern: str | SkipJsonSchema[None] = Field(
            None, description="Glob on file names.", json_schema_extra=_no_default
        )
        limit: int = Field(50, ge=1, description="Most matches.")
        context: int = Field(
            0, ge=0, le=50, json_schema_extra=_no_default, description="Lines around each."
        )
        ignore_case: bool = Field(
            False, json_schema_extra=_no_default, description="Case-insensitive."
        )

    #: Force an engine: ``"rg"``, ``"python"`` or ``None`` (rg when found).
    engine: str | None = None

    async def run(self, args: GrepTool.Args, ctx: ToolContext | None) -> ToolResult:
        ws = self.workspace_for(ctx)
        check_nul(args.pattern, "pattern")
        path = args.path or "."
        file_pattern = args.file_pattern or None
        if file_pattern is not None:
            check_nul(file_pattern, "file_pattern")
            if file_pattern.startswith("/") or ".." in file_pattern or "/" in file_pattern:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"file_pattern {file_pattern!r} must be a glob on file names (no '/', "
                    "no '..'); use path to choose a directory",
                )
            if file_pattern.startswith("!"):
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    "file_pattern cannot start with '!'; give the names to include",
                )
        q = GrepQuery(
            pattern=args.pattern,
            ignore_case=args.ignore_case,
            context=args.context,
            limit=args.limit,
            file_pattern=file_pattern,
        )
        from ..._progress import heartbeat

        async with heartbeat(ctx, f"searching {path} for {args.pattern[:60]!r}"):
            res = await self._bounded(lambda b: self._search(ws, path, q, b))
        meta: dict[str, Any] = {
            "matches": res.matches,
            "files": len(res.files),
            "truncated": res.more,
            "engine": res.engine,
            "binary_skipped": [textcodec.display(p) for p in res.binary_skipped[:_MAX_META_PATHS]],
        }
        if res.skipped:
            meta["skipped"] = [
                {"path": textcodec.display(p), "reason": r}
                for p, r in res.skipped[:_MAX_META_PATHS]
            ]
        text = format_grep(res, q)
        if res.ignored_path is not None:
            meta["ignored_path"] = textcodec.display(res.ignored_path)
            text += (
                f"\n\n[{textcodec.display(res.ignored_path)}/ is ignored (.gitignore); "
                "searched because path names it]"
            )
        if res.not_entered:
            meta["not_entered"] = [
                {"path": textcodec.display(p), "reason": r}
                for p, r in res.not_entered[:_MAX_META_PATHS]
            ]
            text += not_entered_note(res.not_entered, "pass path='{}' to search it")
        return ToolResult.ok(text, structured_metadata=meta)

    def _search(self, ws: Workspace, path: str, q: GrepQuery, budget: Budget) -> GrepResult:
        st = ws.stat(path)  # the user's path: "file.txt/" is not_a_directory
        rel = ws.relpath(path)
        if stat_mod.S_ISLNK(st.st_mode):
            raise PathError(
                ErrorKind.SYMLINK_REFUSED, f"{rel} is a symbolic link; grep does not follow it"
            )
        is_file = stat_mod.S_ISREG(st.st_mode)
        if not is_file and not stat_mod.S_ISDIR(st.st_mode):
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, f"{rel} is not a file or directory")
        if is_file:
            try:
                with ws.open_read(rel) as head:
                    sample = head.read(textcodec.BINARY_SNIFF_BYTES)
            except ToolError:
                sample = b""
            if textcodec.is_binary(sample):
                return GrepResult([], 0, False, [rel], "none")
        engine = self.engine
        rg = find_rg() if engine in (None, "rg") else None
        if engine == "rg" and rg is None:
            raise ToolError(ErrorKind.UNAVAILABLE, "the rg binary was not found")
        if is_internal_path(rel):  # octos-tools' own files are never searched
            return GrepResult([], 0, False, [], "none")
        hidden = None if is_file else hidden_prefix(ws, rel)
        if hidden is not None:  # ripgrep's rule: a path named explicitly is searched
            q = dataclasses.replace(q, rules_from_above=False)
        try:
            not_entered = (
                [] if is_file else skipped_folders(ws, rel, budget, rules_from_above=not hidden)
            )
        except OSError:
            not_entered = []  # the engines report the folder's own error
        res = None
        if rg is not None:
            venvs = [p for p, why in not_entered if why != "node_modules"]
            try:
                res = grep_rg(rg, ws, rel, is_file, q, budget, venvs)
            except OSError:  # rg present but cannot start: the Python engine answers
                if engine == "rg":
                    raise
        if res is None:
            res = grep_python(ws, rel, is_file, q, budget)
        res.not_entered = not_entered
        res.ignored_path = hidden
        return res


def format_grep(res: GrepResult, q: GrepQuery) -> str:
    """The text the model reads: ``path:line: text`` per match, or context blocks."""
    if not res.matches:
        text = f"No matches found for pattern: {q.pattern}"
    else:
        head = f"Found {res.matches} match(es)"
        if res.more:
            head += f" (limited to {q.limit})"
        out: list[str] = []
        for hits in res.files:
            shown = textcodec.display(hits.path)
            if not q.context:
                for no, (line, _) in hits.lines.items():
                    out.append(f"{shown}:{no}: {_cut(line, shown, no)}")
            else:
                block = [f"{shown}:"]
                prev = None
                for no, (line, is_match) in hits.lines.items():
                    if prev is not None and no > prev + 1:
                        block.append("  ----")
                    block.append(f"{'>' if is_match else ' '} {no:>4}│ {_cut(line, shown, no)}")
                    prev = no
                out.append("\n".join(block))
        text = head + ":\n\n" + "\n".join(out)
    if res.skipped:
        names = ", ".join(f"{textcodec.display(p)} ({r})" for p, r in res.skipped[:5])
        more = f" and {len(res.skipped) - 5} more" if len(res.skipped) > 5 else ""
        text += f"\n\n[not searched: {names}{more}]"
    return text


def _cut(text: str, path: str, no: int) -> str:
    """``text`` (a line, its indentation kept) cut after :data:`MAX_GREP_LINE_CHARS`
    characters, with its full length and the ``read_file`` call that shows the rest (the
    marker of ``read_file``'s own cut lines)."""
    if len(text) <= MAX_GREP_LINE_CHARS:
        return text
    return text[:MAX_GREP_LINE_CHARS] + (
        f" … [line {no} cut: it is {len(text):,} characters long; read on with read_file "
        f"path={path!r}, start_line={no}, end_line={no}, "
        f"start_column={MAX_GREP_LINE_CHARS + 1}]"
    )
