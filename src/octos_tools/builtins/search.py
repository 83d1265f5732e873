"""Search tools: ``glob``, ``grep``, ``list_dir`` (reference §1.2; tags ``search``, ``code``).

None of them follows a symbolic link: ``list_dir`` shows links as links, ``glob`` and the
walks of ``grep`` never descend through one, and every result is a path the
:class:`~octos_tools.workspace.Workspace` reached component by component from the root.

``grep`` runs the ``rg`` binary of the ``ripgrep==14.1.0`` wheel (found next to
``sys.executable``, then on ``PATH``) with ``--json``; when it is missing a pure-Python
search gives the same results: same files (``.gitignore`` honoured, hidden files searched,
``.git`` skipped, binary files skipped, UTF-16/32 with BOM transcoded), same order (sorted by
path), same lines.
"""

from __future__ import annotations

import base64
import contextlib
import fnmatch
import json
import os
import re
import shutil
import stat as stat_mod
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO

from ..errors import ErrorKind, PathError, ToolError
from ..tool import ConcurrencyClass, JSONObject, ToolResult
from ..workspace import Entry, Workspace
from ..workspace import text as textcodec
from ._base import int_arg, str_arg
from .files import FileTool

if TYPE_CHECKING:
    from ..config import Config
    from ..context import ToolContext
    from ..registry import ToolRegistry

__all__ = [
    "GlobTool",
    "GrepTool",
    "ListDirTool",
    "expand_braces",
    "find_rg",
    "glob_match",
    "register",
]

MAX_LIST_ENTRIES = 1000
"""list_dir shows at most this many entries and says how many were left out."""
MAX_GREP_LINE_CHARS = 300
"""grep cuts matched lines longer than this (characters)."""
_FALLBACK_MAX_FILE_BYTES = 64 * 1024 * 1024


def _check_nul(value: str, what: str) -> None:
    if "\x00" in value:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"{what} contains a NUL byte (\\x00), which no path or pattern can hold",
        )


# ---------------------------------------------------------------------- list_dir


_KIND_TAG = {"dir": "[dir] ", "file": "[file]", "symlink": "[link]", "other": "[other]"}
_KIND_ORDER = {"dir": 0, "file": 1, "symlink": 2, "other": 3}


class ListDirTool(FileTool):
    """``list_dir {path}``: a directory's entries, directories first, then files, links.

    Each group is sorted by name (byte order). Symbolic links are shown as links and never
    followed; a symlinked directory argument is ``symlink_refused``. Sizes are in bytes.

    Source: octos list_dir (reference §1.2), which classifies links by target; we do not.
    """

    name = "list_dir"
    title = "List directory"
    tags = ("search", "code")
    description = (
        "List the entries of a workspace directory: subdirectories, files (with sizes) and "
        "symbolic links (shown, never followed)."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "Directory path, relative to the workspace (default '.', the root).",
            }
        },
        "required": [],
        "additionalProperties": False,
    }
    concurrency_class = ConcurrencyClass.SAFE

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        ws = self.workspace_for(ctx)
        path = str_arg(args, "path", default=".") or "."
        rel = ws.relpath(path)
        entries = await self._in_thread(lambda: ws.list_dir(path))
        if not entries:
            return ToolResult.ok(
                f"Directory {rel} is empty.", structured_metadata={"path": rel, "entries": 0}
            )
        ordered = sorted(entries, key=lambda e: (_KIND_ORDER[e.kind], os.fsencode(e.name)))
        lines = [f"{len(entries)} entries in {rel}:"]
        for e in ordered[:MAX_LIST_ENTRIES]:
            lines.append(_entry_line(e))
        if len(ordered) > MAX_LIST_ENTRIES:
            lines.append(f"… and {len(ordered) - MAX_LIST_ENTRIES:,} more entries not shown")
        counts = {k: sum(1 for e in entries if e.kind == k) for k in _KIND_ORDER}
        return ToolResult.ok(
            "\n".join(lines),
            structured_metadata={"path": rel, "entries": len(entries), "counts": counts},
        )


def _entry_line(e: Entry) -> str:
    name = textcodec.display(e.name)
    if e.kind == "dir":
        return f"[dir]  {name}/"
    if e.kind == "file":
        return f"[file] {name}  ({e.size:,} bytes)"
    if e.kind == "symlink":
        return f"[link] {name}  (symbolic link, not followed)"
    return f"[other] {name}"


