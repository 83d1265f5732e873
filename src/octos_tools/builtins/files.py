"""File tools: ``read_file``, ``diff_edit``, ``edit_file``, ``write_file`` (reference §1.2).

Every path goes through :class:`~octos_tools.workspace.Workspace` (no symlink followed, no
way out of the root) and every edit through :mod:`octos_tools.workspace.text` (BOM,
encoding and line endings kept; bytes outside the edit never change). Writes are atomic.
Blocking file I/O runs in a worker thread so the event loop stays free.

Names, arguments, tags (``fs``, ``code``) and concurrency classes follow octos; messages are
our own. Differences from octos, on purpose: an empty file reads as a success, ``end_line <
start_line`` is ``invalid_arguments`` (octos panics), ``edit_file`` has ``replace_all`` and
matches LF text against CRLF files, ``diff_edit`` keeps the file's line endings.
"""

from __future__ import annotations

import codecs
import difflib
import itertools
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, TypeVar

import anyio.to_thread

from ..errors import ErrorKind, ToolError
from ..tool import ConcurrencyClass, JSONObject, ToolResult
from ..workspace import Workspace
from ..workspace import text as textcodec
from ._base import WorkspaceTool, int_arg, str_arg

if TYPE_CHECKING:
    from ..config import Config
    from ..context import ToolContext
    from ..registry import ToolRegistry

__all__ = [
    "DiffEditTool",
    "EditFileTool",
    "FileTool",
    "ReadFileTool",
    "WriteFileTool",
    "register",
]

_T = TypeVar("_T")

MAX_FULL_READ_BYTES = 10_000_000
"""read_file loads files up to this size whole; larger ones need a line range (octos §5.4)."""
MAX_EDIT_BYTES = 50_000_000
"""edit_file / diff_edit refuse files larger than this (bytes)."""
MAX_LINE_CHARS = 2000
"""read_file cuts longer lines and says how much was cut."""
_STREAM_CHUNK = 1 << 20
_MAX_DIFF_LINES = 80


class FileTool(WorkspaceTool):
    """Base of the file and search tools: a :class:`WorkspaceTool` with an output budget.

    Args:
        workspace: the :class:`Workspace` the tool is confined to; when ``None`` the
            call's ``ctx.workspace`` is used.
        config: settings; the output budget comes from ``config.limits.max_output_bytes``.
    """

    tags = ("fs", "code")

    def __init__(self, workspace: Workspace | None = None, config: Config | None = None) -> None:
        super().__init__(workspace)
        max_output = config.limits.max_output_bytes if config is not None else 50_000
        #: Bytes of output this tool aims to stay under (below the registry's own cap, so
        #: the tool, not the registry, decides where to cut and says how to continue).
        self.output_budget = max(2_000, int(max_output * 0.8))

    def _write_target(self, ctx: ToolContext | None, path: str) -> tuple[Workspace, str]:
        """The workspace and ``path`` relative to it, for a tool that writes ``path``.

        Raises:
            ToolError: ``not_configured`` without a workspace, the path kinds of
                :meth:`Workspace.relpath`, ``policy_denied`` in a read-only context.
        """
        ws = self.workspace_for(ctx)
        rel = ws.relpath(path)
        if ctx is not None and ctx.permissions.read_only:
            raise ToolError(
                ErrorKind.POLICY_DENIED,
                f"{self.name} cannot write: this context has read-only file access",
            )
        return ws, rel

    @staticmethod
    async def _in_thread(fn: Callable[[], _T]) -> _T:
        return await anyio.to_thread.run_sync(fn)


# ---------------------------------------------------------------------- read_file


@dataclass
class _View:
    """A range of lines read from a file (internal)."""

    lines: list[str]  # display text, no line terminators
    first: int  # 1-based number of lines[0]
    total: int
    size: int
    label: str
    note: str | None
    eol: str


def _encoding_note(rel: str, doc: textcodec.DecodedText) -> str | None:
    if doc.invalid_offset is not None and doc.codec == "utf-8":
        return (
            f"[note: {rel} is not valid UTF-8 (first invalid byte at offset "
            f"{doc.invalid_offset}); bytes that are not UTF-8 are shown as Latin-1 characters]"
        )
    if not doc.is_plain_utf8:
        return f"[encoding: {doc.label}]"
    return None


