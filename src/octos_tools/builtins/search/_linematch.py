"""Run a regular expression over lines in a child process that is killed at the deadline.

Python's :mod:`re` and the ``regex`` package backtrack: ``(a|a)+$`` against 40 characters
runs for minutes, in C, where no thread can be interrupted (``regex``'s own ``timeout``
counts the process's CPU time, so on a loaded machine it fires seconds late). The pure-Python
grep engine therefore reads and decodes files itself (through the workspace, no link
followed) and sends their lines to a small child Python process that only matches; the
engine waits for each answer until the call's deadline, then kills the child. The worker
thread never runs a regular expression, so it ends when the call does.

Protocol (private): the child reads one JSON header line ``{"pattern", "flags", "whole"}``,
then per file a little-endian ``(byte length: u64, most hits: u32)`` and the file's lines
joined with ``\\n`` (UTF-8, surrogates passed); it answers one line of comma-separated
0-based line indices.
"""

from __future__ import annotations

import json
import os
import selectors
import struct
import subprocess
import sys
from typing import Any

from ...errors import ErrorKind, ToolError
from ..runtime import command_env
from ._budget import Budget, BudgetExceeded
from ._hits import GrepQuery

__all__ = ["LineMatcher", "compile_pattern", "line_local"]

_CHILD = r"""
import json, struct, sys
import regex
inp, out = sys.stdin.buffer, sys.stdout.buffer
hdr = json.loads(inp.readline())
rx = regex.compile(hdr["pattern"], hdr["flags"])
whole = regex.compile(hdr["pattern"], hdr["flags"] | regex.MULTILINE) if hdr["whole"] else None
while True:
    head = inp.read(12)
    if len(head) < 12:
        break
    size, most = struct.unpack("<QI", head)
    text = inp.read(size).decode("utf-8", "surrogatepass")
    hits = []
    if whole is None or whole.search(text) is not None:
        for i, line in enumerate(text.split("\n")):
            if rx.search(line) is not None:
                hits.append(i)
                if len(hits) >= most:
                    break
    out.write((",".join(map(str, hits)) + "\n").encode())
    out.flush()
"""

_NOT_LINE_LOCAL = ("\\A", "\\Z", "\\z", "\\G", "\\K", "(?=", "(?!", "(?<", "(?*", "(?r")


def compile_pattern(q: GrepQuery) -> Any:
    """``q.pattern`` compiled by the ``regex`` package (Python :mod:`re` syntax), to check it.

    Raises:
        ToolError: ``invalid_arguments`` for an invalid expression.
    """
    import regex

    try:
        return regex.compile(q.pattern, regex.IGNORECASE if q.ignore_case else 0)
    except (regex.error, ValueError, OverflowError) as exc:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS, f"invalid regular expression {q.pattern!r}: {exc}"
        ) from None


def line_local(pattern: str) -> bool:
    """Whether a whole file can be tested at once with a ``MULTILINE`` form of ``pattern``
    before it is searched line by line (the lines joined with ``\\n``).

    With ``MULTILINE``, ``^``/``$`` match at line ends and ``\\b`` sees ``\\n`` as a non-word
    character, as it sees a line's end, so a match in a line is a match in the text.
    Assertions that look past a line's end (``\\A``, ``\\Z``, lookarounds, ...) make the test
    unsound; such patterns are searched line by line only.
    """
    return not any(tok in pattern for tok in _NOT_LINE_LOCAL)


class LineMatcher:
    """The child process of one grep call. Use as a context manager (it kills the child).

    Args:
        q: the query (its pattern must have passed :func:`compile_pattern`).
        budget: the call's budget; waiting for an answer ends at its deadline or stop.
    """

    def __init__(self, q: GrepQuery, budget: Budget) -> None:
        self._budget = budget
        flags = 0x2 if q.ignore_case else 0  # re.IGNORECASE == regex.IGNORECASE
        header = {"pattern": q.pattern, "flags": flags, "whole": line_local(q.pattern)}
        self._header = (json.dumps(header) + "\n").encode()
        self._proc: subprocess.Popen[bytes] | None = None
        self._sel: selectors.BaseSelector | None = None
        self._buf = b""

    def __enter__(self) -> LineMatcher:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _start(self) -> subprocess.Popen[bytes]:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-c", _CHILD],
                env=command_env(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError as exc:
            raise ToolError(
                ErrorKind.UNAVAILABLE, f"the regex process could not start: {exc}"
            ) from None
        assert proc.stdin is not None and proc.stdout is not None
        self._proc = proc
        self._sel = selectors.DefaultSelector()
        self._sel.register(proc.stdout, selectors.EVENT_READ)
        self._send(self._header)
        return proc

    def _send(self, data: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(data)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise ToolError(ErrorKind.UNAVAILABLE, "the regex process ended unexpectedly") from None

    def hits(self, lines: list[str], most: int) -> list[int]:
        """0-based indices of the ``lines`` the pattern matches, at most ``most``.

        Raises:
            BudgetExceeded: the deadline passed or the call was stopped (the child is
                killed).
            ToolError: ``unavailable`` when the child cannot run.
        """
        if not lines or most <= 0:
            return []
        proc = self._proc or self._start()
        body = "\n".join(lines).encode("utf-8", "surrogatepass")
        self._send(struct.pack("<QI", len(body), most) + body)
        assert proc.stdout is not None and self._sel is not None
        while b"\n" not in self._buf:
            if self._budget.stopped:
                self.close()
                raise BudgetExceeded()
            left = self._budget.remaining()
            if not self._sel.select(0.1 if left is None else min(0.1, left)):
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                self.close()
                raise ToolError(ErrorKind.UNAVAILABLE, "the regex process ended unexpectedly")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return [int(x) for x in line.split(b",")] if line else []

    def close(self) -> None:
        """Kill the child (if started) and wait for it."""
        proc, self._proc = self._proc, None
        if self._sel is not None:
            self._sel.close()
            self._sel = None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        proc.wait()