# ---------------------------------------------------------------------- glob


def expand_braces(pattern: str, *, limit: int = 256) -> list[str]:
    """Expand ``{a,b}`` alternatives (nested allowed): ``*.{ts,tsx}`` → ``*.ts``, ``*.tsx``.

    A brace without a comma at its level is kept literally. At most ``limit`` patterns.
    """
    depth = 0
    start = -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                body = pattern[start + 1 : i]
                alts = _split_top(body)
                if len(alts) < 2:
                    continue
                out: list[str] = []
                for alt in alts:
                    for tail in expand_braces(
                        pattern[:start] + alt + pattern[i + 1 :], limit=limit
                    ):
                        if tail not in out:
                            out.append(tail)
                        if len(out) >= limit:
                            return out
                return out
    return [pattern]


def _split_top(body: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    cur = ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        cur += ch
    parts.append(cur)
    return parts


def _components(pattern: str) -> list[str]:
    comps: list[str] = []
    for c in pattern.split("/"):
        if c in ("", "."):
            continue
        if c == "**" and comps and comps[-1] == "**":
            continue
        comps.append(c)
    return comps


def glob_match(parts: Sequence[str], comps: Sequence[str]) -> bool:
    """Whether path components ``parts`` match pattern components ``comps``.

    ``**`` matches zero or more components; other components use :func:`fnmatch.fnmatchcase`
    (``*`` and ``?`` never cross ``/``; hidden names are matched by ``*``).
    """
    if not comps:
        return not parts
    head = comps[0]
    if head == "**":
        # A trailing "**" matches what is inside, not the directory itself (as git does).
        first = 1 if len(comps) == 1 else 0
        return any(glob_match(parts[i:], comps[1:]) for i in range(first, len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], head) and glob_match(parts[1:], comps[1:])


def _could_contain(parts: Sequence[str], comps: Sequence[str]) -> bool:
    """Whether a directory ``parts`` may hold a match of ``comps`` (for pruning)."""
    for i, part in enumerate(parts):
        if i >= len(comps):
            return False
        if comps[i] == "**":
            return True
        if not fnmatch.fnmatchcase(part, comps[i]):
            return False
    return len(comps) > len(parts)


_MAGIC = re.compile(r"[*?\[]")


class GlobTool(FileTool):
    """``glob {pattern, limit=100}``: workspace paths matching a glob pattern.

    ``*``, ``?``, ``[...]`` within a component, ``**`` across directories, ``{a,b}``
    alternatives; case-sensitive; hidden files included. Absolute patterns and ``..``
    components are refused (``invalid_arguments``). The walk goes through the workspace
    (no symlink followed: a link may be *named* as a result, nothing behind it is listed)
    and results come in sorted depth-first order; directories end with ``/``.

    Source: octos glob (reference §1.2, scoped variant).
    """

    name = "glob"
    title = "Find files by pattern"
    tags = ("search", "code")
    description = (
        "Find workspace files whose path matches a glob pattern, e.g. '**/*.py' or "
        "'src/*.{ts,tsx}'. Patterns are relative to the workspace root."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Glob pattern, workspace-relative."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": "Most results to return (default 100).",
                "default": 100,
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }
    concurrency_class = ConcurrencyClass.SAFE

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        ws = self.workspace_for(ctx)
        pattern = str_arg(args, "pattern")
        limit = int_arg(args, "limit") or 100
        limit = max(1, limit)
        _check_nul(pattern, "pattern")
        if not pattern.strip():
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "pattern is empty")
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"glob pattern {pattern!r} is absolute or contains '..'; use a pattern "
                "relative to the workspace root",
            )
        patterns = [_components(p) for p in expand_braces(pattern)]
        if any(".." in comps for comps in patterns):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, f"glob pattern {pattern!r} expands to a '..' path"
            )
        results, more = await self._in_thread(lambda: _glob(ws, patterns, limit))
        if not results:
            return ToolResult.ok(
                f"No files found matching pattern: {pattern}",
                structured_metadata={"pattern": pattern, "count": 0},
            )
        head = f"Found {len(results)} path(s)" + (
            f" (limited to {limit}; more exist)" if more else ""
        )
        return ToolResult.ok(
            head + ":\n" + "\n".join(textcodec.display(r) for r in results),
            structured_metadata={
                "pattern": pattern,
                "count": len(results),
                "truncated": more,
                "paths": results,
            },
        )


