"""One cgroup (v2) per command, where the machine offers a writable cgroup v2 hierarchy.

A process cannot leave its cgroup by forking, double-forking or ``setsid`` (only by writing
to another cgroup's ``cgroup.procs``, which needs write access there), so killing the
cgroup kills everything the command started, whatever it does with signals and sessions.
``cgroup.kill`` (Linux 5.14+) kills every member at once, a fork loop included; on older
kernels the cgroup is frozen (``cgroup.freeze``), every member is SIGKILLed and it is
thawed. Source: the Linux cgroup v2 documentation (``Documentation/admin-guide/cgroup-v2.rst``).

The cgroup of a command is a child of the host's own cgroup (``/proc/self/cgroup``, line
``0::PATH``, under the ``cgroup2`` mount found in ``/proc/self/mountinfo``), named
``octos-tools-<host pid>-<n>``. Anything unusable (no cgroup v2, no write access, the
``mkdir`` refused, the move refused) makes :meth:`CommandCgroup.create` return ``None`` and
the caller falls back to the ``/proc`` walk of :mod:`._process_tree`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal

__all__ = ["CommandCgroup", "cgroup_base"]

_counter = itertools.count(1)
_base: str | None = None
_base_checked = False


def _find_base() -> str | None:
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            own = next((ln[3:].strip() for ln in fh if ln.startswith("0::")), None)
        if own is None:
            return None
        mount = None
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "cgroup2":
                    mount = left.split()[4]
                    break
    except OSError:
        return None
    if mount is None:
        return None
    base = os.path.join(mount, own.lstrip("/"))
    if not os.path.isfile(os.path.join(base, "cgroup.procs")) or not os.access(base, os.W_OK):
        return None
    _sweep_stale(base)
    return base


def _sweep_stale(base: str) -> None:
    """Remove empty cgroups left by earlier hosts that are gone."""
    with contextlib.suppress(OSError):
        for name in os.listdir(base):
            if not name.startswith("octos-tools-"):
                continue
            pid = name.split("-")[2]
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(base, name))


def cgroup_base() -> str | None:
    """The folder under which command cgroups are made, or ``None`` when cgroup v2 is not
    usable here (computed once per process)."""
    global _base, _base_checked
    if not _base_checked:
        _base_checked = True
        _base = _find_base()
    return _base


class CommandCgroup:
    """The cgroup of one command. Create with :meth:`create`; the child joins it in its
    ``preexec_fn`` with :meth:`join`."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._procs = os.path.join(path, "cgroup.procs")

    @classmethod
    def create(cls) -> CommandCgroup | None:
        """A new, empty cgroup, or ``None`` when cgroups cannot be used (see module)."""
        global _base
        base = cgroup_base()
        if base is None:
            return None
        path = os.path.join(base, f"octos-tools-{os.getpid()}-{next(_counter)}")
        try:
            os.mkdir(path)
        except OSError:
            _base = None  # e.g. a read-only hierarchy: stop trying
            return None
        return cls(path)

    def join(self) -> None:  # pragma: no cover - runs in the child before exec
        """Move the calling process into this cgroup (best effort; never raises)."""
        try:
            fd = os.open(self._procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        except OSError:
            pass

    def pids(self) -> list[int]:
        """The processes in the cgroup now (empty when it is gone)."""
        try:
            with open(self._procs, "rb") as fh:
                return [int(x) for x in fh.read().split()]
        except OSError:
            return []

    def contains(self, pid: int) -> bool:
        """Whether ``pid`` is in this cgroup (the move in ``preexec_fn`` worked)."""
        try:
            with open(f"/proc/{pid}/cgroup", encoding="utf-8") as fh:
                own = next((ln[3:].strip() for ln in fh if ln.startswith("0::")), "")
        except OSError:
            return False
        return self.path.endswith(own) and own.endswith(os.path.basename(self.path))

    def populated(self) -> bool:
        """Some process is still in the cgroup."""
        try:
            with open(os.path.join(self.path, "cgroup.events"), encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("populated "):
                        return line.split()[1] != "0"
        except OSError:
            return bool(self.pids())
        return bool(self.pids())

    def kill_all(self) -> None:
        """SIGKILL every process in the cgroup (``cgroup.kill``, else freeze + SIGKILL +
        thaw). The processes may take a moment to leave: poll :meth:`populated`."""
        if not self._write("cgroup.kill", "1"):
            frozen = self._write("cgroup.freeze", "1")
            for _ in range(100):
                pids = self.pids()
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
            if frozen:
                self._write("cgroup.freeze", "0")

    def remove(self) -> bool:
        """Remove the cgroup folder; ``False`` while processes remain in it."""
        try:
            os.rmdir(self.path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True

    def _write(self, name: str, value: str) -> bool:
        try:
            with open(os.path.join(self.path, name), "w", encoding="ascii") as fh:
                fh.write(value)
        except OSError:
            return False
        return True
