"""The Landlock engine's read split (octos_tools.sandbox._landlock), with real processes."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import pytest

from octos_tools.sandbox import SandboxMode, SandboxSettings, engine_status, wrap_command
from octos_tools.sandbox._probe import _processes_with_cmdline

pytestmark = pytest.mark.skipif(
    "landlock" not in {s.name for s in engine_status() if s.usable}, reason="no Landlock here"
)


def _run(argv: list[str], settings: SandboxSettings, cwd: Path) -> subprocess.CompletedProcess[str]:
    spawn = wrap_command(argv, cwd, {"PATH": "/usr/bin:/bin"}, settings, cwd)
    try:
        return subprocess.run(
            spawn.argv,
            cwd=cwd,
            env=spawn.env,
            preexec_fn=spawn.preexec,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    finally:
        spawn.close()


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
    listing = _run(["ls", str(tmp_path)], box, ws)
    assert listing.returncode == 0 and "ws" in listing.stdout


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
