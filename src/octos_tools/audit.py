"""The audit log: one JSON line per tool call, appended to a file (``[audit] path``).

A line holds what was called and what each layer decided, never the arguments themselves::

    {"time": "2026-12-01T10:30:00.123Z", "session": "s1", "call_id": "call_1",
     "tool": "write_file", "decisions": {"policy": "allow", "hooks": "allow"},
     "outcome": "ok", "duration_ms": 1.84, "args_sha256": "9f86d0..."}

* ``decisions``: ``policy`` (``allow`` / ``deny``), ``hooks`` when a hook ran
  (``allow``, ``deny``, ``ask``, ``rewrite``, ``none``), ``approval`` when a person was asked
  (``approved``, ``declined``, ``no_channel``);
* ``outcome``: ``ok`` or the error kind of the result (``cancelled`` for a call cancelled by
  its host);
* ``args_sha256``: SHA-256 of the argument string exactly as sent (UTF-8; parsed arguments
  as compact JSON with sorted keys; no arguments: of the empty string), so a line can be
  matched with a transcript without the log holding file contents or secrets.

Each line is one ``write(2)`` on a descriptor opened with ``O_APPEND``: the kernel moves to
the end and writes under the file's lock, so lines of concurrent calls and of several
processes sharing the file never interleave, and a line is written whole or, when the write
fails (disk full), not at all as far as this process can tell (a short write is reported
in the log). The file is created ``0600``.

The file is reopened when its path stops naming the open file (moved, deleted, replaced
by an atomic write, rotated without ``copytruncate``: one ``stat`` per line, as
:class:`logging.handlers.WatchedFileHandler` does), so later lines are never written to a
file nobody can find; the reopening is logged as a warning. Commands cannot write the log
under bubblewrap, and the file tools refuse it; under Landlock keep it outside the
workspace (docs/hooks.md).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["AuditLog", "arguments_sha256"]

logger = logging.getLogger("octos_tools.audit")

_MAX_FIELD_CHARS = 256
"""Names and ids in a line are cut at this many characters (a line stays small)."""


def arguments_sha256(raw: str | bytes | Mapping[str, Any] | None) -> str:
    """SHA-256 (hex) of a call's arguments as sent (see the module docstring)."""
    if raw is None:
        data = b""
    elif isinstance(raw, bytes):
        data = raw
    elif isinstance(raw, str):
        data = raw.encode("utf-8", "surrogatepass")
    else:
        text = json.dumps(
            raw, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str
        )
        data = text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


class AuditLog:
    """Appends audit lines to ``path`` (module docstring).

    Args:
        path: the log file; its folder is created (``0700``) if missing; ``~`` expanded.

    Raises:
        OSError: if the file cannot be opened for appending.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._fd: int | None = None
        self._id = (0, 0)
        self._lock = threading.Lock()
        self._open()
        self._second = -1
        self._prefix = ""

    def __repr__(self) -> str:
        return f"AuditLog({str(self.path)!r})"

    def _open(self) -> None:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, 0o600)
        st = os.fstat(fd)
        old, self._fd, self._id = self._fd, fd, (st.st_dev, st.st_ino)
        if old is not None:
            os.close(old)

    def _current_fd(self) -> int | None:
        """The descriptor to write to: reopened when the path names another file now."""
        fd = self._fd
        if fd is None:
            return None
        try:
            st = os.stat(self.path)
            same = (st.st_dev, st.st_ino) == self._id
        except OSError:
            same = False
        if same:
            return fd
        with self._lock:
            if self._fd is None:
                return None
            try:
                st = os.stat(self.path)
                if (st.st_dev, st.st_ino) == self._id:
                    return self._fd
            except OSError:
                pass
            try:
                self._open()
            except OSError as exc:
                logger.error("audit log %s: moved away and cannot be reopened: %s", self.path, exc)
                return self._fd
            logger.warning("audit log %s was moved, replaced or removed: reopened", self.path)
            return self._fd

    def record(
        self,
        *,
        tool: str,
        call_id: str,
        session: str,
        decisions: Mapping[str, str],
        outcome: str,
        duration_ms: float,
        args_sha256: str,
    ) -> None:
        """Append one line; a failure to write is logged, never raised (the call's result
        is not changed by its audit line)."""
        fd = self._current_fd()
        if fd is None:
            return
        now = time.time()
        second = int(now)
        if second != self._second:  # strftime once a second, not once a line
            self._second = second
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        stamp = f"{self._prefix}.{int(now * 1000) % 1000:03d}Z"
        line = json.dumps(
            {
                "time": stamp,
                "session": session[:_MAX_FIELD_CHARS],
                "call_id": call_id[:_MAX_FIELD_CHARS],
                "tool": tool[:_MAX_FIELD_CHARS],
                "decisions": dict(decisions),
                "outcome": outcome,
                "duration_ms": round(duration_ms, 3),
                "args_sha256": args_sha256,
            },
            ensure_ascii=True,
            separators=(",", ":"),
        )
        data = (line + "\n").encode("ascii")
        try:
            written = os.write(fd, data)
        except OSError as exc:
            logger.error("audit log %s: a line could not be written: %s", self.path, exc)
            return
        if written != len(data):
            logger.error(
                "audit log %s: a line was cut (%d of %d bytes written)",
                self.path,
                written,
                len(data),
            )

    def close(self) -> None:
        """Close the file (idempotent); later :meth:`record` calls write nothing."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:
            pass
