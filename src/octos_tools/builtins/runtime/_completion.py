"""How a command's end reads, for the model and for programs.

A command that ran and exited is a *successful* call whatever its exit code: ``grep -q``
finding nothing, a failing test run or ``test -f`` are answers, not broken tools. The text
follows Codex's exec output (``codex-rs/core/src/tools/mod.rs``, ``format_exec_output``)::

    Exit code: 1
    Wall time: 0.2 seconds
    Output:
    ...

and ``structured_metadata`` carries ``exit_code``, ``timed_out``, ``duration_secs`` and the
byte counts. A failure (``isError`` over MCP) is kept for calls that could not do their job:
refused by a policy, bad arguments, a missing folder, or a command **timed out and killed**;
that text states the timeout and the exit code once, in its first line.
"""

from __future__ import annotations

import signal

from ...errors import ErrorKind
from ...sandbox import blocked_note
from ...tool_types import JSONObject, ToolResult
from ._command import RunningCommand

__all__ = ["completion_result", "exit_text", "guard_lines", "sandbox_note", "seconds"]


def sandbox_note(proc: RunningCommand, text: str, code: int | None) -> str | None:
    """The line saying the sandbox probably blocked ``proc`` (:func:`~octos_tools.sandbox.
    blocked_note`), or ``None``."""
    return blocked_note(
        text,
        code,
        mode=proc.sandbox_mode,
        engine=proc.sandbox_engine,
        network=proc.sandbox_network,
    )


def guard_lines(proc: RunningCommand, meta: JSONObject) -> str:
    """Run the git guard for ``proc`` (:meth:`RunningCommand.guard_notes`); its lines go to
    ``meta["sandbox_guard"]`` and come back as text to append (``""``: nothing found)."""
    lines = proc.guard_notes()
    if not lines:
        return ""
    meta["sandbox_guard"] = list(lines)
    return "".join(f"\n{line}" for line in lines)


def seconds(value: float) -> str:
    """``"1 second"``, ``"2.5 seconds"``: a duration in words, singular only for exactly 1."""
    return f"{value:g} second" + ("" if value == 1 else "s")


def exit_text(code: int | None) -> str:
    """An exit status in words: ``"3"``, ``"-9 (killed by SIGKILL)"``, ``"still running"``."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"{code} (killed by {name})"
    return str(code)


def completion_result(
    proc: RunningCommand,
    exited: bool,
    timeout: float,
    elapsed: float,
    limit: int,
    extra_meta: JSONObject | None = None,
) -> ToolResult:
    """The result of a command run to completion (or killed at ``timeout`` seconds).

    Args:
        proc: the finished command.
        exited: it exited by itself (``False``: killed at its timeout).
        timeout: the timeout in seconds.
        elapsed: wall time in seconds.
        limit: output cap in bytes.
        extra_meta: more ``structured_metadata`` keys.
    """
    text = proc.capture.render(limit).rstrip("\n") or "(no output)"
    code = proc.returncode
    meta: JSONObject = {
        "exit_code": code,
        "timed_out": not exited,
        "duration_secs": round(elapsed, 3),
        "output_bytes": proc.capture.total,
        "omitted_bytes": max(0, proc.capture.omitted),
        **(extra_meta or {}),
    }
    body = f"Wall time: {elapsed:.1f} seconds\nOutput:\n{text}"
    note = sandbox_note(proc, text, code) if exited else None
    if note:
        meta["sandbox_note"] = note
        body += f"\n{note}"
    body += guard_lines(proc, meta)
    if not exited:
        message = (
            f"command timed out after {seconds(timeout)} and was killed with everything it "
            f"started (exit code {exit_text(code)})"
        )
        return ToolResult.failure(
            ErrorKind.TIMEOUT,
            message,
            output=f"Error [{ErrorKind.TIMEOUT.value}]: {message}\n{body}",
            metadata=meta,
        )
    return ToolResult.ok(f"Exit code: {exit_text(code)}\n{body}", structured_metadata=meta)
