"""The SafePolicy: a text check of a command line before it runs.

Deny patterns refuse the command (``policy_denied``); ask patterns need a person's approval
through ``ToolContext.approval``. The lists are octos's (``crates/octos-agent/src/policy.rs``)
plus the ``-fr`` / ``-f`` spellings. It is a guard rail against slips, not a sandbox: it
matches text, so ``rm -r -f /``, ``r''m -rf /``, ``$(echo rm) -rf /`` or
``echo … | base64 -d | sh`` all pass.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["ASK_PATTERNS", "DENY_PATTERNS", "check_command"]

#: Commands refused outright.
DENY_PATTERNS: tuple[str, ...] = (
    "rm -rf /",
    "rm -rf /*",
    "rm -fr /",
    "rm -fr /*",
    "dd if=",
    "mkfs",
    ":(){:|:&};:",
    "chmod -R 777 /",
)
#: Commands that need approval.
ASK_PATTERNS: tuple[str, ...] = (
    "sudo",
    "rm -rf",
    "rm -fr",
    "git push --force",
    "git push -f",
    "git reset --hard",
)

_WS = re.compile(r"\s+")


def _pattern_in(text: str, pattern: str) -> bool:
    """``pattern`` occurs in ``text`` with non-alphanumeric neighbours (or the string's
    edges), so ``rm -rf /`` does not match ``rm -rf /tmp``; a pattern ending in ``=`` (``dd
    if=``) needs no right neighbour check."""
    start = 0
    while True:
        i = text.find(pattern, start)
        if i < 0:
            return False
        j = i + len(pattern)
        left_ok = i == 0 or not text[i - 1].isalnum()
        right_ok = j == len(text) or pattern.endswith("=") or not text[j].isalnum()
        if left_ok and right_ok:
            return True
        start = i + 1


def check_command(command: str) -> tuple[Literal["allow", "deny", "ask"], str | None]:
    """Classify a command line with the SafePolicy.

    Whitespace runs are collapsed first; a pattern made only of punctuation (the fork bomb)
    is compared with all whitespace removed. Deny is checked before ask.

    Args:
        command: the shell command line.

    Returns:
        ``("deny" | "ask" | "allow", the matching pattern or None)``.
    """
    collapsed = _WS.sub(" ", command).strip()
    squeezed = _WS.sub("", command)
    for verdict, patterns in (("deny", DENY_PATTERNS), ("ask", ASK_PATTERNS)):
        for pattern in patterns:
            text = squeezed if not any(c.isalnum() for c in pattern) else collapsed
            if _pattern_in(text, pattern):
                return verdict, pattern  # type: ignore[return-value]
    return "allow", None
