"""``read_file``: numbered lines of a text file, ranged and streamed for big files."""

from __future__ import annotations

import codecs
import os
import time
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, BinaryIO

from pydantic import Field

from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...workspace import text as textcodec
from ._file_tool import (
    MAX_FULL_READ_BYTES,
    MAX_LINE_CHARS,
    PATH_DESCRIPTION,
    FileArgs,
    FileTool,
)
from ._seen import seen_files

if TYPE_CHECKING:
    from ...config import Config
    from ...context import ToolContext
    from ...workspace import Workspace

__all__ = ["ReadFileTool"]

_STREAM_CHUNK = 1 << 20
_MAX_STREAM_COLUMN = 1_000_000
_MAX_KEPT_BYTES = 16 << 20  # a streamed range keeps at most about this much of its lines
_INLINE_READ_BYTES = 256 << 10
"""Files up to this size are read on the event loop, bigger ones in a worker thread."""


@dataclass
class _View:
    """A range of lines read from a file (internal)."""

    lines: list[str]  # display text (for streamed files a prefix), no line terminators
    lengths: list[int]  # full length of each line, in `unit`
    unit: str  # "characters" or "bytes"
    whole: list[bool]  # lines[i] holds the whole line
    first: int  # 1-based number of lines[0]
    total: int
    size: int
    label: str
    note: str | None
    data: bytes | None = None  # the whole file (not kept for a streamed one)
    text: str | None = None  # its decoded text


_EOL_NOTES = {
    "crlf": "CRLF line endings",
    "cr": "CR line endings",
    "mixed": "mixed line endings (LF and CRLF/CR)",
}


def _encoding_note(rel: str, doc: textcodec.DecodedText) -> str | None:
    """The header line naming what the numbered text does not show: an encoding other
    than plain UTF-8 (a BOM included) and line endings other than LF (edits keep both)."""
    eol = _EOL_NOTES.get(textcodec.eol_style(doc.text))
    if doc.invalid_offset is not None and doc.codec == "utf-8":
        return (
            f"[note: {rel} is not valid UTF-8 (first invalid byte at offset "
            f"{doc.invalid_offset}); bytes that are not UTF-8 are shown as Latin-1 characters"
            + (f"; {eol}" if eol else "")
            + "]"
        )
    if not doc.is_plain_utf8 or eol:
        parts = [] if doc.is_plain_utf8 else [f"encoding: {doc.label}"]
        if eol:
            parts.append(eol)
        return f"[{'; '.join(parts)}; edits keep them]"
    return None


def _read_view(
    fh: BinaryIO, rel: str, size: int, start: int, end: int | None, column: int
) -> _View:
    """Lines ``start..end`` of the open file ``fh`` (``size`` bytes, shown as ``rel``)."""
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
        # escaped bytes (lone surrogates) exist only in UTF-8 that was not valid
        shown = doc.text if doc.invalid_offset is None else textcodec.display(doc.text)
        all_lines = textcodec.split_lines(shown)
        total = len(all_lines)
        stop = total if end is None else min(end, total)
        lines = all_lines[start - 1 : stop]
        lengths = list(map(len, lines))
        note = _encoding_note(rel, doc)
        whole = [True] * len(lines)
        return _View(
            lines, lengths, "characters", whole, start, total, size, doc.label, note, data, doc.text
        )
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
    if column > _MAX_STREAM_COLUMN:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"{rel} is {size:,} bytes; in files over {MAX_FULL_READ_BYTES:,} bytes "
            f"start_column can be at most {_MAX_STREAM_COLUMN:,}",
        )
    keep = (column - 1 + MAX_LINE_CHARS) * 4 + 16
    raw_lines, total = _stream_lines(fh, head, start - 1, end, keep)
    lines = []
    lengths = []
    whole = []
    invalid = None
    for i, (raw, full) in enumerate(raw_lines):
        if i == 0 and start == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
            full -= len(codecs.BOM_UTF8)
        if raw.endswith(b"\r") and len(raw) == full:
            raw = raw[:-1]
            full -= 1
        if invalid is None:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                invalid = True
        lines.append(textcodec.display(raw.decode("utf-8", "surrogateescape")))
        lengths.append(full)
        whole.append(len(raw) >= full)
    note = (
        f"[note: lines of {rel} shown here are not all valid UTF-8; such bytes are shown "
        "as Latin-1 characters]"
        if invalid
        else None
    )
    return _View(lines, lengths, "bytes", whole, start, total, size, "UTF-8", note)


