"""Benchmark: the command sandbox, side by side in one run (issue 20, item 7).

1. **Cost per command**: ``exec_command true`` over ``octos-tools serve`` (stdio, the official
   ``mcp`` Python client), once per mode and engine: ``workspace-write`` on bubblewrap, on
   Landlock, the same with ``[sandbox] allowed_hosts`` set (the egress proxy and, under
   bubblewrap, its network namespace and bridge), and ``danger-full-access`` (no sandbox).
   Calls alternate between the servers in
   rounds (ABAB...), so machine load hits all alike; median ms per call and the difference
   to danger-full-access.
2. **Probes**: the 23 forbidden and 5 allowed actions of :mod:`octos_tools.sandbox._probe`,
   one script, run by our runtime (each engine), by ``codex sandbox linux`` (Codex CLI,
   workspace-write, its bubblewrap pipeline: ``codex-linux-sandbox`` on PATH), and by
   ``srt`` (Claude Code's sandbox-runtime, the probe's fake credential stores denied);
   forbidden actions that happened, allowed ones refused, ms per probe run.

Codex and srt come from npm into a cache folder outside the repository (``--npm-dir``,
default ``~/.cache/octos-sandbox-bench``; a peer missing there is reported, not installed
at run time)::

    npm install --prefix ~/.cache/octos-sandbox-bench @openai/codex @anthropic-ai/sandbox-runtime
    .venv/bin/python bench/bench_sandbox.py [--calls 100] [--probe-runs 3] \\
        [--files 10000] [--baseline-src /path/to/main/src] [--no-probes]

``--files`` fills the workspace (20 files per folder, a git repository with a nested one:
what the git guard walks); ``--baseline-src`` serves each engine from another checkout too,
in the same rounds, so the cost of a change is measured against the code before it.
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
from octos_tools.sandbox._probe import ALLOWED, FORBIDDEN, ProbeSet, run_check

ROOT = Path(__file__).resolve().parents[1]


async def _serve_medians(ws: Path, calls: int, baseline: Path | None) -> dict[str, float]:
    """Median ms per ``exec_command true`` call for each server, alternating calls;
    ``baseline``: also each engine served from that source tree (the code before)."""
    usable = {s.name for s in engine_status() if s.usable}
    variants = [("danger-full-access", "danger-full-access", "auto", ROOT / "src")]
    for engine in ("bubblewrap", "landlock"):
        if engine in usable:
            variants.append((f"workspace-write/{engine}", "workspace-write", engine, ROOT / "src"))
            name = f"workspace-write/{engine}+allowed_hosts"
            variants.append((name, "workspace-write", engine, ROOT / "src"))
            if baseline is not None:
                name = f"workspace-write/{engine} (baseline)"
                variants.append((name, "workspace-write", engine, baseline))
    times: dict[str, list[float]] = {name: [] for name, _, _, _ in variants}
    async with AsyncExitStack() as stack:
        clients = {}
        for name, mode, engine, src in variants:
            cfg = ws.parent / f"{name.replace('/', '-').replace(' ', '')}.toml"
            hosts = 'allowed_hosts = ["127.0.0.1:9"]\n' if "allowed_hosts" in name else ""
            cfg.write_text(f'[sandbox]\nmode = "{mode}"\nengine = "{engine}"\n{hosts}')
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "octos_tools", "serve", "-w", str(ws), "-c", str(cfg)],
                env={**os.environ, "PYTHONPATH": str(src)},
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


def _fill(ws: Path, files: int) -> None:
    """A workspace of ``files`` files (20 per folder, two levels) in a git repository with
    one nested repository: what the guard's walk has to look at."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    for i in range(files):
        folder = ws / f"d{i // 400}" / f"e{i // 20 % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text("x\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True, env=env)
    subprocess.run(["git", "init", "-q", str(ws / "d0" / "nested")], check=True, env=env)


def _guard_cost(ws: Path, runs: int) -> float:
    """Median ms of the git guard alone (the walk before and the check after one command)
    on ``ws``, in this process."""
    from octos_tools.sandbox._git_guard import GitGuard

    guard = GitGuard([os.path.realpath(ws)])
    guard.watch().check()  # the first walk of a process lists every folder
    ms = []
    for _ in range(runs):
        t0 = time.perf_counter()
        watch = guard.watch()
        guard.mount_paths()
        watch.check()
        ms.append((time.perf_counter() - t0) * 1000)
    return statistics.median(ms)


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
    parser.add_argument("--files", type=int, default=0, help="files in the workspace (0: empty)")
    parser.add_argument(
        "--baseline-src",
        type=Path,
        default=None,
        help="another checkout's src/ to serve beside this one (the code before a change)",
    )
    parser.add_argument("--no-probes", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        if args.files:
            _fill(ws, args.files)
        medians = anyio.run(_serve_medians, ws, args.calls, args.baseline_src)
        guard_ms = _guard_cost(ws, 50)
    base = medians["danger-full-access"]
    print(f"load average before the probes: {os.getloadavg()[0]:.2f} (2 cores)")
    print(f"exec_command true over serve, {args.files} files (median ms per call, same run):")
    for name, ms in medians.items():
        print(f"  {name:44s} {ms:7.2f} ms  (+{ms - base:5.2f} ms, {ms / base:.2f}x)")
    print(f"  the git guard alone (walk before + check after): {guard_ms:.2f} ms per command")
    if args.no_probes or args.probe_runs < 1:
        return
    print(
        f"\nprobes ({len(FORBIDDEN)} forbidden, {len(ALLOWED)} allowed; read-only forbids "
        f"{len(FORBIDDEN) + 2} and allows {len(ALLOWED) - 2}):"
    )
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
