"""Post-processing of every tool output: head/tail capping and secret redaction.

Both run on every result the registry returns (as octos does,
``crates/octos-agent/src/sanitize.rs``): the cap keeps the
beginning (70 %) and the end (30 %) of an over-long output and states how many bytes were
left out; redaction replaces credentials that look like API keys, bearer tokens and private
keys, so a tool that reads a ``.env`` file does not hand the secret to the model provider.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from . import _prefilter

__all__ = [
    "CUT_TOKEN_MAX",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "SECRET_MARKERS",
    "cap_output",
    "redact_secrets",
    "redact_value",
    "trim_cut_tokens",
]

DEFAULT_MAX_OUTPUT_BYTES = 50_000
"""Default output cap in bytes (octos's default)."""

_HEAD_SHARE = 0.7


_TOKEN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=.~")
CUT_TOKEN_MAX = 256
"""A run of credential characters (ASCII letters, digits, ``-_+/=.~``) of 8 to this many
bytes that a cut leaves at the edge of the head or the tail is dropped with the omitted part
(see :func:`trim_cut_tokens`); a longer run is kept (no key is that long, and a line of
one character would otherwise vanish)."""


def trim_cut_tokens(head: bytes, tail: bytes) -> tuple[bytes, bytes]:
    """``head`` and ``tail`` of a cut output without the part of a token the cut went
    through: a run of 8 to :data:`CUT_TOKEN_MAX` credential characters ending the head or
    starting the tail. Redaction runs on what is kept, and a key cut in two no longer
    matches its pattern, so its visible half would otherwise reach the model in clear.
    Shorter fragments are harmless and kept."""

    end = _token_run(reversed(head[-(CUT_TOKEN_MAX + 1) :]))
    if 8 <= end <= CUT_TOKEN_MAX:
        head = head[: len(head) - end]
    start = _token_run(tail[: CUT_TOKEN_MAX + 1])
    if 8 <= start <= CUT_TOKEN_MAX:
        tail = tail[start:]
    return head, tail


def _token_run(data: Iterable[int]) -> int:
    """How many bytes of credential characters ``data`` starts with."""
    n = 0
    for byte in data:
        if byte not in _TOKEN_BYTES:
            break
        n += 1
    return n


def cap_output(text: str, max_bytes: int = DEFAULT_MAX_OUTPUT_BYTES) -> str:
    """Cap ``text`` at about ``max_bytes`` UTF-8 bytes, keeping head and tail.

    The result is ``head + "\\n\\n... [N bytes omitted of T; ...] ...\\n\\n" + tail`` with
    the head ~70 % and the tail ~30 % of the budget. Both cuts fall on line boundaries (the
    head ends after a newline, the tail starts a line), unless that would drop more than half
    of a side (a few very long lines: the cut is then on a character boundary). The marker
    says how to get the rest: run the command again with its output redirected to a file and
    grep it, or read the file by line range. A credential-like token the cut goes through is
    dropped whole (:func:`trim_cut_tokens`). Text within the budget is returned unchanged.

    Args:
        text: the output.
        max_bytes: the budget in bytes (at least 256).

    Raises:
        ValueError: if ``max_bytes`` is below 256.
    """
    if max_bytes < 256:
        raise ValueError(f"max_bytes must be at least 256, got {max_bytes}")
    if len(text) <= max_bytes // 4:  # fast path: cannot exceed max_bytes in UTF-8
        return text
    data = text.encode("utf-8", "surrogatepass")
    total = len(data)
    if total <= max_bytes:
        return text
    budget = max_bytes - min(_MARKER_RESERVE, max_bytes // 3)
    head_size = int(budget * _HEAD_SHARE)
    tail_size = budget - head_size
    head_cut = data[:head_size]
    newline = head_cut.rfind(b"\n")
    if newline >= head_size // 2:
        head_cut = head_cut[: newline + 1]
    tail_cut = data[total - tail_size :]
    newline = tail_cut.find(b"\n")
    if 0 <= newline < tail_size // 2 and data[total - tail_size - 1 : total - tail_size] != b"\n":
        tail_cut = tail_cut[newline + 1 :]
    head_bytes, tail_bytes = trim_cut_tokens(head_cut, tail_cut)
    head = head_bytes.decode("utf-8", "ignore")  # drops a partial trailing character
    tail = tail_bytes.decode("utf-8", "ignore")  # drops a partial leading character
    omitted = (
        total
        - len(head.encode("utf-8", "surrogatepass"))
        - len(tail.encode("utf-8", "surrogatepass"))
    )
    marker = (
        f"\n... [{omitted} bytes omitted of {total} bytes; for the rest, redirect the output "
        "to a file and grep it, or read it by line range] ...\n"
    )
    if not head.endswith("\n"):
        marker = "\n" + marker
    if not tail.startswith("\n"):
        marker += "\n"
    return head + marker + tail


_MARKER_RESERVE = 200
"""Bytes of the budget kept for the omission marker."""


# (markers, pattern, at): a pattern runs only where one of its markers occurs in the text
# (one Aho-Corasick pass shared with the injection scan, :mod:`._prefilter`). ``at`` is the
# offset of the markers from the start of every match, for a case-sensitive pattern that
# starts with its marker (a literal, or one character before it): the regex is then tried
# only at those starts (``Pattern.match``), in order, skipping starts inside the previous
# match, which finds exactly what ``Pattern.sub`` scanning the whole text would. ``None``: a
# case-insensitive pattern or one whose marker floats; it scans the whole text when a marker
# occurs. The word boundary before a match is checked in ``_mask`` instead of with a leading
# ``\b``. A pattern with a group named ``v`` redacts only that group (the value after a label).
_B64 = r"[A-Za-z0-9+/]"
_SECRET_PATTERNS: tuple[tuple[tuple[str, ...], re.Pattern[str], tuple[int, ...] | None], ...] = (
    tuple(
        (markers, re.compile(pattern, flags), at)
        for markers, pattern, flags, at in (
            (
                ("PRIVATE KEY-----",),
                r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?"
                r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
                0,
                None,
            ),
            # the end of a key shown without its BEGIN line (tail, a cut output)
            (
                ("PRIVATE KEY-----",),
                r"^(?P<v>(?:[A-Za-z0-9+/=]{16,}\r?\n)+)-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
                re.M,
                None,
            ),
            # a key body without BEGIN/END: 64-column base64 lines starting like a DER
            # private key (MII…) or an OpenSSH key (b3BlbnNzaC1rZXktdjE = "openssh-key-v1")
            (
                ("MII", "b3BlbnNzaC1rZXktdjE"),
                rf"^(?P<v>(?:MII|b3BlbnNzaC1rZXktdjE){_B64}{{61,67}}\r?\n(?:{_B64}{{64,70}}\r?\n)+)",
                re.M,
                (0, 0),
            ),
            (("sk-",), r"sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", 0, (0,)),
            (
                ("k_live_", "k_test_", "whsec_"),
                r"(?:[sr]k_(?:live|test)_|whsec_)[A-Za-z0-9]{16,}",
                0,
                (1, 1, 0),
            ),
            (("AKIA", "ASIA"), r"A(?:KI|SI)A[0-9A-Z]{16}(?![0-9A-Za-z])", 0, (0, 0)),
            (
                ("ecret", "ECRET"),
                r"(?i:secret[_-]?access[_-]?key)[\"']?\s*[:=]\s*[\"']?(?P<v>[A-Za-z0-9/+]{40})"
                r"(?![A-Za-z0-9/+])",
                0,
                None,
            ),
            (
                ("ghp_", "gho_", "ghs_", "ghr_", "ghu_"),
                r"gh[pousr]_[A-Za-z0-9]{30,}",
                0,
                (0, 0, 0, 0, 0),
            ),
            (("github_pat_",), r"github_pat_[A-Za-z0-9_]{30,}", 0, (0,)),
            (("glpat-",), r"glpat-[A-Za-z0-9_\-]{20,}", 0, (0,)),
            (("hf_",), r"hf_[A-Za-z0-9]{30,}", 0, (0,)),
            (("npm_",), r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", 0, (0,)),
            (("pypi-AgE",), r"pypi-AgE[A-Za-z0-9_\-]{50,}", 0, (0,)),
            (("dckr_pat_",), r"dckr_pat_[A-Za-z0-9_\-]{20,}", 0, (0,)),
            (("xox",), r"xox[abposer]-[A-Za-z0-9\-]{10,}", 0, (0,)),
            (("xapp-",), r"xapp-\d-[A-Za-z0-9\-]{20,}", 0, (0,)),
            (
                ("hooks.slack.com/",),
                r"hooks\.slack\.com/(?:services|workflows)/(?P<v>[A-Za-z0-9/_\-]{20,})",
                0,
                (0,),
            ),
            (("AIza",), r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])", 0, (0,)),
            (("GOCSPX-",), r"GOCSPX-[A-Za-z0-9_\-]{20,}", 0, (0,)),
            (("ya29.",), r"ya29\.[A-Za-z0-9_\-]{20,}", 0, (0,)),
            (("SG.",), r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{20,}", 0, (0,)),
            (("AccountKey=",), r"AccountKey=(?P<v>[A-Za-z0-9+/]{40,}={0,2})", 0, (0,)),
            (
                ("eyJ",),
                r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
                0,
                (0,),
            ),
            (("earer", "EARER"), r"(?i:bearer)\s+[A-Za-z0-9_\-\.=+/]{20,}", 0, None),
        )
    )
)

SECRET_MARKERS: tuple[str, ...] = tuple(
    sorted({m for markers, _, _ in _SECRET_PATTERNS for m in markers})
)
"""The literals one of which every credential pattern's match contains (redaction's half
of the one-pass prefilter, :mod:`._prefilter`)."""


_CERTIFICATE_BEFORE = re.compile(r"-----BEGIN [A-Z0-9 ]*(?:CERTIFICATE|PUBLIC KEY)-----\r?\n$")


def _is_word_char(char: str) -> bool:
    """An ASCII letter, digit or ``_``: a key right after one is part of a longer identifier
    (``task-...``); after any other character (``密钥sk-...``, ``Ключghp_...``) it stands
    on its own. Keys are ASCII, so only an ASCII word can run into one."""
    return char == "_" or (char.isascii() and char.isalnum())


def _mask(match: re.Match[str]) -> str:
    secret = match.group(0)
    start = match.start()
    labelled = "v" in match.re.groupindex
    if not labelled and start and _is_word_char(match.string[start - 1]):
        return secret  # inside a longer word (e.g. "task-..."): not a credential
    if labelled:
        value = match.group("v")
        if value.startswith(("MII", "b3BlbnNz")) and _CERTIFICATE_BEFORE.search(
            match.string, max(0, start - 80), start
        ):
            return secret  # a certificate or public key body: public by design
        cut = match.start("v") - start
        tail = "\n" if value.endswith("\n") else ""
        return secret[:cut] + "[credential-redacted]" + tail + secret[cut + len(value) :]
    if secret.startswith("-----BEGIN"):
        return "-----BEGIN PRIVATE KEY----- [credential-redacted] -----END PRIVATE KEY-----"
    if secret[:6].lower() == "bearer":
        return secret[:7] + secret[7:11] + "...[credential-redacted]"
    return secret[:4] + "...[credential-redacted]"


def redact_secrets(text: str) -> str:
    """Replace credentials in ``text`` by their first 4 characters and a marker.

    Recognised: OpenAI (``sk-…``) and Anthropic (``sk-ant-…``) keys; Stripe secret and
    restricted keys (``sk_live_``, ``rk_live_``, test keys, ``whsec_``); AWS access key
    ids and secret access keys (after a ``secret_access_key`` / ``SecretAccessKey`` label);
    GitHub (classic and fine-grained), GitLab, Hugging Face (``hf_``), npm (``npm_``), PyPI
    and Docker Hub tokens; Slack tokens and webhook URLs; Google API keys, OAuth client
    secrets and access tokens; SendGrid keys; Azure storage account keys; JWTs; ``Bearer``
    tokens; PEM private-key blocks, the end of a key shown without its BEGIN line, and
    64-column key bodies starting like a DER or OpenSSH private key. The octos sanitizer
    (``crates/octos-agent/src/sanitize.rs``) is the starting list. Long hex runs,
    UUIDs and ``password = …`` assignments are *not* redacted: they are ordinary in source
    code and redacting them would make the file impossible to edit.
    """
    if not text:
        return text
    found = _prefilter.find(text)
    if found is None:
        return _redact_marker_by_marker(text)
    for markers, pattern, at in _SECRET_PATTERNS:
        if not found:
            break
        if found.keys().isdisjoint(markers):
            continue
        if at is None:
            redacted = pattern.sub(_mask, text)
        else:
            redacted = _sub_at_markers(pattern, text, markers, at, found)
        if redacted != text:
            text = redacted
            found = _prefilter.find(text) or {}  # what is left to look for
    return text


def _sub_at_markers(
    pattern: re.Pattern[str],
    text: str,
    markers: tuple[str, ...],
    offsets: tuple[int, ...],
    found: _prefilter.Hits,
) -> str:
    """``pattern.sub(_mask, text)`` for a pattern whose every match starts ``offsets[i]``
    characters before an occurrence of ``markers[i]`` (``found``: where each occurs): the
    regex is tried only at those starts, in order, a start inside the previous match
    skipped (as ``sub`` scans)."""
    starts: set[int] = set()
    for marker, offset in zip(markers, offsets, strict=True):
        for i in found.get(marker, ()):
            if i >= offset:
                starts.add(i - offset)
    parts: list[str] = []
    end = 0
    for start in sorted(starts):
        if start < end:
            continue
        m = pattern.match(text, start)
        if m is None:
            continue
        parts.append(text[end:start])
        parts.append(_mask(m))
        end = m.end()
    if not parts:
        return text
    parts.append(text[end:])
    return "".join(parts)


def _redact_marker_by_marker(text: str) -> str:
    """:func:`redact_secrets` without the one-pass prefilter (a lone surrogate in
    ``text``): each marker searched for once with ``in``, every pattern with a marker
    present run over the whole text."""
    present: dict[str, bool] = {}
    for markers, pattern, _ in _SECRET_PATTERNS:
        hit = False
        for m in markers:
            found = present.get(m)
            if found is None:
                found = present[m] = m in text
            if found:
                hit = True
                break
        if hit:
            text = pattern.sub(_mask, text)
    return text


_MIN_SECRET_CHARS = 8
"""No pattern above matches fewer characters (the shortest, a labelled key, needs more)."""
_NO_TEXT = frozenset({int, float, bool, type(None)})


def redact_value(value: Any) -> Any:
    """``value`` with :func:`redact_secrets` applied to every string in it, keys kept.

    For ``structured_metadata``, which reaches the model too (MCP ``structuredContent``, the
    CLI's JSON). Returns the same object when nothing changed. Recursion depth is that of the
    tool's own metadata.
    """
    kind = type(value)
    if kind is str:
        return value if len(value) < _MIN_SECRET_CHARS else redact_secrets(value)
    if kind in _NO_TEXT:
        return value
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        changed: dict[Any, Any] | None = None
        for k, v in value.items():
            new = redact_value(v)
            if new is not v:
                if changed is None:
                    changed = dict(value)
                changed[k] = new
        return value if changed is None else changed
    if isinstance(value, list | tuple):
        seq: list[Any] | None = None
        for i, v in enumerate(value):
            new = redact_value(v)
            if new is not v:
                if seq is None:
                    seq = list(value)
                seq[i] = new
        return value if seq is None else seq
    return value
