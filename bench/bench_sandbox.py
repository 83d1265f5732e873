"""Benchmark: the command sandbox, side by side in one run (issue 20, item 7).

1. **Cost per command**: ``exec_command true`` over ``octos-tools serve`` (stdio, the official
   ``mcp`` Python client), once per mode and engine: ``workspace-write`` on bubblewrap, on
   Landlock, the same with ``[sandbox] allowed_hosts`` set (the egress proxy and, under
   bubblewrap, its network namespace and bridge), and ``danger-full-access`` (no sandbox).
   Calls alternate between the servers in
   rounds (ABAB...), so machine load hits all alike; median ms per call and the difference
   to danger-full-access.
2. **Probes**: the 15 forbidden and 5 allowed actions of :mod:`octos_tools.sandbox._probe`,
   one script, run by our runtime (each engine), by ``codex sandbox linux`` (Codex CLI,
   workspace-write, its bubblewrap pipeline: ``codex-linux-sandbox`` on PATH), and by
   ``srt`` (Claude Code's sandbox-runtime, the probe's fake credential stores denied);
   forbidden actions that happened, allowed ones refused, ms per probe run.

Codex and srt come from npm into a cache folder outside the repository (``--npm-dir``,
default ``~/.cache/octos-sandbox-bench``; a peer missing there is reported, not installed
at run time)::

    npm install --prefix ~/.cache/octos-sandbox-bench @openai/codex @anthropic-ai/sandbox-runtime
    .venv/bin/python bench/bench_sandbox.py [--calls 100] [--probe-runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from mcp import Client, StdioServerParameters
from octos_tools.sandbox import SandboxMode, engine_status
from octos_tools.sandbox._probe import ProbeSet, run_check

ROOT = Path(__file__).resolve().parents[1]


async def _serve_medians(ws: Path, calls: int) -> dict[str, float]:
    """Median ms per ``exec_command true`` call for each server, alternating calls."""
    usable = {s.name for s in engine_status() if s.usable}
    variants = [("danger-full-access", "danger-full-access", "auto")]
    for engine in ("bubblewrap", "landlock"):
        if engine in usable:
            variants.append((f"workspace-write/{engine}", "workspace-write", engine))
            variants.append((f"workspace-write/{engine}+allowed_hosts", "workspace-write", engine))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    times: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    async with AsyncExitStack() as stack:
        clients = {}
        for name, mode, engine in variants:
            cfg = ws.parent / f"{name.replace('/', '-')}.toml"
            hosts = 'allowed_hosts = ["127.0.0.1:9"]\n' if "allowed_hosts" in name else ""
            cfg.write_text(f'[sandbox]\nmode = "{mode}"\nengine = "{engine}"\n{hosts}')
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "octos_tools", "serve", "-w", str(ws), "-c", str(cfg)],
                env=env,
            )
            clients[name] = await stack.enter_async_context(Client(params, mode="legacy"))
        for client in clients.values():  # warm-up (engine detection, imports)
            for _ in range(3):
                await client.call_tool("exec_command", {"cmd": "true"})
        for _ in range(calls):
            for name, client in clients.items():
                t0 = time.perf_counter()
                result = await client.call_tool("exec_command", {"cmd": "true"})
                times[name].append((time.perf_counter() - t0) * 1000)
                assert not result.is_error, result
    return {name: statistics.median(v) for name, v in times.items()}


def _peer_runner(kind: str, npm_dir: Path) -> list[str] | None:
    bin_dir = npm_dir / "node_modules" / ".bin"
    if kind == "codex" and (bin_dir / "codex").exists():
        return [str(bin_dir / "codex"), "sandbox", "-c", 'sandbox_mode="workspace-write"', "--"]
    if kind == "srt" and (bin_dir / "srt").exists():
        return [str(bin_dir / "srt")]
    return None


def _run_peer(kind: str, npm_dir: Path, ps: ProbeSet) -> tuple[str, float] | None:
    runner = _peer_runner(kind, npm_dir)
    if runner is None:
        return None
    # srt needs rg: the ripgrep wheel's, next to this interpreter
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    env = {**os.environ, "HOME": str(ps.home), "PATH": path}
    bin_dir = npm_dir / "node_modules" / ".bin"
    if kind == "codex":
        # its Linux pipeline execs codex-linux-sandbox (the same binary under another name)
        link_dir = Path(tempfile.mkdtemp(prefix="codex-link-"))
        target = os.path.realpath(bin_dir / "codex")
        vendor = list(Path(target).parent.parent.glob("vendor/*/codex/codex"))
        real = str(vendor[0]) if vendor else target
        os.symlink(real, link_dir / "codex-linux-sandbox")
        env["PATH"] = f"{link_dir}:{env['PATH']}"
        argv = [*runner, "sh", "-c", ps.script()]
    else:
        settings = {
            "filesystem": {
                "denyRead": [str(ps.home / ".ssh"), str(ps.home / ".aws")],
                "allowWrite": [str(ps.ws), "/tmp"],
                "denyWrite": [str(ps.config)],
            },
            "network": {"allowedDomains": [], "deniedDomains": []},
        }
        cfg = ps.base / "srt-settings.json"
        cfg.write_text(json.dumps(settings))
        script = ps.base / "probe.sh"
        script.write_text(ps.script())
        argv = [*runner, "--settings", str(cfg), "sh", str(script)]
    t0 = time.perf_counter()
    done = subprocess.run(
        argv, cwd=ps.ws, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return done.stdout + done.stderr, (time.perf_counter() - t0) * 1000


def _probe_table(npm_dir: Path, runs: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    usable = {s.name for s in engine_status() if s.usable}
    for engine in ("bubblewrap", "landlock"):
        if engine not in usable:
            continue
        for mode in (SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE):
            ms = []
            for _ in range(runs):
                t0 = time.perf_counter()
                results = run_check(engine, mode)
                ms.append((time.perf_counter() - t0) * 1000)
            rows.append(_row(f"octos-tools {engine}", str(mode), results, statistics.median(ms)))
    for kind in ("codex", "srt"):
        ms = []
        last = None
        for _ in range(runs):
            with ProbeSet() as ps:
                ran = _run_peer(kind, npm_dir, ps)
                if ran is None:
                    break
                output, elapsed = ran
                ms.append(elapsed)
                last = ps.verify(output, SandboxMode.WORKSPACE_WRITE)
        if last is None:
            rows.append({"runner": kind, "mode": "workspace-write", "missing": True})
        else:
            rows.append(_row(kind, "workspace-write", last, statistics.median(ms)))
    return rows


def _row(runner: str, mode: str, results: Any, ms: float) -> dict[str, Any]:
    forbidden = [r for r in results if r.expected == "blocked"]
    allowed = [r for r in results if r.expected == "allowed"]
    return {
        "runner": runner,
        "mode": mode,
        "forbidden_happened": [r.name for r in forbidden if r.happened],
        "forbidden_total": len(forbidden),
        "allowed_refused": [r.name for r in allowed if not r.happened],
        "allowed_total": len(allowed),
        "ms_per_probe_run": round(ms, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--probe-runs", type=int, default=3)
    parser.add_argument("--npm-dir", type=Path, default=Path.home() / ".cache/octos-sandbox-bench")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        medians = anyio.run(_serve_medians, ws, args.calls)
    base = medians["danger-full-access"]
    print("exec_command true over serve (median ms per call, same run):")
    for name, ms in medians.items():
        print(f"  {name:42s} {ms:7.2f} ms  (+{ms - base:5.2f} ms, {ms / base:.2f}x)")
    if args.probe_runs < 1:
        return
    print("\nprobes (15 forbidden, 5 allowed; read-only forbids 17 and allows 3):")
    for row in _probe_table(args.npm_dir, args.probe_runs):
        if row.get("missing"):
            print(f"  {row['runner']}: not installed under {args.npm_dir}")
            continue
        print(
            f"  {row['runner']:24s} {row['mode']:16s} forbidden happened "
            f"{len(row['forbidden_happened'])}/{row['forbidden_total']} "
            f"{row['forbidden_happened'] or ''}  allowed refused "
            f"{len(row['allowed_refused'])}/{row['allowed_total']} {row['allowed_refused'] or ''}"
            f"  {row['ms_per_probe_run']} ms"
        )


if __name__ == "__main__":
    main()