def _stream_lines(
    fh: BinaryIO, head: bytes, start_idx: int, end: int | None, keep_bytes: int
) -> tuple[list[tuple[bytes, int]], int]:
    """Lines ``start_idx .. end-1`` (0-based) of a big file, each as ``(its first
    keep_bytes bytes, its full length in bytes)``, and the file's total line count.

    Reads in 1 MiB chunks; memory stays bounded (about 16 MiB of kept lines, then the range
    ends early), whatever the file size.
    """
    stop = end if end is not None else start_idx + 1_000_000
    kept: list[tuple[bytes, int]] = []
    kept_bytes = 0
    cur = bytearray()
    cur_len = 0
    full_len = 0
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
            if start_idx <= lineno < stop:
                full_len += seg_end - pos
                if cur_len < keep_bytes:
                    cur += chunk[pos : min(seg_end, pos + keep_bytes - cur_len)]
                    cur_len = len(cur)
            if nl < 0:
                break
            if start_idx <= lineno < stop:
                kept.append((bytes(cur), full_len))
                kept_bytes += len(cur)
                if kept_bytes > _MAX_KEPT_BYTES:
                    stop = lineno + 1  # enough for one answer; the footer says where to go on
            cur = bytearray()
            cur_len = full_len = 0
            lineno += 1
            pos = nl + 1
            if lineno >= stop:
                lineno += chunk.count(b"\n", pos)
                break
    total = lineno
    if last and last != b"\n":
        if start_idx <= lineno < stop:
            kept.append((bytes(cur), full_len))
        total += 1
    return kept, total


def _show_line(view: _View, i: int, column: int) -> tuple[str, bool]:
    """The part of line ``i`` of ``view`` shown from ``column``, and whether it was cut."""
    line = view.lines[i]
    part = line[column - 1 : column - 1 + MAX_LINE_CHARS]
    shown_to = column - 1 + len(part)
    full = view.lengths[i]
    if shown_to >= len(line) and view.whole[i]:
        return part, False
    n = view.first + i
    return (
        part + f" … [line {n} cut: it is {full:,} {view.unit} long; shown: characters "
        f"{column:,}-{shown_to:,}; read on with start_line={n}, end_line={n}, "
        f"start_column={shown_to + 1}]",
        True,
    )


_PREFIX_CACHE_LINES = 50_000
"""Number prefixes (``"  42│ "``) of lines up to this number are built once per width and
reused; beyond it they are formatted per call."""
_prefix_cache: dict[int, list[str]] = {}


def _number_prefixes(width: int, first: int, last: int) -> list[str]:
    """The prefixes ``f"{n:>{width}}│ "`` of lines ``first..last`` (1-based, inclusive)."""
    if last > _PREFIX_CACHE_LINES:
        return [f"{n:>{width}}│ " for n in range(first, last + 1)]
    cache = _prefix_cache.setdefault(width, [])
    if len(cache) <= last:
        grow_to = min(_PREFIX_CACHE_LINES, max(last, 2 * len(cache), 1024))
        cache.extend(f"{n:>{width}}│ " for n in range(len(cache), grow_to + 1))
    return cache[first : last + 1]


def _numbered_body(view: _View, column: int, used: int, budget: int) -> tuple[str, int, int]:
    """The numbered lines of ``view`` that fit in ``budget`` bytes after ``used`` bytes of
    header: ``(text, number of the last line shown, lines cut at MAX_LINE_CHARS)``.

    Each line costs its UTF-8 size plus its number column (the width of the view's last
    number) and ``"│ "`` and a newline; the first line is always shown. The numbers are
    right-aligned to the widest number actually shown. One pass of C-level list work
    (sizes, cumulative sums, a bisection, one join): no per-line Python loop unless a line
    is cut or ``column`` is past 1.
    """
    lines = view.lines
    n = len(lines)
    w3 = len(str(view.first + n - 1)) + 3
    if column == 1 and all(view.whole) and max(map(len, lines), default=0) <= MAX_LINE_CHARS:
        texts = lines
        cut_flags: list[bool] | None = None
    else:
        shown = [_show_line(view, i, column) for i in range(n)]
        texts = [t for t, _ in shown]
        cut_flags = [c for _, c in shown]
    joined = "\n".join(texts)
    data = None if joined.isascii() else joined.encode("utf-8", "replace")
    nbytes = len(joined) if data is None else len(data)
    if used + nbytes - (n - 1) + n * w3 <= budget:
        k = n
    else:
        # each line's UTF-8 size: the encoded text cut at its newlines (a line has none)
        sizes = list(map(len, texts if data is None else data.split(b"\n")))
        if len(sizes) != n:  # pragma: no cover - a shown line holding a newline
            sizes = [len(t.encode("utf-8", "replace")) for t in texts]
        # cum[j]: bytes used by the header and lines 0..j-1; line j-1 fits iff cum[j] <= budget
        cum = list(accumulate(map(w3.__add__, sizes), initial=used))
        k = max(1, bisect_right(cum, budget, 1) - 1)
        texts = texts[:k]
    shown_last = view.first + k - 1
    prefixes = _number_prefixes(len(str(shown_last)), view.first, shown_last)
    body = "\n".join(map(str.__add__, prefixes, texts))
    lines_cut = sum(cut_flags[:k]) if cut_flags is not None else 0
    return body, shown_last, lines_cut


