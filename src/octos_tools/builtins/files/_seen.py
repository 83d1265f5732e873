"""What the model has seen of each file in this session: stale edits and unchanged reads.

Per host session (``ctx.state``, shared by the calls of one MCP session, agent loop or
registry view) each file the session read or wrote keeps a record: the SHA-256 of the
file's bytes as the model last knew them, a copy of that text (files up to
:data:`MAX_KEPT_CHARS`), when, and which exact reads were answered in full since.

* **stale_file**: a writer (``edit_file``, ``diff_edit``, ``write_file`` over an existing
  file) whose file no longer has the bytes the model last read or wrote in this session
  answers ``stale_file`` with a diff of what changed, and writes nothing (Claude Code's
  "File has been modified since read"). A file the session never read is not checked.
* **unchanged reads** (octos ``file_state_cache.rs``): a ``read_file`` that repeats, in
  this session, a read answered in full (same path, same range, same file bytes) answers a
  short ``[FILE_UNCHANGED]`` line instead of the same text again. Content is never hidden:
  the answer is given only when this session was shown exactly that text at least
  :data:`MIN_AGE_SECS` before (calls of one parallel batch are issued before any answer
  is seen); a write by the session forgets the file's reads; and the same read asked
  again right after such an answer gets the full text (the model evidently no longer has
  it). A host that drops earlier turns from the model's context (compaction) calls
  :func:`forget_reads`. Off unless ``files.unchanged_reads = true``: what a host keeps of
  its context is not visible to the server.

Limits as octos: 100 files, about 25 MiB of kept text (least recently used dropped).
"""

from __future__ import annotations

import difflib
import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import ErrorKind, ToolError
from ...workspace import text as textcodec

if TYPE_CHECKING:
    from ...context import ToolContext

__all__ = [
    "MAX_FILES",
    "MAX_KEPT_CHARS",
    "MIN_AGE_SECS",
    "SeenFile",
    "SeenFiles",
    "forget_reads",
    "seen_files",
]

MAX_FILES = 100
MIN_AGE_SECS = 2.0
"""An "unchanged" answer needs the full answer to be at least this old (seconds)."""
MAX_KEPT_CHARS = 256 << 10
"""Text of files up to this many characters is kept, so a stale edit can show a diff."""
_MAX_TOTAL_CHARS = 25 << 20
_STATE_KEY = "octos_tools.seen_files"
_DIFF_LINES = 40

ReadKey = tuple[int, int | None, int, int]
"""``(start_line, end_line, start_column, output budget)`` of one read."""


@dataclass
class SeenFile:
    """What the session knows of one file (internal to the file tools)."""

    digest: bytes
    text: str | None
    at: float
    reads: dict[ReadKey, float] = field(default_factory=dict)  # read -> when answered
    answered_unchanged: ReadKey | None = None


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


class SeenFiles:
    """The per-session records (module docstring); thread-safe."""

    def __init__(self) -> None:
        self._files: OrderedDict[str, SeenFile] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def _put(self, rel: str, data: bytes, text: str | None) -> SeenFile:
        old = self._files.pop(rel, None)
        if old is not None and old.text is not None:
            self._chars -= len(old.text)
        kept = text if text is not None and len(text) <= MAX_KEPT_CHARS else None
        rec = SeenFile(_digest(data), kept, time.time())
        self._files[rel] = rec
        self._chars += len(kept or "")
        while len(self._files) > MAX_FILES or self._chars > _MAX_TOTAL_CHARS:
            _, dropped = self._files.popitem(last=False)
            self._chars -= len(dropped.text or "")
        return rec

    def note_read(self, rel: str, data: bytes, text: str | None, key: ReadKey) -> None:
        """Record that the read ``key`` of ``rel`` (whose bytes are ``data``) was answered
        in full."""
        with self._lock:
            rec = self._files.get(rel)
            if rec is None or rec.digest != _digest(data):
                rec = self._put(rel, data, text)
            else:
                self._files.move_to_end(rel)
            rec.reads[key] = time.monotonic()
            rec.answered_unchanged = None

    def unchanged(self, rel: str, data: bytes, key: ReadKey) -> SeenFile | None:
        """The record when the read ``key`` of ``rel`` may answer "unchanged": this session
        was shown exactly that read of exactly these bytes, and the previous answer to it
        was not already "unchanged". ``None`` otherwise (answer in full)."""
        with self._lock:
            rec = self._files.get(rel)
            if rec is None or key not in rec.reads or rec.answered_unchanged == key:
                return None
            if time.monotonic() - rec.reads[key] < MIN_AGE_SECS:
                return None  # maybe the same batch: its first answer not seen yet
            if rec.digest != _digest(data):
                return None
            rec.answered_unchanged = key
            return rec

    def note_written(self, rel: str, data: bytes, text: str | None = None) -> None:
        """The session wrote ``data`` to ``rel``: it is the new base for stale checks and
        the file's earlier reads no longer stand."""
        with self._lock:
            self._put(rel, data, text)

    def drop(self, rel: str) -> None:
        """Forget ``rel`` (a read whose bytes were not kept: no stale check can stand)."""
        with self._lock:
            old = self._files.pop(rel, None)
            if old is not None and old.text is not None:
                self._chars -= len(old.text)

    def knows(self, rel: str) -> bool:
        """Whether the session has a record of ``rel``."""
        with self._lock:
            return rel in self._files

    def check_stale(self, rel: str, data: bytes, text: str | None) -> None:
        """Raise ``stale_file`` when ``rel`` (now ``data``, decoded ``text``) is not what the
        session last read or wrote.

        Raises:
            ToolError: ``stale_file``, with a diff of the change when the old text is kept.
        """
        with self._lock:
            rec = self._files.get(rel)
            if rec is None or rec.digest == _digest(data):
                return
            old, at = rec.text, rec.at
        when = time.strftime("%H:%M:%S", time.localtime(at))
        what = ""
        if old is not None and text is not None:
            a = textcodec.split_lines(textcodec.display(old))
            b = textcodec.split_lines(textcodec.display(text))
            lines = list(difflib.unified_diff(a, b, "as you last saw it", "now", n=1, lineterm=""))
            if len(lines) > _DIFF_LINES:
                lines = [*lines[:_DIFF_LINES], f"… ({len(lines) - _DIFF_LINES} more diff lines)"]
            what = "\nWhat changed:\n" + "\n".join(x[:300] for x in lines)
        raise ToolError(
            ErrorKind.STALE_FILE,
            f"{rel} changed since you last read it (at {when}) in this session; nothing was "
            f"written. Read it again and redo the change on the current content.{what}",
            path=rel,
        )

    def forget(self) -> None:
        """Forget every read (a host whose model lost earlier turns calls this)."""
        with self._lock:
            for rec in self._files.values():
                rec.reads.clear()


def seen_files(ctx: ToolContext | None) -> SeenFiles | None:
    """The records of the session of ``ctx`` (created on first use), or ``None`` without a
    context."""
    if ctx is None:
        return None
    state: dict[str, Any] = ctx.state
    rec = state.get(_STATE_KEY)
    if not isinstance(rec, SeenFiles):
        rec = state.setdefault(_STATE_KEY, SeenFiles())
        if not isinstance(rec, SeenFiles):  # pragma: no cover - a host put something else
            return None
    return rec


def forget_reads(state: dict[str, Any]) -> None:
    """Forget the reads of the session whose ``ctx.state`` is ``state``, so no later read
    answers "unchanged" for text the model no longer has (call after compacting its
    context)."""
    rec = state.get(_STATE_KEY)
    if isinstance(rec, SeenFiles):
        rec.forget()