def _glob(ws: Workspace, patterns: list[list[str]], limit: int) -> tuple[list[str], bool]:
    results: list[str] = []
    seen: set[str] = set()

    def emit(rel: str, entry_kind: str) -> bool:
        # Results are checked again after expansion: lexically inside the root.
        shown = ws.relpath(rel) + ("/" if entry_kind == "dir" else "")
        if shown in seen:
            return True
        seen.add(shown)
        results.append(shown)
        return len(results) <= limit

    literal = [p for p in patterns if not any(_MAGIC.search(c) for c in p)]
    magic = [p for p in patterns if p not in literal]
    for comps in literal:
        rel = "/".join(comps)
        if not rel:
            continue
        try:
            st_kind = ws.stat(rel)
        except PathError:
            continue
        kind = "dir" if stat_mod.S_ISDIR(st_kind.st_mode) else "file"
        if not emit(rel, kind):
            return results[:limit], True
    if magic:

        def descend(rel: str, _e: Entry) -> bool:
            parts = rel.split("/")
            return any(_could_contain(parts, comps) for comps in magic)

        for rel, entry in ws.walk(".", descend=descend):
            parts = rel.split("/")
            if any(glob_match(parts, comps) for comps in magic) and not emit(rel, entry.kind):
                return results[:limit], True
    return results, False


# ---------------------------------------------------------------------- grep


def find_rg() -> str | None:
    """Path of the ``rg`` binary: next to ``sys.executable`` (the venv's ``bin``), then
    ``PATH``; ``None`` if neither has one. ``OCTOS_TOOLS_NO_RG=1`` forces ``None``."""
    if os.environ.get("OCTOS_TOOLS_NO_RG") == "1":
        return None
    exe = "rg.exe" if os.name == "nt" else "rg"
    beside = os.path.join(os.path.dirname(sys.executable), exe)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which(exe)


@dataclass
class _FileHits:
    """Lines of one file to show: ``{line_number: (text, is_match)}``."""

    path: str
    lines: dict[int, tuple[str, bool]] = field(default_factory=dict)


@dataclass
class _GrepResult:
    files: list[_FileHits]
    matches: int
    more: bool
    binary_skipped: list[str]
    engine: str


@dataclass(frozen=True)
class _GrepQuery:
    pattern: str
    ignore_case: bool
    context: int
    limit: int
    file_pattern: str | None


def _trim_context(hits: _FileHits, context: int) -> None:
    """Keep only context lines within ``context`` lines of a kept match."""
    match_nos = [n for n, (_, m) in hits.lines.items() if m]
    keep: set[int] = set()
    for n in match_nos:
        keep.update(range(n - context, n + context + 1))
    hits.lines = {n: v for n, v in sorted(hits.lines.items()) if n in keep}


def _name_ok(name: str, patterns: list[str] | None) -> bool:
    return patterns is None or any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _rg_text(obj: JSONObject) -> str:
    if "text" in obj:
        return str(obj["text"])
    raw = base64.b64decode(obj.get("bytes", ""))
    return textcodec.display(raw.decode("utf-8", "surrogateescape"))


def _grep_rg(rg: str, ws: Workspace, target: str, is_file: bool, q: _GrepQuery) -> _GrepResult:
    """Run ``rg --json`` from a descriptor of the workspace root (``fchdir``)."""
    cmd = [
        rg,
        "--json",
        "--no-config",
        "--sort",
        "path",
        "--hidden",
        "--no-follow",
        "--no-require-git",
        "--no-ignore-dot",
        "--no-ignore-global",
        "--no-ignore-exclude",
        "--no-ignore-parent",
        "--glob",
        "!.git",
        "--no-messages",
    ]
    if q.ignore_case:
        cmd.append("--ignore-case")
    else:
        cmd.append("--case-sensitive")
    if q.context:
        cmd += ["--context", str(q.context)]
    for pat in expand_braces(q.file_pattern) if q.file_pattern else []:
        cmd += ["--glob", pat]
    ignore_file = None
    if not is_file and target != ".":
        rules = _ancestor_ignore_rules(ws, target)
        if rules:
            ignore_file = tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", suffix=".gitignore", prefix="octos-grep-"
            )
            ignore_file.write("\n".join(rules) + "\n")
            ignore_file.flush()
            cmd += ["--ignore-file", ignore_file.name]
    cmd += ["--regexp", q.pattern]
    stdin_fh: BinaryIO | None = None
    if is_file:
        # Search the file through a no-follow descriptor on stdin: no path is re-resolved.
        stdin_fh = ws.open_read(target)
        cmd.append("-")
    else:
        cmd += ["--", target if target != "." else "./"]
    try:
        return _run_rg(cmd, ws, target, is_file, q, stdin_fh)
    finally:
        if ignore_file is not None:
            ignore_file.close()


