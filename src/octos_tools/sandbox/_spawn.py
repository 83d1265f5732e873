"""Turn a command into what to spawn for a sandbox: the engine chosen, the paths resolved,
the filter written; one :class:`Sandbox` per settings (its private temp folder lives as long
as the process)."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import trusted_programs
from ..errors import ErrorKind, ToolError
from . import (
    _bridge,
    _bubblewrap,
    _detect,
    _git_guard,
    _landlock,
    _own_code,
    _protected,
    _seccomp,
)
from ._settings import SandboxMode, SandboxSettings

__all__ = ["Sandbox", "SandboxSpawn", "ServerSpawn", "resolve_engine", "sandbox_for"]

#: Seconds a Landlock ruleset (the split of ``/`` around unreadable paths) is reused.
_RULESET_SECS = 5.0


@dataclass
class SandboxSpawn:
    """What to start for one sandboxed command.

    Attributes:
        argv: the program and its arguments (``bwrap ... -- sh -c CMD`` or the command).
        env: the complete environment.
        pass_fds: descriptors the child must inherit (the seccomp filter for ``bwrap``).
        preexec: code to run in the child before ``exec`` (Landlock; bubblewrap with
            ``allowed_hosts``: the pre-made network namespace of :mod:`._netns`), or ``None``.
        engine: ``bubblewrap``, ``landlock`` or ``none`` (danger-full-access).
        mode: the mode in force.
        network: the network is on for the command.
        guard: the git guard's view from before the command (workspace-write): call its
            ``check()`` after the command and at each poll of its session
            (:mod:`._git_guard`), or ``None``.
    """

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()
    preexec: Callable[[], None] | None = None
    engine: str = "none"
    mode: SandboxMode = SandboxMode.DANGER_FULL_ACCESS
    network: bool = True
    _close: list[int] = field(default_factory=list, repr=False)
    guard: _git_guard.GuardWatch | None = None

    def close(self) -> None:
        """Close the parent's copies of the descriptors (after the spawn)."""
        for fd in self._close:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._close.clear()


@dataclass
class ServerSpawn:
    """What to start for a process a library spawns (a mounted stdio MCP server).

    Attributes:
        argv: the command line.
        env: the complete environment.
        guard: the git guard's view from before the server started (``workspace-write``):
            call its ``check()`` after each call to the server and when it exits
            (:mod:`._git_guard`), or ``None``.
    """

    argv: list[str]
    env: dict[str, str]
    guard: _git_guard.GuardWatch | None = None


def resolve_engine(settings: SandboxSettings) -> str:
    """The engine that enforces ``settings`` here: ``bubblewrap``, ``landlock`` (``none`` for
    danger-full-access).

    Raises:
        ToolError: ``sandbox_unavailable`` naming the cause and the fix.
    """
    if not settings.confined:
        return "none"
    wanted = settings.engine
    bwrap = _detect.bubblewrap_status()
    if wanted in ("auto", "bubblewrap") and bwrap.usable:
        return "bubblewrap"
    landlock = _detect.landlock_status()
    if wanted in ("auto", "landlock") and landlock.usable:
        return "landlock"
    tried = [s for s in (bwrap, landlock) if wanted in ("auto", s.name)]
    cause = "; ".join(f"{s.name}: {s.detail}" for s in tried)
    fixes = "; or ".join(s.fix for s in tried if s.fix)
    raise ToolError(
        ErrorKind.SANDBOX_UNAVAILABLE,
        f"the {settings.mode} sandbox cannot be enforced here, so the command was not run "
        f"({cause}). Fix: {fixes or 'see octos-tools sandbox check'}; or, to run commands "
        'unconfined on purpose, [sandbox] mode = "danger-full-access" (--sandbox '
        "danger-full-access)",
        mode=str(settings.mode),
        engine=settings.engine,
        cause=cause,
    )


