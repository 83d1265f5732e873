"""Lossless text codec for edits: keep the BOM, the encoding and the line endings.

An edit tool (``edit_file``, ``diff_edit``, ``apply_patch``) should change only the bytes it
means to change. The recipe::

    from octos_tools.workspace import text as textcodec

    data = ws.read_bytes(path)
    if textcodec.is_binary(data):
        raise ToolError(ErrorKind.BINARY_FILE, ...)
    doc = textcodec.decode(data)          # DecodedText; doc.text keeps "\\r\\n" as on disk
    spans = textcodec.find(doc.text, old)  # LF in `old` also matches CRLF in the file
    new_text = textcodec.replace_spans(doc.text, spans, new)  # new lines get the local EOL
    ws.write_bytes(path, doc.encode(new_text))   # same BOM, same codec, same stray bytes

Guarantees:

* :func:`decode` never fails on bytes it does not call binary. UTF-8 (with or without BOM)
  is decoded with the ``surrogateescape`` error handler, so a stray Latin-1 byte ``0xE9``
  becomes ``"\\udce9"`` and :meth:`DecodedText.encode` writes back exactly ``0xE9``.
  ``decode(data).encode(decode(data).text) == data`` for every non-binary input.
* UTF-16 and UTF-32 with a BOM are decoded with the matching codec and re-encoded with the
  same byte order and BOM.
* Line endings stay in :attr:`DecodedText.text` as they are on disk (``"\\r\\n"``, ``"\\n"``,
  lone ``"\\r"``); helpers here match and split them without changing them.

For display (``read_file``, ``grep``) use :func:`display`, which shows each undecodable byte
as its Latin-1 character (``0xE9`` → ``é``), and :func:`latin1` to retry a match on a file
that really is Latin-1.

Why: an edit must keep the file's encoding and BOM and never change bytes it did not mean
to (editors' reported failures: mixed line endings after an edit, a UTF-16 file rewritten as
UTF-8, stray Latin-1 bytes turned into U+FFFD).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DecodedText",
    "EolStyle",
    "decode",
    "display",
    "dominant_eol",
    "eol_style",
    "find",
    "is_binary",
    "latin1",
    "line_number_at",
    "replace_spans",
    "split_lines",
    "to_lf",
]

EolStyle = Literal["lf", "crlf", "cr", "mixed", "none"]
"""The line endings of a text: all ``\\n``, all ``\\r\\n``, all lone ``\\r``, several kinds,
or no line break at all."""

_BOMS: tuple[tuple[bytes, str, str], ...] = (
    # Longest first: the UTF-32-LE BOM starts with the UTF-16-LE one.
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32LE with BOM"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32BE with BOM"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8 with BOM"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16LE with BOM"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16BE with BOM"),
)

BINARY_SNIFF_BYTES = 8192
"""How many leading bytes :func:`is_binary` inspects."""

_EOL_RE = re.compile(r"\r\n|\n|\r")


@dataclass(frozen=True, slots=True)
class DecodedText:
    """A file's text plus what is needed to write it back byte for byte.

    Attributes:
        text: the decoded text, BOM removed, line endings exactly as on disk. Bytes that are
            not valid UTF-8 appear as lone surrogates ``U+DC80..U+DCFF`` (``surrogateescape``).
        codec: the Python codec: ``"utf-8"``, ``"utf-16-le"``, ``"utf-16-be"``,
            ``"utf-32-le"``, ``"utf-32-be"`` or ``"latin-1"`` (from :func:`latin1`).
        bom: the byte-order mark found at the start (``b""`` if none); written back as is.
        invalid_offset: byte offset (in the file, BOM included) of the first byte that is
            not valid UTF-8, or ``None`` when the file decodes cleanly.
    """

    text: str
    codec: str
    bom: bytes = b""
    invalid_offset: int | None = None

    @property
    def errors(self) -> str:
        """The codec error handler used both ways (``surrogateescape`` for UTF-8)."""
        return "surrogateescape" if self.codec == "utf-8" else "strict"

    @property
    def label(self) -> str:
        """A human name for the encoding, e.g. ``"UTF-8"``, ``"UTF-16LE with BOM"``."""
        if self.codec == "latin-1":
            return "Latin-1"
        for bom, codec, label in _BOMS:
            if bom == self.bom and codec == self.codec:
                return label
        if self.invalid_offset is not None:
            return f"not valid UTF-8 (first invalid byte at offset {self.invalid_offset})"
        return "UTF-8"

    @property
    def is_plain_utf8(self) -> bool:
        """UTF-8 without BOM and without invalid bytes: the common case."""
        return self.codec == "utf-8" and not self.bom and self.invalid_offset is None

    def encode(self, text: str) -> bytes:
        """``text`` encoded like the original: same BOM, codec and error handler.

        Raises:
            UnicodeEncodeError: ``text`` holds a character the codec cannot represent
                (only possible for ``latin-1``, or lone surrogates in UTF-16/32).
        """
        return self.bom + text.encode(self.codec, self.errors)


def is_binary(data: bytes, *, whole: bool = False) -> bool:
    """Whether ``data`` looks like a binary (non-text) file.

    A UTF-16/UTF-32 BOM means text (if it decodes). Otherwise a NUL byte in the first
    :data:`BINARY_SNIFF_BYTES` bytes (anywhere with ``whole=True``) means binary, as do more
    than 30 % control bytes (other than tab, LF, CR, form feed, backspace and ESC) there.
    """
    head = data[:BINARY_SNIFF_BYTES]
    for bom, codec, _ in _BOMS:
        if head.startswith(bom) and codec != "utf-8":
            return _bad_wide(data, bom, codec)
    if b"\x00" in (data if whole else head):
        return True
    if not head:
        return False
    control = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return control * 10 > len(head) * 3


_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 8, 27))


def _bad_wide(data: bytes, bom: bytes, codec: str) -> bool:
    """A UTF-16/32 file is binary only if it does not decode."""
    try:
        data[len(bom) :].decode(codec)
    except UnicodeDecodeError:
        return True
    return False


def decode(data: bytes) -> DecodedText:
    """Decode file bytes losslessly (see the module docstring).

    Args:
        data: the file content. Call :func:`is_binary` first; binary data still decodes
            (as UTF-8 with escapes) but is meaningless as text.

    Returns:
        A :class:`DecodedText` whose :meth:`~DecodedText.encode` of its own ``text``
        gives back ``data`` exactly.
    """
    for bom, codec, _ in _BOMS:
        if data.startswith(bom):
            if codec == "utf-8":
                return _decode_utf8(data[len(bom) :], bom)
            try:
                return DecodedText(data[len(bom) :].decode(codec), codec, bom)
            except UnicodeDecodeError:
                break  # not really UTF-16/32: fall through to UTF-8 with escapes
    return _decode_utf8(data, b"")


def _decode_utf8(body: bytes, bom: bytes) -> DecodedText:
    """UTF-8 with escapes; valid text (the usual case) is decoded once, strictly."""
    try:
        return DecodedText(body.decode("utf-8"), "utf-8", bom)
    except UnicodeDecodeError as exc:
        return DecodedText(
            body.decode("utf-8", "surrogateescape"), "utf-8", bom, len(bom) + exc.start
        )


def latin1(data: bytes) -> DecodedText:
    """Decode ``data`` as Latin-1 (every byte one character; always lossless).

    Used to retry a match on a file that is not valid UTF-8: a model that read ``café``
    (shown by :func:`display`) can then edit the Latin-1 line. Re-encoding fails with
    :class:`UnicodeEncodeError` if the new text holds characters beyond U+00FF.
    """
    return DecodedText(data.decode("latin-1"), "latin-1", b"", None)


_SURROGATES = re.compile("[\udc80-\udcff]")


def display(text: str) -> str:
    """``text`` made printable: each escaped byte (``U+DC80+b``) shown as Latin-1 ``chr(b)``."""
    if text.isascii() or not _SURROGATES.search(text):
        return text
    return _SURROGATES.sub(lambda m: chr(ord(m.group()) - 0xDC00), text)


def eol_style(text: str) -> EolStyle:
    """Classify the line endings of ``text``."""
    if "\r" not in text:  # fast path: one scan instead of three counts
        return "lf" if "\n" in text else "none"
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
    kinds = (crlf > 0) + (lf > 0) + (cr > 0)
    if kinds == 0:
        return "none"
    if kinds > 1:
        return "mixed"
    return "crlf" if crlf else ("lf" if lf else "cr")


def dominant_eol(text: str) -> str:
    """The most frequent line ending of ``text`` (``"\\n"`` when there is none; ties → LF)."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
    if crlf > lf and crlf >= cr:
        return "\r\n"
    if cr > lf and cr > crlf:
        return "\r"
    return "\n"


