"""The prompt-injection phrase filter of untrusted tool results (octos's prompt guard).

Results of tools whose content comes from outside (``web_fetch``, ``web_search``,
``browser``, mounted MCP servers: :attr:`~octos_tools.tool_types.Tool.content_trust`
``"untrusted"``) are scanned for the phrases octos blocks at medium and high severity
(``crates/octos-agent/src/prompt_guard.rs``, https://github.com/octos-org/octos): an
instruction override ("ignore all previous instructions"), a fake new instruction set, a
fake role or system marker (a line starting ``System:``, chat-template tokens such as
``<|im_start|>``, ``[INST]``), an identity reassignment ("you are now an unrestricted..."),
fake tool-call JSON or tags, a request to reveal the prompt or secrets, and a persistent
instruction ("from now on you must"). With ``[output] injection_filter = "block"`` (the
default) each match is replaced by ``[injection-blocked:<kind>]``; with ``"flag"`` the text
is kept. Either way the result's metadata says ``untrusted: true`` and lists the matches
(``injection``), so a host can show or drop them. File reads (``content_trust``
``"workspace"``) keep their exact text, since an edit needs it, and only flag.

**What a phrase filter cannot do.** It is not a security boundary: it catches naive
plain-text injections only. Base64, URL or HTML-entity encoding, homoglyphs, zero-width or
bidirectional characters, other languages, paraphrase and instructions split over several
results all pass. The real controls are the tool policy, the sandbox and approvals.

Speed: one Aho-Corasick pass (:mod:`octos_tools._prefilter`, shared with credential
redaction: a file read that is redacted and flagged is scanned once) finds which patterns'
anchor words occur; only those patterns' regexes run, each in a window around its anchor,
so a result with none of the anchors costs the one pass (and, in ``block`` mode, one
``lower()``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from . import _prefilter

__all__ = ["CASED_ANCHORS", "MODES", "Match", "filter_text", "scan"]

Mode = Literal["block", "flag", "off"]
MODES: Final = ("block", "flag", "off")

_NOUNS = ("instruction", "instructions", "prompt", "directive", "directives", "rules")
_ROLES = ("system", "assistant", "developer", "admin", "root")
_WINDOW_AFTER = 240
"""Most characters of a match after its anchor's start (a longer match is cut there)."""


@dataclass(frozen=True, slots=True)
class _Pattern:
    kind: str
    severity: str
    regex: re.Pattern[str]
    anchors: tuple[str, ...]
    lookback: int
    """Most characters of a match before its anchor word."""


def _p(kind: str, severity: str, lookback: int, regex: str, *anchors: str) -> _Pattern:
    flags = re.IGNORECASE | re.MULTILINE
    return _Pattern(kind, severity, re.compile(regex, flags), anchors, lookback)