class Sandbox:
    """The runtime of one :class:`SandboxSettings`: its private temp folder (and home), the
    paths it protects and the Landlock ruleset, cached.

    Args:
        settings: the sandbox settings.
    """

    def __init__(self, settings: SandboxSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._tmp: str | None = None
        self._home: str | None = None
        self._ruleset: tuple[float, tuple[str, ...], _landlock.LandlockRuleset] | None = None

    # ------------------------------------------------------------------ folders

    def _private(self, kind: str) -> str:
        path = tempfile.mkdtemp(prefix=f"octos-sandbox-{kind}-")
        trusted_programs.distrust_folders([path])  # commands write it: no server program
        weakref.finalize(self, shutil.rmtree, path, True)
        return path

    @property
    def tmpdir(self) -> str:
        """The private temp folder (created on first use, removed with this object)."""
        with self._lock:
            if self._tmp is None:
                self._tmp = self._private("tmp")
            return self._tmp

    @property
    def home(self) -> str:
        """The private home folder (``private_home``)."""
        with self._lock:
            if self._home is None:
                self._home = self._private("home")
            return self._home

    # ------------------------------------------------------------------ paths

    def writable_roots(self, workspace: str | None) -> list[str]:
        """Absolute folders commands may write, the private temp folder excluded."""
        s = self.settings
        if s.mode is not SandboxMode.WORKSPACE_WRITE:
            return []
        roots = [os.path.realpath(workspace)] if workspace else []
        roots += [os.path.realpath(os.path.expanduser(r)) for r in s.writable_roots]
        found = [r for r in dict.fromkeys(roots) if os.path.isdir(r)]
        trusted_programs.distrust_folders(found)
        return found

    def unreadable(self) -> list[str]:
        """What commands may not read (credential stores, deny_read, the server's secrets)."""
        from ..state_dir import state_root

        secrets: list[str] = list(self.settings.secret_paths)
        with contextlib.suppress(OSError):
            secrets.append(str(state_root(create=False)))
        home = Path(self.settings.home) if self.settings.home else Path.home()
        found = _protected.unreadable_paths(home, self.settings.deny_read, secrets)
        out: list[str] = []
        for p in found:
            out.append(p)
            real = os.path.realpath(p)
            if real != p:
                out.append(real)
        return list(dict.fromkeys(out))

    # ------------------------------------------------------------------ wrap

    def wrap(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        workspace: str | None,
        visible: Sequence[str] = (),
        tty: str | None = None,
        guard: bool = True,
    ) -> SandboxSpawn:
        """What to spawn to run ``argv`` in ``cwd`` under this sandbox.

        Args:
            argv: the program and its arguments (``["/bin/sh", "-c", CMD]``).
            cwd: the absolute working folder.
            env: the complete environment for the command.
            workspace: the workspace root (absolute), or ``None``.
            visible: more folders to keep visible (read-only) under ``/tmp`` (bubblewrap).
            tty: the command's own pty slave, the one ``/dev/pts`` entry Landlock lets it
                open (bubblewrap gives it a private ``/dev/pts`` anyway).
            guard: take the git guard's view (``False`` in the Landlock launcher: the
                process that started it guards).

        Raises:
            ToolError: ``sandbox_unavailable`` when no engine can enforce the mode here.
        """
        s = self.settings
        writable = self.writable_roots(workspace)  # first: no server program from them
        engine = resolve_engine(s)
        env = dict(env)
        if engine == "none":
            return SandboxSpawn(list(argv), env)
        network, egress = s.network, s.egress
        pinned = [os.path.abspath(p) for p in s.read_only_paths]
        watch: _git_guard.GuardWatch | None = None
        found: list[str] = []
        if writable and guard:
            git_guard = _git_guard.guard_for(writable, [os.path.realpath(p) for p in pinned])
            watch = git_guard.watch()
            found = git_guard.mount_paths()
        gitdirs = [os.path.dirname(p) for p in found if os.path.basename(p) == "hooks"]
        code = _own_code.own_code_inside(writable)
        if code and engine == "landlock":
            raise ToolError(
                ErrorKind.SANDBOX_UNAVAILABLE,
                f"the server's own code ({code[0]}) lies inside a folder commands may write, "
                "and Landlock cannot keep a folder inside a writable root read-only: a "
                "command could change what the server runs next, outside the sandbox, so the "
                "command was not run. Fix: serve a workspace that does not contain the "
                "server's package or virtual environment (install it elsewhere), or use "
                'engine = "bubblewrap", which mounts them read-only',
                mode=str(s.mode),
                engine=engine,
                cause="own code in a writable root",
            )
        logs = [os.path.abspath(p) for p in s.append_only_paths]
        read_only = [*found, *(p for p in [*pinned, *logs] if os.path.lexists(p)), *code]
        unreadable = self.unreadable()
        if engine == "bubblewrap":
            bwrap = _detect.bubblewrap_status().detail  # the trusted bwrap resolve_engine ran
            fd = os.memfd_create("octos-seccomp", os.MFD_CLOEXEC)
            os.write(
                fd, _seccomp.filter_program(deny_all_sockets=not network, inet_stream_only=egress)
            )
            os.lseek(fd, 0, os.SEEK_SET)
            fds, close = [fd], [fd]
            sync_fd = None
            preexec = None
            unshare_net = False
            if egress:
                bridge = _bridge.for_bubblewrap(list(argv), env, s.allowed_hosts, bwrap)
                argv, preexec, unshare_net = bridge.argv, bridge.preexec, bridge.unshare_net
                sync_fd = os.dup(bridge.channel)  # bwrap holds it until the sandbox ends
                fds += [*bridge.pass_fds, sync_fd]
                close += [bridge.channel, sync_fd]
                if preexec is None:  # the Python bridge
                    visible = [*visible, os.path.dirname(_bridge.interpreter())]
            # the server's own Python environment stays visible (read-only) when it lies
            # under the replaced /tmp: `python` on the PATH the server was started with
            visible = [*visible, *_own_environment()]
            home_bind = None
            if s.private_home:
                home_bind = (self.home, self.home)
                env["HOME"] = self.home
            env["TMPDIR"] = "/tmp"
            args = _bubblewrap.bwrap_args(
                bwrap,
                network=network,
                tmpdir=self.tmpdir,
                writable=writable,
                gitdirs=gitdirs,
                read_only=read_only,
                unreadable=unreadable,
                seccomp_fd=fd,
                cwd=cwd,
                home_bind=home_bind,
                visible=[os.path.realpath(p) for p in (workspace, cwd, *visible) if p],
                unshare_net=unshare_net,
                sync_fd=sync_fd,
            )
            if watch is not None:  # what the command cannot write is not judged as its own
                mounted = _bubblewrap.read_only_mounts(writable, read_only)
                watch.mounted_read_only(os.path.realpath(p) for p in mounted)
            return SandboxSpawn(
                [*args, *argv],
                env,
                tuple(fds),
                preexec,
                engine,
                s.mode,
                network,
                _close=close,
                guard=watch,
            )
        # landlock
        writable_all = [*writable, self.tmpdir]
        if s.private_home:
            writable_all.append(self.home)
            env["HOME"] = self.home
        env["TMPDIR"] = self.tmpdir
        ports = (_bridge.for_landlock(env, s.allowed_hosts),) if egress else ()
        # /dev/pts is unreadable (the user's other terminals); the own pty is granted back
        hidden = [*unreadable, "/dev/pts"] if os.path.isdir("/dev/pts") else unreadable
        ruleset = self._landlock_ruleset(writable_all, hidden, network, ports, tty)
        prog = _seccomp.filter_program(deny_all_sockets=not network, inet_stream_only=egress)
        return SandboxSpawn(
            list(argv),
            env,
            (),
            _landlock.child_setup(ruleset.fd, prog),
            engine,
            s.mode,
            network,
            guard=watch,
        )

    def wrap_server(
        self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], workspace: str | None
    ) -> ServerSpawn:
        r"""What to start for a process started by someone else (the MCP SDK starts a
        stdio server: no inherited descriptor, no ``preexec_fn``): bubblewrap reads its
        filter from a file opened by ``sh``; Landlock is applied by the launcher
        :mod:`._launch`, which then ``exec``\ s the program. In ``workspace-write`` the
        result carries the git guard's view (:attr:`ServerSpawn.guard`).

        Raises:
            ToolError: ``sandbox_unavailable``.
        """
        import json
        import sys

        engine = resolve_engine(self.settings)
        if engine == "none":
            return ServerSpawn(list(argv), dict(env))
        if engine == "landlock":
            data = {
                k: getattr(self.settings, k)
                for k in (
                    "engine",
                    "network",
                    "writable_roots",
                    "deny_read",
                    "read_only_paths",
                    "append_only_paths",
                    "secret_paths",
                    "private_home",
                    "home",
                )
            }
            data["mode"] = self.settings.mode.value
            data["home"] = self.settings.home or str(Path.home())  # the server's, not the child's
            data["engine"] = "landlock"
            # the package's own folder on sys.path: the SDK gives the server a minimal
            # environment (no PYTHONPATH), and this very package must be the one imported
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            code = (
                f"import sys; sys.path.insert(0, {root!r}); "
                "from octos_tools.sandbox._launch import main; sys.exit(main(sys.argv[1:]))"
            )
            launcher = [sys.executable, "-c", code]
            watch = None
            writable = self.writable_roots(workspace)
            if writable:  # the launcher cannot make a path read-only: all is judged
                pinned = [os.path.realpath(p) for p in self.settings.read_only_paths]
                watch = _git_guard.guard_for(writable, pinned).watch()
            return ServerSpawn(
                [*launcher, json.dumps(data), workspace or "", "--", *argv], dict(env), watch
            )
        # what the server's command line names under /tmp stays visible (read-only): the
        # private temp folder replaces /tmp
        named = [a for a in argv[1:] if os.path.isabs(a) and os.path.exists(a)]
        extra = [a if os.path.isdir(a) else os.path.dirname(a) for a in (argv[0], *named)]
        extra += _environment_roots(argv[0])
        spawn = self.wrap(argv, cwd=cwd, env=env, workspace=workspace, visible=extra)
        spawn.close()
        net = "net" if self.settings.network else "nonet"
        filt = os.path.join(self._private_dir_for_filter(), f"seccomp-{net}.bpf")
        if not os.path.exists(filt):
            with open(filt, "wb") as fh:
                fh.write(_seccomp.filter_program(deny_all_sockets=not self.settings.network))
        out = list(spawn.argv)
        i = out.index("--seccomp")
        out[i + 1] = "9"
        return ServerSpawn(
            ["/bin/sh", "-c", 'exec 9<"$0"; exec "$@"', filt, *out], spawn.env, spawn.guard
        )

    def _private_dir_for_filter(self) -> str:
        with self._lock:
            if not hasattr(self, "_filter_dir"):
                self._filter_dir = self._private("filter")
            return self._filter_dir

    def _landlock_ruleset(
        self,
        writable: list[str],
        unreadable: list[str],
        network: bool,
        ports: tuple[int, ...] = (),
        tty: str | None = None,
    ) -> _landlock.LandlockRuleset:
        key = (*writable, "\0", *unreadable, "\0", *map(str, ports), "\0", tty or "")
        now = time.monotonic()
        with self._lock:
            cached = self._ruleset
            if cached is not None and cached[1] == key and now - cached[0] < _RULESET_SECS:
                return cached[2]
            abi = _landlock.abi_version()
            all_rights = _landlock.handled_fs(abi)
            grants = _landlock.split_reads(unreadable)
            for root in writable:  # a workspace that holds ~/.ssh: split around it
                grants += _landlock.split_grants(root, unreadable, all_rights)
            dev_rw = _landlock.READ_FILE | _landlock.WRITE_FILE | _landlock.IOCTL_DEV
            # the terminal: /dev/tty (the controlling terminal) and the command's own pty
            # slave by path; not all of /dev/pts, which holds the user's other terminals
            # (writing one injects text, reading it steals keystrokes)
            grants += [
                ("/dev/null", dev_rw | _landlock.TRUNCATE),
                ("/dev/tty", dev_rw),
                *([(tty, dev_rw)] if tty and tty.startswith("/dev/pts/") else []),
                ("/dev/ptmx", dev_rw),
                ("/dev", _landlock.IOCTL_DEV),
            ]
            ruleset = _landlock.LandlockRuleset(abi, grants, network=network, connect_ports=ports)
            if cached is not None:
                old = cached[2]
                weakref.finalize(self, old.close)  # a child may still be forking with it
            self._ruleset = (now, key, ruleset)
            weakref.finalize(self, ruleset.close)
            return ruleset


