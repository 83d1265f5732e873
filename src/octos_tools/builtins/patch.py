"""``apply_patch``: the Codex patch envelope, applied atomically through the workspace.

Grammar (Codex ``apply_patch_tool_instructions.md`` and its conformance scenarios; the
strict octos rewrite, reference §1.2 [upstream-newer])::

    *** Begin Patch
    *** Add File: path            every following line starts with "+"
    *** Delete File: path         a complete operation by itself
    *** Update File: path
    *** Move to: new/path         optional, directly after Update
    @@ [anchor]                   a hunk; "@@ -a,b +c,d @@ text" reduces to "text"
     context / -removed / +added  a bare empty line is an empty context line
    *** End of File               optional: the hunk sits at the end of the file
    *** End Patch

Leniencies, all from Codex: whitespace around the markers and before operation headers; CRLF
patch text; a ``<<'EOF'`` heredoc wrapper; the first hunk may omit its ``@@``; a
``\\ No newline at end of file`` line is ignored. The envelope is found by grammar: the first
non-blank line must be ``*** Begin Patch`` and the last ``*** End Patch``, so a context line
`` *** End Patch`` inside a hunk is ordinary text. Anything else is ``invalid_patch`` naming the
1-based line of the patch text.

Matching (Codex ``seek_sequence``): each hunk's context and removed lines are searched from a
cursor that moves forward hunk by hunk, first exactly, then ignoring trailing whitespace, then
ignoring surrounding whitespace, then with typographic punctuation and spaces normalised
(and NFC). An exact match is always taken first; a looser level is accepted only when its match
is unique (else ``ambiguous_match``). The file's own bytes are kept for context lines, new lines
take the file's dominant line ending, and the file keeps its final newline (or lack of one), BOM
and encoding (:mod:`octos_tools.workspace.text`).

Atomicity (ours, on purpose unlike Codex scenario 015): the whole patch is planned in memory,
every target checked (regular files only, no symlinks, no ``..``, no absolute path, nothing
under ``.git``), then written with :meth:`Workspace.apply_changes`; when anything fails no file
changes. As in Codex, Add and Move overwrite an existing regular file, and a hunk of only
``+`` lines is appended at the end of the file (or right after its ``@@ anchor`` line).
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..config import Config
from ..context import ToolContext
from ..errors import ErrorKind, PathError, ToolError
from ..tool import ConcurrencyClass, JSONObject, ToolResult
from ..workspace import FileChange
from ..workspace import text as textcodec
from ._base import WorkspaceTool

if TYPE_CHECKING:
    from ..registry import ToolRegistry
    from ..workspace import Workspace

__all__ = [
    "AddFile",
    "ApplyPatchTool",
    "DeleteFile",
    "Hunk",
    "PatchOp",
    "PlannedFile",
    "UpdateFile",
    "apply_hunks",
    "parse_patch",
    "plan_patch",
    "register",
    "seek_sequence",
]

BEGIN = "*** Begin Patch"
END = "*** End Patch"
END_OF_FILE = "*** End of File"
_HEADERS = {
    "*** Add File:": "add",
    "*** Delete File:": "delete",
    "*** Update File:": "update",
    "*** Move to:": "move",
}
_HEREDOC = re.compile(r"""^(?:apply_patch\s+)?<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1\s*$""")
_CLASSIC_HUNK = re.compile(r"^@@\s+-\d+(?:,\d+)?\s+\+\d+(?:,\d+)?\s+@@\s?(.*)$")

#: Lines of unified diff shown per file in the result (the rest is counted).
PREVIEW_LINES = 40


# ---------------------------------------------------------------------------------------------
# Parsed form


@dataclass
class Hunk:
    """One ``@@`` hunk of an Update.

    Attributes:
        anchor: the ``@@ anchor`` text (a line to find before the hunk), or ``None``.
        lines: ``(op, text)`` pairs, op ``" "`` (context), ``"-"`` (remove), ``"+"`` (add).
        eof: ``*** End of File`` followed: the hunk should match at the end of the file.
        line: the 1-based patch line that opened the hunk.
    """

    anchor: str | None
    lines: list[tuple[str, str]] = field(default_factory=list)
    eof: bool = False
    line: int = 0

    @property
    def old(self) -> list[str]:
        """Context and removed lines: what must be found in the file."""
        return [t for op, t in self.lines if op != "+"]


@dataclass
class AddFile:
    """``*** Add File``: create (or overwrite) ``path`` with ``lines`` and a final newline."""

    path: str
    lines: list[str]
    line: int


@dataclass
class DeleteFile:
    """``*** Delete File``: remove the regular file ``path``."""

    path: str
    line: int


@dataclass
class UpdateFile:
    """``*** Update File``: apply ``hunks`` to ``path``, then move it to ``move_to``."""

    path: str
    line: int
    move_to: str | None = None
    hunks: list[Hunk] = field(default_factory=list)


PatchOp = AddFile | DeleteFile | UpdateFile


def _bad(line: int, message: str) -> ToolError:
    return ToolError(ErrorKind.INVALID_PATCH, f"line {line}: {message}", line=line)


def _check_path(raw: str, line: int, directive: str) -> str:
    """A patch path made canonical (``a//./b`` → ``a/b``) after the patch-only rules."""
    path = raw.strip()
    if not path:
        raise _bad(line, f"missing path after '{directive}'")
    if "\x00" in path:
        raise _bad(line, "the path contains a NUL byte (\\x00)")
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:[\\/]", path):
        raise _bad(
            line, f"absolute path {path!r} is not allowed; use a path relative to the workspace"
        )
    parts = [p for p in re.split(r"[/\\]", path) if p not in ("", ".")]
    if ".." in parts:
        raise _bad(line, f"'..' is not allowed in apply_patch paths: {path!r}")
    if any(p.casefold() == ".git" for p in parts):
        raise _bad(line, f"apply_patch never changes anything under .git: {path!r}")
    if not parts:
        raise _bad(line, f"{path!r} names the workspace root, not a file")
    return "/".join(parts)


def _split_patch_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def parse_patch(text: str) -> list[PatchOp]:
    """Parse a Codex patch (grammar in the module docstring).

    Args:
        text: the whole patch, LF or CRLF.

    Returns:
        The operations in patch order. Paths are canonical workspace-relative POSIX paths.

    Raises:
        ToolError: ``invalid_patch`` whose message starts with ``line N:``.
    """
    lines = _split_patch_lines(text)
    nonblank = [i for i, ln in enumerate(lines) if ln.strip()]
    if not nonblank:
        raise _bad(1, f"the patch is empty; it must start with '{BEGIN}'")
    first, last = nonblank[0], nonblank[-1]
    heredoc = _HEREDOC.match(lines[first].strip())
    if heredoc and last > first and lines[last].strip() == heredoc.group(2):
        inner = [i for i in nonblank if first < i < last]
        if not inner:
            raise _bad(first + 1, f"the heredoc holds no patch; it must start with '{BEGIN}'")
        first, last = inner[0], inner[-1]
    if lines[first].strip() != BEGIN:
        raise _bad(first + 1, f"the patch must start with '{BEGIN}', found {lines[first]!r}")
    if last == first or lines[last].strip() != END:
        raise _bad(
            last + 1,
            f"the patch must end with '{END}' (found {lines[last]!r} as its last line)",
        )
    return _Parser(lines, first + 1, last).run()


class _Parser:
    def __init__(self, lines: list[str], start: int, stop: int) -> None:
        self.lines = lines
        self.start = start
        self.stop = stop
        self.ops: list[PatchOp] = []
        self.cur: PatchOp | None = None
        self.hunk: Hunk | None = None
        self.hunk_closed = False  # after *** End of File
        self.blanks = 0  # blank lines not yet known to be content

    def run(self) -> list[PatchOp]:
        for i in range(self.start, self.stop):
            self.line(self.lines[i], i + 1)
        self.finish(self.stop + 1)
        if not self.ops:
            raise _bad(self.stop + 1, "the patch contains no file operations")
        return self.ops

    def finish(self, lineno: int) -> None:
        self.blanks = 0
        cur = self.cur
        self.close_hunk(lineno)
        if isinstance(cur, UpdateFile) and not cur.hunks and cur.move_to is None:
            raise _bad(cur.line, f"'*** Update File: {cur.path}' has no hunks and no Move to")
        if cur is not None:
            self.ops.append(cur)
        self.cur = None

    def close_hunk(self, lineno: int) -> None:
        hunk = self.hunk
        if hunk is not None and not hunk.lines:
            raise _bad(hunk.line, "this hunk has no lines (' ' context, '-' or '+')")
        self.hunk = None
        self.hunk_closed = False

    def line(self, line: str, n: int) -> None:
        cur = self.cur
        stripped = line.strip()
        if not stripped:
            if isinstance(cur, AddFile) or (self.hunk is not None and not self.hunk_closed):
                self.blanks += 1
            return
        if isinstance(cur, UpdateFile) and line.startswith(" "):
            self.body(line, n)
            return
        if stripped.startswith("***"):
            self.directive(stripped, n)
            return
        if isinstance(cur, AddFile):
            if not line.startswith("+"):
                raise _bad(n, f"every line of an added file must start with '+', found {line!r}")
            cur.lines.extend([""] * self.blanks)
            self.blanks = 0
            cur.lines.append(line[1:])
            return
        if isinstance(cur, UpdateFile):
            self.body(line, n)
            return
        raise _bad(n, f"text outside a file operation: {line!r}")

    def directive(self, stripped: str, n: int) -> None:
        if stripped == END_OF_FILE:
            if not isinstance(self.cur, UpdateFile) or self.hunk is None or self.hunk_closed:
                raise _bad(n, f"'{END_OF_FILE}' must follow the lines of an Update hunk")
            self.hunk.eof = True
            self.hunk_closed = True
            self.blanks = 0
            return
        if stripped == END:
            raise _bad(n, f"'{END}' appears before the end of the patch")
        if stripped == BEGIN:
            raise _bad(n, f"a second '{BEGIN}' inside the patch")
        prefix = next((p for p in _HEADERS if stripped.startswith(p)), None)
        if prefix is None:
            raise _bad(n, f"unrecognised or malformed directive {stripped!r}")
        kind = _HEADERS[prefix]
        path = _check_path(stripped[len(prefix) :], n, prefix)
        if kind == "move":
            cur = self.cur
            if not isinstance(cur, UpdateFile) or cur.hunks or self.hunk is not None:
                raise _bad(n, "'*** Move to:' must come right after '*** Update File:'")
            if cur.move_to is not None:
                raise _bad(n, "a second '*** Move to:' for the same file")
            cur.move_to = path
            return
        self.finish(n)
        if kind == "add":
            self.cur = AddFile(path, [], n)
        elif kind == "delete":
            self.cur = DeleteFile(path, n)
        else:
            self.cur = UpdateFile(path, n)

    def body(self, line: str, n: int) -> None:
        cur = self.cur
        assert isinstance(cur, UpdateFile)
        if line.startswith("@@"):
            self.close_hunk(n)
            self.blanks = 0
            classic = _CLASSIC_HUNK.match(line.rstrip())
            anchor = classic.group(1) if classic else line[2:]
            self.hunk = Hunk(anchor=anchor.strip() or None, line=n)
            cur.hunks.append(self.hunk)
            return
        if line.startswith("\\"):
            return  # "\ No newline at end of file"
        if line[0] not in " -+":
            raise _bad(
                n,
                f"unexpected line in an Update hunk: {line!r}; hunk lines start with ' ' "
                "(context), '-' (remove) or '+' (add), and hunks with '@@'",
            )
        if self.hunk_closed:
            raise _bad(n, f"only '@@', blank lines or a new operation may follow '{END_OF_FILE}'")
        if self.hunk is None:
            if cur.hunks:
                raise _bad(n, "hunk line outside a hunk; start the hunk with '@@'")
            self.hunk = Hunk(anchor=None, line=n)
            cur.hunks.append(self.hunk)
        self.hunk.lines.extend([(" ", "")] * self.blanks)
        self.blanks = 0
        self.hunk.lines.append((line[0], line[1:]))


# ---------------------------------------------------------------------------------------------
# Matching

_PUNCT = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "
        ),
    }
)


