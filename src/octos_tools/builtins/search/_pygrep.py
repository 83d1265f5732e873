"""The pure-Python grep engine: used when no ``rg`` binary is found, and for the folders rg
cannot open (a path longer than ``PATH_MAX``).

Same files as rg (the walk of :mod:`._walk`, under the rule of :mod:`._rules`), same order,
same lines: binary files (a NUL byte, unless the file starts with a UTF-16/32 byte order
mark) are skipped, UTF-16/32 with a BOM transcoded, other bytes shown as UTF-8 or Latin-1.

Patterns use the syntax of Python's :mod:`re` (run by the ``regex`` package). Files are
walked, read and decoded here; the matching runs in a child process
(:mod:`._linematch`) that is killed at the call's deadline, so a pattern that backtracks
without bound (``(a|a)+$`` on a long line) never holds a worker thread past its limit.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ...errors import ErrorKind, PathError, ToolError
from ...workspace import text as textcodec
from ._budget import Budget
from ._globmatch import expand_braces
from ._hits import MAX_FILE_BYTES, FileHits, GrepQuery, GrepResult, cut_to_limit
from ._linematch import LineMatcher, compile_pattern
from ._walk import walk

if TYPE_CHECKING:
    from ...workspace import Workspace

__all__ = ["grep_python"]

_O_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_O_READ |= getattr(os, "O_NONBLOCK", 0)


def _read_at(dir_fd: int, name: str) -> bytes | str:
    """The bytes of the regular file ``name`` in ``dir_fd``, or a reason it was skipped."""
    try:
        fd = os.open(name, _O_READ, dir_fd=dir_fd)
    except OSError as exc:
        return exc.strerror or "cannot be opened"
    try:
        st = os.fstat(fd)
        if not (st.st_mode & 0o170000 == 0o100000):
            return "not a regular file"
        if st.st_size > MAX_FILE_BYTES:
            return f"larger than {MAX_FILE_BYTES:,} bytes"
        chunks = []
        left = MAX_FILE_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > MAX_FILE_BYTES:
            return f"larger than {MAX_FILE_BYTES:,} bytes"
        return data
    except OSError as exc:
        return exc.strerror or "cannot be read"
    finally:
        os.close(fd)


def _candidates(
    ws: Workspace,
    target: str,
    is_file: bool,
    names: Any,
    budget: Budget,
    skipped: list[Any],
    rules_from_above: bool = True,
) -> Iterator[tuple[str, bytes | str]]:
    if is_file:
        try:
            with ws.open_read(target) as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
        except ToolError as exc:
            yield target, exc.message
            return
        yield target, data if len(data) <= MAX_FILE_BYTES else "too large"
        return

    def on_error(rel: str, exc: OSError) -> None:
        skipped.append((rel, exc.strerror or "cannot be read"))

    try:
        for found in walk(ws, target, budget, on_error=on_error, rules_from_above=rules_from_above):
            if found.kind != "file" or (names is not None and not names.match(found.name)):
                continue
            budget.check()
            yield found.rel, _read_at(found.dir_fd, found.name)
    except OSError as exc:  # the folder itself vanished or was swapped for a link
        raise PathError(
            ErrorKind.NOT_FOUND, f"{target} cannot be read: {exc.strerror or exc}"
        ) from None


def _search(
    lines: list[str], matcher: LineMatcher, q: GrepQuery, max_hits: int
) -> list[tuple[int, str, bool]]:
    """``(line number, line, is_match)`` of the first ``max_hits`` matches and their
    context, in order; lines after the last of them are not searched."""
    hit = matcher.hits(lines, max_hits)
    if len(hit) >= max_hits:
        lines = lines[: hit[-1] + 1]
    shown: set[int] = set()
    for i in hit:
        shown.update(range(max(0, i - q.context), min(len(lines), i + q.context + 1)))
    hits = set(hit)
    return [(i + 1, lines[i], i in hits) for i in sorted(shown)]


def grep_python(
    ws: Workspace, target: str, is_file: bool, q: GrepQuery, budget: Budget
) -> GrepResult:
    """Search ``target`` (a workspace-relative file or directory) line by line.

    Stops after ``q.limit`` matches (``more`` set when there are more).

    Raises:
        ToolError: ``invalid_arguments`` (bad pattern), path errors of ``target``.
        BudgetExceeded: out of time.
    """
    compile_pattern(q)  # an invalid pattern is invalid_arguments before any walk
    names = None
    if q.file_pattern:
        import fnmatch
        import re

        alts = "|".join(
            [fnmatch.translate(p) for p in expand_braces(q.file_pattern)]
            + [re.escape(q.file_pattern) + r"\Z"]  # a name spelled like the pattern
        )
        names = re.compile(alts)
    res = GrepResult([], 0, False, [], "python")
    found: list[FileHits] = []
    total = 0
    with LineMatcher(q, budget) as matcher:
        found_files = _candidates(
            ws, target, is_file, names, budget, res.skipped, q.rules_from_above
        )
        for rel, data in found_files:
            if isinstance(data, str):
                res.skipped.append((rel, data))
                continue
            wide = data.startswith((b"\xff\xfe", b"\xfe\xff"))
            if (b"\x00" in data and not wide) or (wide and textcodec.is_binary(data)):
                res.binary_skipped.append(rel)
                continue
            hits = FileHits(rel)
            lines = textcodec.split_lines(textcodec.decode(data).text)
            for no, line, is_match in _search(lines, matcher, q, q.limit + 1 - total):
                hits.lines[no] = (textcodec.display(line), is_match)
            if hits.lines:
                found.append(hits)
                total += hits.matches
                if total > q.limit:
                    res.more = True
                    break
    res.files = cut_to_limit(found, q.limit, q.context)
    res.matches = sum(h.matches for h in res.files)
    return res
