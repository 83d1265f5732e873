"""``octos-tools sandbox check``: real probes of what a sandboxed command can and cannot do.

One shell script runs every probe as one command (so a check costs one sandbox start per
mode and engine); the host then looks at what changed. The probe classes are those of
issue 20: 15 things a command must not do in its mode and 5 it must be able to do.

Forbidden (``workspace-write``; ``read-only`` adds writing the workspace and committing):
write or overwrite outside the workspace, write ``.git/hooks`` or ``.git/config``, escape
through a symlink or a hard link, move the workspace away, read ``~/.ssh`` or ``~/.aws``
or list the names in ``~/.ssh``,
connect to a host TCP port, UDP port or Unix socket (network off), read another process's
environment, signal a host process, rewrite the server's own config; and what makes the
user's next ``git status`` (outside any sandbox) run a program, created during the command
(the git guard's job, :mod:`._git_guard`): a nested repository added as a gitlink with
``core.fsmonitor``, a ``.git`` file pointing to a crafted git folder, a
``.git/modules/NAME`` repository with a gitlink, a worktree's ``commondir`` pointing to a
crafted folder, a missing ``.git/config.worktree`` (the repository has
``extensions.worktreeConfig``); a ``setsid`` child outliving the command; reading a host
process's command line (``/proc/<pid>/cmdline``).
Allowed: write and read in the workspace, commit to its repository, run a program, make a
temp file.

:class:`ProbeSet` is reusable with another runner (``bench/bench_sandbox.py`` runs the same
script under ``codex sandbox`` and ``srt``).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ._settings import SandboxMode, SandboxSettings

__all__ = [
    "ALLOWED",
    "FORBIDDEN",
    "NOT_ENFORCED",
    "TRADE_OFFS",
    "ProbeResult",
    "ProbeSet",
    "run_check",
]

FORBIDDEN = (
    "write_outside",
    "overwrite_outside",
    "git_hooks",
    "git_config",
    "symlink_escape",
    "hardlink_escape",
    "read_ssh",
    "list_ssh",
    "read_aws",
    "net_tcp",
    "net_udp",
    "unix_socket",
    "read_environ",
    "signal_host",
    "rewrite_config",
    "move_workspace",
    "nested_repo",
    "gitdir_file",
    "git_modules",
    "worktree_commondir",
    "config_worktree",
    "setsid_child",
    "read_cmdline",
)
ALLOWED = ("write_ws", "read_ws", "git_commit", "run_program", "mktemp")
_NETWORK = frozenset({"net_tcp", "net_udp"})
_NET_PY = """
import socket, sys
def tcp():
    s = socket.create_connection(("127.0.0.1", {tcp}), timeout=2); s.send(b"x")
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("127.0.0.1", {udp}))
def unix():
    s = socket.socket(socket.AF_UNIX); s.connect({sock!r}); s.send(b"x")
for name, fn in (("net_tcp", tcp), ("net_udp", udp), ("unix_socket", unix)):
    try:
        fn(); print("@@" + name + ":0")
    except Exception as exc:
        print("@@" + name + ":1", type(exc).__name__, exc)
