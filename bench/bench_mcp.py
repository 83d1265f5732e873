"""Benchmark: ``octos-tools serve`` vs the reference ``@modelcontextprotocol/server-filesystem``.

Both servers run over stdio on the same copy of this repository's ``src/`` tree and are
driven by the official ``mcp`` Python client (handshake protocol, ``mode="legacy"``, the
only era the reference server speaks; our server is also measured on 2026-07-28).
Measured, side by side in one run:

* process start to ready: spawn → ``initialize`` done → first ``tools/list`` answered
  (median of ``--starts`` runs);
* calls per second, sequential on one connection, after a warm-up:

  ======  ===============================  ======================================
  op      octos-tools                      reference
  ======  ===============================  ======================================
  read    ``read_file`` (one .py file)     ``read_text_file``
  list    ``list_dir`` (one directory)     ``list_directory``
  search  ``glob`` ``**/*.py``             ``search_files`` ``**/*.py``
  edit    ``edit_file`` (toggle a string)  ``edit_file`` (toggle the same string)
  grep    ``grep`` (content, ``rg``)       (no counterpart)
  ======  ===============================  ======================================

The reference server is installed with ``npm install`` into a temporary folder (never
committed, removed afterwards unless ``--npm-dir`` names a folder to reuse).

Run::

    .venv/bin/python bench/bench_mcp.py [--calls 200] [--starts 3] [--rounds 3]
        [--npm-dir DIR] [--baseline OLD/src] [--src NEW/src] [--ab PAIRS [--batch 40]] [--cpu]
        [--ops read,list,search,edit,grep] [--octos-config FILE]

``--ab PAIRS`` replaces the rounds by fine A/B alternation (ABBA pairs of short batches,
median of the per-pair ratios), for a machine shared with other work; ``--cpu`` measures
each server process's CPU time per call instead of rates (Linux ``/proc``), the figure least
moved by other load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types

from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
OPS = ["read", "list", "search", "edit", "grep"]
Figures = dict[str, dict[str, float]]
"""One round: server label → figure name (``start_s`` or an op) → value."""
PACKAGE = "@modelcontextprotocol/server-filesystem"


def install_reference(npm_dir: Path) -> tuple[Path, str]:
    """``npm install`` the reference server into ``npm_dir``; returns (entry, version)."""
    entry = npm_dir / "node_modules" / "@modelcontextprotocol" / "server-filesystem"
    if not (entry / "dist" / "index.js").exists():
        npm_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(npm_dir), PACKAGE],
            check=True,
            stdout=subprocess.DEVNULL,
            timeout=600,
        )
    version = json.loads((entry / "package.json").read_text())["version"]
    return entry / "dist" / "index.js", version


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


class Target:
    """One server under test: how to start it and how to express each operation."""

    def __init__(
        self,
        label: str,
        params: StdioServerParameters,
        ops: dict[str, Callable[[int], tuple[str, dict[str, Any]]]],
        mode: str = "legacy",
    ) -> None:
        self.label = label
        self.params = params
        self.ops = ops
        self.mode = mode


READ_TARGET = "src/octos_tools/registry/_registry.py"
"""The file both servers read (33 kB of Python, about 800 lines)."""


def _toggle() -> Callable[[], tuple[str, str]]:
    """``(old, new)`` for the next edit of one tree: the string flips at every call, so the
    file is right whatever the number of calls and rounds so far."""
    state = ["Pure bookkeeping", "Pure BOOKKEEPING"]

    def flip() -> tuple[str, str]:
        old, new = state
        state.reverse()
        return old, new

    return flip


OCTOS_CONFIG: list[str] = []
"""``["--config", PATH]`` for every octos-tools server (``--octos-config``), else empty."""


def octos_target(tree: Path, mode: str, *, src: Path | None = None, label: str = "") -> Target:
    edit_path = "src/octos_tools/lifecycle.py"

    flip = _toggle()

    def edit(i: int) -> tuple[str, dict[str, Any]]:
        old, new = flip()
        return "edit_file", {"path": edit_path, "old_string": old, "new_string": new}

    ops: dict[str, Callable[[int], tuple[str, dict[str, Any]]]] = {
        "read": lambda i: ("read_file", {"path": READ_TARGET}),
        "list": lambda i: ("list_dir", {"path": "src/octos_tools"}),
        "search": lambda i: ("glob", {"pattern": "**/*.py"}),
        "edit": edit,
        "grep": lambda i: ("grep", {"pattern": "def execute", "path": "src"}),
    }
    env = None
    if src is not None:  # another checkout's ``src`` (a baseline) ahead of the installed one
        env = {**os.environ, "PYTHONPATH": str(src)}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "octos_tools", "serve", "--workspace", str(tree), *OCTOS_CONFIG],
        cwd=str(tree),
        env=env,
    )
    label = label or ("octos-tools" if mode == "legacy" else f"octos-tools ({mode})")
    return Target(label, params, ops, mode)


def reference_target(tree: Path, entry: Path, version: str) -> Target:
    edit_path = str(tree / "src/octos_tools/lifecycle.py")

    flip = _toggle()

    def edit(i: int) -> tuple[str, dict[str, Any]]:
        old, new = flip()
        return "edit_file", {"path": edit_path, "edits": [{"oldText": old, "newText": new}]}

    ops: dict[str, Callable[[int], tuple[str, dict[str, Any]]]] = {
        "read": lambda i: ("read_text_file", {"path": str(tree / READ_TARGET)}),
        "list": lambda i: ("list_directory", {"path": str(tree / "src/octos_tools")}),
        "search": lambda i: ("search_files", {"path": str(tree), "pattern": "**/*.py"}),
        "edit": edit,
    }
    params = StdioServerParameters(command="node", args=[str(entry), str(tree)], cwd=str(tree))
    return Target(f"server-filesystem {version}", params, ops)


async def time_start(target: Target) -> float:
    """Seconds from spawn to the first ``tools/list`` answered."""
    started = time.perf_counter()
    async with Client(target.params, mode=target.mode) as client:
        await client.list_tools()
        return time.perf_counter() - started


async def rate(client: Client, op: Callable[[int], tuple[str, dict[str, Any]]], n: int) -> float:
    """Sequential calls per second of ``op`` (``n`` calls after 5 warm-up calls)."""
    for i in range(5):
        name, args = op(i)
        result = await client.call_tool(name, args)
        if result.is_error:
            raise RuntimeError(f"{name} failed: {_text(result)[:300]}")
    started = time.perf_counter()
    for i in range(n):
        name, args = op(i + 5)
        result = await client.call_tool(name, args)
        if result.is_error:
            raise RuntimeError(f"{name} failed: {_text(result)[:300]}")
    return n / (time.perf_counter() - started)


async def measure(targets: list[Target], calls: int, starts: int, rounds: int) -> list[Figures]:
    """Every figure of every target, ``rounds`` times, interleaved finely so that load from
    other processes falls on all servers alike: start samples alternate server by server,
    and each op's timed batch runs on every server (all connected at once) before the next
    round of that op."""
    out: list[Figures] = [{t.label: {} for t in targets} for _ in range(rounds)]
    for number in range(rounds):
        samples: dict[str, list[float]] = {t.label: [] for t in targets}
        for _ in range(starts):
            for target in targets:
                samples[target.label].append(await time_start(target))
        for target in targets:
            out[number][target.label]["start_s"] = statistics.median(samples[target.label])
        print(f"start, round {number + 1} done", file=sys.stderr)
    async with AsyncExitStack() as stack:
        clients: dict[str, Client] = {}
        for target in targets:
            client = await stack.enter_async_context(Client(target.params, mode=target.mode))
            await client.list_tools()
            clients[target.label] = client
        for op_name in OPS:
            n = calls if op_name in ("read", "list") else max(20, calls // 2)
            for number in range(rounds):
                for target in targets:
                    if op_name in target.ops:
                        figure = await rate(clients[target.label], target.ops[op_name], n)
                        out[number][target.label][op_name] = figure
            print(f"{op_name} done", file=sys.stderr)
    return out


async def measure_ab(targets: list[Target], batch: int, pairs: int) -> dict[str, dict[str, float]]:
    """Fine A/B alternation for a loaded machine: for each op, ``pairs`` ABBA quadruples of
    ``batch``-call batches between the first target (ours) and each other target, all
    connected at once; returns, per other target and op, the median of the per-pair rate
    ratios ours / theirs (a burst of other load hits one short batch, not a whole round)."""
    out: dict[str, dict[str, float]] = {t.label: {} for t in targets[1:]}
    async with AsyncExitStack() as stack:
        clients: dict[str, Client] = {}
        for target in targets:
            client = await stack.enter_async_context(Client(target.params, mode=target.mode))
            await client.list_tools()
            clients[target.label] = client
        ours = targets[0]
        for op_name in OPS:
            for other in targets[1:]:
                if op_name not in other.ops or op_name not in ours.ops:
                    continue
                ratios: list[float] = []
                for _ in range(pairs):
                    a1 = await rate(clients[ours.label], ours.ops[op_name], batch)
                    b1 = await rate(clients[other.label], other.ops[op_name], batch)
                    b2 = await rate(clients[other.label], other.ops[op_name], batch)
                    a2 = await rate(clients[ours.label], ours.ops[op_name], batch)
                    ratios.append((a1 + a2) / (b1 + b2))
                out[other.label][op_name] = statistics.median(ratios)
            print(f"{op_name} done", file=sys.stderr)
    return out


def _children() -> set[int]:
    """The process ids of this process's children (Linux ``/proc``)."""
    out: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as fh:
                out |= {int(x) for x in fh.read().split()}
        except OSError:
            continue
    return out


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure_cpu(
    targets: list[Target], calls: int, rounds: int
) -> dict[str, dict[str, float]]:
    """Server-side CPU milliseconds per call (user + system time of the server process over
    ``calls`` sequential calls, median of ``rounds``): what each server spends, whatever
    else runs on the machine (Linux only; the client's own time is not in it)."""
    samples: dict[str, dict[str, list[float]]] = {t.label: {} for t in targets}
    async with AsyncExitStack() as stack:
        clients: dict[str, tuple[Client, int]] = {}
        for target in targets:
            before = _children()
            client = await stack.enter_async_context(Client(target.params, mode=target.mode))
            await client.list_tools()
            clients[target.label] = (client, max(_children() - before))
        for op_name in OPS:
            for _ in range(rounds):
                for target in targets:
                    if op_name not in target.ops:
                        continue
                    client, pid = clients[target.label]
                    await rate(client, target.ops[op_name], 5)
                    used = _cpu_seconds(pid)
                    await rate(client, target.ops[op_name], calls)
                    per_call = (_cpu_seconds(pid) - used) / calls * 1e3
                    samples[target.label].setdefault(op_name, []).append(per_call)
            print(f"{op_name} done", file=sys.stderr)
    return {
        label: {op: statistics.median(v) for op, v in ops.items()} for label, ops in samples.items()
    }


