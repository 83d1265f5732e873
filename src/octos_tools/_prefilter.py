"""The one literal pass over a tool's output shared by redaction and the injection scan.

Credential redaction (:func:`octos_tools.output.redact_secrets`) and the prompt-injection
phrase filter (:mod:`octos_tools._injection`) both start from literal words: each
credential pattern has markers (``sk-``, ``ghp_``, ``PRIVATE KEY-----``), each injection
pattern anchors (``ignore``, ``<|``, ``system:``, in lower, capitalised, title and upper
case for a flag-only scan). One Aho-Corasick automaton holds both lists, and :func:`find`
runs it once over a text and says where each literal occurs: a result that is both
redacted and flagged (every ``read_file``) is scanned once, and each regex then runs only
at the places its literals occur.

The automaton is a DFA over the text's UTF-8 bytes (``ahocorasick_rs``, in Rust; about 5x
its default NFA on these ~200 literals), built on first use (2 ms), not at import. Byte
offsets become character offsets in one walk over the hits (a decode of the bytes between
two hits), which is cheaper than locating each literal again with ``str.find`` or letting
the library translate offsets (a 40 kB numbered source file: 0.43 ms, where the two NFA
passes and the ``str.find`` calls took 1.4 ms).

The last long text scanned is remembered by identity: redaction returns the very object
it was given when nothing was redacted, and the injection scan of that object reuses the
pass. A string is immutable, so the same object always has the same hits.
"""

from __future__ import annotations

from typing import Any

_BytesAhoCorasick: Any
_DFA: Any
try:
    from ahocorasick_rs import BytesAhoCorasick as _BytesAhoCorasick
    from ahocorasick_rs import Implementation

    _DFA = Implementation.DFA
except ImportError:  # pragma: no cover - a declared dependency; callers fall back
    _BytesAhoCorasick = None
    _DFA = None

__all__ = ["Hits", "find"]

Hits = dict[str, list[int]]
"""Each literal that occurs in a text → the character offsets of its occurrences, in order."""

_REMEMBER_CHARS = 1024
"""Texts from this length on are remembered (a short one costs less to scan again than to
push the long one out: ``redact_value`` scans every string of a result's metadata between
the output's redaction and its injection scan)."""

_literals: tuple[str, ...] = ()
_finder: Any = None
_last: tuple[str, Hits | None] | None = None


def _build() -> Any:
    global _finder, _literals
    from ._injection import CASED_ANCHORS
    from .output import SECRET_MARKERS

    literals = tuple(sorted(set(SECRET_MARKERS) | set(CASED_ANCHORS)))
    finder = _BytesAhoCorasick([x.encode("utf-8") for x in literals], implementation=_DFA)
    _literals = literals
    _finder = finder
    return finder


def find(text: str) -> Hits | None:
    """Where each credential marker (:data:`octos_tools.output.SECRET_MARKERS`) and each
    injection anchor spelling (:data:`octos_tools._injection.CASED_ANCHORS`) occurs in
    ``text`` (as written, case-sensitive), found in one pass; an empty dict when none does.

    Returns ``None`` without ``ahocorasick_rs`` or for a text that has no UTF-8 form (a
    lone surrogate, as ``os.fsdecode`` makes of a non-UTF-8 file name): the callers then
    search literal by literal or run every pattern.
    """
    last = _last
    if last is not None and last[0] is text:
        return last[1]
    if _BytesAhoCorasick is None:  # pragma: no cover - a declared dependency
        return None
    finder = _finder if _finder is not None else _build()
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    raw = finder.find_matches_as_indexes(data, overlapping=True)
    hits: Hits = {}
    if raw:
        literals = _literals
        if len(data) == len(text):  # ASCII: byte offsets are character offsets
            for index, start, _ in raw:
                hits.setdefault(literals[index], []).append(start)
        else:
            raw.sort(key=lambda hit: hit[1])
            byte_at = char_at = 0
            for index, start, _ in raw:
                if start != byte_at:
                    char_at += len(data[byte_at:start].decode("utf-8"))
                    byte_at = start
                hits.setdefault(literals[index], []).append(char_at)
    if len(text) >= _REMEMBER_CHARS:
        _remember(text, hits)
    return hits


def _remember(text: str, hits: Hits | None) -> None:
    global _last
    _last = (text, hits)  # one assignment: another thread sees the old pair or this one
