"""Benchmark: what workspace history adds to a mutating call, over ``octos-tools serve``.

Two servers run side by side over stdio, each on its own copy of a 10,000-file workspace
(100 folders of 100 small files): one with ``[history] enabled = true`` (the default), one
with it off. Calls alternate between them (A, B, A, B, ...), so load from other processes
falls on both alike; each call is timed alone (client round trip) and the medians are
compared:

* ``edit_file`` of one file (the checkpoint records only that path, in-process: a loose
  blob, the trees along the path, the commit; no git process);
* ``exec_command`` writing one file (the inotify watcher tells what changed before and
  during the command; without it, two whole-tree ``ls-files`` scans).

The first mutating call of the history server records the baseline (every file hashed
once); it is timed on its own and left out of the medians. A bare ``git version`` is timed
too, as a yardstick of the machine's load (about 2 ms idle).

``--baseline-src OLD/src`` adds a third server, history on, running the code in ``OLD/src``
(``git archive <commit> src | tar -x -C OLD``), in the same rotation: before and after in
one run.

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_history.py [--calls 60]
[--baseline-src OLD/src]``.
"""

from __future__ import annotations

import argparse
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
import mcp_types as types

from mcp import Client, StdioServerParameters


def make_tree(root: Path, folders: int = 100, files: int = 100) -> None:
    """``folders`` x ``files`` small Python files under ``root``."""
    for d in range(folders):
        sub = root / f"pkg{d:03d}"
        sub.mkdir(parents=True)
        for f in range(files):
            (sub / f"mod{f:03d}.py").write_text(f"# module {d}/{f}\nVALUE = {f}\nx = 0\n")


def _params(
    tree: Path, history: bool, state: Path, src: str | None = None
) -> StdioServerParameters:
    cfg = tree.parent / f"{tree.name}.toml"
    cfg.write_text(f"[history]\nenabled = {'true' if history else 'false'}\n")
    env = {**os.environ, "OCTOS_TOOLS_STATE_DIR": str(state)}
    if src is not None:
        env["PYTHONPATH"] = src
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "octos_tools", "serve", "--workspace", str(tree), "--config", str(cfg)],
        env=env,
    )


async def _timed(client: Client, name: str, args: dict[str, Any]) -> float:
    started = time.perf_counter()
    result = await client.call_tool(name, args)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        text = "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
        raise RuntimeError(f"{name} failed: {text[:300]}")
    return elapsed


def _edit(i: int) -> dict[str, Any]:
    old, new = ("x = 0", "x = 1") if i % 2 == 0 else ("x = 1", "x = 0")
    return {"path": "pkg050/mod050.py", "old_string": old, "new_string": new}


def _order(labels: list[str], i: int) -> list[str]:
    """The servers' order in round ``i``: rotated, and reversed every other round."""
    k = i % len(labels)
    turned = labels[k:] + labels[:k]
    return turned if (i // len(labels)) % 2 else turned[::-1]


async def main(calls: int, baseline_src: str | None) -> None:
    with tempfile.TemporaryDirectory(prefix="octos-bench-history-") as tmp:
        base = Path(tmp)
        labels = ["on", "off"] + (["before"] if baseline_src else [])
        trees = {label: base / label for label in labels}
        for tree in trees.values():
            make_tree(tree)
        state = base / "state"
        async with AsyncExitStack() as stack:
            clients = {
                label: await stack.enter_async_context(
                    Client(
                        _params(
                            trees[label], label != "off", state,
                            baseline_src if label == "before" else None,
                        ),
                        mode="legacy",
                    )
                )
                for label in labels
            }  # fmt: skip
            baseline = await _timed(clients["on"], "edit_file", _edit(0))
            for label in labels[1:]:
                await _timed(clients[label], "edit_file", _edit(0))
            times: dict[str, dict[str, list[float]]] = {
                "edit_file": {label: [] for label in labels},
                "exec_command": {label: [] for label in labels},
            }
            for i in range(1, calls + 1):
                for label in _order(labels, i):
                    times["edit_file"][label].append(
                        await _timed(clients[label], "edit_file", _edit(i))
                    )
            for i in range(calls // 2):
                cmd = {"cmd": f"echo {i} > pkg010/touched.txt"}
                for label in _order(labels, i):
                    times["exec_command"][label].append(
                        await _timed(clients[label], "exec_command", cmd)
                    )
    spawn = []
    for _ in range(20):
        started = time.perf_counter()
        subprocess.run(["git", "version"], capture_output=True, check=True)
        spawn.append((time.perf_counter() - started) * 1000)
    print(f"load average {os.getloadavg()[0]:.1f}; `git version` {statistics.median(spawn):.1f} ms")
    print(
        f"10,000-file workspace; first checkpoint (baseline, every file hashed): {baseline:.0f} ms"
    )
    head = "| call | history off (median ms) | history on (median ms) | added ms | ratio |"
    if baseline_src:
        head += " on, before (median ms) | added before |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for name, group in times.items():
        off_ms = statistics.median(group["off"])
        on_ms = statistics.median(group["on"])
        line = (
            f"| {name} | {off_ms:.1f} | {on_ms:.1f} | {on_ms - off_ms:+.1f} | "
            f"{on_ms / off_ms:.2f}x |"
        )
        if baseline_src:
            before = statistics.median(group["before"])
            line += f" {before:.1f} | {before - off_ms:+.1f} |"
        print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60, help="calls per server and op")
    parser.add_argument(
        "--baseline-src", default=None, help="a third server, history on, from this src/"
    )
    ns = parser.parse_args()
    anyio.run(main, ns.calls, ns.baseline_src)
