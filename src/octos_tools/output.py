"""Post-processing of every tool output: head/tail capping and secret redaction.

Both run on every result the registry returns (reference §0.6): the cap keeps the
beginning (70 %) and the end (30 %) of an over-long output and states how many bytes were
left out; redaction replaces credentials that look like API keys, bearer tokens and private
keys, so a tool that reads a ``.env`` file does not hand the secret to the model provider.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["DEFAULT_MAX_OUTPUT_BYTES", "cap_output", "redact_secrets", "redact_value"]

DEFAULT_MAX_OUTPUT_BYTES = 50_000
"""Default output cap in bytes (reference §7)."""

_HEAD_SHARE = 0.7


def _cut_utf8(data: bytes, size: int, *, from_end: bool = False) -> str:
    """Decode ``size`` bytes of ``data`` from the start (or end) without splitting a character."""
    if from_end:
        chunk = data[len(data) - size :] if size else b""
        return chunk.decode("utf-8", "ignore")  # drops a partial leading character
    return data[:size].decode("utf-8", "ignore")  # drops a partial trailing character


def cap_output(text: str, max_bytes: int = DEFAULT_MAX_OUTPUT_BYTES) -> str:
    """Cap ``text`` at about ``max_bytes`` UTF-8 bytes, keeping head and tail.

    The result is ``head + "\\n\\n... [N bytes omitted of T] ...\\n\\n" + tail`` with the head
    ~70 % and the tail ~30 % of the budget, cut on character boundaries. Text within the
    budget is returned unchanged.

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
    budget = max_bytes - 80  # room for the marker
    head_size = int(budget * _HEAD_SHARE)
    tail_size = budget - head_size
    head = _cut_utf8(data, head_size)
    tail = _cut_utf8(data, tail_size, from_end=True)
    omitted = (
        total
        - len(head.encode("utf-8", "surrogatepass"))
        - len(tail.encode("utf-8", "surrogatepass"))
    )
    marker = f"\n\n... [{omitted} bytes omitted of {total} bytes] ...\n\n"
    return head + marker + tail


# (markers, pattern): a pattern runs only when one of its markers occurs in the text (a
# C-speed substring search), and every pattern starts with a literal so the regex engine can
# skip ahead; the word boundary before a match is checked in ``_mask`` instead of with a
# leading ``\b`` (which would disable that optimisation: ~30x slower on source files).
_SECRET_PATTERNS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (markers, re.compile(pattern))
    for markers, pattern in (
        (
            ("PRIVATE KEY-----",),
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?"
            r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
        ),
        (("sk-",), r"sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
        (("AKIA", "ASIA"), r"A(?:KI|SI)A[0-9A-Z]{16}(?![0-9A-Za-z])"),
        (("ghp_", "gho_", "ghs_", "ghr_", "ghu_"), r"gh[pousr]_[A-Za-z0-9]{30,}"),
        (("github_pat_",), r"github_pat_[A-Za-z0-9_]{30,}"),
        (("glpat-",), r"glpat-[A-Za-z0-9_\-]{20,}"),
        (("xox",), r"xox[abprs]-[A-Za-z0-9\-]{10,}"),
        (("AIza",), r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
        (("earer", "EARER"), r"(?i:bearer)\s+[A-Za-z0-9_\-\.=+/]{20,}"),
    )
)


def _mask(match: re.Match[str]) -> str:
    secret = match.group(0)
    start = match.start()
    if start and (match.string[start - 1].isalnum() or match.string[start - 1] == "_"):
        return secret  # inside a longer word (e.g. "task-..."): not a credential
    if secret.startswith("-----BEGIN"):
        return "-----BEGIN PRIVATE KEY----- [credential-redacted] -----END PRIVATE KEY-----"
    if secret[:6].lower() == "bearer":
        return secret[:7] + secret[7:11] + "...[credential-redacted]"
    return secret[:4] + "...[credential-redacted]"


def redact_secrets(text: str) -> str:
    """Replace credentials in ``text`` by their first 4 characters and a marker.

    Recognised: OpenAI (``sk-…``) and Anthropic (``sk-ant-…``) keys, AWS access key ids,
    GitHub and GitLab tokens, Slack tokens, Google API keys, ``Bearer`` tokens and PEM
    private-key blocks (the octos sanitizer's credential list, reference §0.6). Long hex runs
    and ``password = …`` assignments are *not* redacted: they are ordinary in source code and
    redacting them would make the file impossible to edit.
    """
    if not text:
        return text
    for markers, pattern in _SECRET_PATTERNS:
        if any(m in text for m in markers):
            text = pattern.sub(_mask, text)
    return text


def redact_value(value: Any) -> Any:
    """``value`` with :func:`redact_secrets` applied to every string in it, keys kept.

    For ``structured_metadata``, which reaches the model too (MCP ``structuredContent``, the
    CLI's JSON). Returns the same object when nothing changed. Recursion depth is that of the
    tool's own metadata.
    """
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        items = {k: redact_value(v) for k, v in value.items()}
        return value if all(items[k] is value[k] for k in value) else items
    if isinstance(value, list | tuple):
        seq = [redact_value(v) for v in value]
        return value if all(a is b for a, b in zip(seq, value, strict=True)) else seq
    return value