def _normalise(s: str) -> str:
    return unicodedata.normalize("NFC", s.strip()).translate(_PUNCT)


def _same(s: str) -> str:
    return s


def _rstrip(s: str) -> str:
    return s.rstrip()


def _strip(s: str) -> str:
    return s.strip()


_LEVELS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("exact", _same),
    ("trailing whitespace ignored", _rstrip),
    ("surrounding whitespace ignored", _strip),
    ("typographic punctuation normalised", _normalise),
)


def seek_sequence(
    lines: Sequence[str], pattern: Sequence[str], start: int, *, eof: bool = False
) -> tuple[int, str] | None:
    """Find ``pattern`` in ``lines`` at or after ``start`` (Codex ``seek_sequence`` order).

    Levels: exact, trailing whitespace ignored, surrounding whitespace ignored, typographic
    punctuation and spaces normalised (plus NFC). The first exact match wins; a looser level
    counts only if it matches exactly once. With ``eof`` the position at the very end of the
    file is tried first at every level.

    Returns:
        ``(index, level name)`` or ``None`` when nothing matches.

    Raises:
        ToolError: ``ambiguous_match`` when a loose level matches more than once.
    """
    m = len(pattern)
    if m == 0:
        return (len(lines), "exact") if eof else (start, "exact")
    last = len(lines) - m
    if last < start:
        return None
    for level, (name, f) in enumerate(_LEVELS):
        want = [f(p) for p in pattern]
        have = [f(x) for x in lines]
        if eof and have[last : last + m] == want:
            return last, name
        hits: list[int] = []
        for i in range(start, last + 1):
            if have[i] == want[0] and have[i : i + m] == want:
                hits.append(i)
                if level == 0 or len(hits) > 1:
                    break
        if level == 0 and hits:
            return hits[0], name
        if len(hits) == 1:
            return hits[0], name
        if len(hits) > 1:
            raise ToolError(
                ErrorKind.AMBIGUOUS_MATCH,
                f"the lines match more than one place when {name} (lines {hits[0] + 1} and "
                f"{hits[1] + 1}); add context lines or an '@@ anchor' to pick one",
            )
    return None


