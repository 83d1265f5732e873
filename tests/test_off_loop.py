"""Plugin tool calls run off the main event loop (``octos_tools._off_loop``): a plugin tool
that blocks its loop stalls no other client of a real ``serve`` (stdio and HTTP), and its
call answers the typed ``timeout`` on time.

The plugin is built by the test (a package and its ``.dist-info`` on ``PYTHONPATH``) and
blocks with ``time.sleep`` inside ``async def``, the mistake the main loop cannot survive.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from mcp import Client, StdioServerParameters
from octos_tools.config import Config
from octos_tools.context import ToolContext
from octos_tools.profile import build_registry
from octos_tools.workspace import Workspace
from tests.mcp.http_serve import start_http, transport

BLOCKING_PLUGIN = '''
import asyncio
import threading
import time

from octos_tools import Tool, ToolContext, ToolResult, tool


@tool(timeout=1)
async def stall(seconds: float) -> str:
    """Block the event loop.

    Args:
        seconds: how long.
    """
    time.sleep(seconds)
    return "woke up"


@tool(timeout=1)
def stall_sync(seconds: float) -> str:
    """Block a thread.

    Args:
        seconds: how long.
    """
    time.sleep(seconds)
    return "woke up"


@tool
async def quick(ctx: ToolContext) -> str:
    """Answer at once, after reporting progress through the main loop."""
    await ctx.report_progress(1, 1, "done")
    await asyncio.sleep(0)
    return "quick"


class Where(Tool):
    """A cwd-bound plugin tool: which thread runs it, on which workspace."""

    name = "where"
    description = "Name the thread and the workspace."
    cwd_bound = True

    def __init__(self, workspace):
        self.workspace = workspace

    async def execute(self, args):
        main = threading.current_thread() is threading.main_thread()
        return ToolResult.ok(f"{'main' if main else 'worker'} {self.workspace.root}")


def register(registry, workspace, config):
    registry.register(stall)
    registry.register(stall_sync)
    registry.register(quick)
    registry.register(Where(workspace))
'''


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    pkg = site / "octos_blocking_plugin"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(BLOCKING_PLUGIN))
    info = site / "octos_blocking-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: octos_blocking\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[octos_tools.tools]\nblocking = octos_blocking_plugin:register\n"
    )
    (info / "RECORD").write_text("")
    monkeypatch.syspath_prepend(str(site))
    return site


def _env(site: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "octos.json"
    path.write_text(json.dumps({"plugins": ["blocking"], "serve": {"defer": False}}))
    (tmp_path / "hello.txt").write_text("hello\n")
    return path


def _text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def _stall_and_probe(stalled: Client, other: Client, tool: str) -> None:
    """``stalled`` calls the blocking ``tool`` (5 s, timeout 1 s); meanwhile ``other`` reads a
    file: it answers within a second, and the stall answers ``timeout`` in about 1 s."""
    answers: dict[str, tuple[float, types.CallToolResult]] = {}
    start = time.monotonic()

    async def stall() -> None:
        result = await stalled.call_tool(tool, {"seconds": 5})
        answers["stall"] = (time.monotonic() - start, result)

    async def probe() -> None:
        await anyio.sleep(0.3)  # the stall is running by now
        began = time.monotonic()
        result = await other.call_tool("read_file", {"path": "hello.txt"})
        answers["probe"] = (time.monotonic() - began, result)

    async with anyio.create_task_group() as tg:
        tg.start_soon(stall)
        tg.start_soon(probe)
    probe_secs, probe = answers["probe"]
    assert not probe.is_error and "hello" in _text(probe)
    assert probe_secs < 1.0, f"another call waited {probe_secs:.2f} s behind the plugin"
    stall_secs, stalled_result = answers["stall"]
    assert stalled_result.is_error and _text(stalled_result).startswith("Error [timeout]")
    assert stall_secs < 3.0, f"the timeout of 1 s answered after {stall_secs:.2f} s"


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["stall", "stall_sync"])
async def test_a_blocking_plugin_stalls_nobody_over_stdio(
    tmp_path: Path, site: Path, tool: str
) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "octos_tools", "serve", "-w", str(tmp_path), "-c", str(_config(tmp_path))],
        env=_env(site),
    )
    async with Client(params) as client:
        await _stall_and_probe(client, client, tool)
        quick = await client.call_tool("quick", {})
        assert not quick.is_error and _text(quick) == "quick"


@pytest.mark.anyio
async def test_a_blocking_plugin_stalls_no_other_http_client(tmp_path: Path, site: Path) -> None:
    argv = [sys.executable, "-m", "octos_tools", "serve", "-t", "http", "-p", "0"]
    argv += ["-w", str(tmp_path), "-c", str(_config(tmp_path))]
    serve = start_http(argv, env=_env(site))
    try:
        async with (
            Client(transport(serve.url, serve.token)) as one,
            Client(transport(serve.url, serve.token)) as two,
        ):
            await _stall_and_probe(one, two, "stall")
    finally:
        serve.proc.terminate()
        serve.proc.wait(30)


@pytest.mark.anyio
async def test_plugin_calls_reach_the_main_loop_for_progress(tmp_path: Path, site: Path) -> None:
    registry = build_registry(Config(plugins=["blocking"]), tmp_path)
    seen: list[tuple[float, float | None, str | None]] = []
    loop_thread = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        import threading

        loop_thread.append(threading.current_thread())
        seen.append((done, total, message))

    import threading

    async with registry:
        result = await registry.execute("quick", {}, ToolContext(progress=progress))
    assert result.success and result.output == "quick"
    assert seen == [(1, 1, "done")]
    assert loop_thread == [threading.current_thread()]  # called back on the main loop


@pytest.mark.anyio
async def test_a_rebound_plugin_tool_still_runs_off_the_loop(tmp_path: Path, site: Path) -> None:
    """``rebind_cwd`` rebuilds a cwd-bound plugin tool for the new workspace: the copy runs
    in a worker thread as the original does, and on the new workspace."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    registry = build_registry(Config(plugins=["blocking"]), first)
    rebound = registry.rebind_cwd(Workspace(second))
    assert rebound.get("where") is not registry.get("where")
    async with registry, rebound:
        before = await registry.execute("where", {})
        after = await rebound.execute("where", {})
    assert before.output == f"worker {first.resolve()}"
    assert after.output == f"worker {second.resolve()}"