def report_cpu(figures: dict[str, dict[str, float]]) -> str:
    """Server CPU per call as a table, one column per server."""
    labels = list(figures)
    lines = ["| op (server CPU ms/call) | " + " | ".join(labels) + " |"]
    lines.append("|---" * (len(labels) + 1) + "|")
    for op in OPS:
        cells = [f"{figures[lb][op]:.2f}" if op in figures[lb] else "n/a" for lb in labels]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report_ab(ratios: dict[str, dict[str, float]], ours: str) -> str:
    """The A/B ratios as a table: one column per other server."""
    labels = list(ratios)
    lines = [f"| op | {ours} / " + f" | {ours} / ".join(labels) + " |"]
    lines.append("|---" * (len(labels) + 1) + "|")
    for op in OPS:
        cells = [f"{ratios[lb][op]:.2f}×" if op in ratios[lb] else "n/a" for lb in labels]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(rounds: list[Figures], ref_label: str) -> str:
    """Medians over the rounds; the ratio is the median of the per-round ratios (each
    round measures every server back to back, so load falls on both alike)."""
    ops = OPS
    labels = list(rounds[0])
    ours_label = labels[0]

    def med(label: str, key: str) -> float | None:
        values = [r[label][key] for r in rounds if key in r[label]]
        return statistics.median(values) if values else None

    def ratio(key: str, invert: bool = False) -> str:
        values = [
            (r[ref_label][key] / r[ours_label][key])
            if invert
            else (r[ours_label][key] / r[ref_label][key])
            for r in rounds
            if key in r[ref_label] and key in r[ours_label]
        ]
        return f"{statistics.median(values):.2f}×" if values else "n/a"

    lines = ["| measure | " + " | ".join(labels) + " | octos-tools / reference |"]
    lines.append("|---" * (len(labels) + 2) + "|")
    for op in ops:
        cells = []
        for lb in labels:
            value = med(lb, op)
            cells.append(f"{value:.0f}" if value is not None else "n/a")
        lines.append(f"| {op} (calls/s) | " + " | ".join(cells) + f" | {ratio(op)} |")
    cells = [f"{med(lb, 'start_s') or 0:.3f}" for lb in labels]
    lines.append(
        "| start to ready (s) | " + " | ".join(cells) + f" | {ratio('start_s', True)} (speed) |"
    )
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> None:
    if args.ops:
        unknown = set(args.ops.split(",")) - set(OPS)
        if unknown:
            raise SystemExit(f"unknown ops: {', '.join(sorted(unknown))}")
        OPS[:] = [op for op in OPS if op in args.ops.split(",")]
    if args.octos_config:
        OCTOS_CONFIG[:] = ["--config", str(Path(args.octos_config).resolve())]
    keep = args.npm_dir is not None
    npm_dir = Path(args.npm_dir) if keep else Path(tempfile.mkdtemp(prefix="octos-bench-npm-"))
    work = Path(tempfile.mkdtemp(prefix="octos-bench-tree-"))
    try:
        entry, version = install_reference(npm_dir)
        src = Path(args.src).resolve() if args.src else None
        trees = {}
        for name in ("octos", "octos-modern", "reference", "baseline"):
            tree = work / name
            shutil.copytree(
                ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__")
            )
            trees[name] = tree.resolve()
        targets = [
            octos_target(trees["octos"], "legacy", src=src),
            octos_target(trees["octos-modern"], "auto", src=src),
            reference_target(trees["reference"], entry, version),
        ]
        if args.baseline:
            base = Path(args.baseline).resolve()
            targets.insert(
                2,
                octos_target(trees["baseline"], "legacy", src=base, label=f"baseline {base}"),
            )
        ref_label = targets[-1].label
        if args.cpu:
            cpu_targets = [targets[0], *targets[2:]]
            figures = await measure_cpu(cpu_targets, args.calls, args.rounds)
            print(report_cpu(figures))
            print(
                f"\n{os.cpu_count()} CPUs; user + system time of each server process over "
                f"{args.calls} sequential calls, median of {args.rounds} interleaved rounds"
            )
            return
        if args.ab:
            ab_targets = [targets[0], *targets[2:]]  # ours (handshake era) vs the others
            ratios = await measure_ab(ab_targets, args.batch, args.ab)
            print(report_ab(ratios, targets[0].label))
            print(
                f"\n{os.cpu_count()} CPUs; median of {args.ab} ABBA pairs of {args.batch}-call "
                "batches (ratio of the calls/s, ours / theirs)"
            )
            return
        rounds = await measure(targets, args.calls, args.starts, args.rounds)
        for number, results in enumerate(rounds):
            print(f"round {number + 1}:\n{report([results], ref_label)}", file=sys.stderr)
        print(report(rounds, ref_label))
        node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
        print(
            f"\n{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, node {node.strip()}, "
            f"{args.calls} calls (read, list) / {max(20, args.calls // 2)} (others), "
            f"start = median of {args.starts} per round; medians of {args.rounds} "
            "interleaved rounds; ratio = median of the per-round ratios"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not keep:
            shutil.rmtree(npm_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per op (read, list)")
    parser.add_argument("--starts", type=int, default=3, help="start-to-ready samples")
    parser.add_argument("--npm-dir", help="install (or reuse) the reference server here")
    parser.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds (all servers each round)"
    )
    parser.add_argument("--src", help="serve from this src/ folder instead of the installed one")
    parser.add_argument(
        "--baseline",
        help="another checkout's src/ folder, measured as an extra server (before/after)",
    )
    parser.add_argument(
        "--ab",
        type=int,
        default=0,
        metavar="PAIRS",
        help="instead of rounds: PAIRS ABBA pairs of short batches per op and server, "
        "ratios only (for a loaded machine)",
    )
    parser.add_argument("--batch", type=int, default=40, help="calls per batch with --ab")
    parser.add_argument(
        "--ops",
        help="comma-separated subset of " + ",".join(OPS) + " (e.g. edit alone, away from "
        "a baseline that fsyncs)",
    )
    parser.add_argument(
        "--octos-config",
        help="a config file for every octos-tools server (e.g. [history] enabled = false, "
        "to measure edits without history checkpoints)",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="instead of rates: each server's CPU time per call (Linux), --calls per sample",
    )
    anyio.run(main_async, parser.parse_args())


if __name__ == "__main__":
    main()
