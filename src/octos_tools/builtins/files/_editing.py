"""Shared steps of the editing tools: load a file for an edit, write it back unless it
changed meanwhile, re-encode, and explain a failed match."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import ErrorKind, ToolError
from ...workspace import text as textcodec
from ._file_tool import MAX_EDIT_BYTES, cut_line

if TYPE_CHECKING:
    from ...workspace import Workspace, WriteOutcome

__all__ = ["Loaded", "commit_edit", "encode_edit", "load_for_edit", "no_match_hint"]


@dataclass
class Loaded:
    """A file read for an edit: its bytes, decoded text and identity stamp."""

    data: bytes
    doc: textcodec.DecodedText
    stamp: tuple[int, int, int]


def load_for_edit(ws: Workspace, path: str) -> Loaded:
    """Read ``path`` for an edit.

    Raises:
        ToolError: ``file_too_large`` (over :data:`MAX_EDIT_BYTES`), ``binary_file``, path
            kinds.
    """
    rel = ws.relpath(path)
    with ws.open_read(path) as fh:
        st = os.fstat(fh.fileno())
        if st.st_size > MAX_EDIT_BYTES:
            raise ToolError(
                ErrorKind.FILE_TOO_LARGE,
                f"{rel} is {st.st_size:,} bytes; files over {MAX_EDIT_BYTES:,} bytes are not "
                "edited",
            )
        data = fh.read()
    if textcodec.is_binary(data, whole=True):
        raise ToolError(
            ErrorKind.BINARY_FILE,
            f"{rel} is a binary file ({len(data):,} bytes); it cannot be edited as text",
        )
    return Loaded(data, textcodec.decode(data), (st.st_ino, st.st_size, st.st_mtime_ns))


def commit_edit(ws: Workspace, path: str, loaded: Loaded, new_data: bytes) -> WriteOutcome:
    """Write ``new_data`` (the file's permission bits kept) unless the file changed on disk
    since it was read.

    Raises:
        ToolError: ``stale_file``, ``disk_full`` and the kinds of ``Workspace.write_bytes``.
    """
    st = ws.stat(path)
    if (st.st_ino, st.st_size, st.st_mtime_ns) != loaded.stamp:
        raise ToolError(
            ErrorKind.STALE_FILE,
            f"{ws.relpath(path)} changed on disk during the edit; nothing was written. "
            "Read it again and retry",
        )
    return ws.write_bytes(path, new_data)


def encode_edit(rel: str, doc: textcodec.DecodedText, new_text: str) -> bytes:
    """``new_text`` in the file's own encoding.

    Raises:
        ToolError: ``invalid_arguments`` when the encoding cannot hold a new character.
    """
    try:
        return doc.encode(new_text)
    except UnicodeEncodeError as exc:
        ch = exc.object[exc.start]
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"{rel} is kept in its encoding ({doc.label}), which cannot hold the new character "
            f"U+{ord(ch):04X}; nothing was written",
        ) from None


def _per_line(text: str, f: str) -> str:
    lines = text.split("\n")
    if f == "rstrip":
        return "\n".join(x.rstrip() for x in lines)
    return "\n".join(x.strip() for x in lines)


def _what_differs(flat: str, needle: str) -> str | None:
    """Name the one kind of difference that keeps ``needle`` from matching ``flat`` (both
    LF text), trying the narrowest explanation first."""
    trimmed = needle.strip("\n")
    if trimmed != needle and trimmed and trimmed in flat:
        where = []
        if needle.startswith("\n"):
            where.append("starts")
        if needle.endswith("\n"):
            where.append("ends")
        return (
            f"old_string {' and '.join(where)} with a line break that the file does not have "
            "there; drop it"
        )
    if _per_line(needle, "rstrip") in _per_line(flat, "rstrip"):
        return "it matches if trailing spaces are ignored: copy the line ends exactly"
    if _per_line(needle, "strip") in _per_line(flat, "strip"):
        return "it matches if indentation is ignored: copy the exact indentation"
    squashed = re.sub(r"\s+", " ", needle).strip()
    if squashed and squashed in re.sub(r"\s+", " ", flat):
        return "it matches if line breaks and runs of spaces are treated alike: copy them exactly"
    return None


def no_match_hint(text: str, needle: str) -> str:
    """Why ``needle`` (old_string) was not found in ``text`` (the decoded file), as far as
    can be told: the one difference that explains it, tabs vs spaces, the closest line."""
    flat = textcodec.to_lf(textcodec.display(text))
    lines = flat.split("\n")
    hints: list[str] = []
    differs = _what_differs(flat, textcodec.to_lf(needle))
    if differs:
        hints.append(differs)
    tab_lines = sum(1 for x in lines if x.startswith("\t"))
    space_lines = sum(1 for x in lines if x.startswith("  "))
    needle_lines = textcodec.split_lines(needle)
    if tab_lines > space_lines and any(x.startswith("  ") for x in needle_lines):
        hints.append("the file is indented with tabs, old_string with spaces")
    first = next((x.strip() for x in needle_lines if x.strip()), "")
    if first and not differs and len(lines) <= 20_000:
        stripped = [x.strip() for x in lines]
        close = difflib.get_close_matches(first, stripped, n=1, cutoff=0.6)
        if close:
            lineno = stripped.index(close[0]) + 1
            hints.append(f"the closest line is {lineno}: {cut_line(lines[lineno - 1])[:200]!r}")
    return ("; ".join(hints) + ".") if hints else "read the file again to copy the exact text."