_sandboxes: dict[SandboxSettings, Sandbox] = {}
_sandboxes_lock = threading.Lock()


def sandbox_for(settings: SandboxSettings) -> Sandbox:
    """The process's :class:`Sandbox` for ``settings`` (one per distinct settings)."""
    with _sandboxes_lock:
        box = _sandboxes.get(settings)
        if box is None:
            box = _sandboxes[settings] = Sandbox(settings)
        return box


@functools.cache
def _own_environment() -> tuple[str, ...]:
    """The server's own virtual environment and interpreter folder (:func:`_environment_roots`
    of ``sys.executable``), computed once."""
    return tuple(_environment_roots(sys.executable))


def _environment_roots(program: str) -> list[str]:
    """Folders a server's program needs besides its own: the virtual environment it
    belongs to (``pyvenv.cfg`` two levels up: its ``lib/`` and the config that makes it a
    venv) and the folder of the file it links to. Kept visible when they are under the
    replaced ``/tmp`` (a project cloned or a venv made there)."""
    if not os.path.isabs(program):
        found = trusted_programs.which(program)
        if found is None:
            return []
        program = found
    roots = []
    venv = os.path.dirname(os.path.dirname(os.path.abspath(program)))
    if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        roots.append(venv)
    roots.append(os.path.dirname(os.path.realpath(program)))
    return roots