def _ancestor_ignore_rules(ws: Workspace, target: str) -> list[str]:
    """The ``.gitignore`` rules of the directories above ``target`` (root included),
    rewritten relative to the root, for ``rg --ignore-file`` (rg runs with
    ``--no-ignore-parent`` so that it never reads anything above the workspace)."""
    parts = target.split("/")
    out: list[str] = []
    for i in range(len(parts)):
        d = "/".join(parts[:i])
        path = f"{d}/.gitignore" if d else ".gitignore"
        try:
            data = ws.read_bytes(path, max_bytes=1_000_000)
        except ToolError:
            continue
        for line in data.decode("utf-8", "replace").splitlines():
            line = line.rstrip("\r")
            if not line.strip() or line.startswith("#"):
                continue
            neg = line.startswith("!")
            body = line[1:] if neg else line
            if not d:
                out.append(line)
                continue
            trail = "/" if body.endswith("/") else ""
            core = body.rstrip("/")
            if "/" in core:
                rooted = f"/{d}/{core.lstrip('/')}{trail}"
            else:
                rooted = f"/{d}/**/{core}{trail}"
            out.append(("!" if neg else "") + rooted)
    return out


def _run_rg(
    cmd: list[str],
    ws: Workspace,
    target: str,
    is_file: bool,
    q: _GrepQuery,
    stdin_fh: BinaryIO | None,
) -> _GrepResult:
    root_fd = os.open(ws.root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0))
    files: list[_FileHits] = []
    by_path: dict[str, _FileHits] = {}
    matches = 0
    more = False
    binary: list[str] = []
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=stdin_fh if stdin_fh is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: os.fchdir(root_fd),  # only fchdir: async-signal-safe
        )
    finally:
        os.close(root_fd)
        if stdin_fh is not None:
            stdin_fh.close()
    assert proc.stdout is not None
    try:
        for raw in proc.stdout:
            msg = json.loads(raw)
            kind = msg.get("type")
            data = msg.get("data", {})
            if kind not in ("match", "context", "end"):
                continue
            path_obj = data.get("path")
            rel = target if is_file else _rg_path(path_obj, target)
            if kind == "end":
                if data.get("binary_offset") is not None and rel not in binary:
                    binary.append(rel)
                continue
            if kind == "match":
                if matches >= q.limit:
                    more = True
                    break
                matches += 1
            hits = by_path.get(rel)
            if hits is None:
                hits = by_path[rel] = _FileHits(rel)
                files.append(hits)
            text = _rg_text(data.get("lines", {})).rstrip("\n").rstrip("\r")
            hits.lines[int(data["line_number"])] = (text, kind == "match")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        code = proc.wait()
    if code == 2 and not files and not more:
        if "regex" in err.lower() or "parse" in err.lower():
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"invalid regular expression {q.pattern!r}: {_first_lines(err)}",
            )
        if "glob" in err.lower():
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"invalid file_pattern {q.file_pattern!r}: {_first_lines(err)}",
            )
    # rg walks by path names. Report only lines that the workspace itself (no-follow, from
    # the root descriptor) finds in the file: a directory swapped for a link while rg
    # walked can make rg read outside, but such lines never reach the output.
    kept = [h for h in files if is_file or _verified(ws, h)]
    if len(kept) != len(files):
        matches = sum(sum(1 for _, m in h.lines.values() if m) for h in kept)
    for hits in kept:
        _trim_context(hits, q.context)
    return _GrepResult(kept, matches, more, binary, "rg")


