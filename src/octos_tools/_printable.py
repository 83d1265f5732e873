"""Text a person reads in an approval question, made unable to draw anything but itself."""

from __future__ import annotations

import unicodedata

__all__ = ["printable"]


def printable(text: str) -> str:
    r"""``text`` with every control and format character escaped, so a terminal shows what
    will run and nothing else: C0/C1 controls and DEL (``\x1b`` for ESC: no colour, cursor
    move, title or clear-screen sequence reaches the terminal), ``\r`` and ``\n`` (a
    command cannot draw a fake line over the prompt), Unicode format characters such as
    the bidirectional overrides of "Trojan Source" (CVE-2021-42574) and zero-width spaces
    (``\u202e``). A backslash is doubled only where it could be read as such an escape.
    Printable text (any script) is kept as is."""
    out: list[str] = []
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn") and ch != "\t":
            code = ord(ch)
            out.append(
                {"\n": "\\n", "\r": "\\r"}.get(ch)
                or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
            )
        elif ch == "\t":
            out.append("\\t")
        else:
            out.append(ch)
    return "".join(out)