class ReadFileTool(FileTool):
    """``read_file {path, start_line?, end_line?, start_column?}``: numbered lines of a text
    file.

    Lines are 1-based, the number column right-aligned, then ``│ `` and the line. UTF-8 (with
    or without BOM) and UTF-16/32 with BOM are decoded; other bytes are shown as Latin-1 with
    a note. Binary files fail as ``binary_file`` with their size; files over
    :data:`MAX_FULL_READ_BYTES` need a range and are then streamed (a range near the end of a
    1 GB file reads in bounded memory). Output stays within the tool's budget; a footer
    names the lines shown and the ``start_line`` of the next part.

    A line longer than :data:`MAX_LINE_CHARS` characters is cut with a marker stating its
    full length (characters; bytes in a streamed file) and the exact arguments that show the
    next part (``start_line=N, end_line=N, start_column=C``); ``start_column`` (1-based)
    makes every shown line start at that character. ``structured_metadata`` counts cut lines
    in ``lines_cut`` and then says ``truncated: true``. ``start_line`` / ``end_line`` /
    ``start_column`` below 1 are ``invalid_arguments``.

    A header line names a BOM, an encoding other than UTF-8 and CRLF / CR / mixed line
    endings. A read that repeats, in this session, a read of the same lines of the same
    bytes answers ``[FILE_UNCHANGED]`` (octos's file-state cache; never hiding text this
    session was not shown, see :mod:`._seen`; opt-in: ``files.unchanged_reads = true``).

    Source: octos ``read_file`` (octos ``crates/octos-agent/src/tools/read_file.rs``);
    empty-file success, range errors, column ranges and ``lines_cut`` are ours.
    """

    name = "read_file"
    title = "Read file"
    description = "Read a text file as numbered lines; use start_line/end_line for long files."
    concurrency_class = ConcurrencyClass.SAFE
    content_trust = "workspace"

    unchanged_reads = False
    """Answer a repeated read of unchanged content with a short line (:mod:`._seen`)."""

    def __init__(self, workspace: Workspace | None = None, config: Config | None = None) -> None:
        super().__init__(workspace, config)
        if config is not None:
            self.unchanged_reads = config.files.unchanged_reads

    class Args(FileArgs):
        path: str = Field(description=PATH_DESCRIPTION)
        start_line: int | None = Field(None, ge=1, description="First line, 1-based.")
        end_line: int | None = Field(None, ge=1, description="Last line, inclusive.")
        start_column: int | None = Field(None, ge=1, description="First character shown.")

    async def run(self, args: ReadFileTool.Args, ctx: ToolContext | None) -> ToolResult:
        ws = self.workspace_for(ctx)
        path = args.path
        end = args.end_line
        start = args.start_line or 1
        column = args.start_column or 1
        if end is not None and end < start:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"end_line ({end}) is before start_line ({start}); give end_line >= start_line",
            )
        rel = ws.relpath(path)
        # Opening is a few non-blocking syscalls (O_NONBLOCK, regular files only); a small
        # file is read and decoded on the event loop (a worker-thread hop costs more than
        # the read), a bigger one in a worker thread.
        with ws.open_read(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size <= _INLINE_READ_BYTES:
                view = _read_view(fh, rel, size, start, end, column)
            else:
                view = await self._in_thread(lambda: _read_view(fh, rel, size, start, end, column))
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
        # every read is the new base of the session's stale_file check; only the short
        # "unchanged" answer is opt-in (files.unchanged_reads)
        seen = seen_files(ctx)
        key = (start, end, column, self.output_budget)
        if self.unchanged_reads and seen is not None and view.data is not None:
            rec = seen.unchanged(rel, view.data, key)
            if rec is not None:
                when = time.strftime("%H:%M:%S", time.localtime(rec.at))
                meta["unchanged"] = True
                return ToolResult.ok(
                    f"[FILE_UNCHANGED] {rel} is unchanged since your read at {when} in this "
                    "session (same lines); use that result. Read it again to get the text.",
                    structured_metadata=meta,
                )
        head: list[str] = [view.note] if view.note else []
        if column > 1:
            head.append(f"[each line shown from character {column:,}]")
        used = sum(len(x) + 1 for x in head)
        body, shown_last, lines_cut = _numbered_body(view, column, used, self.output_budget)
        text = "\n".join([*head, body])
        cut = shown_last < view.first + len(view.lines) - 1
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
                "truncated": cut or partial or lines_cut > 0 or column > 1,
                "lines_cut": lines_cut,
            }
        )
        if seen is not None:
            if view.data is not None:
                seen.note_read(rel, view.data, view.text, key)
            else:  # streamed: its bytes are not at hand, so no stale check can stand
                seen.drop(rel)
        return ToolResult.ok(text, structured_metadata=meta)