def _first_lines(text: str, n: int = 4) -> str:
    return " ".join(x.strip() for x in text.strip().splitlines()[:n])[:400]


def _rg_path(path_obj: JSONObject | None, target: str) -> str:
    text = _rg_text(path_obj or {})
    rel = text[2:] if text.startswith("./") else text
    return rel


def _verified(ws: Workspace, hits: _FileHits) -> bool:
    """Whether every reported line of ``hits`` is in the file as the workspace reads it."""
    wanted = sorted(hits.lines)
    if not wanted:
        return True
    try:
        with ws.open_read(hits.path) as fh:
            head = fh.read(4)
            if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16/32: rg transcodes
                data = head + fh.read(_FALLBACK_MAX_FILE_BYTES)
                text = textcodec.decode(data).text
                lines = text.split("\n")
                got = {n: lines[n - 1] if n <= len(lines) else None for n in wanted}
            else:
                got = _lines_by_number(fh, head, wanted)
    except ToolError:
        return False
    for n in wanted:
        line = got.get(n)
        if line is None or textcodec.display(line.rstrip("\r")) != hits.lines[n][0]:
            return False
    return True


def _lines_by_number(fh: BinaryIO, head: bytes, wanted: list[int]) -> dict[int, str | None]:
    """Lines ``wanted`` (1-based, split on LF only, like rg) of a byte stream."""
    need = set(wanted)
    last = wanted[-1]
    out: dict[int, str | None] = {}
    lineno = 1
    buf = head
    while True:
        chunk = fh.read(1 << 20)
        buf += chunk
        parts = buf.split(b"\n")
        buf = parts.pop() if chunk else b""
        for raw in parts:
            if lineno in need:
                out[lineno] = raw.decode("utf-8", "surrogateescape")
            lineno += 1
            if lineno > last:
                return out
        if not chunk:
            if buf and lineno in need:
                out[lineno] = buf.decode("utf-8", "surrogateescape")
            return out


# ------------------------------------------------------------ pure-Python fallback


@dataclass
class _IgnoreRule:
    base: str  # directory of the .gitignore, workspace-relative ("" for root)
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool


def _gitignore_regex(pat: str) -> str:
    """Translate one gitignore glob (no leading ``!``/``/``, no trailing ``/``) to a regex."""
    out = ""
    i = 0
    n = len(pat)
    while i < n:
        c = pat[i]
        if c == "*":
            if pat[i : i + 3] == "**/":
                out += "(?:.*/)?"
                i += 3
                continue
            if pat[i : i + 2] == "**":
                out += ".*"
                i += 2
                continue
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            j = pat.find("]", i + 2)
            if j < 0:
                out += re.escape(c)
            else:
                body = pat[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out += "[" + body.replace("\\", "\\\\") + "]"
                i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            out += re.escape(pat[i])
        else:
            out += re.escape(c)
        i += 1
    return out


def _parse_gitignore(base: str, text: str) -> list[_IgnoreRule]:
    rules: list[_IgnoreRule] = []
    for line in text.splitlines():
        line = line.rstrip("\r")
        if not line or line.startswith("#"):
            continue
        stripped = line.rstrip(" ")
        if stripped.endswith("\\"):
            stripped = line  # escaped trailing space kept
        negate = stripped.startswith("!")
        if negate:
            stripped = stripped[1:]
        elif stripped.startswith("\\!") or stripped.startswith("\\#"):
            stripped = stripped[1:]
        dir_only = stripped.endswith("/")
        stripped = stripped.rstrip("/")
        if not stripped:
            continue
        anchored = "/" in stripped
        stripped = stripped.lstrip("/")
        regex = re.compile(_gitignore_regex(stripped) + r"\Z", re.DOTALL)
        rules.append(_IgnoreRule(base, regex, negate, dir_only, anchored))
    return rules


def _ignored(rules: list[_IgnoreRule], rel: str, is_dir: bool) -> bool:
    """gitignore verdict for ``rel``: the last matching rule wins."""
    verdict = False
    name = rel.rsplit("/", 1)[-1]
    for r in rules:
        if r.dir_only and not is_dir:
            continue
        if r.base:
            if not rel.startswith(r.base + "/"):
                continue
            sub = rel[len(r.base) + 1 :]
        else:
            sub = rel
        subject = sub if r.anchored else name
        if r.regex.match(subject):
            verdict = not r.negate
    return verdict


def _compile(q: _GrepQuery) -> re.Pattern[str]:
    try:
        return re.compile(q.pattern, re.IGNORECASE if q.ignore_case else 0)
    except re.error as exc:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS, f"invalid regular expression {q.pattern!r}: {exc}"
        ) from None


