"""Finding a hunk's lines in a file and applying the hunks (Codex ``seek_sequence``).

Each hunk's context and removed lines are searched from a cursor that moves forward hunk by
hunk, first exactly, then ignoring trailing whitespace, then ignoring surrounding whitespace,
then with typographic punctuation and spaces normalised (and NFC). An exact match is always
taken first; a looser level is accepted only when its match is unique (else
``ambiguous_match``). The file's own bytes are kept for context lines, new lines take the
file's dominant line ending, and the file keeps its final newline (or lack of one). A hunk of
only ``+`` lines is appended at the end of the file (or right after its ``@@ anchor`` line).
Stacked ``@@`` anchors are found one after the other, each after the last (Codex). A hunk
whose lines (or anchor) are found only before the previous hunk's match is refused saying
so, with both places' line numbers: hunks must come in file order.

Source: Codex ``codex-rs/apply-patch/src/seek_sequence.rs`` and ``lib.rs``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence

from ...errors import ErrorKind, ToolError
from ...workspace import text as textcodec
from ._grammar import Hunk

__all__ = ["apply_hunks", "seek_sequence"]

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


def _check_order(
    content: Sequence[str],
    pattern: Sequence[str],
    cursor: int,
    prev: tuple[int, int] | None,
    what: str,
) -> None:
    """Refuse, saying so, a hunk part that is not found from ``cursor`` but is before it
    (the previous hunk matched lines ``prev``, 0-based).

    Raises:
        ToolError: ``patch_conflict`` naming both places, when the pattern is found earlier.
    """
    if cursor == 0:
        return
    try:
        early = seek_sequence(content[:cursor], pattern, 0)
    except ToolError:  # only loose matches, more than one: the plain message stands
        return
    if early is None:
        return
    at = early[0] + 1
    after = (
        f"the previous hunk, which matched lines {prev[0] + 1}-{prev[1] + 1}"
        if prev is not None
        else f"the anchor found at line {cursor}"
    )
    raise ToolError(
        ErrorKind.PATCH_CONFLICT,
        f"{what} are found only at line {at}, before {after}: hunks must follow the file's order "
        "(each is searched after the one before); put this hunk before that one",
        reason="hunk_out_of_order",
    )


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
    prev: tuple[int, int] | None = None  # 0-based first and last line of the last match
    for k, hunk in enumerate(hunks, 1):
        where = f"hunk {k}{label} (patch line {hunk.line})"
        for anchor in hunk.anchors:
            found = seek_sequence(content, [anchor], cursor)
            if found is None:
                _check_order(
                    content, [anchor], cursor, prev, f"{where}: the anchor lines {anchor!r}"
                )
                raise ToolError(
                    ErrorKind.PATCH_CONFLICT,
                    f"{where}: anchor {anchor!r} not found (searched from line {cursor + 1})",
                )
            cursor = found[0] + 1
        hunk_lines = list(hunk.lines)
        old = [t for op, t in hunk_lines if op != "+"]
        if not old:
            pos = cursor if hunk.anchors else len(content)
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
            _check_order(content, old, cursor, prev, f"{where}: its lines")
            raise ToolError(
                ErrorKind.PATCH_CONFLICT,
                f"{where}: these lines were not found "
                f"(searched from line {cursor + 1}): {_preview(old)}; re-read the file and "
                "copy its lines exactly",
            )
        pos = match[0]
        plan.append((pos, len(old), hunk_lines))
        cursor = pos + len(old)
        prev = (pos, cursor - 1)
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
