"""``exec_command`` sessions (Codex ``exec_command`` / ``write_stdin``, unified exec).

A command still running after the call's yield (``yield_time_ms``, default 10 s; ``tty``
always) keeps running after the call returns; the call gives a ``session_id`` and the output
so far, and every later read (``write_stdin``) returns only the output produced since the
previous read. At most ``max_sessions`` live at once in all, and ``max_per_owner`` per host
session (one MCP session, one ``ToolSession``): to make room a host session's own least
recently used idle session is closed, **never another host session's** (when the server is
full and the caller has nothing idle of its own, the start is refused with
``unavailable``); a session is killed at its timeout; :meth:`SessionManager.aclose` (the
registry's ``aclose``, the end of a session of tools) closes them all, and kills what
finished commands left running in their cgroups.

While a sandboxed session lives, the git guard also checks it in the background every
:data:`~octos_tools.sandbox._guard_ticker.TICK_SECS` (:mod:`octos_tools.sandbox._guard_ticker`):
what a background process plants between two polls is undone within that window, and its
line comes with the next poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ...errors import ErrorKind, ToolError
from ...sandbox import SandboxSettings
from ...sandbox._guard_ticker import ticker
from ...tool_types import JSONObject, ToolResult
from ._capture import OutputCapture
from ._command import RunningCommand
from ._completion import exit_text, guard_lines, sandbox_note, seconds
from ._environment import command_env

__all__ = ["ExecSession", "SessionManager", "session_result"]


@dataclass(eq=False)
class ExecSession:
    """One live ``exec_command`` session.

    Attributes:
        id: the session id given to the model (``exec-<n>``).
        command: the command line.
        proc: the process.
        timeout: seconds after which the session is killed.
        created / last_used: ``time.monotonic()`` stamps.
        busy: a call is reading or writing it now (never evicted then).
        owner: the host session (``ToolContext.session``) that started it, or ``None``;
            another host session cannot see or use it.
    """

    id: str
    command: str
    proc: RunningCommand
    timeout: float
    created: float
    last_used: float
    busy: bool = False
    watchdog: asyncio.Task[None] | None = None
    owner: object | None = None
    escalated: bool = False
    """It runs outside the sandbox (an approved ``require_escalated``): every input
    ``write_stdin`` types into it is asked again."""
    typed_tail: str = ""
    """What ``write_stdin`` typed after the last line end (a line typed in pieces is
    checked whole by the SafePolicy)."""
    guard_tick: int | None = None

    def stop_ticking(self) -> None:
        """Stop the background checks of the git guard (the session ended)."""
        if self.guard_tick is not None:
            ticker().remove(self.guard_tick)
            self.guard_tick = None

    def visible_to(self, owner: object | None) -> bool:
        """Whether a call of host session ``owner`` may use this session: always when
        either side has no host session (a library call), else only the same one."""
        return self.owner is None or owner is None or self.owner is owner

    @contextlib.contextmanager
    def in_use(self) -> Iterator[None]:
        """Mark the session ``busy`` for the ``with`` block (so it is not evicted or used by
        another call), then stamp ``last_used``."""
        self.busy = True
        try:
            yield
        finally:
            self.busy = False
            self.last_used = time.monotonic()

    async def poll(self, yield_secs: float, limit: int) -> tuple[str, bool, int | None]:
        """Wait up to ``yield_secs`` (less when the command exits), then return
        ``(output since the last read, running, exit code)``."""
        exited = await self.wait_exit(yield_secs)
        text = self.proc.capture.take(limit)
        return text, not exited, self.proc.returncode

    async def wait_exit(self, yield_secs: float) -> bool:
        """Wait up to ``yield_secs`` for the command to exit; when its timeout killed it,
        also for the kill to finish (the shell dies at the first SIGTERM, the rest of its
        tree a grace period later). Returns whether it exited."""
        exited = await self.proc.wait_exit(yield_secs)
        watchdog = self.watchdog
        if exited and self.proc.killed_by is not None and watchdog is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(watchdog)
        return exited


class SessionManager:
    """The live exec sessions of one registry, shared by the command tools.

    Args:
        max_sessions: sessions alive at most, all host sessions together.
        max_per_owner: sessions alive at most per host session (default: a quarter of
            ``max_sessions``, at least 1), so that no client fills the table.
    """

    def __init__(self, max_sessions: int = 64, max_per_owner: int | None = None) -> None:
        self.max_sessions = max_sessions
        self.max_per_owner = max_per_owner or max(1, max_sessions // 4)
        self._sessions: dict[str, ExecSession] = {}
        self._leftovers: list[RunningCommand] = []
        self._counter = 0
        self._closed = False

    def __len__(self) -> int:
        return len(self._sessions)

    def ids(self) -> list[str]:
        """Ids of the live sessions, oldest first."""
        return list(self._sessions)

    def get(self, session_id: str, owner: object | None = None) -> ExecSession:
        """The session ``session_id``, as seen by host session ``owner``.

        Raises:
            ToolError: ``unknown_session`` when there is none (never started, finished and
                read, closed, killed at its timeout and read, or another host session's).
        """
        session = self._sessions.get(session_id)
        if session is None or not session.visible_to(owner):
            live = ", ".join(k for k, v in self._sessions.items() if v.visible_to(owner))
            live = live or "none"
            raise ToolError(
                ErrorKind.UNKNOWN_SESSION,
                f"no exec session {session_id!r} (live sessions: {live}); a session ends "
                "once its exit has been reported",
            )
        return session

    def keep_leftovers(self, proc: RunningCommand) -> None:
        """Remember a command that exited with background processes still in its cgroup,
        to kill them at :meth:`aclose`."""
        if proc.release():
            self._leftovers = [p for p in self._leftovers if p.release()]
            self._leftovers.append(proc)

    async def start(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        tty: bool,
        buffer_bytes: int,
        owner: object | None = None,
        sandbox: SandboxSettings | None = None,
        workspace: Path | None = None,
    ) -> ExecSession:
        """Start a command as a new session (closing the oldest idle one when full), owned
        by host session ``owner`` (``None``: no host session), in ``sandbox`` (the
        session keeps it: what ``write_stdin`` types runs confined the same way).

        Raises:
            ToolError: ``unavailable`` when closed or every session is busy;
                ``process_failed`` when the shell cannot start.
        """
        if self._closed:
            raise ToolError(ErrorKind.UNAVAILABLE, "the exec session manager is closed")
        while True:
            own = [s for s in self._sessions.values() if s.owner is owner]
            if len(own) < self.max_per_owner and len(self._sessions) < self.max_sessions:
                break
            idle = [s for s in own if not s.busy]
            if not idle:
                cap = (
                    f"this client's {self.max_per_owner}"
                    if len(own) >= self.max_per_owner
                    else f"the server's {self.max_sessions}"
                )
                raise ToolError(
                    ErrorKind.UNAVAILABLE,
                    f"all {cap} exec sessions are in use; wait for one to end or close one "
                    "(write_stdin with Ctrl-C, or let it exit)",
                )
            await self.close(min(idle, key=lambda s: s.last_used).id)
        proc = await RunningCommand.start(
            command,
            cwd=cwd,
            env=command_env(tty=tty),
            capture=OutputCapture(buffer_bytes),
            tty=tty,
            stdin=True,
            sandbox=sandbox,
            workspace=workspace,
        )
        self._counter += 1
        now = time.monotonic()
        session = ExecSession(
            id=f"exec-{self._counter}",
            command=command,
            proc=proc,
            timeout=timeout,
            created=now,
            last_used=now,
            owner=owner,
        )
        session.watchdog = asyncio.get_running_loop().create_task(self._watch(session))
        if proc.guard is not None:
            session.guard_tick = ticker().add(proc.guard)
        self._sessions[session.id] = session
        return session

    async def _watch(self, session: ExecSession) -> None:
        assert session.proc.proc is not None
        try:
            await asyncio.wait_for(session.proc.proc.wait(), session.timeout)
        except TimeoutError:
            await session.proc.kill("timeout")
        if session.guard_tick is not None:
            # nothing sandboxed is left running (both engines end a command's processes
            # with its shell): one last check now, its lines wait for the next read
            session.stop_ticking()
            session.proc.run_guard()

    def forget(self, session_id: str) -> None:
        """Drop a finished session from the table (its exit has been reported)."""
        session = self._sessions.pop(session_id, None)
        if session is not None:
            if session.watchdog is not None:
                session.watchdog.cancel()
            session.stop_ticking()
            self.keep_leftovers(session.proc)

    async def close(self, session_id: str) -> None:
        """Kill a session and everything it started, and forget it."""
        session = self._sessions.pop(session_id, None)
        if session is None:
            return
        if session.watchdog is not None:
            session.watchdog.cancel()
        await session.proc.kill("closed")
        session.stop_ticking()
        session.proc.run_guard()  # nobody reads a result now: the guard still runs

    async def close_owned_by(self, owner: object) -> None:
        """Close every session host session ``owner`` started (the host session ended)."""
        ids = [k for k, v in self._sessions.items() if v.owner is not None and v.owner is owner]
        await asyncio.gather(*(self.close(i) for i in ids), return_exceptions=True)

    async def aclose(self) -> None:
        """Close every session and kill what finished commands left running; later starts
        fail. Safe to call more than once."""
        self._closed = True
        ids = list(self._sessions)
        leftovers, self._leftovers = self._leftovers, []
        await asyncio.gather(
            *(self.close(i) for i in ids),
            *(p.reap_leftovers() for p in leftovers),
            return_exceptions=True,
        )


def session_result(
    session: ExecSession,
    text: str,
    running: bool,
    code: int | None,
    manager: SessionManager,
    tool: str,
) -> ToolResult:
    """The result of one read of a session: running (with its ``session_id``), exited
    (a success whatever the code) or killed at its timeout (a ``timeout`` failure)."""
    meta: JSONObject = {
        "codex_tool": tool,
        "session_id": session.id,
        "running": running,
        "exit_code": code,
    }
    body = f"Output:\n{text}" if text else "Output: (none since the last read)"
    if not running:
        session.stop_ticking()  # before the last check: every line comes with this result
    body += guard_lines(session.proc, meta)
    if not running:
        manager.forget(session.id)
    if running:
        return ToolResult.ok(
            f"Process running with session ID {session.id}\n{body}", structured_metadata=meta
        )
    if session.proc.killed_by == "timeout":
        message = (
            f"session {session.id} timed out after {seconds(session.timeout)} and was killed "
            f"with everything it started (exit code {exit_text(code)})"
        )
        return ToolResult.failure(
            ErrorKind.TIMEOUT, message, output=f"Error [timeout]: {message}\n{body}", metadata=meta
        )
    note = sandbox_note(session.proc, text, code)
    if note:
        meta["sandbox_note"] = note
        body += f"\n{note}"
    return ToolResult.ok(
        f"Process exited with code {exit_text(code)}\n{body}", structured_metadata=meta
    )