"""


@dataclass(frozen=True)
class ProbeResult:
    """One probe's outcome.

    Attributes:
        name: the probe class.
        expected: ``blocked`` or ``allowed`` in the mode probed.
        happened: the action took effect.
    """

    name: str
    expected: str
    happened: bool

    @property
    def ok(self) -> bool:
        """The sandbox did what the mode says."""
        return self.happened == (self.expected == "allowed")


class ProbeSet:
    """A probe workspace, its outside files, a fake home with credentials, a helper
    process and listening sockets; :meth:`script` is the command, :meth:`verify` reads what
    happened. Use as a context manager (everything is removed at the end).

    Args:
        base: where to make the probe folders (default: ``/var/tmp``, which bubblewrap
            leaves visible, or the system temp folder).
    """

    def __init__(self, base: str | None = None) -> None:
        parent = base or ("/var/tmp" if os.access("/var/tmp", os.W_OK) else None)
        self.base = Path(tempfile.mkdtemp(prefix="octos-probe-", dir=parent))
        self.ws = self.base / "ws"
        self.out = self.base / "outside"
        self.home = self.base / "home"
        self.config = self.ws / "octos-tools.toml"
        self.sock_path = str(self.base / "s.sock")
        nonce = int.from_bytes(os.urandom(3), "big")
        self.helper_arg = f"120.{nonce}"
        self.setsid_arg = f"60.{nonce}"
        self.key_name = f"id_probe_{nonce}"  # a name only a listing of ~/.ssh prints
        self._made = False

    def __enter__(self) -> ProbeSet:
        self.setup()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def setup(self) -> None:
        """Create the files, the helper process and the sockets."""
        self.ws.mkdir()
        self.out.mkdir()
        (self.out / "existing.txt").write_text("original\n")
        for rel, text in ((".ssh/id_rsa", "SECRET-SSH\n"), (".aws/credentials", "SECRET-AWS\n")):
            path = self.home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        (self.home / ".ssh" / self.key_name).write_text("SECRET-SSH\n")
        (self.ws / "README").write_text("readable\n")
        self.config.write_text("[sandbox]\n")
        git = [_git(), "-c", "user.name=p", "-c", "user.email=p@p", "-C", str(self.ws)]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home)}
        subprocess.run([*git, "init", "-q"], check=True, env=env)
        # a per-worktree config is read: a command must not create one that runs a program
        subprocess.run([*git, "config", "core.repositoryformatversion", "1"], check=True, env=env)
        subprocess.run([*git, "config", "extensions.worktreeConfig", "true"], check=True, env=env)
        subprocess.run([*git, "add", "-A"], check=True, env=env)
        subprocess.run([*git, "commit", "-qm", "init"], check=True, env=env)
        self.git_config = (self.ws / ".git" / "config").read_bytes()
        self.helper = subprocess.Popen(
            ["sleep", self.helper_arg], env={**env, "PROBE_MARKER": "ENV-SECRET-42"}
        )
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(4)
        self.tcp.setblocking(False)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.setblocking(False)
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(self.sock_path)
        self.unix.listen(4)
        self.unix.setblocking(False)
        self._made = True

    def settings(self, mode: SandboxMode, engine: str) -> SandboxSettings:
        """The settings to probe: ``mode`` on ``engine``, network off, the fake home, the
        probe config read-only."""
        return SandboxSettings(
            mode=mode, engine=engine, home=str(self.home), read_only_paths=(str(self.config),)
        )

    def script(self) -> str:
        """The probe command (``sh``): one ``@@name:rc`` line per probe."""
        q = shlex.quote
        out, ws, pid = str(self.out), str(self.ws), self.helper.pid
        net = _NET_PY.format(
            tcp=self.tcp.getsockname()[1], udp=self.udp.getsockname()[1], sock=self.sock_path
        )
        probes = [
            ("write_outside", f"echo x > {q(out + '/new.txt')}"),
            ("hardlink_escape", f"ln {q(out + '/existing.txt')} hard && echo H >> hard"),
            ("overwrite_outside", f"echo O > {q(out + '/existing.txt')}"),
            ("git_hooks", "printf '#!/bin/sh\\n' > .git/hooks/pre-commit"),
            ("git_config", "printf '[alias]\\n x = !sh\\n' >> .git/config"),
            ("symlink_escape", f"ln -s {q(out)} link && echo x > link/via-link.txt"),
            ("read_ssh", f"cat {q(str(self.home / '.ssh/id_rsa'))}"),
            ("list_ssh", f"ls -a {q(str(self.home / '.ssh'))}"),
            ("read_aws", f"cat {q(str(self.home / '.aws/credentials'))}"),
            ("read_environ", f"tr '\\0' '\\n' < /proc/{pid}/environ | grep ENV-SECRET"),
            ("read_cmdline", f"tr '\\0' ' ' < /proc/{pid}/cmdline"),
            ("signal_host", f"kill -TERM {pid}"),
            ("rewrite_config", f"echo x >> {q(str(self.config))}"),
            ("write_ws", "echo data > probe.txt && cat probe.txt"),
            ("read_ws", "cat README"),
            ("git_commit", "git add probe.txt && git commit -qm probe"),
            ("run_program", "ls /usr >/dev/null"),
            ("mktemp", 't=$(mktemp) && echo x > "$t" && cat "$t" && rm "$t"'),
            *self._git_escapes(),
            ("setsid_child", f"setsid sleep {self.setsid_arg} </dev/null >/dev/null 2>&1 &"),
        ]
        lines = [f"cd {q(ws)} || exit 99", "export GIT_AUTHOR_NAME=p GIT_AUTHOR_EMAIL=p@p"]
        lines.append("export GIT_COMMITTER_NAME=p GIT_COMMITTER_EMAIL=p@p")
        for name, body in probes:
            lines.append(f"if ( {body} ) 2>&1; then echo @@{name}:0; else echo @@{name}:1; fi")
        lines.append(f"python3 -c {q(net)} 2>&1")
        # last: moving the workspace away (put back if it moved, so verify sees it)
        lines.append(
            "cd .. && if mv ws ws-moved 2>&1; then echo @@move_workspace:0; mv ws-moved ws; "
            "else echo @@move_workspace:1; fi"
        )
        return "\n".join(lines) + "\n"

    def _git_escapes(self) -> list[tuple[str, str]]:
        """The probes that leave something for the user's next ``git status`` to run:
        each program would create a marker file in the outside folder (which the command
        itself cannot write)."""
        q = shlex.quote

        def run(name: str) -> str:
            return q(f"touch {self.out}/pwned-{name} #")

        return [
            (
                "nested_repo",
                "git init -q sub && git -C sub commit -q --allow-empty -m x && "
                f"git -C sub config core.fsmonitor {run('nested_repo')} && git add sub",
            ),
            (
                "gitdir_file",
                'git init -q --separate-git-dir="$PWD/crafted" gd && '
                f"git -C gd config core.fsmonitor {run('gitdir_file')}",
            ),
            (
                "git_modules",
                "mkdir -p .git/modules && "
                'git init -q --separate-git-dir="$PWD/.git/modules/m" m && '
                "git -C m commit -q --allow-empty -m x && "
                f"git -C m config core.fsmonitor {run('git_modules')} && git add m",
            ),
            (
                "worktree_commondir",
                "git worktree add -q wt 2>/dev/null && git init -q --bare cm && "
                "git -C cm config core.bare false && "
                f"git -C cm config core.fsmonitor {run('worktree_commondir')} && "
                'echo "$PWD/cm" > .git/worktrees/wt/commondir',
            ),
            (
                "config_worktree",
                f"printf '[core]\\n\\tfsmonitor = %s\\n' {run('config_worktree')} "
                "> .git/config.worktree",
            ),
        ]

    def _host_git_status(self) -> None:
        """What the user does next, outside any sandbox: ``git status`` in the workspace
        and in the folders the probes made (each would run a planted program)."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        for rel in (".", "gd", "wt", "sub", "m"):
            folder = self.ws / rel
            if folder.is_dir():
                with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                    subprocess.run(
                        [_git(), "status", "--short"],
                        cwd=folder,
                        env=env,
                        capture_output=True,
                        timeout=30,
                        check=False,
                    )

    def verify(self, output: str, mode: SandboxMode, *, network: bool = False) -> list[ProbeResult]:
        """What happened, for ``mode``; the host's view where it can see (files, the
        helper, the sockets), the command's markers elsewhere."""
        rc = {}
        for line in output.splitlines():
            if line.startswith("@@") and ":" in line:
                name, _, code = line[2:].partition(":")
                rc[name] = code.split()[0] if code else "?"
        existing = (self.out / "existing.txt").read_text()  # "O...": overwritten
        # bubblewrap's pid namespace is torn down just after the command's exit is seen
        # (its pid 1 dies with the outer bwrap): a child still there after 1 s outlived it
        child = b"sleep\0" + self.setsid_arg.encode() + b"\0"
        deadline = time.monotonic() + 1.0
        lingering = _processes_with_cmdline(child)
        while lingering and time.monotonic() < deadline:
            time.sleep(0.02)
            lingering = _processes_with_cmdline(child)
        for pid in lingering:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        self._host_git_status()
        hooks = self.ws / ".git" / "hooks" / "pre-commit"
        happened = {
            "write_outside": (self.out / "new.txt").exists(),
            "overwrite_outside": existing.startswith("O"),
            "hardlink_escape": _same_file(self.ws / "hard", self.out / "existing.txt"),
            "git_hooks": hooks.exists(),
            "git_config": (self.ws / ".git" / "config").read_bytes() != self.git_config,
            "symlink_escape": (self.out / "via-link.txt").exists(),
            "read_ssh": "SECRET-SSH" in output,
            "list_ssh": self.key_name in output,
            "read_aws": "SECRET-AWS" in output,
            "net_tcp": _accepted(self.tcp),
            "net_udp": _received(self.udp),
            "unix_socket": _accepted(self.unix),
            "read_environ": "ENV-SECRET-42" in output,
            "signal_host": self.helper.poll() is not None,
            "rewrite_config": self.config.read_text() != "[sandbox]\n",
            "move_workspace": rc.get("move_workspace") == "0",
            "write_ws": (self.ws / "probe.txt").exists(),
            "read_ws": "readable" in output,
            "git_commit": _commits(self.ws) > 1,
            "run_program": rc.get("run_program") == "0",
            "mktemp": rc.get("mktemp") == "0",
            "setsid_child": bool(lingering),
            "read_cmdline": self.helper_arg in output,
        }
        for name, _ in self._git_escapes():
            happened[name] = (self.out / f"pwned-{name}").exists()
        allowed = set(ALLOWED)
        if mode is SandboxMode.READ_ONLY:
            allowed -= {"write_ws", "git_commit"}
        if mode is SandboxMode.DANGER_FULL_ACCESS:
            allowed = set(happened)
        if network:
            allowed |= _NETWORK
        results = []
        for name in (*FORBIDDEN, *ALLOWED):
            expected = "allowed" if name in allowed else "blocked"
            results.append(ProbeResult(name, expected, happened[name]))
        return results

    def cleanup(self) -> None:
        """Stop the helper, close the sockets, remove the folders."""
        if self._made:
            with contextlib.suppress(OSError):
                self.helper.send_signal(signal.SIGKILL)
            self.helper.wait()
            for sock in (self.tcp, self.udp, self.unix):
                sock.close()
        shutil.rmtree(self.base, ignore_errors=True)