def _read_view(ws: Workspace, path: str, start: int, end: int | None) -> _View:
    rel = ws.relpath(path)
    with ws.open_read(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(textcodec.BINARY_SNIFF_BYTES)
        if textcodec.is_binary(head):
            raise ToolError(
                ErrorKind.BINARY_FILE,
                f"{rel} is a binary file ({size:,} bytes); read_file shows text files only",
                size=size,
            )
        if size <= MAX_FULL_READ_BYTES:
            data = head + fh.read()
            if len(data) > textcodec.BINARY_SNIFF_BYTES and textcodec.is_binary(data, whole=True):
                raise ToolError(
                    ErrorKind.BINARY_FILE, f"{rel} is a binary file ({size:,} bytes)", size=size
                )
            doc = textcodec.decode(data)
            all_lines = textcodec.split_lines(doc.text)
            total = len(all_lines)
            stop = total if end is None else min(end, total)
            lines = [textcodec.display(x) for x in all_lines[start - 1 : stop]]
            eol = textcodec.eol_style(doc.text)
            return _View(lines, start, total, size, doc.label, _encoding_note(rel, doc), eol)
        if end is None and start == 1:
            raise ToolError(
                ErrorKind.FILE_TOO_LARGE,
                f"{rel} is {size:,} bytes, more than read_file shows at once "
                f"({MAX_FULL_READ_BYTES:,}); read it in parts with start_line and end_line",
                size=size,
            )
        head_doc = textcodec.decode(head[:4])
        if head_doc.codec != "utf-8":
            raise ToolError(
                ErrorKind.FILE_TOO_LARGE,
                f"{rel} is a {size:,}-byte {head_doc.label} file; ranges of such large "
                "UTF-16/32 files are not supported",
                size=size,
            )
        raw_lines, total = _stream_lines(fh, head, start - 1, end)
        lines = []
        invalid = None
        for i, raw in enumerate(raw_lines):
            if i == 0 and start == 1:
                raw = raw.removeprefix(codecs.BOM_UTF8)
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if invalid is None:
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    invalid = True
            lines.append(textcodec.display(raw.decode("utf-8", "surrogateescape")))
        note = (
            f"[note: lines of {rel} shown here are not all valid UTF-8; such bytes are shown "
            "as Latin-1 characters]"
            if invalid
            else None
        )
        return _View(lines, start, total, size, "UTF-8", note, "unknown")


def _stream_lines(
    fh: BinaryIO, head: bytes, start_idx: int, end: int | None
) -> tuple[list[bytes], int]:
    """Lines ``start_idx .. end-1`` (0-based) of a big file and its total line count.

    Reads in 1 MiB chunks; memory stays bounded by the lines kept (each cut to a few
    KiB), whatever the file size.
    """
    stop = end if end is not None else start_idx + 1_000_000
    keep_bytes = MAX_LINE_CHARS * 4 + 16
    kept: list[bytes] = []
    cur = bytearray()
    cur_len = 0
    lineno = 0
    last = b""

    def chunks() -> Iterator[bytes]:
        yield head
        while True:
            c = fh.read(_STREAM_CHUNK)
            if not c:
                return
            yield c

    for chunk in chunks():
        last = chunk[-1:]
        if lineno >= stop:
            lineno += chunk.count(b"\n")
            continue
        if lineno < start_idx:
            newlines = chunk.count(b"\n")
            if lineno + newlines < start_idx:
                lineno += newlines
                continue
        pos = 0
        n = len(chunk)
        while pos < n:
            nl = chunk.find(b"\n", pos)
            seg_end = n if nl < 0 else nl
            if start_idx <= lineno < stop and cur_len < keep_bytes:
                cur += chunk[pos : min(seg_end, pos + keep_bytes - cur_len)]
                cur_len = len(cur)
            if nl < 0:
                break
            if start_idx <= lineno < stop:
                kept.append(bytes(cur))
            cur = bytearray()
            cur_len = 0
            lineno += 1
            pos = nl + 1
            if lineno >= stop:
                lineno += chunk.count(b"\n", pos)
                break
    total = lineno
    if last and last != b"\n":
        if start_idx <= lineno < stop:
            kept.append(bytes(cur))
        total += 1
    return kept, total


def _cut_line(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[:MAX_LINE_CHARS] + f" … [line cut: {len(line) - MAX_LINE_CHARS:,} more characters]"


class ReadFileTool(FileTool):
    """``read_file {path, start_line?, end_line?}``: numbered lines of a text file.

    Lines are 1-based, the number column right-aligned, then ``│ `` and the line. UTF-8 (with
    or without BOM) and UTF-16/32 with BOM are decoded; other bytes are shown as Latin-1 with
    a note. Binary files fail as ``binary_file`` with their size; files over
    :data:`MAX_FULL_READ_BYTES` need a range and are then streamed (a range near the end of a
    1 GB file reads in bounded memory). Output stays within the tool's budget; a footer
    names the lines shown and the ``start_line`` of the next part. A line longer than
    :data:`MAX_LINE_CHARS` characters is cut with a marker; ``structured_metadata`` counts
    such lines in ``lines_cut`` and then says ``truncated: true`` (as for lines outside the
    range or an output cut). ``start_line`` / ``end_line`` below 1 are ``invalid_arguments``
    (schema ``minimum: 1``; they used to be taken as 1 silently).

    Source: octos read_file (reference §1.2); empty-file success, range errors and
    ``lines_cut`` are ours.
    """

    name = "read_file"
    title = "Read file"
    description = (
        "Read a text file from the workspace. Returns its lines numbered from 1 as "
        "'N│ text'. For long files pass start_line and end_line (1-based, inclusive) to read "
        "a part; the footer says how to continue."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace."},
            "start_line": {
                "type": "integer",
                "minimum": 1,
                "description": "First line to show (1-based: the first line is 1).",
            },
            "end_line": {
                "type": "integer",
                "minimum": 1,
                "description": "Last line to show (1-based, inclusive).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    concurrency_class = ConcurrencyClass.SAFE

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        ws = self.workspace_for(ctx)
        path = str_arg(args, "path")
        start_arg = int_arg(args, "start_line")
        end = int_arg(args, "end_line")
        for key, value in (("start_line", start_arg), ("end_line", end)):
            if value is not None and value < 1:  # the schema says so too (minimum 1)
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"{key} is {value}, but lines are numbered from 1; use {key} >= 1 "
                    "(start_line=1 is the first line)",
                )
        start = start_arg or 1
        if end is not None and end < start:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"end_line ({end}) is before start_line ({start}); give end_line >= start_line",
            )
        view = await self._in_thread(lambda: _read_view(ws, path, start, end))
        rel = ws.relpath(path)
        meta: JSONObject = {
            "path": rel,
            "total_lines": view.total,
            "size": view.size,
            "encoding": view.label,
        }
        if view.total == 0:
            return ToolResult.ok(
                f"{rel} is empty (0 lines, {view.size:,} bytes).", structured_metadata=meta
            )
        if start > view.total:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"start_line {start} is past the end of {rel}, which has {view.total:,} "
                f"line(s); use start_line between 1 and {view.total}",
                total_lines=view.total,
            )
        last = view.first + len(view.lines) - 1
        width = len(str(last))
        head: list[str] = [view.note] if view.note else []
        used = sum(len(x) + 1 for x in head)
        body: list[str] = []
        shown_last = view.first - 1
        cut = False
        lines_cut = 0
        for i, line in enumerate(view.lines):
            body.append(_cut_line(line))
            long_line = len(line) > MAX_LINE_CHARS
            size = len(body[-1].encode("utf-8", "replace")) + width + 3
            if used + size > self.output_budget and shown_last >= view.first:
                body.pop()
                cut = True
                break
            used += size
            shown_last = view.first + i
            lines_cut += long_line
        width = len(str(shown_last))  # align the numbers actually shown
        out = head + [f"{view.first + i:>{width}}│ {x}" for i, x in enumerate(body)]
        text = "\n".join(out)
        partial = view.first > 1 or shown_last < view.total
        if cut:
            text += (
                f"\n\n(showing lines {view.first}-{shown_last} of {view.total:,}; output cut "
                f"at about {self.output_budget:,} bytes. Continue with start_line="
                f"{shown_last + 1}.)"
            )
        elif partial:
            more = f"; next part: start_line={shown_last + 1}" if shown_last < view.total else ""
            text += f"\n\n(showing lines {view.first}-{shown_last} of {view.total:,}{more})"
        meta.update(
            {
                "start_line": view.first,
                "end_line": shown_last,
                # honest: a line cut at MAX_LINE_CHARS is not all of the file either
                "truncated": cut or partial or lines_cut > 0,
                "lines_cut": lines_cut,
            }
        )
        return ToolResult.ok(text, structured_metadata=meta)


# ---------------------------------------------------------------------- write_file


class WriteFileTool(FileTool):
    """``write_file {path, content}``: create or replace a file atomically, as UTF-8.

    Missing parent directories are created. Reports the lines and bytes written and sets
    ``file_modified`` to the workspace-relative path.

    Source: octos write_file (reference §1.2); atomic replace is ours (DESIGN.md §4).
    """

    name = "write_file"
    title = "Write file"
    description = (
        "Create a file or replace its whole content (UTF-8). Parent directories are created. "
        "To change part of an existing file prefer edit_file."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace."},
            "content": {"type": "string", "description": "The complete new file content."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }
    concurrency_class = ConcurrencyClass.EXCLUSIVE

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        path = str_arg(args, "path")
        content = str_arg(args, "content")
        ws, rel = self._write_target(ctx, path)
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"content holds a character that cannot be written as UTF-8 "
                f"(U+{ord(exc.object[exc.start]):04X} at position {exc.start})",
            ) from None

        def work() -> bool:
            existed = ws.exists(path)
            ws.write_bytes(path, data)
            return existed

        existed = await self._in_thread(work)
        lines = 0 if not content else content.count("\n") + (not content.endswith("\n"))
        verb = "Replaced" if existed else "Created"
        return ToolResult.ok(
            f"{verb} {rel}: wrote {lines:,} line(s), {len(data):,} bytes.",
            file_modified=rel,
            structured_metadata={"path": rel, "lines": lines, "bytes": len(data)},
        )


# ---------------------------------------------------------------------- editing helpers


@dataclass
class _Loaded:
    data: bytes
    doc: textcodec.DecodedText
    stamp: tuple[int, int, int]


def _load_for_edit(ws: Workspace, path: str) -> _Loaded:
    rel = ws.relpath(path)
    with ws.open_read(path) as fh:
        st = os.fstat(fh.fileno())
        if st.st_size > MAX_EDIT_BYTES:
            raise ToolError(
                ErrorKind.FILE_TOO_LARGE,
                f"{rel} is {st.st_size:,} bytes; files over {MAX_EDIT_BYTES:,} bytes are not "
                "edited",
            )
        data = fh.read()
    if textcodec.is_binary(data, whole=True):
        raise ToolError(
            ErrorKind.BINARY_FILE,
            f"{rel} is a binary file ({len(data):,} bytes); it cannot be edited as text",
        )
    return _Loaded(data, textcodec.decode(data), (st.st_ino, st.st_size, st.st_mtime_ns))


def _commit(ws: Workspace, path: str, loaded: _Loaded, new_data: bytes) -> None:
    """Write ``new_data`` unless the file changed on disk since it was read."""
    st = ws.stat(path)
    if (st.st_ino, st.st_size, st.st_mtime_ns) != loaded.stamp:
        raise ToolError(
            ErrorKind.STALE_FILE,
            f"{ws.relpath(path)} changed on disk during the edit; nothing was written. "
            "Read it again and retry",
        )
    ws.write_bytes(path, new_data)


def _encode(rel: str, doc: textcodec.DecodedText, new_text: str) -> bytes:
    try:
        return doc.encode(new_text)
    except UnicodeEncodeError as exc:
        ch = exc.object[exc.start]
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"{rel} is kept in its encoding ({doc.label}), which cannot hold the new character "
            f"U+{ord(ch):04X}; nothing was written",
        ) from None