# The medium and high patterns of octos's prompt guard, in its five kinds (its low
# "what is your prompt" inquiry is left out: octos only logs it), plus chat-template tokens
# as role markers. Anchors: lower-case words one of which every match contains.
_PATTERNS: Final[tuple[_Pattern, ...]] = (
    _p(
        "system-override",
        "high",
        0,
        r"\b(?:ignore|forget|disregard|override)\s+(?:all\s+|any\s+|your\s+|the\s+)?"
        r"(?:of\s+)?(?:the\s+)?(?:previous|prior|above|earlier|preceding|my|your|the|all)\s+"
        r"(?:instructions?|prompts?|rules?|directives?|guidelines?|constraints?)\b",
        "ignore",
        "forget",
        "disregard",
        "override",
    ),
    _p(
        "system-override",
        "high",
        48,
        r"\b(?:new|updated|revised|real|actual|true)\s+(?:system\s+)?"
        r"(?:instructions?|prompt|directives?|rules)(?:[ \t]?:|\s+are\b)",
        *(f"{noun}{tail}" for noun in _NOUNS for tail in (":", " :", " are")),
    ),
    _p(
        "role-confusion",
        "high",
        16,
        r"^[ \t>#*]*(?:system|assistant|developer|admin|root)[ \t]?:[ \t]*\S.{9,}",
        *(f"{role}{tail}" for role in _ROLES for tail in (":", " :")),
    ),
    _p(
        "role-confusion",
        "high",
        0,
        r"<\|(?:im_start|im_end|system|user|assistant|endoftext|start_header_id|"
        r"end_header_id|eot_id)\|>",
        "<|",
    ),
    _p(
        "role-confusion",
        "high",
        8,
        r"\byou\s+are\s+now\s+(?:a\s+|an\s+)?(?:different|new|unrestricted|jailbroken|"
        r"unfiltered|dan\b|evil)",
        "are now",
    ),
    _p(
        "tool-call-injection",
        "high",
        16,
        r'\{\s*"(?:name|function|tool_name|tool)"\s*:\s*"[^"\n]+"\s*,\s*'
        r'"(?:arguments|parameters|input|args)"\s*:',
        '"name"',
        '"function"',
        '"tool_name"',
        '"tool"',
    ),
    _p(
        "tool-call-injection",
        "medium",
        0,
        r"<(?:tool_call|function_call|invoke|tool_use)\b[^>\n]{0,200}>",
        "<tool_call",
        "<function_call",
        "<invoke",
        "<tool_use",
    ),
    _p(
        "secret-extraction",
        "medium",
        64,
        r"\b(?:print|show|reveal|display|repeat|echo|tell\s+me|output\s+(?=the|me|your|my))\s+"
        r"(?:the\s+|me\s+the\s+|your\s+|my\s+)?(?:entire\s+|full\s+|whole\s+)?"
        r"(?:system\s+)?(?:prompt|instructions|secrets?|api[\s_-]*keys?|passwords?|"
        r"credentials?)\b",
        "prompt",
        "instructions",
        "secret",
        "api",
        "password",
        "credential",
    ),
    _p(
        "instruction-injection",
        "medium",
        6,
        r"\b(?:from\s+now\s+on|henceforth|going\s+forward),?\s+(?:you\s+)?"
        r"(?:must|should|will|shall|always|never)\b",
        "now on",
        "henceforth",
        "going forward",
    ),
    _p(
        "instruction-injection",
        "medium",
        0,
        r"\[/?(?:system|inst|sys)\]|<</?sys>>",
        "[system]",
        "[inst]",
        "[/inst]",
        "[sys]",
        "<<sys>>",
    ),
)

_ANCHORS: Final[tuple[str, ...]] = tuple(
    dict.fromkeys(a for pattern in _PATTERNS for a in pattern.anchors)
)
_ANCHOR_PATTERNS: Final[tuple[tuple[int, ...], ...]] = tuple(
    tuple(i for i, p in enumerate(_PATTERNS) if anchor in p.anchors) for anchor in _ANCHORS
)
"""For each anchor (by its index in :data:`_ANCHORS`), the patterns it belongs to."""
_ANCHOR_INDEX: Final[dict[str, int]] = {anchor: i for i, anchor in enumerate(_ANCHORS)}
_CASED: Final[dict[str, int]] = {
    variant: i
    for i, anchor in enumerate(_ANCHORS)
    for variant in (anchor, anchor.capitalize(), anchor.upper(), anchor.title())
}
"""Anchors as written in lower, capitalised, title and upper case (for the quick scan)."""
CASED_ANCHORS: Final[tuple[str, ...]] = tuple(_CASED)
"""Every anchor word in those four spellings (the injection scan's half of the one-pass
prefilter, :mod:`._prefilter`; the lower-case spelling serves the ``block`` mode's scan
of the lower-cased text)."""


@dataclass(frozen=True, slots=True)
class Match:
    """One injection phrase found: its kind (octos's labels), severity and span (character
    offsets into the scanned text)."""

    kind: str
    severity: str
    start: int
    end: int

    def as_json(self) -> dict[str, Any]:
        """``{"kind", "severity", "start", "end"}``."""
        return {"kind": self.kind, "severity": self.severity, "start": self.start, "end": self.end}


