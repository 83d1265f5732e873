"""Benchmark: what the git guard adds to a call of a mounted stdio MCP server in
``workspace-write``, and what its background check costs (issue 20).

1. **Per call**: one small SDK server (an ``echo`` tool) mounted twice in one registry,
   both ``sandbox = "workspace-write"`` on the same engine, in a workspace of ``--files``
   files; the guard is switched off for one of them (its view dropped after the start), so
   the two differ by the guard's check after each call and nothing else. Calls alternate
   (ABAB...), so machine load hits both alike; median ms per call, difference and ratio.
   The check a guarded call adds is also timed alone (between calls, same rounds): the
   A/B difference is within the noise of a call on a loaded machine, this is not.
2. **Background**: the median ms of one tick (:meth:`GuardWatch.tick`: a check that finds
   nothing) on the same workspace, in this process, and the share of one core that costs
   at one tick per :data:`~octos_tools.sandbox._guard_ticker.TICK_SECS`.

Run::

    .venv/bin/python bench/bench_mountguard.py [--calls 200] [--files 10000]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio

from octos_tools.config import Config
from octos_tools.mcp.client import mount_mcp_servers
from octos_tools.profile import build_registry
from octos_tools.sandbox import _spawn, engine_status
from octos_tools.sandbox._git_guard import GitGuard
from octos_tools.sandbox._guard_ticker import TICK_SECS, ticker

SERVER = textwrap.dedent(
    '''
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("echo")

    @server.tool()
    def echo(text: str) -> str:
        """Answer with the text."""
        return text

    server.run()
    '''
)


def _fill(ws: Path, files: int) -> None:
    """``files`` files, 20 per folder, in a git repository with one nested repository (as
    bench_sandbox.py)."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    for i in range(files):
        folder = ws / f"d{i // 400}" / f"e{i // 20 % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text("x\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True, env=env)
    subprocess.run(["git", "init", "-q", str(ws / "d0" / "nested")], check=True, env=env)


async def _per_call(ws: Path, script: Path, engine: str, calls: int) -> dict[str, float]:
    real_wrap = _spawn.Sandbox.wrap_server

    def forced(self: Any, *args: Any, **kw: Any) -> Any:
        box = _spawn.sandbox_for(dataclasses.replace(self.settings, engine=engine))
        return real_wrap(box, *args, **kw)

    _spawn.Sandbox.wrap_server = forced  # type: ignore[method-assign]
    entry = {
        "command": sys.executable,
        "args": [str(script)],
        "sandbox": "workspace-write",
        "defer": False,
    }
    config = Config.from_mapping({"mcp_servers": {"guarded": entry, "unguarded": entry}})
    registry = build_registry(config, ws, builtins=False)
    times: dict[str, list[float]] = {"guarded": [], "unguarded": [], "check": []}
    try:
        async with mount_mcp_servers(registry, config) as mounts:
            assert mounts.failures == {}, mounts.failures
            mounts.connections["unguarded"]._guard = None  # the same server, no check
            servers = ("guarded", "unguarded")
            for name in servers:  # warm both
                await registry.execute(f"{name}__echo", {"text": "x"})
            for _ in range(calls):
                for name in servers:
                    t0 = time.perf_counter()
                    result = await registry.execute(f"{name}__echo", {"text": "x"})
                    times[name].append((time.perf_counter() - t0) * 1000)
                    assert result.output == "x", result.output
                t0 = time.perf_counter()  # the check a guarded call adds, timed alone
                assert mounts.connections["guarded"].guard_notes() == []
                times["check"].append((time.perf_counter() - t0) * 1000)
    finally:
        _spawn.Sandbox.wrap_server = real_wrap  # type: ignore[method-assign]
    return {name: statistics.median(v) for name, v in times.items()}


def _tick_ms(ws: Path, runs: int) -> float:
    guard = GitGuard([os.path.realpath(ws)])
    watch = guard.watch()
    watch.check()  # the first walk of a process lists every folder
    ms = []
    for _ in range(runs):
        t0 = time.perf_counter()
        assert watch.tick() == []
        ms.append((time.perf_counter() - t0) * 1000)
    return statistics.median(ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    usable = [s.name for s in engine_status() if s.usable]
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        _fill(ws, args.files)
        script = Path(tmp) / "echo_server.py"
        script.write_text(SERVER)
        print(f"load average at the start: {os.getloadavg()[0]:.2f} (2 cores)")
        print(f"a mounted workspace-write server's echo call, {args.files} files (median ms):")
        for engine in usable:
            med = anyio.run(_per_call, ws, script, engine, args.calls)
            g, u, c = med["guarded"], med["unguarded"], med["check"]
            print(
                f"  {engine:11s} guarded {g:6.2f}  unguarded {u:6.2f}  "
                f"(+{g - u:5.2f} ms, {g / u:.2f}x); the check alone {c:5.2f} ms"
            )
        tick = _tick_ms(ws, 200)
        print(
            f"one background tick (a check that finds nothing): {tick:.2f} ms; at one tick "
            f"per {TICK_SECS:g} s: {tick / (TICK_SECS * 1000) * 100:.2f}% of a core"
        )
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
        assert len(ticker()) == 0


if __name__ == "__main__":
    main()