def short_diff(rel: str, old: str, new: str, *, max_lines: int = _MAX_DIFF_LINES) -> str:
    """A unified diff (LF, display form) of ``old`` → ``new``, cut after ``max_lines``."""
    a = textcodec.split_lines(textcodec.display(old))
    b = textcodec.split_lines(textcodec.display(new))
    lines = list(difflib.unified_diff(a, b, f"a/{rel}", f"b/{rel}", n=2, lineterm=""))
    if len(lines) > max_lines:
        extra = len(lines) - max_lines
        lines = [*lines[:max_lines], f"… ({extra} more diff lines)"]
    return "\n".join(_cut_line(x) for x in lines)


def _no_match_hint(text: str, needle: str) -> str:
    lines = textcodec.split_lines(textcodec.display(text))
    hints: list[str] = []
    squashed = re.sub(r"\s+", " ", needle).strip()
    if squashed:
        flat = re.sub(r"\s+", " ", textcodec.display(text))
        if squashed in flat:
            hints.append("it matches if whitespace is ignored: copy the exact indentation")
    tab_lines = sum(1 for x in lines if x.startswith("\t"))
    space_lines = sum(1 for x in lines if x.startswith("  "))
    needle_lines = textcodec.split_lines(needle)
    if tab_lines > space_lines and any(x.startswith("  ") for x in needle_lines):
        hints.append("the file is indented with tabs, old_string with spaces")
    first = next((x.strip() for x in needle_lines if x.strip()), "")
    if first and len(lines) <= 20_000:
        stripped = [x.strip() for x in lines]
        close = difflib.get_close_matches(first, stripped, n=1, cutoff=0.6)
        if close:
            lineno = stripped.index(close[0]) + 1
            hints.append(f"the closest line is {lineno}: {_cut_line(lines[lineno - 1])[:200]!r}")
    return ("; ".join(hints) + ".") if hints else "read the file again to copy the exact text."