def _preview(lines: Sequence[str], limit: int = 3) -> str:
    shown = " | ".join(repr(x) for x in lines[:limit])
    return shown + (" | …" if len(lines) > limit else "")


Item = tuple[str, str]  # (text, line ending as on disk or "" for none)


def apply_hunks(text: str, hunks: Sequence[Hunk], path: str = "") -> str:
    """Apply Update hunks to decoded file text, keeping line endings.

    Args:
        text: the file's text as decoded by :func:`octos_tools.workspace.text.decode`
            (line endings as on disk).
        hunks: the hunks, in order.
        path: the path, for messages.

    Returns:
        The new text. Context lines keep the file's own text and ending; new lines take the
        file's dominant ending; the final newline is kept as it was (an empty file gets one).

    Raises:
        ToolError: ``patch_conflict`` when a hunk's lines or anchor are not found;
            ``ambiguous_match`` when only a loose match exists and it is not unique.
    """
    raw = textcodec.split_lines(text, keepends=True)
    items: list[Item] = []
    for ln in raw:
        body = ln.rstrip("\r\n")
        items.append((body, ln[len(body) :]))
    content = [t for t, _ in items]
    eol = textcodec.dominant_eol(text)
    final_newline = not text or text.endswith(("\n", "\r"))
    cursor = 0
    plan: list[tuple[int, int, list[tuple[str, str]]]] = []
    label = f" of {path}" if path else ""
    for k, hunk in enumerate(hunks, 1):
        if hunk.anchor is not None:
            found = seek_sequence(content, [hunk.anchor], cursor)
            if found is None:
                raise ToolError(
                    ErrorKind.PATCH_CONFLICT,
                    f"hunk {k}{label} (patch line {hunk.line}): anchor {hunk.anchor!r} not found "
                    f"(searched from line {cursor + 1})",
                )
            cursor = found[0] + 1
        hunk_lines = list(hunk.lines)
        old = [t for op, t in hunk_lines if op != "+"]
        if not old:
            pos = cursor if hunk.anchor is not None else len(content)
            plan.append((pos, 0, hunk_lines))
            cursor = pos
            continue
        match = seek_sequence(content, old, cursor, eof=hunk.eof)
        if match is None and old[-1] == "":
            # Codex: a trailing empty context line may stand for the end of the file.
            while hunk_lines and hunk_lines[-1] == (" ", ""):
                hunk_lines.pop()
            old = [t for op, t in hunk_lines if op != "+"]
            match = seek_sequence(content, old, cursor, eof=hunk.eof) if old else None
        if match is None:
            raise ToolError(
                ErrorKind.PATCH_CONFLICT,
                f"hunk {k}{label} (patch line {hunk.line}): these lines were not found "
                f"(searched from line {cursor + 1}): {_preview(old)}; re-read the file and "
                "copy its lines exactly",
            )
        pos = match[0]
        plan.append((pos, len(old), hunk_lines))
        cursor = pos + len(old)
    out: list[Item] = []
    at = 0
    for pos, length, hunk_lines in sorted(plan, key=lambda p: p[0]):
        if pos < at:
            raise ToolError(ErrorKind.PATCH_CONFLICT, f"hunks{label} overlap near line {pos + 1}")
        out.extend(items[at:pos])
        p = pos
        for op, t in hunk_lines:
            if op == " ":
                out.append(items[p])
                p += 1
            elif op == "-":
                p += 1
            else:
                out.append((t, eol))
        at = pos + length
    out.extend(items[at:])
    result: list[str] = []
    for i, (t, end) in enumerate(out):
        is_last = i == len(out) - 1
        if is_last:
            end = (end or eol) if final_newline else ""
        elif not end:
            end = eol
        result.append(t + end)
    return "".join(result)