@pytest.mark.anyio
async def test_sigterm_does_not_wait_for_a_timed_out_plugin_thread(
    tmp_path: Path, site: Path
) -> None:
    """A plugin call answered ``timeout`` while its thread still blocks (60 s here): SIGTERM
    ends ``serve --transport http`` in seconds, not when the thread returns (the
    interpreter joins worker threads at exit), and the answer says the code may run on."""
    argv = [sys.executable, "-m", "octos_tools", "serve", "-t", "http", "-p", "0"]
    argv += ["-w", str(tmp_path), "-c", str(_config(tmp_path))]
    serve = start_http(argv, env=_env(site))
    try:
        async with Client(transport(serve.url, serve.token)) as client:
            result = await client.call_tool("stall_sync", {"seconds": 60})
        assert result.is_error and "may run on in its thread" in _text(result)
        began = time.monotonic()
        serve.proc.terminate()
        code = serve.proc.wait(30)
        assert time.monotonic() - began < 20
        assert code == 0
    finally:
        if serve.proc.poll() is None:
            serve.proc.kill()
            serve.proc.wait(10)


def test_call_does_not_wait_for_a_timed_out_plugin_thread(tmp_path: Path, site: Path) -> None:
    """``octos-tools call`` of a plugin tool that times out while its thread blocks (60 s)
    prints the timeout and exits in seconds, with the exit code of any failed call (0: the
    failure is in the output)."""
    argv = [sys.executable, "-m", "octos_tools", "call", "stall_sync", '{"seconds": 60}']
    argv += ["-w", str(tmp_path), "-c", str(_config(tmp_path))]
    began = time.monotonic()
    done = subprocess.run(argv, env=_env(site), capture_output=True, text=True, timeout=40)
    assert time.monotonic() - began < 25
    assert "may run on in its thread" in done.stdout + done.stderr
    assert "timeout" in done.stdout + done.stderr
    assert done.returncode == 0, done.stderr