# ---------------------------------------------------------------------- edit_file


class EditFileTool(FileTool):
    """``edit_file {path, old_string, new_string, replace_all=false}``: exact replacement.

    Occurrences are counted on the file as it is on disk at call time. A line break in
    ``old_string`` matches LF, CRLF or CR in the file; replacement lines get the line ending
    of the text they replace. The encoding and BOM are kept and bytes outside the edit never
    change (a file that is not valid UTF-8 keeps its stray bytes; if ``old_string`` only
    matches the file read as Latin-1, the edit is made in Latin-1).

    Errors: ``invalid_arguments`` (empty ``old_string``), ``no_change`` (identical strings),
    ``no_match`` (with a hint), ``ambiguous_match`` (count and line numbers),
    ``binary_file``, ``stale_file`` (changed on disk meanwhile), and path kinds.

    Source: octos edit_file (reference §1.2); replace_all and line-ending handling from
    Codex / Claude Code style editors.
    """

    name = "edit_file"
    title = "Edit file"
    description = (
        "Replace an exact string in a file. old_string must occur exactly once unless "
        "replace_all is true; include surrounding lines to make it unique. Indentation must "
        "match the file. Line endings and encoding of the file are kept."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace."},
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The text to put in its place."},
            "replace_all": {
                "type": "boolean",
                "description": "Replace every occurrence (default false: exactly one).",
                "default": False,
            },
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": False,
    }
    concurrency_class = ConcurrencyClass.EXCLUSIVE

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        path = str_arg(args, "path")
        old = str_arg(args, "old_string")
        new = str_arg(args, "new_string")
        replace_all = bool(args.get("replace_all", False))
        ws, rel = self._write_target(ctx, path)
        if not old:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "old_string is empty; give the exact text to replace (use write_file to "
                "create or overwrite a whole file)",
            )
        return await self._in_thread(lambda: self._edit(ws, path, rel, old, new, replace_all))

    def _edit(
        self, ws: Workspace, path: str, rel: str, old: str, new: str, replace_all: bool
    ) -> ToolResult:
        loaded = _load_for_edit(ws, path)
        if old == new:
            raise ToolError(
                ErrorKind.NO_CHANGE,
                "old_string and new_string are identical; the file was not changed",
            )
        doc = loaded.doc
        spans = textcodec.find(doc.text, old)
        if not spans and doc.invalid_offset is not None:
            alt = textcodec.latin1(loaded.data)
            alt_spans = textcodec.find(alt.text, old)
            if alt_spans:
                doc, spans = alt, alt_spans
        if not spans:
            raise ToolError(
                ErrorKind.NO_MATCH,
                f"old_string was not found in {rel}; {_no_match_hint(doc.text, old)}",
            )
        if len(spans) > 1 and not replace_all:
            numbers = [textcodec.line_number_at(doc.text, s) for s, _ in spans]
            shown = ", ".join(map(str, numbers[:20])) + (", …" if len(numbers) > 20 else "")
            raise ToolError(
                ErrorKind.AMBIGUOUS_MATCH,
                f"old_string occurs {len(spans)} times in {rel} (lines {shown}); add "
                "surrounding lines to make it unique, or set replace_all to true to replace "
                "every occurrence",
                count=len(spans),
                lines=numbers[:100],
            )
        new_text = textcodec.replace_spans(doc.text, spans, new)
        new_data = _encode(rel, doc, new_text)
        if new_data == loaded.data:
            raise ToolError(
                ErrorKind.NO_CHANGE, f"the replacement leaves {rel} unchanged; nothing written"
            )
        _commit(ws, path, loaded, new_data)
        n = len(spans)
        diff = short_diff(rel, doc.text, new_text)
        return ToolResult.ok(
            f"Edited {rel}: replaced {n} occurrence{'s' if n != 1 else ''}.\n\n{diff}",
            file_modified=rel,
            structured_metadata={"path": rel, "replacements": n, "encoding": doc.label},
        )