# ---------------------------------------------------------------------------------------------
# Planning (in memory) and the tool


@dataclass
class PlannedFile:
    """One file the patch changes.

    Attributes:
        op: ``add``, ``update``, ``delete`` or ``move``.
        path: the path written or deleted (the destination of a move).
        source: the old path of a move, else ``None``.
        before / after: decoded text before and after (``None``: absent or deleted).
    """

    op: Literal["add", "update", "delete", "move"]
    path: str
    source: str | None
    before: str | None
    after: str | None


class _Overlay:
    """The workspace as the patch sees it while it is planned (nothing is written)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.disk: dict[str, bytes | None] = {}
        self.now: dict[str, bytes | None] = {}

    def read(self, path: str) -> bytes | None:
        if path in self.now:
            return self.now[path]
        if path not in self.disk:
            try:
                self.disk[path] = self.ws.read_bytes(path)
            except PathError as exc:
                if exc.kind is not ErrorKind.NOT_FOUND:
                    raise
                self.disk[path] = None
        return self.disk[path]

    def write(self, path: str, data: bytes | None) -> None:
        self.read(path)
        self.now[path] = data

    def changes(self) -> list[FileChange]:
        return [FileChange(p, d) for p, d in self.now.items() if d != self.disk.get(p)]


def _label(op: PatchOp) -> str:
    if isinstance(op, AddFile):
        return f"add {op.path}"
    if isinstance(op, DeleteFile):
        return f"delete {op.path}"
    return f"update {op.path}" + (f" -> {op.move_to}" if op.move_to else "")


def _decode(data: bytes, path: str) -> textcodec.DecodedText:
    if textcodec.is_binary(data):
        raise ToolError(
            ErrorKind.BINARY_FILE, f"{path} is a binary file ({len(data)} bytes); not patched"
        )
    return textcodec.decode(data)


def plan_patch(ws: Workspace, ops: Sequence[PatchOp]) -> tuple[list[FileChange], list[PlannedFile]]:
    """Work out every file change of a parsed patch, in memory.

    Args:
        ws: the workspace (read only here).
        ops: the operations from :func:`parse_patch`.

    Returns:
        ``(changes for Workspace.apply_changes, per-operation summaries)``.

    Raises:
        ToolError: the first problem, as ``section N (label): …``; nothing is written.
    """
    overlay = _Overlay(ws)
    planned: list[PlannedFile] = []
    for n, op in enumerate(ops, 1):
        try:
            planned.append(_plan_one(overlay, op))
        except ToolError as exc:
            raise type(exc)(
                exc.kind,
                f"section {n} ({_label(op)}, patch line {op.line}): {exc.message}. "
                "No file was changed.",
                **exc.details,
            ) from None
    return overlay.changes(), planned


def _plan_one(overlay: _Overlay, op: PatchOp) -> PlannedFile:
    if isinstance(op, AddFile):
        old = overlay.read(op.path)
        new_text = "".join(line + "\n" for line in op.lines)
        overlay.write(op.path, new_text.encode("utf-8"))
        before = None if old is None else textcodec.display(textcodec.decode(old).text)
        return PlannedFile("add", op.path, None, before, new_text)
    if isinstance(op, DeleteFile):
        old = overlay.read(op.path)
        if old is None:
            raise ToolError(ErrorKind.NOT_FOUND, f"cannot delete {op.path}: no such file")
        overlay.write(op.path, None)
        return PlannedFile("delete", op.path, None, textcodec.display(_decode_any(old)), None)
    old = overlay.read(op.path)
    if old is None:
        raise ToolError(ErrorKind.NOT_FOUND, f"cannot update {op.path}: no such file")
    doc = _decode(old, op.path)
    new_text = apply_hunks(doc.text, op.hunks, op.path) if op.hunks else doc.text
    try:
        new = doc.encode(new_text)
    except UnicodeEncodeError as exc:
        raise ToolError(
            ErrorKind.INVALID_PATCH,
            f"the new text of {op.path} cannot be written as {doc.label}: {exc.reason}",
        ) from None
    before = textcodec.display(doc.text)
    after = textcodec.display(new_text)
    if op.move_to is None or op.move_to == op.path:
        overlay.write(op.path, new)
        return PlannedFile("update", op.path, None, before, after)
    overlay.read(op.move_to)  # raises for a directory, a symlink or a bad parent
    overlay.write(op.path, None)
    overlay.write(op.move_to, new)
    return PlannedFile("move", op.move_to, op.path, before, after)


def _decode_any(data: bytes) -> str:
    return "" if textcodec.is_binary(data) else textcodec.decode(data).text


def _short_diff(p: PlannedFile) -> tuple[str, int, int]:
    before = textcodec.to_lf(p.before or "").splitlines(keepends=True)
    after = textcodec.to_lf(p.after or "").splitlines(keepends=True)
    diff = list(
        difflib.unified_diff(
            before,
            after,
            fromfile=f"a/{p.source or p.path}" if p.before is not None else "/dev/null",
            tofile=f"b/{p.path}" if p.after is not None else "/dev/null",
            n=1,
        )
    )
    added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
    removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
    lines = [d if d.endswith("\n") else d + "\n" for d in diff]
    if len(lines) > PREVIEW_LINES:
        rest = len(lines) - PREVIEW_LINES
        lines = [*lines[:PREVIEW_LINES], f"... ({rest} more diff lines)\n"]
    return "".join(lines), added, removed


_OP_LETTER = {"add": "A", "update": "M", "delete": "D", "move": "R"}


class ApplyPatchTool(WorkspaceTool):
    """``apply_patch {patch}`` (Codex P0; tags fs, code; Exclusive).

    ``input`` is accepted as an alias of ``patch``; ``{path, diff}`` is handed to the
    registry's ``diff_edit`` tool (octos §1.2).

    Args:
        workspace: the workspace the patch applies to.
        registry: the registry to find ``diff_edit`` in, or ``None``.
    """

    name = "apply_patch"
    title = "Apply a patch"
    description = (
        "Edit files with a patch in the Codex format:\n"
        "*** Begin Patch\n"
        "*** Add File: path/new.txt\n+line\n"
        "*** Delete File: path/old.txt\n"
        "*** Update File: path/file.py\n*** Move to: path/renamed.py   (optional)\n"
        "@@ def some_function():   (optional anchor line)\n"
        " context line\n-removed line\n+added line\n"
        "*** End Patch\n"
        "Paths are relative to the workspace. Give about 3 lines of context around each "
        "change. The whole patch applies or nothing changes."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "patch": {"type": "string", "description": "The patch text (*** Begin Patch ...)."},
            "input": {"type": "string", "description": "Alias of patch."},
            "path": {"type": "string", "description": "With diff: the file for diff_edit."},
            "diff": {"type": "string", "description": "With path: a unified diff (diff_edit)."},
        },
        "additionalProperties": False,
    }
    tags = ("fs", "code")
    concurrency_class = ConcurrencyClass.EXCLUSIVE

    def __init__(self, workspace: Workspace | None, registry: ToolRegistry | None = None) -> None:
        super().__init__(workspace)
        self.registry = registry

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        if ctx.permissions.read_only:
            raise ToolError(ErrorKind.POLICY_DENIED, "apply_patch cannot write: read-only context")
        patch = args.get("patch")
        if patch is None:
            patch = args.get("input")
        if patch is None and "path" in args and "diff" in args:
            return await self._delegate(ctx, args)
        if not isinstance(patch, str):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "apply_patch needs 'patch' (the patch text) or both 'path' and 'diff'",
            )
        ws = self.workspace_for(ctx)
        ops = parse_patch(patch)
        changes, planned = plan_patch(ws, ops)
        if changes:
            try:
                ws.apply_changes(changes)
            except ToolError as exc:
                raise type(exc)(
                    exc.kind, f"{exc.message}. No file was changed.", **exc.details
                ) from None
        return self._result(planned, bool(changes))

    async def _delegate(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        registry = self.registry
        tool = registry.get("diff_edit") if registry is not None else None
        if (
            registry is None
            or tool is None
            or not registry.evaluate("diff_edit").allowed
            or not ctx.permissions.is_tool_allowed("diff_edit")
        ):
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                "{path, diff} needs the diff_edit tool, which is not available here; "
                "send the change as 'patch' instead",
            )
        if self.workspace is not None and getattr(tool, "workspace", None) is not self.workspace:
            tool = tool.with_workspace(self.workspace)
        return await tool.execute_with_context(ctx, {"path": args["path"], "diff": args["diff"]})

    def _result(self, planned: list[PlannedFile], wrote: bool) -> ToolResult:
        modified: list[str] = []
        preview: list[JSONObject] = []
        lines = [f"Applied patch to {len(planned)} file operation(s):"]
        diffs: list[str] = []
        for p in planned:
            diff, added, removed = _short_diff(p)
            letter = _OP_LETTER[p.op]
            shown = f"{p.source} -> {p.path}" if p.source else p.path
            lines.append(f"  {letter} {shown} (+{added} -{removed})")
            for path in (p.source, p.path):
                if path is not None and path not in modified:
                    modified.append(path)
            entry: JSONObject = {
                "op": p.op,
                "path": p.path,
                "added": added,
                "removed": removed,
                "diff": diff,
            }
            if p.source:
                entry["from"] = p.source
            preview.append(entry)
            if diff:
                diffs.append(diff.rstrip("\n"))
        if not wrote:
            lines.append("(the files already had this content; nothing was written)")
        text = "\n".join(lines)
        if diffs:
            text += "\n\n" + "\n".join(diffs)
        return ToolResult.ok(
            text,
            file_modified=modified[0] if modified else None,
            structured_metadata={
                "codex_tool": "apply_patch",
                "modified_paths": modified,
                "diff_preview": preview,
            },
        )


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``apply_patch`` (octos §1.1 #14), delegating ``{path, diff}`` to the
    registry's ``diff_edit``."""
    registry.register(ApplyPatchTool(workspace, registry))
