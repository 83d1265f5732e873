"""The Landlock engine's read split (octos_tools.sandbox._landlock), with real processes:
what a command can list and read, in the home folder and in ``/proc``."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import pytest

from octos_tools.sandbox import SandboxMode, SandboxSettings, engine_status
from octos_tools.sandbox._landlock import PROC, PROC_READS, READ, split_reads
from octos_tools.sandbox._probe import _processes_with_cmdline
from tests.helpers import run_sandboxed

pytestmark = pytest.mark.skipif(
    "landlock" not in {s.name for s in engine_status() if s.usable}, reason="no Landlock here"
)


def _run(argv: list[str], settings: SandboxSettings, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_sandboxed(argv, settings, cwd)


def test_a_symlink_to_an_ancestor_does_not_open_a_credential_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("SECRET")
    (home / "notes.txt").write_text("visible")
    (tmp_path / "alias").symlink_to(home)  # a rule set through it would cover ~/.aws
    ws = tmp_path / "ws"
    ws.mkdir()
    box = SandboxSettings(mode=SandboxMode.READ_ONLY, engine="landlock", home=str(home))
    for path in (home / ".aws" / "credentials", tmp_path / "alias" / ".aws" / "credentials"):
        done = _run(["cat", str(path)], box, ws)
        assert done.returncode != 0 and "SECRET" not in done.stdout
    assert _run(["cat", str(home / "notes.txt")], box, ws).stdout == "visible"
    (ws / "file").write_text("")
    listing = _run(["ls", str(ws)], box, ws)
    assert listing.returncode == 0 and "file" in listing.stdout


def test_a_credential_store_cannot_be_listed(tmp_path: Path) -> None:
    """A listing right on a folder holds for all beneath it, so neither ``~/.ssh`` nor any
    folder above it can be listed; what those folders hold stays readable by name."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_listed_key").write_text("SECRET")
    (home / "notes.txt").write_text("visible")
    (home / "project").mkdir()
    (home / "project" / "a.txt").write_text("")
    (home / "key").symlink_to(home / ".ssh" / "id_listed_key")  # a rule through it: the key
    ws = tmp_path / "ws"
    ws.mkdir()
    box = SandboxSettings(mode=SandboxMode.WORKSPACE_WRITE, engine="landlock", home=str(home))
    for folder in (home / ".ssh", home, tmp_path, Path("/")):
        done = _run(["ls", "-a", str(folder)], box, ws)
        assert done.returncode != 0 and "id_listed_key" not in done.stdout, folder
        assert "Permission denied" in done.stderr
    assert _run(["cat", str(home / "key")], box, ws).returncode != 0
    assert _run(["cat", str(home / "notes.txt")], box, ws).stdout == "visible"
    assert _run(["ls", str(home / "project")], box, ws).stdout == "a.txt\n"
    assert _run(["ls", "/usr"], box, ws).returncode == 0


def test_split_reads_grants_no_process_folder() -> None:
    grants = dict(split_reads([]))
    assert "/" not in grants and PROC not in grants  # no right beneath either
    assert {p for p in grants if p.startswith(PROC + "/")} == {f"{PROC}/{n}" for n in PROC_READS}
    assert not any(p.startswith(("/proc/self", "/proc/thread-self", "/proc/1")) for p in grants)
    assert grants["/usr"] == READ


def test_host_processes_are_out_of_reach_through_proc(tmp_path: Path) -> None:
    marker = f"{time.time_ns() % 10_000_000}.31"
    host = subprocess.Popen(["sleep", marker])
    try:
        box = SandboxSettings(mode=SandboxMode.WORKSPACE_WRITE, engine="landlock")
        for name in ("cmdline", "stat", "status", "environ", "comm", "maps"):
            done = _run(["cat", f"/proc/{host.pid}/{name}"], box, tmp_path)
            assert done.returncode != 0 and marker not in done.stdout, name
            assert "Permission denied" in done.stderr, name
        listing = _run(["ls", "/proc"], box, tmp_path)
        assert listing.returncode != 0 and str(host.pid) not in listing.stdout
        # unconfined, the same reads work: the refusals above are the sandbox's
        none = SandboxSettings(mode=SandboxMode.DANGER_FULL_ACCESS)
        assert marker in _run(["cat", f"/proc/{host.pid}/cmdline"], none, tmp_path).stdout
    finally:
        host.kill()
        host.wait()