# ---------------------------------------------------------------------- diff_edit


_HUNK_RE = re.compile(r"^@@\s*-(\d+)(?:,(\d+))?(?:\s+\+(\d+)(?:,(\d+))?)?\s*@@")
_FUZZ = (0, -1, 1, -2, 2, -3, 3)


@dataclass
class _Hunk:
    header: str
    old_start: int  # 1-based
    ops: list[tuple[str, str]]  # (" " | "-" | "+", text)

    @property
    def pattern(self) -> list[str]:
        return [t for op, t in self.ops if op != "+"]


def parse_unified_diff(diff: str) -> list[_Hunk]:
    """Hunks of a unified diff (lines before the first ``@@`` are ignored).

    Raises:
        ToolError: ``invalid_patch`` for a malformed hunk header or no hunk at all.
    """
    hunks: list[_Hunk] = []
    for line in textcodec.to_lf(diff).split("\n"):
        if line.startswith("@@"):
            m = _HUNK_RE.match(line)
            if not m:
                raise ToolError(
                    ErrorKind.INVALID_PATCH,
                    f"malformed hunk header {line[:80]!r}; expected '@@ -N,M +N,M @@'",
                )
            hunks.append(_Hunk(line, int(m.group(1)), []))
            continue
        if not hunks:
            continue
        if line.startswith(("\\", "diff ", "index ")):
            continue
        if line.startswith("-"):
            hunks[-1].ops.append(("-", line[1:]))
        elif line.startswith("+"):
            hunks[-1].ops.append(("+", line[1:]))
        elif line.startswith(" "):
            hunks[-1].ops.append((" ", line[1:]))
        else:
            hunks[-1].ops.append((" ", line))
    for h in hunks:  # a trailing empty line from the final "\n" is not context
        while h.ops and h.ops[-1] == (" ", ""):
            h.ops.pop()
    if not hunks:
        raise ToolError(
            ErrorKind.INVALID_PATCH, "the diff has no hunks; each starts with '@@ -N,M +N,M @@'"
        )
    return hunks


