"""Glob patterns of ``glob``: brace expansion and a matcher polynomial in pattern length.

A pattern is split into components at ``/``; ``**`` matches zero or more components, other
components match one name with :func:`fnmatch.fnmatchcase` rules (``*``, ``?``, ``[...]``,
never crossing ``/``, hidden names matched by ``*``). A name equal to its pattern component
is matched whatever the component holds, so folders named ``[id]``, ``[...slug]`` or
``a*b`` (Next.js routes) are reached by the pattern that spells them; :func:`glob_patterns`
keeps the unexpanded pattern too, for names such as ``{a,b}``. Names and patterns are
compared in Unicode NFC, so a composed pattern finds a decomposed (macOS) name and the
result shows the name as stored. Matching runs the components as a
nondeterministic automaton: the set of pattern positions reachable after each path component
is carried down the walk, so a path of ``n`` components against ``m`` pattern components
costs ``O(n * m)`` whatever the number of ``**`` (a recursive matcher is exponential in them),
and a directory is entered only when some position is still open.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Sequence

__all__ = ["GlobMatcher", "components", "expand_braces", "glob_match", "glob_patterns"]


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
                alts = _split_top(pattern[start + 1 : i])
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


def glob_patterns(pattern: str) -> list[str]:
    """The brace expansions of ``pattern`` and, when braces were expanded, ``pattern``
    itself (last), so a name spelled with literal braces (``{a,b}``) still matches."""
    out = expand_braces(pattern)
    if out != [pattern]:
        out.append(pattern)
    return out


def _split_top(body: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in body:
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def components(pattern: str) -> list[str]:
    """Components of one (brace-free) pattern: empty and ``.`` parts dropped, runs of
    ``**`` collapsed."""
    comps: list[str] = []
    for c in pattern.split("/"):
        if c in ("", "."):
            continue
        if c == "**" and comps and comps[-1] == "**":
            continue
        comps.append(c)
    return comps


_MAGIC = re.compile(r"[*?\[]")


def _nfc(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFC", text)


State = frozenset[tuple[int, int]]
"""Open positions: ``(pattern index, component index)`` pairs."""


class GlobMatcher:
    """Matches workspace-relative paths against one or more component lists.

    ``**`` at the end matches what is inside a directory, not the directory itself (as git
    does). Use :meth:`start`, then :meth:`step` once per path component; :meth:`accepts`
    says whether the path so far matches, :meth:`alive` whether a longer path could.
    """

    __slots__ = ("_comps", "_literal", "_rx")

    def __init__(self, patterns: Sequence[Sequence[str]]) -> None:
        self._comps = [[_nfc(c) for c in p] for p in patterns]
        self._rx: list[list[re.Pattern[str] | None]] = [
            [None if c == "**" else re.compile(fnmatch.translate(c)) for c in comps]
            for comps in self._comps
        ]
        self._literal = [[not _MAGIC.search(c) for c in comps] for comps in self._comps]

    def _close(self, states: set[tuple[int, int]]) -> State:
        todo = list(states)
        while todo:
            p, i = todo.pop()
            comps = self._comps[p]
            if i < len(comps) - 1 and comps[i] == "**" and (p, i + 1) not in states:
                states.add((p, i + 1))
                todo.append((p, i + 1))
        return frozenset(states)

    def start(self) -> State:
        """The open positions before any component."""
        return self._close({(p, 0) for p in range(len(self._comps))})

    def step(self, states: State, name: str) -> State:
        """The open positions after the component ``name``."""
        out: set[tuple[int, int]] = set()
        name = _nfc(name)
        for p, i in states:
            comps = self._comps[p]
            m = len(comps)
            if i >= m:
                continue
            rx = self._rx[p][i]
            if rx is None:  # "**"
                out.add((p, i))
                if i == m - 1:
                    out.add((p, m))
            elif name == comps[i] or (not self._literal[p][i] and rx.match(name)):
                out.add((p, i + 1))
        return self._close(out) if out else frozenset()

    def accepts(self, states: State) -> bool:
        """Whether a path that led to ``states`` matches a pattern."""
        return any(i == len(self._comps[p]) for p, i in states)

    def alive(self, states: State) -> bool:
        """Whether a path below the one that led to ``states`` may match."""
        return any(i < len(self._comps[p]) for p, i in states)

    def match(self, parts: Sequence[str]) -> bool:
        """Whether the path components ``parts`` match."""
        states = self.start()
        for part in parts:
            states = self.step(states, part)
            if not states:
                return False
        return self.accepts(states)


def glob_match(parts: Sequence[str], comps: Sequence[str]) -> bool:
    """Whether path components ``parts`` match pattern components ``comps`` (see
    :class:`GlobMatcher`)."""
    return GlobMatcher([comps]).match(parts)