def to_lf(text: str) -> str:
    """``text`` with every ``\\r\\n`` and lone ``\\r`` turned into ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_lines(text: str, *, keepends: bool = False) -> list[str]:
    """Split on ``\\n``, ``\\r\\n`` and lone ``\\r`` only (not on U+2028, form feed …).

    A final line break does not create an empty last line (``"a\\nb\\n"`` → 2 lines).
    With ``keepends`` the endings stay attached, so ``"".join(lines) == text``.
    """
    if not text:
        return []
    if "\r" not in text:  # fast path: LF only
        parts = text.split("\n")
        last = parts.pop()
        if keepends:
            parts = [p + "\n" for p in parts]
        if last:
            parts.append(last)
        return parts
    lines: list[str] = []
    pos = 0
    for m in _EOL_RE.finditer(text):
        lines.append(text[pos : m.end()] if keepends else text[pos : m.start()])
        pos = m.end()
    if pos < len(text):
        lines.append(text[pos:])
    return lines


def _needle_regex(needle: str) -> re.Pattern[str]:
    """A regex for ``needle`` where each line break matches ``\\r\\n``, ``\\n`` or ``\\r``."""
    pieces = _EOL_RE.split(needle)
    return re.compile(r"(?:\r\n|\n|\r)".join(re.escape(p) for p in pieces))


def find(text: str, needle: str) -> list[tuple[int, int]]:
    """Non-overlapping ``(start, end)`` spans of ``needle`` in ``text``.

    A line break in ``needle`` (``\\n``, ``\\r\\n`` or ``\\r``) matches any line break in
    ``text``, so text copied from a numbered ``read_file`` view (always LF) matches a CRLF
    file. Everything else must match exactly.

    Raises:
        ValueError: ``needle`` is empty.
    """
    if not needle:
        raise ValueError("needle must not be empty")
    if "\r" not in needle and "\n" not in needle:
        spans = []
        start = text.find(needle)
        while start >= 0:
            spans.append((start, start + len(needle)))
            start = text.find(needle, start + len(needle))
        return spans
    return [m.span() for m in _needle_regex(needle).finditer(text)]


def replace_spans(text: str, spans: list[tuple[int, int]], new: str) -> str:
    """Replace each span of ``text`` with ``new``, keeping the local line endings.

    Every line break in ``new`` is written with the ending the replaced span used (its most
    frequent one); a span without a line break uses the file's dominant ending. Text outside
    the spans is copied unchanged.

    Args:
        text: the decoded file text.
        spans: sorted, non-overlapping ``(start, end)`` pairs, e.g. from :func:`find`.
        new: the replacement, with any line endings.
    """
    if not spans:
        return text
    file_eol = dominant_eol(text)
    new_lf = to_lf(new)
    out: list[str] = []
    pos = 0
    for start, end in spans:
        out.append(text[pos:start])
        old = text[start:end]
        eol = dominant_eol(old) if _EOL_RE.search(old) else file_eol
        out.append(new_lf.replace("\n", eol) if eol != "\n" else new_lf)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def line_number_at(text: str, offset: int) -> int:
    """1-based line number of character ``offset`` in ``text`` (any line ending counts)."""
    head = text[:offset]
    return head.count("\n") + head.count("\r") - head.count("\r\n") + 1
