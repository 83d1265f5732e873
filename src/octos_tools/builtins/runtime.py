"""Runtime tools: ``shell``, ``exec_command``, ``write_stdin`` and the ``bash`` alias.

Every command runs as ``sh -c CMD`` in the workspace (or a ``workdir`` inside it), in a
process group of its own (``setsid``), with a scrubbed environment and ``stdin`` closed
(sessions get a pipe or a pseudo-terminal instead). Rules and their sources:

* **Kill on timeout** (octos §1.3): SIGTERM to the whole process group (and to every
  descendant found under the shell), then SIGKILL after 500 ms. On Linux the shell is a
  child subreaper, so a grandchild that left the group (``setsid``) and was orphaned by a
  double fork is still found under the shell. The same happens when the call itself is
  cancelled. Limits: a process that escapes while the shell is alive *and* is not a
  descendant (e.g. started through ``systemd-run``, ``at``, a daemon's socket) is not
  found; background children of a command that *exited* normally keep running (by design,
  case BC-23: ``cmd &`` is allowed), re-parented to init.
* **Background children** (ours, case BC-23): output is read from a pipe that a backgrounded
  child may keep open; once the shell has exited the call waits at most
  :data:`DRAIN_GRACE_SECS` for the pipe to close and then returns.
* **Output cap** (octos §0.6, ours for the layout): stdout and stderr share one pipe, so the
  text keeps the order a terminal shows. At most ``config.shell.max_output_bytes`` bytes are
  kept while reading (the first 70 % and the last 30 %), with
  ``[... N bytes omitted ...]`` in between; the exit code line is added after the cap, so it
  is always visible.
* **Environment** (octos §1.3): variables whose names look like secrets (``TOKEN``,
  ``SECRET``, ``PASSWORD``, ``API_KEY``, ``*_KEY`` …) are removed, and so are loader and
  interpreter injection variables (``LD_PRELOAD``, ``LD_LIBRARY_PATH``, ``LD_AUDIT``,
  ``DYLD_*``, ``NODE_OPTIONS``, ``PYTHONSTARTUP``, ``PYTHONPATH``, ``PERL5OPT``, ``RUBYOPT``,
  ``RUBYLIB``, ``JAVA_TOOL_OPTIONS``, ``BASH_ENV``, ``ENV``, ``ZDOTDIR``). ``PYTHONPATH`` is
  removed as octos does: it makes any ``python`` the command starts import code chosen by
  whoever set up the host's environment, which is exactly the injection this list is about;
  a command that needs it sets it inline (``PYTHONPATH=src pytest``).
* **SafePolicy** (octos §1.3.1, when ``config.shell.safe_policy``): deny patterns refuse the
  command (``policy_denied``); ask patterns go to ``ToolContext.approval`` (no callback:
  ``approval_required``; refused: ``policy_denied``). It is a guard rail against slips,
  not a sandbox and not a defence against a hostile model: it matches text, so
  ``rm -r -f /``, ``rm -Rf /``, ``r''m -rf /``, ``$(echo rm) -rf /`` or
  ``echo … | base64 -d | sh`` all pass. Commands run with the host user's full rights:
  they can read, write and delete outside the workspace, and ``workdir`` is only the folder
  they start in. Confinement needs an OS sandbox (container, bubblewrap, a separate user)
  around the host, or the tool policy denying ``group:runtime``.
* **Sessions** (Codex ``exec_command`` / ``write_stdin``): with ``tty`` or ``yield_time_ms``
  the command keeps running and the call returns a ``session_id`` and the output so far;
  every later read returns only the output produced since the previous read. At most
  ``config.shell.max_sessions`` live at once (the least recently used idle one is closed to
  make room); a session is killed at its timeout; :meth:`SessionManager.aclose` (called by the
  registry's ``aclose``) closes them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import math
import os
import re
import signal
import stat
import sys
import termios
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..config import Config, ShellConfig
from ..context import ApprovalRequest, ToolContext
from ..errors import ErrorKind, ToolError
from ..tool import ConcurrencyClass, JSONObject, Tool, ToolResult
from ._base import WorkspaceTool

if TYPE_CHECKING:
    from ..registry import ToolRegistry
    from ..workspace import Workspace

__all__ = [
    "DRAIN_GRACE_SECS",
    "KILL_GRACE_SECS",
    "BashTool",
    "ExecCommandTool",
    "OutputCapture",
    "SessionManager",
    "ShellTool",
    "WriteStdinTool",
    "check_command",
    "is_secret_name",
    "register",
    "scrubbed_env",
]

#: Seconds between SIGTERM and SIGKILL (octos §7: "SIGTERM, 500 ms, SIGKILL").
KILL_GRACE_SECS = 0.5
#: Seconds the call waits, after the shell exited, for its output pipe to close.
DRAIN_GRACE_SECS = 0.25
#: Timeout clamp in seconds (octos §7: default 120, clamp [1, 600]).
MIN_TIMEOUT_SECS = 1.0
MAX_TIMEOUT_SECS = 600.0
#: Default waits of session mode, in milliseconds (octos §7).
EXEC_DEFAULT_YIELD_MS = 1000
WRITE_STDIN_DEFAULT_YIELD_MS = 250
MAX_YIELD_MS = 300_000
#: Smallest output cap a caller may ask for, in bytes (octos: "min cap 256").
MIN_OUTPUT_BYTES = 256
#: ``max_output_tokens`` is converted to bytes at this rate (about 4 bytes per token).
BYTES_PER_TOKEN = 4

_HEAD_SHARE = 0.7

# ---------------------------------------------------------------------------------------------
# SafePolicy


#: Commands refused outright (octos SafePolicy deny list, plus the ``-fr`` spellings).
DENY_PATTERNS: tuple[str, ...] = (
    "rm -rf /",
    "rm -rf /*",
    "rm -fr /",
    "rm -fr /*",
    "dd if=",
    "mkfs",
    ":(){:|:&};:",
    "chmod -R 777 /",
)
#: Commands that need approval (octos SafePolicy ask list, plus ``-fr`` / ``-f``).
ASK_PATTERNS: tuple[str, ...] = (
    "sudo",
    "rm -rf",
    "rm -fr",
    "git push --force",
    "git push -f",
    "git reset --hard",
)

_WS = re.compile(r"\s+")


def _pattern_in(text: str, pattern: str) -> bool:
    """``pattern`` occurs in ``text`` with non-alphanumeric neighbours (or the string's
    edges), so ``rm -rf /`` does not match ``rm -rf /tmp``; a pattern ending in ``=`` (``dd
    if=``) needs no right neighbour check."""
    start = 0
    while True:
        i = text.find(pattern, start)
        if i < 0:
            return False
        j = i + len(pattern)
        left_ok = i == 0 or not text[i - 1].isalnum()
        right_ok = j == len(text) or pattern.endswith("=") or not text[j].isalnum()
        if left_ok and right_ok:
            return True
        start = i + 1


def check_command(command: str) -> tuple[Literal["allow", "deny", "ask"], str | None]:
    """Classify a command line with the SafePolicy (octos §1.3.1).

    Whitespace runs are collapsed first; a pattern made only of punctuation (the fork bomb)
    is compared with all whitespace removed. Deny is checked before ask.

    Args:
        command: the shell command line.

    Returns:
        ``("deny" | "ask" | "allow", the matching pattern or None)``.
    """
    collapsed = _WS.sub(" ", command).strip()
    squeezed = _WS.sub("", command)
    for verdict, patterns in (("deny", DENY_PATTERNS), ("ask", ASK_PATTERNS)):
        for pattern in patterns:
            text = squeezed if not any(c.isalnum() for c in pattern) else collapsed
            if _pattern_in(text, pattern):
                return verdict, pattern  # type: ignore[return-value]
    return "allow", None


# ---------------------------------------------------------------------------------------------
# Environment

_SECRET_TOKENS = frozenset(
    {
        "TOKEN",
        "TOKENS",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWD",
        "PASSCODE",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "PAT",
        "BEARER",
        "AUTHORIZATION",
        "COOKIE",
        "KEY",
        "APIKEY",
        "ACCESSKEY",
        "SECRETKEY",
        "PRIVATEKEY",
        # Ours, beyond octos: other spellings of passwords and tokens.
        "PASS",
        "PWD",  # MYSQL_PWD; the exact names PWD / OLDPWD are the working directory
        "JWT",
        "DSN",
    }
)
_NOT_SECRET = frozenset({"PWD", "OLDPWD"})
_URL_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]*:[^/@\s]+@")
_SECRET_SUBSTRINGS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSPHRASE",
    "CREDENTIAL",
    "APIKEY",
    "API_KEY",
    "ACCESSKEY",
    "ACCESS_KEY",
    "PRIVATEKEY",
    "PRIVATE_KEY",
    "AUTHORIZATION",
    "CONNECTION_STRING",
)
_INJECTION_VARS = frozenset(
    {
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "NODE_OPTIONS",
        "PYTHONSTARTUP",
        "PYTHONPATH",
        "PERL5OPT",
        "RUBYOPT",
        "RUBYLIB",
        "JAVA_TOOL_OPTIONS",
        "BASH_ENV",
        "ENV",
        "ZDOTDIR",
    }
)


def is_secret_name(name: str) -> bool:
    """Whether an environment variable name looks like it holds a secret (octos §1.3).

    A name is split on ``_``, ``-`` and ``.``; it is secret when one part is a secret word
    (``TOKEN``, ``KEY``, ``PAT``, ``COOKIE`` …) or the name contains ``TOKEN``, ``SECRET``,
    ``PASSWORD``, ``API_KEY`` and the like anywhere. Ours, beyond octos: the parts ``PASS``,
    ``PWD`` (not the names ``PWD`` / ``OLDPWD``), ``JWT``, ``DSN`` and the substrings
    ``CONNECTION_STRING``, and names ending in ``_AUTH`` (npm's ``NPM_CONFIG__AUTH``).
    ``SSH_AUTH_SOCK`` is kept (octos keeps it; commands may need the agent).
    """
    upper = name.upper()
    if upper in _NOT_SECRET:
        return False
    parts = re.split(r"[_\-.]", upper)
    if any(p in _SECRET_TOKENS for p in parts) or upper.endswith("_AUTH"):
        return True
    return any(s in upper for s in _SECRET_SUBSTRINGS)


def _is_injection_name(name: str) -> bool:
    return name in _INJECTION_VARS or name.startswith("DYLD_")


def scrubbed_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a command: ``base`` (default ``os.environ``) minus secret-looking
    and loader/interpreter injection variables (see the module docstring), and any variable
    whose value is a URL carrying a password (``postgres://user:pw@host``; ours)."""
    source = os.environ if base is None else base
    return {
        k: v
        for k, v in source.items()
        if not is_secret_name(k) and not _is_injection_name(k) and not _URL_PASSWORD.match(v)
    }


# ---------------------------------------------------------------------------------------------
# Output capture


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


class OutputCapture:
    """A bounded capture of a byte stream keeping its head and its tail.

    Args:
        limit: bytes kept at most (70 % head, 30 % tail); everything in between is counted
            and reported as omitted.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(MIN_OUTPUT_BYTES, limit)
        self._head_limit = int(self.limit * _HEAD_SHARE)
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
        """The captured text, decoded as UTF-8 (invalid bytes replaced), at most ``limit``
        bytes of output (default: the capture's own limit) plus the omission marker."""
        limit = self.limit if limit is None else max(MIN_OUTPUT_BYTES, limit)
        head, tail = bytes(self._head), bytes(self._tail)
        omitted = self.omitted
        if len(head) + len(tail) > limit:
            head_limit = int(limit * _HEAD_SHARE)
            tail_limit = limit - head_limit
            joined = head + tail if omitted == 0 else None
            if joined is not None:
                head, tail = joined[:head_limit], joined[head_limit:]
            new_head = _utf8_head(head, head_limit)
            new_tail = _utf8_tail(tail, tail_limit)
            omitted += len(head) - len(new_head) + len(tail) - len(new_tail)
            head, tail = new_head, new_tail
        else:
            head = _utf8_head(head, len(head)) if omitted else head
        if omitted <= 0:
            return (head + tail).decode("utf-8", errors="replace")
        head = _utf8_head(head, len(head) - 1) if head and (head[-1] & 0x80) else head
        marker = f"\n\n[... {omitted} bytes omitted of {self.total} ...]\n\n"
        return (
            head.decode("utf-8", errors="replace")
            + marker
            + _utf8_tail(tail, len(tail)).decode("utf-8", errors="replace")
        )

    def take(self, limit: int | None = None) -> str:
        """:meth:`render` and reset: the next call sees only newer output."""
        text = self.render(limit)
        self._head.clear()
        self._tail.clear()
        self.total = 0
        return text


# ---------------------------------------------------------------------------------------------
# Processes


@dataclass(frozen=True, slots=True)
class _ProcInfo:
    pid: int
    ppid: int
    pgid: int
    state: str
    start: int  # start time in clock ticks since boot: tells a reused pid apart


_HAVE_PROC = os.path.isdir("/proc/self")


def _read_stat(pid: int | str) -> _ProcInfo | None:
    """One process's ``/proc/<pid>/stat`` (Linux), or ``None`` when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    # "pid (comm) state ppid pgrp session tty tpgid flags ... starttime(22)"; comm may hold
    # spaces and parentheses, so split after the last ")".
    rest = stat[stat.rfind(b")") + 2 :].split()
    if len(rest) < 20:
        return None
    return _ProcInfo(int(pid), int(rest[1]), int(rest[2]), rest[0].decode("ascii"), int(rest[19]))


def _children(pid: int) -> list[int] | None:
    """Child pids from ``/proc/<pid>/task/*/children`` (Linux >= 3.5), or ``None`` when that
    file is not available."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return [] if _HAVE_PROC else None
    found: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                found.extend(int(x) for x in fh.read().split())
        except FileNotFoundError:
            return None
        except OSError:
            continue
    return found


def _descendants(pid: int) -> list[_ProcInfo]:
    """Every descendant of ``pid`` (Linux ``/proc``; empty elsewhere). Walks the ``children``
    files of the tree when the kernel has them, else scans every process once."""
    found: list[_ProcInfo] = []
    stack = [pid]
    while stack:
        kids = _children(stack.pop())
        if kids is None:
            return _descendants_by_scan(pid)
        for kid in kids:
            info = _read_stat(kid)
            if info is not None:
                found.append(info)
                stack.append(kid)
    return found


def _descendants_by_scan(pid: int) -> list[_ProcInfo]:
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
    children: dict[int, list[_ProcInfo]] = {}
    for entry in entries:
        info = _read_stat(entry)
        if info is not None:
            children.setdefault(info.ppid, []).append(info)
    found: list[_ProcInfo] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child.pid)
    return found


def _still_running(info: _ProcInfo) -> bool:
    """The same process (not a reused pid) is alive and not a zombie."""
    now = _read_stat(info.pid)
    return now is not None and now.start == info.start and now.state != "Z"


def _signal_all(pgid: int, procs: list[_ProcInfo], sig: signal.Signals) -> None:
    """Signal the process group, then each known descendant that is still the same process
    (a descendant may have left the group with ``setsid``)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for info in procs:
        if info.pgid != pgid and _still_running(info):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(info.pid, sig)


_PR_SET_CHILD_SUBREAPER = 36


def _load_prctl() -> Any:
    """libc's ``prctl`` (Linux), looked up once in the parent; ``None`` elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - no usable libc
        return None


_PRCTL = _load_prctl()


def _become_subreaper() -> None:  # pragma: no cover - runs in the child
    """Make the shell a child subreaper (kept across ``execve``): a descendant whose parent
    exits (double fork, ``(setsid cmd &)``) is re-parented to the shell instead of init, so
    the kill on timeout still finds it among the shell's descendants."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _set_controlling_tty() -> None:  # pragma: no cover - runs in the child
    _become_subreaper()
    with contextlib.suppress(OSError):
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class RunningCommand:
    """One ``sh -c`` process in its own process group, its output read into a capture.

    Use :meth:`start`; then :meth:`wait_exit`, :meth:`write`, :meth:`kill`.

    Args:
        capture: where output bytes go.
    """

    def __init__(self, capture: OutputCapture) -> None:
        self.capture = capture
        self.proc: asyncio.subprocess.Process | None = None
        self.pid = 0
        self.tty = False
        self._out_fd = -1
        self._in_fd = -1
        self._eof = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self.killed_by: str | None = None

    @classmethod
    async def start(
        cls,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        capture: OutputCapture,
        tty: bool = False,
        stdin: bool = False,
    ) -> RunningCommand:
        """Spawn ``sh -c command``.

        Args:
            command: the command line.
            cwd: the working directory (absolute).
            env: the complete environment.
            capture: the output capture (stdout and stderr together).
            tty: run on a pseudo-terminal (stdin, stdout and stderr are its slave side).
            stdin: give the command a stdin pipe (ignored with ``tty``); else ``/dev/null``.

        Raises:
            ToolError: ``process_failed`` when the shell cannot be started.
        """
        self = cls(capture)
        self.tty = tty
        child_fds: list[int] = []
        try:
            if tty:
                master, slave = os.openpty()
                child_fds.append(slave)
                self._out_fd = master
                self._in_fd = os.dup(master)
                stdin_arg: int = slave
                out_arg = slave
                preexec: Callable[[], None] | None = _set_controlling_tty
            else:
                read_end, write_end = os.pipe()
                child_fds.append(write_end)
                self._out_fd = read_end
                out_arg = write_end
                if stdin:
                    in_read, in_write = os.pipe()
                    child_fds.append(in_read)
                    self._in_fd = in_write
                    stdin_arg = in_read
                else:
                    stdin_arg = os.open(os.devnull, os.O_RDONLY)
                    child_fds.append(stdin_arg)
                preexec = _become_subreaper if _PRCTL is not None else None
            for fd in (self._out_fd, self._in_fd):
                if fd >= 0:
                    os.set_inheritable(fd, False)
            self.proc = await asyncio.create_subprocess_exec(
                "/bin/sh",
                "-c",
                command,
                stdin=stdin_arg,
                stdout=out_arg,
                stderr=out_arg,
                cwd=str(cwd),
                env=dict(env),
                start_new_session=True,
                preexec_fn=preexec,
            )
        except OSError as exc:
            self._close_fds()
            raise ToolError(
                ErrorKind.PROCESS_FAILED, f"could not start the shell: {exc.strerror or exc}"
            ) from None
        finally:
            for fd in child_fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.pid = self.proc.pid
        os.set_blocking(self._out_fd, False)
        if self._in_fd >= 0:
            os.set_blocking(self._in_fd, False)
        self._loop.add_reader(self._out_fd, self._on_readable)
        return self

    def _on_readable(self) -> None:
        try:
            data = os.read(self._out_fd, 65536)
        except BlockingIOError:
            return
        except OSError:  # EIO: the pty's slave side is closed everywhere
            data = b""
        if data:
            self.capture.feed(data)
            return
        self._stop_reading()

    def _stop_reading(self) -> None:
        if self._out_fd >= 0:
            self._loop.remove_reader(self._out_fd)
            with contextlib.suppress(OSError):
                os.close(self._out_fd)
            self._out_fd = -1
        self._eof.set()

    def _close_fds(self) -> None:
        self._stop_reading()
        if self._in_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._in_fd)
            self._in_fd = -1

    def _drain_now(self) -> None:
        """Read whatever is already buffered in the pipe, without waiting."""
        while self._out_fd >= 0:
            try:
                data = os.read(self._out_fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._stop_reading()
                return
            self.capture.feed(data)

    @property
    def returncode(self) -> int | None:
        """The shell's exit status (negative: killed by that signal), or ``None``."""
        return None if self.proc is None else self.proc.returncode

    @property
    def running(self) -> bool:
        """The shell has not exited yet."""
        return self.returncode is None

    async def wait_exit(self, timeout: float | None) -> bool:
        """Wait up to ``timeout`` seconds for the shell to exit, then briefly for its output
        (:data:`DRAIN_GRACE_SECS`; a background child may hold the pipe open).

        Returns:
            ``True`` when the shell has exited.
        """
        assert self.proc is not None
        if self.proc.returncode is None:
            try:
                await asyncio.wait_for(self.proc.wait(), timeout)
            except TimeoutError:
                return False
        await self.finish_output()
        return True

    async def finish_output(self) -> None:
        """After exit: wait briefly for the output to end, take what is buffered, stop."""
        if not self._eof.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._eof.wait(), DRAIN_GRACE_SECS)
        self._drain_now()
        self._close_fds()

    async def write(self, data: bytes) -> None:
        """Write to the command's stdin (a pipe or the terminal).

        Raises:
            ToolError: ``process_failed`` when stdin is closed or the write fails.
        """
        if self._in_fd < 0:
            raise ToolError(ErrorKind.PROCESS_FAILED, "this session has no open stdin")
        view = memoryview(data)
        deadline = time.monotonic() + 5.0
        while view:
            try:
                n = os.write(self._in_fd, view)
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ToolError(
                        ErrorKind.PROCESS_FAILED, "the process is not reading its input"
                    ) from None
                await asyncio.sleep(0.01)
                continue
            except OSError as exc:
                raise ToolError(
                    ErrorKind.PROCESS_FAILED,
                    f"could not write to the process: {exc.strerror or exc}",
                ) from None
            view = view[n:]

    async def kill(self, reason: str = "killed") -> None:
        """SIGTERM the process group and every descendant, SIGKILL after
        :data:`KILL_GRACE_SECS`; reap the shell and close the output."""
        if self.proc is None:
            return
        if self.killed_by is None:
            self.killed_by = reason
        procs = _descendants(self.pid)
        _signal_all(self.pid, procs, signal.SIGTERM)
        deadline = time.monotonic() + KILL_GRACE_SECS
        while time.monotonic() < deadline:
            if self.proc.returncode is not None and not any(map(_still_running, procs)):
                break
            await asyncio.sleep(0.025)
        if self.proc.returncode is None:
            procs += _descendants(self.pid)
        if self.proc.returncode is None or not _HAVE_PROC or any(map(_still_running, procs)):
            # Fatal for anything that ignored SIGTERM or started after the scan. Skipped once
            # the shell is reaped and every known process is gone: the group id is then free
            # and could, in theory, belong to someone else.
            _signal_all(self.pid, procs, signal.SIGKILL)
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        self._drain_now()
        self._close_fds()


# ---------------------------------------------------------------------------------------------
# Shared helpers of the tools


def _seconds(value: float) -> str:
    """``"1 second"``, ``"2.5 seconds"``: a duration in words, singular only for exactly 1."""
    return f"{value:g} second" + ("" if value == 1 else "s")


def _clamp_timeout(value: Any, default: float) -> float:
    if value is None:
        return default
    try:
        secs = float(value)
    except (TypeError, ValueError):
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "timeout must be a number") from None
    if math.isnan(secs):
        return default
    return min(MAX_TIMEOUT_SECS, max(MIN_TIMEOUT_SECS, secs))


def _check_text(value: str, what: str) -> None:
    if "\x00" in value:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS, f"{what} contains a NUL byte (\\x00), which is not allowed"
        )


def _output_limit(max_output_tokens: Any, config_cap: int) -> int:
    if max_output_tokens is None:
        return config_cap
    return max(MIN_OUTPUT_BYTES, min(config_cap, int(max_output_tokens) * BYTES_PER_TOKEN))


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"{code} (killed by {name})"
    return str(code)


class _CommandTool(WorkspaceTool):
    """Common parts of the cwd-bound command tools (workspace, policy, environment)."""

    tags = ("runtime", "code")
    concurrency_class = ConcurrencyClass.EXCLUSIVE

    def __init__(self, workspace: Workspace | None, config: ShellConfig) -> None:
        super().__init__(workspace)
        self.config = config

    def _cwd(self, ctx: ToolContext, workdir: str | None) -> Path:
        ws = self.workspace_for(ctx)
        if workdir is None or not workdir.strip():
            return Path(ws.root)
        _check_text(workdir, "workdir")
        rel = ws.relpath(workdir)
        if not ws.is_dir(workdir):
            if ws.exists(rel):
                if stat.S_ISLNK(ws.stat(rel).st_mode):
                    raise ToolError(
                        ErrorKind.SYMLINK_REFUSED,
                        f"workdir {workdir!r} is a symbolic link; links are not followed: give "
                        "the real folder's path",
                    )
                raise ToolError(ErrorKind.NOT_A_DIRECTORY, f"workdir {workdir!r} is not a folder")
            raise ToolError(ErrorKind.NOT_FOUND, f"workdir {workdir!r} does not exist")
        return Path(ws.root) / rel if rel != "." else Path(ws.root)

    async def _check_policy(self, ctx: ToolContext, command: str) -> None:
        if not self.config.safe_policy:
            return
        verdict, pattern = check_command(command)
        if verdict == "deny":
            raise ToolError(
                ErrorKind.POLICY_DENIED,
                f"command refused by the shell safety policy (it matches {pattern!r}); "
                "this pattern is never run",
                command=command,
                pattern=pattern,
            )
        if verdict == "ask":
            if ctx.approval is None:
                raise ToolError(
                    ErrorKind.APPROVAL_REQUIRED,
                    f"command needs a person's approval (it matches {pattern!r}) and no "
                    "approval channel is attached; run a safer command or ask the user",
                    command=command,
                    pattern=pattern,
                )
            request = ApprovalRequest(
                tool=self.name, action=command, reason=f"matches the ask pattern {pattern!r}"
            )
            if not await ctx.approval(request):
                raise ToolError(
                    ErrorKind.POLICY_DENIED,
                    "the user did not approve this command",
                    command=command,
                    pattern=pattern,
                )

    async def _run_to_completion(
        self, command: str, cwd: Path, timeout: float, limit: int
    ) -> tuple[RunningCommand, bool, float]:
        capture = OutputCapture(limit)
        started = time.monotonic()
        proc = await RunningCommand.start(command, cwd=cwd, env=scrubbed_env(), capture=capture)
        try:
            exited = await proc.wait_exit(timeout)
            if not exited:
                await proc.kill("timeout")
        finally:
            if proc.running or proc._out_fd >= 0:
                await asyncio.shield(proc.kill("cancelled"))
        return proc, exited, time.monotonic() - started

    def _completion_result(
        self,
        proc: RunningCommand,
        exited: bool,
        timeout: float,
        elapsed: float,
        limit: int,
        extra_meta: JSONObject | None = None,
    ) -> ToolResult:
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
        if not exited:
            secs = _seconds(timeout)
            out = (
                f"{text}\n\nCommand timed out after {secs}; its process group was "
                f"killed. Exit code: {_exit_text(code)}"
            )
            return ToolResult.failure(
                ErrorKind.TIMEOUT,
                f"command timed out after {secs} and was killed",
                output=out,
                metadata=meta,
            )
        out = f"{text}\n\nExit code: {_exit_text(code)}"
        if code == 0:
            return ToolResult.ok(out, structured_metadata=meta)
        return ToolResult.failure(
            ErrorKind.PROCESS_FAILED,
            f"command exited with code {_exit_text(code)}",
            output=out,
            metadata=meta,
        )


class ShellTool(_CommandTool):
    """``shell {command, timeout_secs=120}``: run a command to completion (octos §1.3).

    Args:
        workspace: the workspace the command runs in.
        config: the ``shell`` section of the config.
    """

    name = "shell"
    title = "Run a shell command"
    description = (
        "Execute a shell command (sh -c) in the workspace and return its combined "
        "stdout/stderr and exit code. Long output keeps its beginning and end. "
        "timeout_secs defaults to 120 (1-600); on timeout the whole process group is killed."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line, run by sh -c."},
            "timeout_secs": {
                "type": "integer",
                "description": "Timeout in seconds (default 120, clamped to 1-600).",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    }

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        command = str(args["command"])
        _check_text(command, "command")
        if not command.strip():
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "command is empty")
        timeout = _clamp_timeout(args.get("timeout_secs"), self.config.default_timeout_secs)
        cwd = self._cwd(ctx, None)
        await self._check_policy(ctx, command)
        limit = self.config.max_output_bytes - 200
        proc, exited, elapsed = await self._run_to_completion(command, cwd, timeout, limit)
        return self._completion_result(proc, exited, timeout, elapsed, limit)


# ---------------------------------------------------------------------------------------------
# Sessions


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
    """

    id: str
    command: str
    proc: RunningCommand
    timeout: float
    created: float
    last_used: float
    busy: bool = False
    watchdog: asyncio.Task[None] | None = None

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
        exited = await self.proc.wait_exit(yield_secs)
        text = self.proc.capture.take(limit)
        return text, not exited, self.proc.returncode


class SessionManager:
    """The live exec sessions of one registry, shared by ``exec_command`` and
    ``write_stdin``.

    Args:
        max_sessions: sessions alive at most; starting one more closes the least recently
            used idle session.
    """

    def __init__(self, max_sessions: int = 64) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[str, ExecSession] = {}
        self._counter = 0
        self._closed = False

    def __len__(self) -> int:
        return len(self._sessions)

    def ids(self) -> list[str]:
        """Ids of the live sessions, oldest first."""
        return list(self._sessions)

    def get(self, session_id: str) -> ExecSession:
        """The session ``session_id``.

        Raises:
            ToolError: ``unknown_session`` when there is none (never started, finished and
                read, closed, or killed at its timeout and read).
        """
        session = self._sessions.get(session_id)
        if session is None:
            live = ", ".join(self._sessions) or "none"
            raise ToolError(
                ErrorKind.UNKNOWN_SESSION,
                f"no exec session {session_id!r} (live sessions: {live}); a session ends "
                "once its exit has been reported",
            )
        return session

    async def start(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        tty: bool,
        buffer_bytes: int,
    ) -> ExecSession:
        """Start a command as a new session (closing the oldest idle one when full)."""
        if self._closed:
            raise ToolError(ErrorKind.UNAVAILABLE, "the exec session manager is closed")
        while len(self._sessions) >= self.max_sessions:
            idle = [s for s in self._sessions.values() if not s.busy]
            if not idle:
                raise ToolError(
                    ErrorKind.UNAVAILABLE,
                    f"all {self.max_sessions} exec sessions are in use; wait for one to end",
                )
            oldest = min(idle, key=lambda s: s.last_used)
            await self.close(oldest.id)
        proc = await RunningCommand.start(
            command,
            cwd=cwd,
            env=scrubbed_env(),
            capture=OutputCapture(buffer_bytes),
            tty=tty,
            stdin=True,
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
        )
        session.watchdog = asyncio.get_running_loop().create_task(self._watch(session))
        self._sessions[session.id] = session
        return session

    async def _watch(self, session: ExecSession) -> None:
        assert session.proc.proc is not None
        try:
            await asyncio.wait_for(session.proc.proc.wait(), session.timeout)
        except TimeoutError:
            await session.proc.kill("timeout")

    def forget(self, session_id: str) -> None:
        """Drop a finished session from the table (its exit has been reported)."""
        session = self._sessions.pop(session_id, None)
        if session is not None and session.watchdog is not None:
            session.watchdog.cancel()

    async def close(self, session_id: str) -> None:
        """Kill a session's process group and forget it."""
        session = self._sessions.pop(session_id, None)
        if session is None:
            return
        if session.watchdog is not None:
            session.watchdog.cancel()
        await session.proc.kill("closed")

    async def aclose(self) -> None:
        """Close every session; later starts fail."""
        self._closed = True
        ids = list(self._sessions)
        await asyncio.gather(*(self.close(i) for i in ids), return_exceptions=True)


def _session_result(
    session: ExecSession,
    text: str,
    running: bool,
    code: int | None,
    manager: SessionManager,
    tool: str,
) -> ToolResult:
    if running:
        head = f"Process running with session ID {session.id}"
    elif session.proc.killed_by == "timeout":
        head = (
            f"Process killed after its {session.timeout:g} s timeout; exit code {_exit_text(code)}"
        )
    else:
        head = f"Process exited with code {_exit_text(code)}"
    out = f"{head}\nOutput:\n{text}" if text else f"{head}\nOutput: (none since the last read)"
    meta: JSONObject = {
        "codex_tool": tool,
        "session_id": session.id,
        "running": running,
        "exit_code": code,
    }
    if not running:
        manager.forget(session.id)
    return ToolResult.ok(out, structured_metadata=meta)


class ExecCommandTool(_CommandTool):
    """``exec_command`` (Codex P0): run to completion, or as a session.

    Session mode starts when ``tty`` is true or ``yield_time_ms`` is given: the call waits
    ``yield_time_ms`` (default 1000 ms; less if the command ends) and returns the output so far
    with a ``session_id`` for ``write_stdin``. ``max_output_tokens`` caps the returned text at
    about 4 bytes per token.

    Args:
        workspace: the workspace the command runs in.
        config: the ``shell`` section of the config.
        sessions: the session table shared with ``write_stdin``.
    """

    name = "exec_command"
    title = "Run a command (sessions)"
    description = (
        "Run a shell command in the workspace. Without tty/yield_time_ms it runs to "
        "completion and returns its output and exit code. For long-running or interactive "
        "commands set tty=true or yield_time_ms to get a session_id, then continue with "
        "write_stdin (each read returns only new output)."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "cmd": {"type": "string", "description": "The command line, run by sh -c."},
            "command": {"type": "string", "description": "Alias of cmd."},
            "workdir": {
                "type": "string",
                "description": "Working folder, relative to the workspace (default: its root).",
            },
            "timeout_secs": {
                "type": "integer",
                "description": "Kill after this many seconds (default 120, clamped to 1-600).",
            },
            "yield_time_ms": {
                "type": "integer",
                "minimum": 0,
                "description": "Return after this many ms with a session_id if still running.",
            },
            "max_output_tokens": {
                "type": "integer",
                "minimum": 1,
                "description": "Cap of the returned output (about 4 bytes per token).",
            },
            "tty": {"type": "boolean", "description": "Run on a pseudo-terminal (a session)."},
            "shell": {"type": "string", "description": "Accepted for Codex; always sh."},
            "login": {"type": "boolean", "description": "Accepted for Codex; ignored."},
            "justification": {"type": "string", "description": "Why the command is needed."},
        },
        "additionalProperties": False,
    }

    def __init__(
        self,
        workspace: Workspace | None,
        config: ShellConfig,
        sessions: SessionManager,
    ) -> None:
        super().__init__(workspace, config)
        self.sessions = sessions

    def _command(self, args: JSONObject) -> str:
        command = args.get("cmd")
        if command is None:
            command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, f"{self.name} needs a non-empty 'cmd' string"
            )
        _check_text(command, "cmd")
        return command

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        command = self._command(args)
        cwd = self._cwd(ctx, args.get("workdir"))
        timeout = _clamp_timeout(args.get("timeout_secs"), self.config.default_timeout_secs)
        limit = _output_limit(args.get("max_output_tokens"), self.config.max_output_bytes - 200)
        await self._check_policy(ctx, command)
        tty = bool(args.get("tty", False))
        yield_ms = args.get("yield_time_ms")
        if not tty and yield_ms is None:
            proc, exited, elapsed = await self._run_to_completion(command, cwd, timeout, limit)
            return self._completion_result(
                proc, exited, timeout, elapsed, limit, {"codex_tool": self.name}
            )
        wait_ms = EXEC_DEFAULT_YIELD_MS if yield_ms is None else int(yield_ms)
        session = await self.sessions.start(
            command, cwd=cwd, timeout=timeout, tty=tty, buffer_bytes=self.config.max_output_bytes
        )
        with session.in_use():
            try:
                text, running, code = await session.poll(min(wait_ms, MAX_YIELD_MS) / 1000, limit)
            except BaseException:
                await self.sessions.close(session.id)
                raise
        return _session_result(session, text, running, code, self.sessions, self.name)

    async def aclose(self) -> None:
        await self.sessions.aclose()


class WriteStdinTool(Tool):
    """``write_stdin`` (Codex P0): send characters to a session, read its new output.

    Args:
        sessions: the session table shared with ``exec_command``.
        config: the ``shell`` section of the config.
    """

    name = "write_stdin"
    title = "Write to a running command"
    description = (
        "Write characters to the stdin of an exec_command session (e.g. 'ls\\n'; use '' to "
        "just poll) and return the output produced since the last read."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "session_id": {
                "type": ["string", "integer"],
                "description": "The session_id returned by exec_command.",
            },
            "chars": {"type": "string", "description": "Characters to write (may be empty)."},
            "yield_time_ms": {
                "type": "integer",
                "minimum": 0,
                "description": "How long to wait for output, in ms (default 250).",
            },
            "max_output_tokens": {
                "type": "integer",
                "minimum": 1,
                "description": "Cap of the returned output (about 4 bytes per token).",
            },
        },
        "required": ["session_id"],
        "additionalProperties": False,
    }
    tags = ("runtime", "code")
    concurrency_class = ConcurrencyClass.SAFE

    def __init__(self, sessions: SessionManager, config: ShellConfig) -> None:
        self.sessions = sessions
        self.config = config

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        raw_id = args["session_id"]
        session_id = f"exec-{raw_id}" if isinstance(raw_id, int) else str(raw_id)
        session = self.sessions.get(session_id)
        if session.busy:
            raise ToolError(
                ErrorKind.UNAVAILABLE, f"session {session_id} is being used by another call"
            )
        limit = _output_limit(args.get("max_output_tokens"), self.config.max_output_bytes - 200)
        wait_ms = int(args.get("yield_time_ms", WRITE_STDIN_DEFAULT_YIELD_MS))
        chars = args.get("chars") or ""
        with session.in_use():
            if chars:
                if not session.proc.running:
                    pass  # the exit is reported below; the input has nowhere to go
                else:
                    await session.proc.write(chars.encode("utf-8"))
            text, running, code = await session.poll(min(wait_ms, MAX_YIELD_MS) / 1000, limit)
        return _session_result(session, text, running, code, self.sessions, self.name)

    async def aclose(self) -> None:
        await self.sessions.aclose()


class BashTool(ExecCommandTool):
    """``bash`` (Codex alias): ``{cmd, timeout_ms?, workdir?}`` run to completion."""

    name = "bash"
    title = "Run a bash-style command"
    description = (
        "Run a command (sh -c) in the workspace to completion and return its output and exit "
        "code. timeout_ms defaults to 120000 (1000-600000)."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "cmd": {"type": "string", "description": "The command line."},
            "command": {"type": "string", "description": "Alias of cmd."},
            "timeout_ms": {"type": "integer", "description": "Timeout in milliseconds."},
            "workdir": {"type": "string", "description": "Working folder in the workspace."},
        },
        "additionalProperties": False,
    }

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        command = self._command(args)
        cwd = self._cwd(ctx, args.get("workdir"))
        raw_ms = args.get("timeout_ms")
        timeout = _clamp_timeout(
            None if raw_ms is None else math.ceil(int(raw_ms) / 1000),
            self.config.default_timeout_secs,
        )
        limit = self.config.max_output_bytes - 200
        await self._check_policy(ctx, command)
        proc, exited, elapsed = await self._run_to_completion(command, cwd, timeout, limit)
        return self._completion_result(
            proc,
            exited,
            timeout,
            elapsed,
            limit,
            {"codex_tool": "bash", "octos_tool": "exec_command"},
        )

    async def aclose(self) -> None:
        return None


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``shell``, ``exec_command``, ``bash`` and ``write_stdin`` (octos §1.1 order).

    The two session tools share one :class:`SessionManager` bounded by
    ``config.shell.max_sessions``.
    """
    sessions = SessionManager(config.shell.max_sessions)
    registry.register(ShellTool(workspace, config.shell))
    registry.register(ExecCommandTool(workspace, config.shell, sessions))
    registry.register(BashTool(workspace, config.shell, sessions))
    registry.register(WriteStdinTool(sessions, config.shell))