def _walk_search_files(ws: Workspace, target: str, names: list[str] | None) -> Iterator[str]:
    """Files rg would search under ``target``: sorted, .gitignore honoured, no .git."""
    rules: list[_IgnoreRule] = []
    # .gitignore files of the root and of each directory down to the target apply.
    parts = [] if target == "." else target.split("/")
    for i in range(len(parts) + 1):
        d = "/".join(parts[:i])
        rules += _load_gitignore(ws, d)
    yield from _walk_dir(ws, target, rules, names)


def _load_gitignore(ws: Workspace, d: str) -> list[_IgnoreRule]:
    path = f"{d}/.gitignore" if d else ".gitignore"
    try:
        data = ws.read_bytes(path, max_bytes=1_000_000)
    except (PathError, ToolError):
        return []
    return _parse_gitignore(d, data.decode("utf-8", "replace"))


def _walk_dir(
    ws: Workspace, d: str, rules: list[_IgnoreRule], names: list[str] | None
) -> Iterator[str]:
    try:
        entries = ws.list_dir(d)
    except PathError:
        return
    for e in entries:
        rel = e.name if d == "." else f"{d}/{e.name}"
        if e.kind == "dir":
            if e.name == ".git" or _ignored(rules, rel, True):
                continue
            sub_rules = rules + _load_gitignore(ws, rel)
            yield from _walk_dir(ws, rel, sub_rules, names)
        elif e.kind == "file":
            if _ignored(rules, rel, False) or not _name_ok(e.name, names):
                continue
            yield rel


def _search_lines(text: str, rx: re.Pattern[str], context: int) -> Iterator[tuple[int, str, bool]]:
    lines = textcodec.split_lines(text)
    hit = [bool(rx.search(line)) for line in lines]
    shown: set[int] = set()
    for i, h in enumerate(hit):
        if h:
            shown.update(range(max(0, i - context), min(len(lines), i + context + 1)))
    for i in sorted(shown):
        yield i + 1, lines[i], hit[i]


def _grep_python(ws: Workspace, target: str, is_file: bool, q: _GrepQuery) -> _GrepResult:
    rx = _compile(q)
    names = expand_braces(q.file_pattern) if q.file_pattern else None
    files: list[_FileHits] = []
    matches = 0
    more = False
    binary: list[str] = []
    candidates = iter([target]) if is_file else _walk_search_files(ws, target, names)
    for rel in candidates:
        try:
            data = ws.read_bytes(rel, max_bytes=_FALLBACK_MAX_FILE_BYTES)
        except ToolError:
            continue
        wide = data.startswith((b"\xff\xfe", b"\xfe\xff"))
        if (b"\x00" in data and not wide) or (wide and textcodec.is_binary(data)):
            binary.append(rel)
            continue
        doc = textcodec.decode(data)
        hits = _FileHits(rel)
        for no, line, is_match in _search_lines(doc.text, rx, q.context):
            if is_match:
                if matches >= q.limit:
                    more = True
                    break
                matches += 1
            hits.lines[no] = (textcodec.display(line), is_match)
        if hits.lines:
            _trim_context(hits, q.context)
            files.append(hits)
        if more:
            break
    return _GrepResult(files, matches, more, binary, "python")


def _format_grep(res: _GrepResult, q: _GrepQuery) -> str:
    if not res.matches:
        return f"No matches found for pattern: {q.pattern}"
    head = f"Found {res.matches} match(es)"
    if res.more:
        head += f" (limited to {q.limit})"
    out: list[str] = []
    for hits in res.files:
        if not q.context:
            for no, (text, _) in hits.lines.items():
                out.append(f"{hits.path}:{no}: {_cut(text.strip())}")
        else:
            block = [f"{hits.path}:"]
            prev = None
            for no, (text, is_match) in hits.lines.items():
                if prev is not None and no > prev + 1:
                    block.append("  ----")
                block.append(f"{'>' if is_match else ' '} {no:>4}│ {_cut(text)}")
                prev = no
            out.append("\n".join(block))
    return head + ":\n\n" + "\n".join(out)


