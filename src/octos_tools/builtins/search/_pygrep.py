"""The pure-Python grep engine: used when no ``rg`` binary is found, and for the folders rg
cannot open (a path longer than ``PATH_MAX``).

Same files as rg (the walk of :mod:`._walk`, under the rule of :mod:`._rules`), same order,
same lines: binary files (a NUL byte, unless the file starts with a UTF-16/32 byte order
mark) are skipped, UTF-16/32 with a BOM transcoded, other bytes shown as UTF-8 or Latin-1.

Patterns use the syntax of Python's :mod:`re`, run by the ``regex`` package, whose matcher
takes a timeout and releases the GIL: a pattern that backtracks without bound, ``(a|a)+$``
on a long line, stops at the call's deadline instead of holding a worker thread (and the
interpreter) for minutes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ...errors import ErrorKind, PathError, ToolError
from ...workspace import text as textcodec
from ._budget import Budget, BudgetExceeded
from ._globmatch import expand_braces
from ._hits import MAX_FILE_BYTES, FileHits, GrepQuery, GrepResult, cut_to_limit
from ._walk import walk

if TYPE_CHECKING:
    from ...workspace import Workspace

__all__ = ["compile_pattern", "grep_python"]

_O_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_O_READ |= getattr(os, "O_NONBLOCK", 0)


def compile_pattern(q: GrepQuery) -> Any:
    """``q.pattern`` compiled by the ``regex`` package (Python :mod:`re` syntax).

    Raises:
        ToolError: ``invalid_arguments`` for an invalid expression.
    """
    import regex

    try:
        return regex.compile(q.pattern, regex.IGNORECASE if q.ignore_case else 0)
    except (regex.error, ValueError, OverflowError) as exc:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS, f"invalid regular expression {q.pattern!r}: {exc}"
        ) from None


_NOT_LINE_LOCAL = ("\\A", "\\Z", "\\z", "\\G", "\\K", "(?=", "(?!", "(?<", "(?*", "(?r")


def whole_text_filter(q: GrepQuery) -> Any | None:
    """A pattern to test a whole file at once before searching it line by line, or
    ``None`` when ``q.pattern`` cannot be tested that way.

    Sound for text without ``\\r`` (lines split on ``\\n`` only): with ``MULTILINE``,
    ``^``/``$`` match at line ends and ``\\b`` sees ``\\n`` as a non-word character, as it
    sees a line's end, so a match in a line is a match in the text. Patterns with
    assertions that look past a line's end (``\\A``, ``\\Z``, lookarounds, ...) are not
    filtered. One timed call per file instead of one per line: most files of a rare
    pattern are skipped at once.
    """
    import regex

    if any(tok in q.pattern for tok in _NOT_LINE_LOCAL):
        return None
    flags = regex.MULTILINE | (regex.IGNORECASE if q.ignore_case else 0)
    try:
        return regex.compile(q.pattern, flags)
    except (regex.error, ValueError, OverflowError):
        return None


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
    ws: Workspace, target: str, is_file: bool, names: Any, budget: Budget, skipped: list[Any]
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
        for found in walk(ws, target, budget, on_error=on_error):
            if found.kind != "file" or (names is not None and not names.match(found.name)):
                continue
            budget.check()
            yield found.rel, _read_at(found.dir_fd, found.name)
    except OSError as exc:  # the folder itself vanished or was swapped for a link
        raise PathError(
            ErrorKind.NOT_FOUND, f"{target} cannot be read: {exc.strerror or exc}"
        ) from None


def _search(
    text: str, rx: Any, q: GrepQuery, budget: Budget, max_hits: int
) -> list[tuple[int, str, bool]]:
    """``(line number, line, is_match)`` of the matches and their context, in order; stops
    at the ``max_hits``-th match."""
    lines = textcodec.split_lines(text)
    hit: list[int] = []
    for i, line in enumerate(lines):
        if len(hit) >= max_hits:
            lines = lines[:i]
            break
        try:
            if rx.search(line, timeout=budget.remaining(), concurrent=True):
                hit.append(i)
        except TimeoutError:
            raise BudgetExceeded() from None
        if not i & 1023:
            budget.check()
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
    import regex

    rx = compile_pattern(q)
    whole = whole_text_filter(q)
    names = None
    if q.file_pattern:
        import fnmatch

        alts = "|".join(fnmatch.translate(p) for p in expand_braces(q.file_pattern))
        names = regex.compile(alts)
    res = GrepResult([], 0, False, [], "python")
    found: list[FileHits] = []
    total = 0
    for rel, data in _candidates(ws, target, is_file, names, budget, res.skipped):
        if isinstance(data, str):
            res.skipped.append((rel, data))
            continue
        wide = data.startswith((b"\xff\xfe", b"\xfe\xff"))
        if (b"\x00" in data and not wide) or (wide and textcodec.is_binary(data)):
            res.binary_skipped.append(rel)
            continue
        hits = FileHits(rel)
        text = textcodec.decode(data).text
        if whole is not None and "\r" not in text:
            try:
                if whole.search(text, timeout=budget.remaining(), concurrent=True) is None:
                    continue
            except TimeoutError:
                raise BudgetExceeded() from None
        for no, line, is_match in _search(text, rx, q, budget, q.limit + 1 - total):
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
