"""Finding and stopping every process a command started, without cgroups (Linux ``/proc``).

The shell of each command is a child subreaper (``PR_SET_CHILD_SUBREAPER``, kept across
``execve``): a descendant whose parent dies (a double fork, ``(setsid cmd &)``) is
re-parented to the shell instead of init, so while the shell lives, every process the
command started is found by walking ``/proc/<pid>/task/*/children`` from the shell.

:func:`freeze_and_kill` ends such a tree so that nothing can react: it SIGSTOPs the process
group and every descendant, walking again until a walk finds nothing new (a stopped process
cannot fork, trap a signal or call ``setsid``), then SIGKILLs them all, and repeats until
no process is left. A fork loop is thus caught: each walk stops what the last one missed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from dataclasses import dataclass
from typing import Any

__all__ = [
    "HAVE_PROC",
    "ProcInfo",
    "become_subreaper",
    "descendants",
    "freeze_and_kill",
    "read_stat",
    "reap_as_init",
    "signal_all",
    "still_running",
]


@dataclass(frozen=True, slots=True)
class ProcInfo:
    """One process as ``/proc/<pid>/stat`` shows it."""

    pid: int
    ppid: int
    pgid: int
    state: str
    start: int  # start time in clock ticks since boot: tells a reused pid apart


HAVE_PROC = os.path.isdir("/proc/self")


def read_stat(pid: int | str) -> ProcInfo | None:
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
    return ProcInfo(int(pid), int(rest[1]), int(rest[2]), rest[0].decode("ascii"), int(rest[19]))


def _children(pid: int) -> list[int] | None:
    """Child pids from ``/proc/<pid>/task/*/children`` (Linux >= 3.5), or ``None`` when that
    file is not available."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return [] if HAVE_PROC else None
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


def descendants(pid: int) -> list[ProcInfo]:
    """Every descendant of ``pid`` (Linux ``/proc``; empty elsewhere). Walks the ``children``
    files of the tree when the kernel has them, else scans every process once."""
    found: list[ProcInfo] = []
    stack = [pid]
    seen = {pid}
    while stack:
        kids = _children(stack.pop())
        if kids is None:
            return _descendants_by_scan(pid)
        for kid in kids:
            if kid in seen:
                continue
            seen.add(kid)
            info = read_stat(kid)
            if info is not None:
                found.append(info)
                stack.append(kid)
    return found


def _descendants_by_scan(pid: int) -> list[ProcInfo]:
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
    children: dict[int, list[ProcInfo]] = {}
    for entry in entries:
        info = read_stat(entry)
        if info is not None:
            children.setdefault(info.ppid, []).append(info)
    found: list[ProcInfo] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child.pid)
    return found


def still_running(info: ProcInfo) -> bool:
    """The same process (not a reused pid) is alive and not a zombie."""
    now = read_stat(info.pid)
    return now is not None and now.start == info.start and now.state != "Z"


def signal_all(pgid: int, procs: list[ProcInfo], sig: signal.Signals) -> None:
    """Signal the process group, then each known descendant that is still the same process
    (a descendant may have left the group with ``setsid``)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for info in procs:
        if info.pgid != pgid and still_running(info):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(info.pid, sig)


def _kill_one(info: ProcInfo, sig: signal.Signals) -> None:
    if still_running(info):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(info.pid, sig)


def freeze_and_kill(root: ProcInfo | None, pgid: int, *, max_rounds: int = 200) -> int:
    """SIGSTOP the group ``pgid`` and every descendant of ``root`` (walking again until a
    walk finds nothing new), then SIGKILL them; repeat until none is left or
    ``max_rounds`` walks were made. ``root`` (the shell) is stopped and killed last, so that
    orphans keep being re-parented to it while the tree is walked.

    Args:
        root: the shell as seen at start (its start time guards against pid reuse), or
            ``None`` when it has exited already (then only the group is signalled).
        pgid: the command's process group.

    Returns:
        How many distinct processes were signalled.
    """
    seen: dict[int, ProcInfo] = {}
    root_alive = root is not None and still_running(root)
    for _ in range(max_rounds):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGSTOP)
        found = descendants(root.pid) if root is not None and root_alive else []
        fresh = [p for p in found if p.pid not in seen or seen[p.pid].start != p.start]
        for info in fresh:
            seen[info.pid] = info
            _kill_one(info, signal.SIGSTOP)
        if fresh:
            continue
        # Everything found is stopped: kill it all, then look once more.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        for info in seen.values():
            _kill_one(info, signal.SIGKILL)
        if root is not None and root_alive:
            left = [p for p in descendants(root.pid) if still_running(p)]
            if left:
                continue
            _kill_one(root, signal.SIGKILL)
        break
    return len(seen)


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


PRCTL = _load_prctl()


def become_subreaper() -> None:  # pragma: no cover - runs in the child
    """Make the calling process a child subreaper (kept across ``execve``)."""
    if PRCTL is not None:
        PRCTL(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


_SIGNALS_TO_RESET = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGPIPE")


PARENT_CHECK_SECS = 0.25
"""How often the Landlock launcher (:func:`reap_as_init`) checks that its parent lives."""


class _ParentGone(BaseException):
    """Raised in the launcher by its timer when the server is gone."""


def _default_signal(sig: int) -> None:  # pragma: no cover - runs in the child
    """Restore the default action of ``sig`` through libc (Python's ``signal.signal``
    works only in the main thread, and the server's own handlers must not run here)."""
    import ctypes

    ctypes.CDLL(None).signal(sig, 0)  # SIG_DFL


def reap_as_init(child: int) -> None:  # pragma: no cover - runs in the child, never returns
    """Be the ``init`` of a command whose shell is ``child`` (Landlock engine: no pid
    namespace): a child subreaper that holds no descriptor, reaps whatever is re-parented
    to it, and when the shell exits SIGKILLs every descendant left (a ``setsid`` or double
    forked child included, as bubblewrap's pid namespace does), then exits with the
    shell's status (killed by a signal: the same signal).

    When the process that started it goes (the server killed with SIGKILL, crashed): it
    is re-parented, sees so within :data:`PARENT_CHECK_SECS` and kills the tree the same
    way, as bubblewrap's ``--die-with-parent`` does (``PR_SET_PDEATHSIG`` is not used: it
    fires when the *thread* that forked exits, which a live server's worker threads do).

    Call in a forked child that is a subreaper (:func:`become_subreaper`)."""
    try:
        parent = os.getppid()
        for name in _SIGNALS_TO_RESET:
            _default_signal(int(getattr(signal, name)))
        os.closerange(0, 1 << 16)  # the exec-error pipe too: the caller sees a started child

        def _check_parent(signum: int, frame: object) -> None:
            if os.getppid() != parent:
                raise _ParentGone

        status = 0
        try:
            signal.signal(signal.SIGALRM, _check_parent)
            signal.setitimer(signal.ITIMER_REAL, PARENT_CHECK_SECS, PARENT_CHECK_SECS)
            _check_parent(0, None)  # gone before the timer was set
            while True:
                try:
                    pid, got = os.waitpid(-1, 0)
                except ChildProcessError:
                    break
                if pid == child:
                    status = got
                    break
        except _ParentGone:
            status = signal.SIGKILL  # as if killed: nobody reads it
        signal.setitimer(signal.ITIMER_REAL, 0)
        me = os.getpid()
        for _ in range(200):
            left = [p for p in descendants(me) if p.state != "Z"]
            for info in left:
                with contextlib.suppress(OSError):
                    os.kill(info.pid, signal.SIGKILL)
            while True:
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    pid = 0
                if pid == 0:
                    break
            if not left:
                break
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            _default_signal(sig)
            os.kill(me, sig)
            os._exit(128 + sig)
        os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)
    finally:
        os._exit(1)