def _cut(text: str) -> str:
    if len(text) <= MAX_GREP_LINE_CHARS:
        return text
    return text[:MAX_GREP_LINE_CHARS] + f" … [{len(text) - MAX_GREP_LINE_CHARS:,} more chars]"


class GrepTool(FileTool):
    """``grep {pattern, path?, file_pattern?, limit=50, context=0, ignore_case=false}``.

    Regular-expression search of file contents, line by line. ``.gitignore`` files are
    honoured, hidden files searched, ``.git`` and binary files skipped, symlinks never
    followed; results are sorted by path. ``file_pattern`` is a glob on the file *name*
    (``*.py``, ``*.{ts,tsx}``). Paths in the output are workspace-relative. An invalid
    regex is ``invalid_arguments``. Uses ``rg`` when available (Rust regex syntax), else
    Python's :mod:`re`.

    Source: octos grep (reference §1.2); the rg engine and the fallback are ours.
    """

    name = "grep"
    title = "Search file contents"
    tags = ("search", "code")
    description = (
        "Search file contents with a regular expression. Honours .gitignore; skips binary "
        "files. Optional: path (a directory or file), file_pattern (glob on file names such "
        "as '*.py'), context (lines around each match), ignore_case, limit."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression."},
            "path": {"type": "string", "description": "Directory or file to search."},
            "file_pattern": {"type": "string", "description": "Glob on file names."},
            "limit": {"type": "integer", "minimum": 1, "default": 50},
            "context": {"type": "integer", "minimum": 0, "maximum": 50, "default": 0},
            "ignore_case": {"type": "boolean", "default": False},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }
    concurrency_class = ConcurrencyClass.SAFE

    #: Force an engine: ``"rg"``, ``"python"`` or ``None`` (rg when found).
    engine: str | None = None

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        ws = self.workspace_for(ctx)
        pattern = str_arg(args, "pattern")
        _check_nul(pattern, "pattern")
        path = str_arg(args, "path", default=".") or "."
        file_pattern = args.get("file_pattern")
        if file_pattern is not None:
            file_pattern = str_arg(args, "file_pattern")
            _check_nul(file_pattern, "file_pattern")
            if not file_pattern:
                file_pattern = None
            elif file_pattern.startswith("/") or ".." in file_pattern or "/" in file_pattern:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"file_pattern {file_pattern!r} must be a glob on file names (no '/', "
                    "no '..'); use path to choose a directory",
                )
            elif file_pattern.startswith("!"):
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    "file_pattern cannot start with '!'; give the names to include",
                )
        q = _GrepQuery(
            pattern=pattern,
            ignore_case=bool(args.get("ignore_case", False)),
            context=max(0, int_arg(args, "context") or 0),
            limit=max(1, int_arg(args, "limit") or 50),
            file_pattern=file_pattern,
        )
        res = await self._in_thread(lambda: self._run(ws, path, q))
        text = _format_grep(res, q)
        return ToolResult.ok(
            text,
            structured_metadata={
                "matches": res.matches,
                "files": len(res.files),
                "truncated": res.more,
                "engine": res.engine,
                "binary_skipped": res.binary_skipped[:50],
            },
        )

    def _run(self, ws: Workspace, path: str, q: _GrepQuery) -> _GrepResult:
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
            with contextlib.suppress(ToolError):
                head = ws.open_read(rel)
                with head:
                    sample = head.read(textcodec.BINARY_SNIFF_BYTES)
                if textcodec.is_binary(sample):
                    return _GrepResult([], 0, False, [rel], "none")
        engine = self.engine
        rg = find_rg() if engine in (None, "rg") else None
        if engine == "rg" and rg is None:
            raise ToolError(ErrorKind.UNAVAILABLE, "the rg binary was not found")
        if rg is not None:
            return _grep_rg(rg, ws, rel, is_file, q)
        return _grep_python(ws, rel, is_file, q)


# ---------------------------------------------------------------------- registration


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``glob``, ``grep``, ``list_dir`` (octos order, reference §1.1)."""
    for cls in (GlobTool, GrepTool, ListDirTool):
        registry.register(cls(workspace, config))
