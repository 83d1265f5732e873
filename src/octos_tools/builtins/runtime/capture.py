"""Bounded capture of a command's output: head and tail kept, cut on character boundaries.

stdout and stderr share one pipe (or the terminal), so the text keeps the order a terminal
shows. At most ``limit`` bytes are kept while reading, the first 70 % and the last 30 %
(the octos cap, ``crates/octos-agent/src/tools/shell.rs``), with
``[... N bytes omitted of T ...]`` in between. Cuts fall on UTF-8 character boundaries, so
the text holds no U+FFFD the command did not print; in a session, a character split
between two reads is held back and given whole with the next read. The text is then cleaned
for a reader (:func:`~.terminal_text.clean_terminal_text`).
"""

from __future__ import annotations

from ...output import trim_cut_tokens
from .terminal_text import clean_terminal_text

__all__ = ["HEAD_SHARE", "MIN_OUTPUT_BYTES", "OutputCapture", "incomplete_utf8_suffix"]

#: Share of the kept bytes taken from the start of the output.
HEAD_SHARE = 0.7
#: Smallest output cap in bytes (octos: "min cap 256").
MIN_OUTPUT_BYTES = 256


def _utf8_head(data: bytes, limit: int) -> bytes:
    """At most ``limit`` leading bytes, cut on a UTF-8 character boundary."""
    if len(data) <= limit:
        return data
    cut = limit
    while cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut]


def _utf8_tail(data: bytes, limit: int) -> bytes:
    """At most ``limit`` trailing bytes, starting on a UTF-8 character boundary."""
    if len(data) <= limit:
        return data
    start = len(data) - limit
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:]


def _skip_continuation(data: bytes) -> bytes:
    """``data`` without the continuation bytes of a character cut at its start."""
    start = 0
    while start < min(len(data), 3) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:]


def incomplete_utf8_suffix(data: bytes | bytearray) -> int:
    """How many trailing bytes of ``data`` are the start of a UTF-8 character whose remaining
    bytes have not arrived yet (0 to 3)."""
    n = len(data)
    for back in range(1, min(4, n) + 1):
        byte = data[n - back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: look further back for the lead byte
        if byte < 0x80:
            return 0
        need = (
            2
            if byte >> 5 == 0b110
            else 3
            if byte >> 4 == 0b1110
            else 4
            if byte >> 3 == 0b11110
            else 0
        )
        return back if need > back else 0
    return 0


class OutputCapture:
    """A bounded capture of a byte stream keeping its head and its tail.

    Args:
        limit: bytes kept at most (70 % head, 30 % tail; at least
            :data:`MIN_OUTPUT_BYTES`); everything in between is counted and reported as
            omitted.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(MIN_OUTPUT_BYTES, limit)
        self._head_limit = int(self.limit * HEAD_SHARE)
        self._tail_limit = self.limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        """Add bytes read from the stream."""
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            excess = len(self._tail) - self._tail_limit
            if excess > 0:
                del self._tail[:excess]

    @property
    def omitted(self) -> int:
        """Bytes seen but not kept."""
        return self.total - len(self._head) - len(self._tail)

    def render(self, limit: int | None = None) -> str:
        """The captured text, decoded as UTF-8 and cleaned of terminal controls, at most
        ``limit`` bytes of output (default: the capture's own limit) plus the omission
        marker. Cuts fall between characters."""
        return self._render(bytes(self._head), bytes(self._tail), self.omitted, limit)

    def _render(self, head: bytes, tail: bytes, omitted: int, limit: int | None) -> str:
        limit = self.limit if limit is None else max(MIN_OUTPUT_BYTES, limit)
        if len(head) + len(tail) > limit:
            head_limit = int(limit * HEAD_SHARE)
            tail_limit = limit - head_limit
            if omitted == 0:
                joined = head + tail
                head, tail = joined[:head_limit], joined[head_limit:]
            new_head = _utf8_head(head, head_limit)
            new_tail = _utf8_tail(tail, tail_limit)
            omitted += len(head) - len(new_head) + len(tail) - len(new_tail)
            head, tail = new_head, new_tail
        if omitted <= 0:
            return clean_terminal_text((head + tail).decode("utf-8", errors="replace"))
        head = head[: len(head) - incomplete_utf8_suffix(head)]
        tail = _skip_continuation(tail)
        total = len(head) + omitted + len(tail)
        # a key the cut went through would escape redaction half-visible: drop its halves
        kept_head, kept_tail = trim_cut_tokens(head, tail)
        omitted += len(head) - len(kept_head) + len(tail) - len(kept_tail)
        head, tail = kept_head, kept_tail
        marker = f"\n\n[... {omitted} bytes omitted of {total} ...]\n\n"
        return (
            clean_terminal_text(head.decode("utf-8", errors="replace"))
            + marker
            + clean_terminal_text(tail.decode("utf-8", errors="replace"))
        )

    def take(self, limit: int | None = None) -> str:
        """:meth:`render` and reset: the next call sees only newer output. A character
        whose bytes have not all arrived is kept for the next call."""
        buffer = self._tail if self._tail else self._head
        pending = incomplete_utf8_suffix(buffer)
        carry = bytes(buffer[len(buffer) - pending :]) if pending else b""
        if pending:
            del buffer[len(buffer) - pending :]
            self.total -= pending
        text = self._render(bytes(self._head), bytes(self._tail), self.omitted, limit)
        self._head.clear()
        self._tail.clear()
        self.total = 0
        if carry:
            self.feed(carry)
        return text