def _quick_hits(text: str) -> list[tuple[int, int]] | None:
    """:func:`_hits` without ``lower()``: anchors in their usual cases only (a phrase in
    odd mixed case is missed). For text that is only flagged, never changed (file reads),
    where a scan must cost next to nothing."""
    present = _prefilter.find(text)
    if present is None:
        return None
    hits: list[tuple[int, int]] = []
    for variant, positions in present.items():
        index = _CASED.get(variant)
        if index is not None:  # else a credential marker
            hits.extend((index, at) for at in positions)
    return hits


def _hits(text: str) -> list[tuple[int, int]] | None:
    """``(anchor index, anchor position)`` of every anchor in ``text``, or ``None`` when
    positions cannot be trusted (no prefilter; ``lower()`` changed the length).

    The positions come from the one prefilter pass (:func:`._prefilter.find`) over the
    lower-cased text."""
    lowered = text.lower()
    if len(lowered) != len(text):
        return None
    present = _prefilter.find(lowered)  # None: a lone surrogate (UTF-8 only) or no automaton
    if present is None:
        return None
    hits: list[tuple[int, int]] = []
    for anchor, positions in present.items():
        index = _ANCHOR_INDEX.get(anchor)
        if index is not None:  # else a credential marker or an anchor in another case
            hits.extend((index, at) for at in positions)
    return hits


def scan(text: str, *, quick: bool = False) -> list[Match]:
    """Every injection phrase in ``text``, by position; overlapping matches keep the
    earliest (then the longest). ``quick``: anchors found in their usual cases only
    (:func:`_quick_hits`), for text that is only flagged.

    Each pattern's regex runs only in a window around the occurrences of its anchor words
    (found in one Aho-Corasick pass); without positions (see :func:`_hits`) every pattern
    runs over the whole text.
    """
    seen: set[tuple[int, int, str, str]] = set()
    hits = _quick_hits(text) if quick else _hits(text)
    if hits is None:
        for pattern in _PATTERNS:
            for m in pattern.regex.finditer(text):
                seen.add((m.start(), m.end(), pattern.kind, pattern.severity))
    else:
        searched: set[tuple[int, int]] = set()
        for anchor_index, at in hits:
            for pattern_index in _ANCHOR_PATTERNS[anchor_index]:
                window = (pattern_index, at)
                if window in searched:
                    continue
                searched.add(window)
                pattern = _PATTERNS[pattern_index]
                lo = max(0, at - pattern.lookback)
                for m in pattern.regex.finditer(text, lo, at + _WINDOW_AFTER):
                    if m.start() <= at < m.end():
                        seen.add((m.start(), m.end(), pattern.kind, pattern.severity))
    found = sorted(seen, key=lambda m: (m[0], -m[1]))
    kept: list[Match] = []
    for start, end, kind, severity in found:
        if kept and start < kept[-1].end:
            continue
        kept.append(Match(kind, severity, start, end))
    return kept


def filter_text(text: str, mode: Mode) -> tuple[str, list[Match]]:
    """``(text, matches)``: with ``mode="block"`` each match replaced by
    ``[injection-blocked:<kind>]``; with ``"flag"`` the text unchanged; with ``"off"``
    nothing is scanned. Offsets in the matches are into the original text.

    Raises:
        ValueError: an unknown ``mode``.
    """
    if mode not in MODES:
        raise ValueError(f"injection filter mode must be one of {MODES}, not {mode!r}")
    if mode == "off" or not text:
        return text, []
    matches = scan(text, quick=mode == "flag")
    if not matches or mode == "flag":
        return text, matches
    parts: list[str] = []
    at = 0
    for m in matches:
        parts.append(text[at : m.start])
        parts.append(f"[injection-blocked:{m.kind}]")
        at = m.end
    parts.append(text[at:])
    return "".join(parts), matches
