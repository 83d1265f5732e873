"""What a grep engine returns, and the checks every reported item passes.

Both engines fill a :class:`GrepResult`. The rg engine's findings come from a process that
walks by path names, so each one is confirmed through the workspace (no symlink followed,
from the root descriptor) before it is reported: matched lines are re-read, a binary file
is re-opened and its NUL byte seen, a skipped path is re-stated. What a directory/symlink
swap race lets rg see outside the workspace therefore never reaches the result: not its
lines, not its names, not the counts or the ``truncated`` flag.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO

from ...errors import ToolError
from ...workspace import text as textcodec

if TYPE_CHECKING:
    from ...workspace import Workspace

__all__ = [
    "MAX_FILE_BYTES",
    "FileHits",
    "GrepQuery",
    "GrepResult",
    "cut_to_limit",
    "path_key",
    "trim_context",
    "verified",
    "verified_binary",
    "verified_skip",
]

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Files larger than this are not read whole by the Python engine or the line check."""


@dataclass(frozen=True, slots=True)
class GrepQuery:
    """A validated grep request.

    ``rules_from_above`` is ``False`` when the searched folder is one the ignore rules
    above it hide (:func:`._rules.hidden_prefix`): those rules are lifted inside it.
    """

    pattern: str
    ignore_case: bool
    context: int
    limit: int
    file_pattern: str | None
    rules_from_above: bool = True


@dataclass(slots=True)
class FileHits:
    """Lines of one file to show: ``{line_number: (text, is_match)}``."""

    path: str
    lines: dict[int, tuple[str, bool]] = field(default_factory=dict)

    @property
    def matches(self) -> int:
        """How many of the lines are matches (not context)."""
        return sum(1 for _, m in self.lines.values() if m)


@dataclass(slots=True)
class GrepResult:
    """Files with hits (sorted by path), counts, and what was skipped.

    Attributes:
        skipped: ``(path, reason)`` of files or folders not searched for a reason other
            than being binary (a path too long for rg, a file too large, unreadable).
        not_entered: ``(path, reason)`` of folders not entered by default (virtual
            environments, ``node_modules``; :func:`._rules.default_skip`).
        ignored_path: the folder of the searched path that ignore rules hide (searched
            because it was named), or ``None``.
    """

    files: list[FileHits]
    matches: int
    more: bool
    binary_skipped: list[str]
    engine: str
    skipped: list[tuple[str, str]] = field(default_factory=list)
    not_entered: list[tuple[str, str]] = field(default_factory=list)
    ignored_path: str | None = None


def path_key(rel: str) -> list[bytes]:
    """Sort key of a workspace-relative path: component by component, in byte order
    (the order of a sorted depth-first walk, ``rg --sort path``)."""
    return os.fsencode(rel).split(b"/")


def trim_context(hits: FileHits, context: int) -> None:
    """Keep only context lines within ``context`` lines of a kept match, sorted."""
    keep: set[int] = set()
    for n, (_, m) in hits.lines.items():
        if m:
            keep.update(range(n - context, n + context + 1))
    hits.lines = {n: v for n, v in sorted(hits.lines.items()) if n in keep}


def cut_to_limit(files: list[FileHits], limit: int, context: int) -> list[FileHits]:
    """The first ``limit`` matches of ``files`` in path order, with their context lines.

    In the file where the limit falls, lines after its last kept match are kept up to
    ``context`` lines and up to the next match (not shown). Each file's lines are trimmed
    to the context of its kept matches.
    """
    kept: list[FileHits] = []
    left = limit
    for hits in sorted(files, key=lambda h: path_key(h.path)):
        if left <= 0:
            break
        if hits.matches > left:
            nos = sorted(hits.lines)
            match_nos = [n for n in nos if hits.lines[n][1]]
            last = match_nos[left - 1]
            cut: dict[int, tuple[str, bool]] = {}
            for n in nos:
                text, is_match = hits.lines[n]
                if n > last and (is_match or n > last + context):
                    break
                cut[n] = (text, is_match)
            hits.lines = cut
        left -= hits.matches
        trim_context(hits, context)
        kept.append(hits)
    return kept


def verified(ws: Workspace, hits: FileHits) -> bool:
    """Whether every reported line of ``hits`` is in the file as the workspace reads it."""
    wanted = sorted(hits.lines)
    if not wanted:
        return True
    try:
        with ws.open_read(hits.path) as fh:
            head = fh.read(4)
            if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16/32: rg transcodes
                data = head + fh.read(MAX_FILE_BYTES)
                lines = textcodec.decode(data).text.split("\n")
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


def verified_binary(ws: Workspace, rel: str, offset: int | None) -> bool:
    """Whether ``rel`` is, through the workspace, a file with a NUL byte at ``offset``
    (or, without an offset, within its first bytes)."""
    try:
        with ws.open_read(rel) as fh:
            if offset is not None and offset >= 0:
                fh.seek(offset)
                if fh.read(1) == b"\x00":
                    return True
                fh.seek(0)
                return b"\x00" in fh.read(min(offset + 1, MAX_FILE_BYTES))
            return textcodec.is_binary(fh.read(textcodec.BINARY_SNIFF_BYTES))
    except (ToolError, OSError):
        return False


def verified_skip(ws: Workspace, rel: str) -> bool:
    """Whether ``rel`` names something inside the workspace (reached without a link)."""
    try:
        ws.stat(rel)
    except ToolError:
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