def _matches_at(lines: list[str], pattern: list[str], at: int) -> bool:
    if at < 0 or at + len(pattern) > len(lines):
        return False
    return all(lines[at + i].rstrip() == p.rstrip() for i, p in enumerate(pattern))


class DiffEditTool(FileTool):
    """``diff_edit {path, diff}``: apply a unified diff to one file, all hunks or none.

    Each hunk's context and removed lines are looked for at its ``-N`` line, then up to 3
    lines above and below (trailing whitespace ignored). Context lines keep the file's own
    bytes; added lines get the file's dominant line ending; the final newline is kept as it
    was. Errors: ``invalid_patch`` (bad header, no hunks, overlapping hunks),
    ``patch_conflict`` (a hunk does not match), ``no_change``, ``binary_file``, path kinds.

    Source: octos diff_edit (reference §1.2), with line endings and encoding kept.
    """

    name = "diff_edit"
    title = "Apply unified diff"
    description = (
        "Apply a unified diff (hunks starting with '@@ -N,M +N,M @@') to one file. Hunks may "
        "be off by up to 3 lines. Either every hunk applies or nothing is changed."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace."},
            "diff": {"type": "string", "description": "Unified diff text for this file."},
        },
        "required": ["path", "diff"],
        "additionalProperties": False,
    }
    concurrency_class = ConcurrencyClass.EXCLUSIVE

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        path = str_arg(args, "path")
        diff = str_arg(args, "diff")
        ws, rel = self._write_target(ctx, path)
        hunks = parse_unified_diff(diff)
        return await self._in_thread(lambda: self._apply(ws, path, rel, hunks))

    def _apply(self, ws: Workspace, path: str, rel: str, hunks: list[_Hunk]) -> ToolResult:
        loaded = _load_for_edit(ws, path)
        doc = loaded.doc
        lines = textcodec.split_lines(doc.text, keepends=True)
        eol = textcodec.dominant_eol(doc.text)
        located: list[tuple[int, int, int, _Hunk]] = []  # (at, length, index, hunk)
        notes: list[str] = []
        for k, h in enumerate(hunks, 1):
            pat = h.pattern
            if not pat:
                at = min(max(h.old_start, 0), len(lines))
                located.append((at, 0, k, h))
                continue
            target = max(h.old_start - 1, 0)
            for off in _FUZZ:
                if _matches_at(lines, pat, target + off):
                    if off:
                        where = "below" if off > 0 else "above"
                        notes.append(f"hunk {k} applied {abs(off)} line(s) {where} its header")
                    located.append((target + off, len(pat), k, h))
                    break
            else:
                want = "\n".join(f"  {x}" for x in pat[:3])
                lo = max(target - 1, 0)
                have = "\n".join(
                    f"  {i + 1}: {textcodec.display(lines[i]).rstrip()}"
                    for i in range(lo, min(lo + 3, len(lines)))
                )
                raise ToolError(
                    ErrorKind.PATCH_CONFLICT,
                    f"hunk {k} ({h.header[:60]}) does not match {rel} at line {h.old_start} "
                    f"or within 3 lines of it; nothing was changed. Expected:\n{want}\n"
                    f"The file has:\n{have or '  (end of file)'}",
                    hunk=k,
                )
        located.sort(key=lambda x: (x[0], x[2]))
        for (a_at, a_len, a_k, _), (b_at, _, b_k, _) in itertools.pairwise(located):
            if a_at + a_len > b_at:
                raise ToolError(
                    ErrorKind.INVALID_PATCH,
                    f"hunks {a_k} and {b_k} overlap in {rel}; nothing was changed",
                )
        out = list(lines)
        for at, length, _, h in sorted(located, key=lambda x: -x[0]):
            region = lines[at : at + length]
            repl: list[str] = []
            i = 0
            for op, t in h.ops:
                if op == "+":
                    repl.append(t + eol)
                elif op == " ":
                    repl.append(region[i])
                    i += 1
                else:
                    i += 1
            out[at : at + length] = repl
        for i in range(len(out) - 1):  # a line followed by another must end with a break
            if not out[i].endswith(("\n", "\r")):
                out[i] += eol
        new_text = "".join(out)
        had_final = doc.text.endswith(("\n", "\r"))
        if doc.text and not had_final and new_text.endswith(("\n", "\r")):
            new_text = new_text[: -2 if new_text.endswith("\r\n") else -1]
        elif had_final and new_text and not new_text.endswith(("\n", "\r")):
            new_text += eol
        new_data = _encode(rel, doc, new_text)
        if new_data == loaded.data:
            raise ToolError(ErrorKind.NO_CHANGE, f"the diff leaves {rel} unchanged")
        _commit(ws, path, loaded, new_data)
        body = f"Applied {len(hunks)} hunk(s) to {rel}."
        if notes:
            body += " " + "; ".join(notes) + "."
        return ToolResult.ok(
            body + "\n\n" + short_diff(rel, doc.text, new_text),
            file_modified=rel,
            structured_metadata={"path": rel, "hunks": len(hunks), "fuzz": notes},
        )


# ---------------------------------------------------------------------- registration


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register the file tools in octos's order: read_file, diff_edit, edit_file, write_file.

    ``apply_patch`` (between read_file and diff_edit in octos) is registered by the
    ``patch`` family.
    """
    for cls in (ReadFileTool, DiffEditTool, EditFileTool, WriteFileTool):
        registry.register(cls(workspace, config))
