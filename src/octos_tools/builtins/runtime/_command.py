"""One running command: ``sh -c CMD`` in its own session, process group and (where the
machine offers it) cgroup; its output read into an :class:`~.capture.OutputCapture`.

Ending a command (a timeout, a cancelled call, a closed session), no process it started
survives:

* **with a cgroup** (:mod:`._cgroup`): every process in the cgroup gets SIGTERM; after
  :data:`KILL_GRACE_SECS` (``"SIGTERM, 500 ms, SIGKILL"``, octos
  ``crates/octos-agent/src/tools/shell.rs``) the cgroup is killed (``cgroup.kill``), which
  catches whatever a SIGTERM handler started meanwhile (``setsid``, double forks, loops);
* **without** (:mod:`._process_tree`): the shell is stopped first (SIGSTOP; it stays a
  child subreaper, so whatever its descendants start while dying, ``setsid`` or double
  fork, is re-parented to it and found), the rest of the tree gets SIGTERM and the same
  grace, then the whole tree is frozen with SIGSTOP, walked until stable and SIGKILLed. The
  shell itself gets no chance to run a SIGTERM trap (which could start a child that the
  walk would no longer find once the shell is gone).

A command that *exits* by itself may leave background children (``server &``; case BC-23
requires the call to return then). With a cgroup they are tracked and killed when the
session of tools ends (:meth:`RunningCommand.reap_leftovers` via the session manager);
without one, those still in the command's process group are (a child that calls
``setsid`` leaves it and is not found). In the bubblewrap sandbox they end with the
command's pid namespace, when its shell exits; under Landlock (no pid namespace) the shell
runs below a launcher that is its subreaper and kills what is left when it exits
(:func:`._process_tree.reap_as_init`), so the two engines end a command the same way.

After a sandboxed command (and at each poll of its session) the git guard runs
(:meth:`RunningCommand.run_guard`, :mod:`octos_tools.sandbox._git_guard`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import subprocess
import termios
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from ...errors import ErrorKind, ToolError
from ...sandbox import SandboxMode, SandboxSettings, SandboxSpawn, wrap_command
from ...sandbox._git_guard import GuardWatch
from ._capture import OutputCapture
from ._cgroup import CommandCgroup
from ._environment import protect_host_environment
from ._process_tree import (
    PRCTL,
    ProcInfo,
    become_subreaper,
    descendants,
    freeze_and_kill,
    read_stat,
    reap_as_init,
    still_running,
)

__all__ = ["DRAIN_GRACE_SECS", "KILL_GRACE_SECS", "RunningCommand"]

#: Seconds between SIGTERM and the final kill.
KILL_GRACE_SECS = 0.5
#: Seconds the call waits, after the shell exited, for its output pipe to close.
DRAIN_GRACE_SECS = 0.25
#: Seconds to wait for a killed cgroup to empty.
_CGROUP_EMPTY_SECS = 5.0


def _preexec(
    cgroup: CommandCgroup | None,
    tty: bool,
    confine: Callable[[], None] | None = None,
    reaper: bool = False,
) -> Callable[[], None] | None:
    """The child's set-up before ``exec``: join the cgroup, become a subreaper, take the
    terminal; with ``reaper``, fork: this process stays as the shell's ``init``
    (:func:`._process_tree.reap_as_init`), outside the sandbox (it walks the command's
    ``/proc`` entries, which the Landlock ruleset does not grant); then, in the process
    that goes on to ``exec`` the shell, ``confine`` (the Landlock engine; last: it forbids
    writing the cgroup)."""
    if cgroup is None and PRCTL is None and not tty and confine is None:
        return None

    def run() -> None:  # pragma: no cover - runs in the child
        if cgroup is not None:
            cgroup.join()
        become_subreaper()
        if tty:
            with contextlib.suppress(OSError):
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        if reaper:
            child = os.fork()
            if child != 0:
                reap_as_init(child)
        if confine is not None:
            confine()

    return run


class RunningCommand:
    """One ``sh -c`` process, its group and its cgroup; output read into a capture.

    Use :meth:`start`; then :meth:`wait_exit`, :meth:`write`, :meth:`kill`.

    Args:
        capture: where output bytes go.
    """

    def __init__(self, capture: OutputCapture) -> None:
        self.capture = capture
        self.proc: asyncio.subprocess.Process | None = None
        self.pid = 0
        self.tty = False
        self.cgroup: CommandCgroup | None = None
        self.started = time.monotonic()
        self._root: ProcInfo | None = None
        self._out_fd = -1
        self._in_fd = -1
        self._eof = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self.killed_by: str | None = None
        #: the sandbox the command runs in (mode, engine, network), for the blocked note
        self.sandbox_mode = SandboxMode.DANGER_FULL_ACCESS
        self.sandbox_engine = "none"
        self.sandbox_network = True
        #: the git guard's view from before the command (``None``: nothing to guard)
        self.guard: GuardWatch | None = None
        self._guard_pending: list[str] = []

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
        sandbox: SandboxSettings | None = None,
        workspace: Path | None = None,
    ) -> RunningCommand:
        """Spawn ``sh -c command``, in ``sandbox`` when given (:mod:`octos_tools.sandbox`).

        Args:
            command: the command line.
            cwd: the working directory (absolute).
            env: the complete environment.
            capture: the output capture (stdout and stderr together).
            tty: run on a pseudo-terminal (stdin, stdout and stderr are its slave side).
            stdin: give the command a stdin pipe (ignored with ``tty``); else ``/dev/null``.
            sandbox: the sandbox settings (``None``: unconfined, danger-full-access).
            workspace: the workspace root (writable in ``workspace-write``).

        Raises:
            ToolError: ``process_failed`` when the shell cannot be started;
                ``sandbox_unavailable`` when the sandbox cannot be enforced here.
        """
        protect_host_environment()
        argv = ["/bin/sh", "-c", command]
        # the terminal first: under Landlock the command may open its own pty's slave (by
        # path) and no other terminal of the user
        pty = os.openpty() if tty else None
        try:
            spawn = (
                wrap_command(
                    argv, cwd, env, sandbox, workspace, tty=os.ttyname(pty[1]) if pty else None
                )
                if sandbox is not None
                else SandboxSpawn(argv, dict(env))
            )
        except BaseException:
            for fd in pty or ():
                os.close(fd)
            raise
        try:
            return await cls._spawn(spawn, cwd=cwd, capture=capture, tty=tty, stdin=stdin, pty=pty)
        finally:
            spawn.close()

    @classmethod
    async def _spawn(
        cls,
        spawn: SandboxSpawn,
        *,
        cwd: Path,
        capture: OutputCapture,
        tty: bool,
        stdin: bool,
        pty: tuple[int, int] | None = None,
    ) -> RunningCommand:
        self = cls(capture)
        self.tty = tty
        self.sandbox_mode = spawn.mode
        self.sandbox_engine = spawn.engine
        self.sandbox_network = spawn.network
        self.guard = spawn.guard
        self.cgroup = CommandCgroup.create()
        child_fds: list[int] = []
        try:
            if tty:
                master, slave = pty if pty is not None else os.openpty()
                child_fds.append(slave)
                self._out_fd = master
                self._in_fd = os.dup(master)
                stdin_arg: int = slave
                out_arg = slave
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
            for fd in (self._out_fd, self._in_fd):
                if fd >= 0:
                    os.set_inheritable(fd, False)
            self.proc = await asyncio.create_subprocess_exec(
                spawn.argv[0],
                *spawn.argv[1:],
                stdin=stdin_arg,
                stdout=out_arg,
                stderr=out_arg,
                cwd=str(cwd),
                env=spawn.env,
                start_new_session=True,
                pass_fds=spawn.pass_fds,
                preexec_fn=_preexec(
                    self.cgroup, tty, spawn.preexec, reaper=spawn.engine == "landlock"
                ),
            )
        except subprocess.SubprocessError as exc:  # the sandbox's set-up failed in the child
            self._close_fds()
            if self.cgroup is not None:
                self.cgroup.remove()
            raise ToolError(
                ErrorKind.SANDBOX_UNAVAILABLE,
                f"the {spawn.mode} sandbox ({spawn.engine}) could not be applied, so the "
                f"command was not run ({exc}); see octos-tools sandbox check",
            ) from None
        except OSError as exc:
            self._close_fds()
            if self.cgroup is not None:
                self.cgroup.remove()
            raise ToolError(
                ErrorKind.PROCESS_FAILED, f"could not start the shell: {exc.strerror or exc}"
            ) from None
        finally:
            for fd in child_fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.pid = self.proc.pid
        self._root = read_stat(self.pid)
        if (
            self.cgroup is not None
            and self._root is not None
            and not self.cgroup.contains(self.pid)
        ):
            self.cgroup.remove()  # the move was refused: use the /proc walk
            self.cgroup = None
        os.set_blocking(self._out_fd, False)
        if self._in_fd >= 0:
            os.set_blocking(self._in_fd, False)
        self._loop.add_reader(self._out_fd, self._on_readable)
        return self

    def run_guard(self) -> None:
        """Run the git guard now (after the command, or at a poll of its session): what
        the command did to make git run a program later is undone
        (:mod:`octos_tools.sandbox._git_guard`); its lines wait for :meth:`guard_notes`."""
        if self.guard is not None:
            self._guard_pending += self.guard.check()

    def guard_notes(self) -> list[str]:
        """Run the git guard and return every line it has for the result (one per
        finding, those of earlier runs not yet reported included)."""
        self.run_guard()
        lines, self._guard_pending = self._guard_pending, []
        return lines

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

    @property
    def output_open(self) -> bool:
        """The output is still being read."""
        return self._out_fd >= 0

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

    def release(self) -> bool:
        """After a normal exit: remove the cgroup if it is empty.

        Returns:
            ``True`` when background processes of the command still run in its cgroup (or,
            without one, its process group): the caller keeps the command to
            :meth:`reap_leftovers` later.
        """
        if self.cgroup is None:
            # without a cgroup: background children stay in the shell's process group
            # (``server &``); one signal-0 probe tells whether any is still alive (a pid is
            # never reused while it names a live group)
            try:
                os.killpg(self.pid, 0)
            except (ProcessLookupError, PermissionError):
                return False
            return True
        if self.cgroup.remove():
            self.cgroup = None
            return False
        return True

    async def reap_leftovers(self) -> None:
        """Kill what a command that exited left running in its cgroup, or (without one) in
        its process group: SIGTERM, :data:`KILL_GRACE_SECS`, then freeze and kill."""
        if self.cgroup is None and self.proc is not None and self.proc.returncode is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + KILL_GRACE_SECS
            while time.monotonic() < deadline and self.release():
                await asyncio.sleep(0.02)
            freeze_and_kill(None, self.pid)
            self.run_guard()
            return
        await self.kill("session closed")
        self.run_guard()

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
        """End the command and everything it started (module docstring); reap the shell
        and close the output. Safe to call more than once."""
        if self.proc is None:
            return
        if self.killed_by is None and self.proc.returncode is None:
            self.killed_by = reason
        if self.cgroup is not None:
            await self._kill_cgroup(self.cgroup)
        else:
            root = self._root if self.proc.returncode is None else None
            if root is not None or self.killed_by is not None:
                await self._kill_tree(root)
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        self._drain_now()
        self._close_fds()

    async def _kill_tree(self, root: ProcInfo | None) -> None:
        """Without a cgroup: stop the shell (it stays a subreaper, so whatever its
        descendants start while dying is re-parented to it and found), SIGTERM the rest of
        the tree, wait :data:`KILL_GRACE_SECS`, then freeze and kill everything."""
        if root is not None and still_running(root):
            with contextlib.suppress(OSError):
                os.kill(root.pid, signal.SIGSTOP)
            # each descendant by pid, never the group: a fatal signal kills even a stopped
            # process, and the shell must stay alive as the subreaper
            for info in descendants(root.pid):
                if still_running(info):
                    with contextlib.suppress(OSError):
                        os.kill(info.pid, signal.SIGTERM)
            deadline = time.monotonic() + KILL_GRACE_SECS
            while time.monotonic() < deadline:
                if not any(still_running(p) for p in descendants(root.pid)):
                    break
                await asyncio.sleep(0.02)
        freeze_and_kill(root, self.pid)

    async def _kill_cgroup(self, cgroup: CommandCgroup) -> None:
        assert self.proc is not None
        for pid in cgroup.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        if self.proc.returncode is None:
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGTERM)  # a member not yet in cgroup.procs
        deadline = time.monotonic() + KILL_GRACE_SECS
        while time.monotonic() < deadline:
            if self.proc.returncode is not None and not cgroup.populated():
                break
            await asyncio.sleep(0.02)
        cgroup.kill_all()
        deadline = time.monotonic() + _CGROUP_EMPTY_SECS
        while cgroup.populated() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
            cgroup.kill_all()
        if self.proc.returncode is None:
            await self.proc.wait()
        if cgroup.remove():
            self.cgroup = None


async def run_to_completion(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    capture: OutputCapture,
    timeout: float,
    sandbox: SandboxSettings | None = None,
    workspace: Path | None = None,
) -> tuple[RunningCommand, bool]:
    """Start ``command`` and wait up to ``timeout`` seconds for it; on timeout, or if the
    caller is cancelled, its whole process tree is killed (see :meth:`RunningCommand.kill`).

    Returns:
        ``(proc, exited)``: ``exited`` is ``False`` when the command was killed at its
        timeout. After a normal exit the caller decides what to do with background
        children still running (:meth:`RunningCommand.release`). ``sandbox`` and
        ``workspace``: as :meth:`RunningCommand.start`.

    Raises:
        ToolError: when the command cannot be started.
    """
    proc = await RunningCommand.start(
        command, cwd=cwd, env=env, capture=capture, sandbox=sandbox, workspace=workspace
    )
    try:
        exited = await proc.wait_exit(timeout)
        if not exited:
            await proc.kill("timeout")
    finally:
        if proc.running or proc.output_open:
            await asyncio.shield(proc.kill("cancelled"))
        proc.run_guard()
    return proc, exited
