"""The Landlock launcher (octos_tools.builtins.runtime._process_tree.reap_as_init) ends its
command's whole tree when the server that started it dies without cleaning up (SIGKILL),
as bubblewrap's ``--die-with-parent`` does: a real server process, a real session, a real
``kill -9``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from octos_tools.sandbox import engine_status

USABLE = {s.name for s in engine_status() if s.usable}

pytestmark = pytest.mark.skipif("landlock" not in USABLE, reason="Landlock cannot run here")

SERVER = textwrap.dedent(
    """
    import asyncio, sys
    from octos_tools.builtins.runtime import ExecCommandTool
    from octos_tools.config import ShellConfig
    from octos_tools.sandbox import SandboxSettings
    from octos_tools.workspace import Workspace

    async def main():
        tool = ExecCommandTool(
            Workspace(sys.argv[1]), ShellConfig(), sandbox=SandboxSettings(engine="landlock")
        )
        cmd = "setsid sleep 307 & echo $! > pid.txt; sleep 308"
        await tool.run(tool.Args(cmd=cmd, yield_time_ms=500), None)
        print("started", flush=True)
        await asyncio.sleep(120)

    asyncio.run(main())
    """
)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_session_dies_with_its_server_killed_hard(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == "started"
        pid = int((tmp_path / "pid.txt").read_text())
        assert _alive(pid)
        os.kill(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), "the session's setsid child outlived its killed server"
    finally:
        server.kill()
        server.wait()