def test_what_a_command_reads_in_proc(tmp_path: Path) -> None:
    """As docs/sandbox.md says: system-wide entries are readable; a process's own folder
    is not (no rule can name the folder of a process that does not exist yet); the links
    in it resolve to what they point to, which Landlock checks (process substitution,
    ``/dev/fd/N``, ``/proc/self/exe``)."""
    box = SandboxSettings(mode=SandboxMode.WORKSPACE_WRITE, engine="landlock")
    for path in (
        "/proc/cpuinfo",
        "/proc/meminfo",
        "/proc/stat",
        "/proc/loadavg",
        "/proc/uptime",
        "/proc/version",
        "/proc/sys/kernel/osrelease",
    ):
        done = _run(["cat", path], box, tmp_path)
        assert done.returncode == 0 and done.stdout, path
    for path in (
        "/proc/self/status",
        "/proc/self/maps",
        "/proc/self/cgroup",
        "/proc/mounts",
        "/proc/thread-self/status",
        "/proc/net/tcp",
    ):
        done = _run(["cat", path], box, tmp_path)
        assert done.returncode != 0 and "Permission denied" in done.stderr, path
    assert _run(["ls", "/proc/self/fd"], box, tmp_path).returncode != 0
    assert _run(["bash", "-c", "cat <(echo substituted)"], box, tmp_path).stdout == "substituted\n"
    assert _run(["sh", "-c", "echo piped | cat /dev/fd/0"], box, tmp_path).stdout == "piped\n"
    assert _run(["readlink", "/proc/self/exe"], box, tmp_path).stdout == "/usr/bin/readlink\n"
    assert _run(["head", "-c", "4", "/proc/self/exe"], box, tmp_path).stdout == "\x7fELF"
    code = "import os; print(os.cpu_count() > 0, len(os.sched_getaffinity(0)) > 0)"
    assert _run(["python3", "-c", code], box, tmp_path).stdout == "True True\n"
    ps = _run(["ps"], box, tmp_path)
    assert ps.returncode != 0  # ps lists /proc: not here


@pytest.mark.parametrize("how", ["setsid", "double fork", "session"])
def test_what_a_command_leaves_running_ends_with_it(tmp_path: Path, how: str) -> None:
    """No pid namespace and no cgroup (this host has cgroup v1): the command's launcher is
    a subreaper that kills what is left when the shell exits, like bubblewrap."""
    from octos_tools.builtins.runtime import ExecCommandTool, SessionManager
    from octos_tools.config import ShellConfig
    from octos_tools.workspace import Workspace

    marker = f"{time.time_ns() % 10_000_000}.25"
    starts = {
        "setsid": f"setsid sleep {marker} </dev/null >/dev/null 2>&1 & sleep 0.3; echo started",
        "double fork": f"( ( sleep {marker} </dev/null >/dev/null 2>&1 & ) & ); sleep 0.3; "
        "echo started",
        "session": f"setsid sleep {marker} </dev/null >/dev/null 2>&1 & echo started; sleep 30",
    }
    box = SandboxSettings(mode=SandboxMode.WORKSPACE_WRITE, engine="landlock")

    async def run() -> tuple[list[int], int | None]:
        sessions = SessionManager(4)
        tool = ExecCommandTool(Workspace(tmp_path), ShellConfig(), sessions, box)
        wait = 1000 if how == "session" else None
        result = await tool.run(tool.Args(cmd=starts[how], yield_time_ms=wait), None)
        assert "started" in result.output
        during = _processes_with_cmdline(f"sleep\0{marker}\0".encode())
        await sessions.aclose()  # a session: closed (the MCP session ended)
        return during, result.structured_metadata.get("exit_code")

    during, code = asyncio.run(run())
    if how == "session":
        assert len(during) == 1  # alive while its session runs
    else:
        assert code == 0 and during == []  # gone once the command's shell exited
    deadline = time.monotonic() + 5
    while _processes_with_cmdline(f"sleep\0{marker}\0".encode()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with_cmdline(f"sleep\0{marker}\0".encode()) == []


def test_the_launcher_passes_the_exit_status_on(tmp_path: Path) -> None:
    box = SandboxSettings(mode=SandboxMode.WORKSPACE_WRITE, engine="landlock")
    from octos_tools.builtins.runtime import ExecCommandTool
    from octos_tools.config import ShellConfig
    from octos_tools.workspace import Workspace

    tool = ExecCommandTool(Workspace(tmp_path), ShellConfig(), sandbox=box)
    for cmd, code in (("exit 3", 3), ("kill -9 $$", -9), ("echo ok", 0)):
        result = asyncio.run(tool.run(tool.Args(cmd=cmd), None))
        assert result.structured_metadata["exit_code"] == code, cmd


def test_a_workspace_that_holds_a_credential_store_does_not_open_it(tmp_path: Path) -> None:
    """A right on a writable root holds for all beneath it: a workspace that is the home
    folder is split around ``~/.ssh`` (as bubblewrap's mount hides it); what cannot be
    granted then is creating entries directly in the folders above it."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_x").write_text("SECRET")
    (home / "proj").mkdir()
    (home / "notes.txt").write_text("old")
    box = SandboxSettings(mode=SandboxMode.WORKSPACE_WRITE, engine="landlock", home=str(home))
    for argv in (["cat", ".ssh/id_x"], ["ls", "-a", ".ssh"], ["touch", ".ssh/authorized_keys"]):
        done = _run(argv, box, home)
        assert done.returncode != 0 and "Permission denied" in done.stderr, argv
    assert not (home / ".ssh" / "authorized_keys").exists()
    write = "echo new > proj/a.txt && echo new > notes.txt && mkdir proj/sub"
    assert _run(["sh", "-c", write], box, home).returncode == 0
    assert (home / "proj" / "a.txt").read_text() == (home / "notes.txt").read_text() == "new\n"
    assert _run(["touch", "created-at-the-top"], box, home).returncode != 0
