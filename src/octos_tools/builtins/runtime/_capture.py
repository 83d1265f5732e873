"""Bounded capture of a command's output: head and tail kept, cut on character boundaries.

stdout and stderr share one pipe (or the terminal), so the text keeps the order a terminal
shows. At most ``limit`` bytes are kept while reading, the first 70 % and the last 30 %
(the octos cap, ``crates/octos-agent/src/tools/shell.rs``), with
``[... N bytes omitted of T ...]`` in between. Cuts fall on UTF-8 character boundaries, so
the text holds no U+FFFD the command did not print; in a session, a character split
between two reads is held back and given whole with the next read.

The text is cleaned for a reader (:func:`~.terminal_text.clean_terminal_text`) as it is
read, line by line, before it is kept: a progress bar redrawn with ``\\r`` or erase-line
sequences a thousand times keeps only what the terminal shows, so the head holds no stale
frame and the omitted-bytes count is of the text a person would have seen. The line still
being written is kept aside, compacted at each ``\\r`` to its current screen state (and
kept as it stands once it outgrows the cap).
"""

from __future__ import annotations

from ...output import trim_cut_tokens
from ._terminal_text import clean_terminal_text, render_line

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


def _settled(data: bytes) -> bytes:
    """``data`` (whole lines, or a line as it stands) as the terminal shows it, in bytes
    (bytes that are not UTF-8 pass through unchanged)."""
    text = data.decode("utf-8", "surrogateescape")
    return clean_terminal_text(text).encode("utf-8", "surrogateescape")


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
        self._line = bytearray()  # the line being written, not yet cleaned
        self.total = 0

    def feed(self, data: bytes) -> None:
        """Add bytes read from the stream."""
        line = self._line
        line += data
        end = line.rfind(b"\n")
        if end >= 0:
            self._keep(_settled(bytes(line[: end + 1])))
            del line[: end + 1]
        if b"\r" in data:
            cr = line.rfind(b"\r", 0, len(line) - 1)  # a last \r may start a \r\n
            if cr > 0:
                screen = render_line(bytes(line[:cr]).decode("utf-8", "surrogateescape"))
                line[:cr] = screen.encode("utf-8", "surrogateescape")
        if len(line) > self.limit:  # a line that never ends: kept as it stands
            pending = incomplete_utf8_suffix(line)
            self._keep(_settled(bytes(line[: len(line) - pending])))
            del line[: len(line) - pending]

    def _keep(self, data: bytes) -> None:
        """Keep cleaned bytes: the head fills first, then the tail rolls."""
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
        """Bytes of cleaned text seen but not kept."""
        return self.total - len(self._head) - len(self._tail)

    def _with_line(self) -> tuple[bytes, bytes, int]:
        """Head, tail and omitted count with the line being written kept too (a copy)."""
        if not self._line:
            return bytes(self._head), bytes(self._tail), self.omitted
        saved = self._head[:], self._tail[:], self.total
        try:
            self._keep(_settled(bytes(self._line)))
            return bytes(self._head), bytes(self._tail), self.omitted
        finally:
            self._head, self._tail, self.total = saved

    def render(self, limit: int | None = None) -> str:
        """The captured text, decoded as UTF-8 and cleaned of terminal controls, at most
        ``limit`` bytes of output (default: the capture's own limit) plus the omission
        marker. Cuts fall between characters."""
        return self._render(*self._with_line(), limit)

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
        line = self._line
        pending = incomplete_utf8_suffix(line)
        carry = bytes(line[len(line) - pending :]) if pending else b""
        if line[: len(line) - pending]:
            self._keep(_settled(bytes(line[: len(line) - pending])))
        line.clear()
        text = self._render(bytes(self._head), bytes(self._tail), self.omitted, limit)
        self._head.clear()
        self._tail.clear()
        self.total = 0
        if carry:
            self.feed(carry)
        return text