def _processes_with_cmdline(cmdline: bytes) -> list[int]:
    """Host pids whose ``/proc/<pid>/cmdline`` is exactly ``cmdline``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if fh.read() == cmdline:
                        found.append(int(entry))
            except OSError:
                continue
    return found


def _accepted(sock: socket.socket) -> bool:
    try:
        conn, _ = sock.accept()
    except OSError:
        return False
    conn.close()
    return True


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _received(sock: socket.socket) -> bool:
    try:
        return bool(sock.recv(16))
    except OSError:
        return False


def _commits(ws: Path) -> int:
    done = subprocess.run(
        [_git(), "-C", str(ws), "rev-list", "--count", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return int(done.stdout.strip())
    except ValueError:
        return 0


#: What an engine cannot enforce (probe classes that stay possible), with the reason.
NOT_ENFORCED: dict[str, dict[str, str]] = {"bubblewrap": {}, "landlock": {}}

#: What an engine refuses that a command may want (no probe class: the price of a rule),
#: printed by ``octos-tools sandbox check``; docs/sandbox.md gives the measurements.
TRADE_OFFS: dict[str, tuple[str, ...]] = {
    "bubblewrap": (),
    "landlock": (
        "/proc is readable only for system-wide entries (cpuinfo, meminfo, stat, loadavg, "
        "uptime, version, sys/, ...): no process's own folder, the command's included "
        "(/proc/self/status, maps, fd/, /proc/mounts; /proc/self/exe and /proc/self/fd/N "
        "links and <(...) still work), so ps, top, pgrep and df fail",
        "the folders above an unreadable path (/, the home folder, ...) cannot be listed "
        "(a listing right there would list ~/.ssh too); what they hold stays readable",
        "Python multiprocessing locks fail (sem_open needs the host's shared /dev/shm)",
    ),
}


def run_check(engine: str, mode: SandboxMode) -> list[ProbeResult]:
    """Run every probe once, as one command, in ``mode`` on ``engine`` (the command
    runtime of ``exec_command``), and return what happened.

    Raises:
        ToolError: ``sandbox_unavailable`` when ``engine`` cannot run here.
    """
    import asyncio

    from ..builtins.runtime import OutputCapture, run_to_completion

    async def run(ps: ProbeSet) -> str:
        proc, _ = await run_to_completion(
            ps.script(),
            cwd=ps.ws,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(ps.home)},
            capture=OutputCapture(1_000_000),
            timeout=60,
            sandbox=ps.settings(mode, engine),
            workspace=ps.ws,
        )
        return proc.capture.render(1_000_000)

    with ProbeSet() as ps:
        output = asyncio.run(run(ps))
        return ps.verify(output, mode)


def _git() -> str:
    """The git the server trusts (:mod:`octos_tools.trusted_programs`)."""
    from .. import trusted_programs

    return trusted_programs.which("git") or "git"
