"""grep through the registry vs raw rg, and read_file of a range at the end of a 1 GB file.

Run by hand; figures go in bench/README.md. Everything it creates lives in bench/_work/
(gitignored): a copy of the Python standard library as the search tree, and a generated
1 GiB text file.

Measures:
* ``grep`` via ``ToolRegistry.execute`` (rg engine and the pure-Python fallback) side by side
  with raw parallel ``rg`` run directly (the same ``--json`` command line our engine runs,
  and plain ``rg``, what a shell user would run), on the stdlib copy: median wall seconds of
  N runs, for a rare pattern (the whole tree is scanned) and a common one (the tool stops at
  ``limit``); the ratio ours / raw ``rg --json`` is the issue-10 target (at most 1.2x);
* ``glob **/*.py`` via the registry on the same tree, beside ``rg --files`` with the same
  walk rule;
* ``read_file`` with ``start_line`` near the end of a 1 GiB file: wall seconds and the peak
  resident memory of a fresh process doing only that call (minus the same process's
  baseline after imports).

Usage: ``.venv/bin/python bench/bench_search.py [--runs N] [--size-mb 1024]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import anyio

from octos_tools.builtins import search
from octos_tools.builtins.search._hits import GrepQuery
from octos_tools.builtins.search._rg import rg_command
from octos_tools.builtins.search._rules import RG_WALK_ARGS
from octos_tools.config import Config
from octos_tools.registry import ToolRegistry
from octos_tools.workspace import Workspace

WORK = Path(__file__).resolve().parent / "_work"

RARE = r"def _?make_[a-z]+_connection|class \w+Deprecat"
COMMON = r"import os"


def stdlib_copy() -> Path:
    dest = WORK / "stdlib"
    if not dest.exists():
        src = Path(sysconfig.get_paths()["stdlib"])
        shutil.copytree(
            src,
            dest,
            ignore=shutil.ignore_patterns("site-packages", "__pycache__", "*.pyc"),
            symlinks=True,
        )
    return dest


def tree_stats(root: Path) -> tuple[int, int]:
    n = size = 0
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                n += 1
                size += os.path.getsize(p)
    return n, size


def median(samples: list[float]) -> float:
    return statistics.median(samples)


async def time_tool(
    reg: ToolRegistry, name: str, args: dict[str, object], runs: int
) -> tuple[float, str]:
    out = ""
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        res = await reg.execute(name, args)
        samples.append(time.perf_counter() - t0)
        out = res.output.splitlines()[0] if res.output else ""
    return median(samples), out


def time_cmd(cmd: list[str], cwd: Path, runs: int) -> float:
    """Median wall seconds of ``cmd``, its output read through a pipe (rg stops at the
    first match when its stdout is /dev/null, which would flatter it)."""
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        samples.append(time.perf_counter() - t0)
    return median(samples)


def bench_grep(runs: int) -> None:
    """Ours and raw rg interleaved run by run (a loaded machine slows both alike)."""
    tree = stdlib_copy()
    files, size = tree_stats(tree)
    print(f"tree: {tree} ({files:,} files, {size / 1e6:.0f} MB)")
    ws = Workspace(tree)
    rg = search.find_rg()
    assert rg, "rg not found"
    regs = {}
    for engine in ("rg", "python"):
        reg = ToolRegistry(workspace=ws)
        search.register(reg, ws, Config())
        tool = reg.get("grep")
        assert isinstance(tool, search.GrepTool)
        tool.engine = engine
        regs[engine] = reg
    for label, pattern, limit in [("rare", RARE, 50), ("common", COMMON, 50)]:
        print(f"\npattern {label}: {pattern!r} (limit {limit})")
        q = GrepQuery(pattern, False, 0, limit, None)
        raw_json = [*rg_command(rg, q), "./"]
        plain_cmd = [rg, "--no-config", "--regexp", pattern, "./"]
        args: dict[str, object] = {"pattern": pattern, "limit": limit}
        ours: list[float] = []
        raw: list[float] = []
        plain: list[float] = []
        head = ""
        for _ in range(runs):
            raw.append(time_cmd(raw_json, tree, 1))
            secs, head = anyio.run(time_tool, regs["rg"], "grep", args, 1)
            ours.append(secs)
            plain.append(time_cmd(plain_cmd, tree, 1))
        slow, slow_head = anyio.run(time_tool, regs["python"], "grep", args, max(1, runs // 3))
        r = median(raw)
        print(f"  registry grep [rg    ] median {median(ours) * 1000:8.1f} ms   ({head})")
        print(f"  raw rg --json (parallel, same flags) median {r * 1000:8.1f} ms")
        print(f"  raw rg (parallel, plain)             median {median(plain) * 1000:8.1f} ms")
        print(f"  ours / raw rg --json: {median(ours) / r:.2f}x")
        print(f"  registry grep [python] median {slow * 1000:8.1f} ms   ({slow_head})")
    reg = regs["rg"]
    files_cmd = [rg, "--files", "--no-config", *RG_WALK_ARGS, "./"]
    globs: list[float] = []
    raw_files: list[float] = []
    for _ in range(runs):
        secs, head = anyio.run(time_tool, reg, "glob", {"pattern": "**/*.py", "limit": 100}, 1)
        globs.append(secs)
        raw_files.append(time_cmd(files_cmd, tree, 1))
    print(
        f"\nglob '**/*.py' (limit 100): registry median {median(globs) * 1000:8.1f} ms   ({head})"
    )
    print(f"  raw rg --files (same walk rule)      median {median(raw_files) * 1000:8.1f} ms")


_READER = r"""
import json, resource, sys, time, anyio
from octos_tools.builtins.files import ReadFileTool
from octos_tools.context import ToolContext
from octos_tools.workspace import Workspace
ws = Workspace(sys.argv[1])
tool = ReadFileTool(ws)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
args = {"path": "big.log", "start_line": int(sys.argv[2]), "end_line": int(sys.argv[3])}
t0 = time.perf_counter()
res = anyio.run(tool.execute_with_context, ToolContext(workspace=ws), args)
secs = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"secs": secs, "base_kb": base, "peak_kb": peak,
                  "out": res.output[-120:], "ok": res.success}))
"""


def bench_read(size_mb: int) -> None:
    WORK.mkdir(exist_ok=True)
    big = WORK / "big.log"
    line = b"2024-01-01T00:00:00Z INFO request handled in 12 ms; path=/api/v1/items; ok\n"
    block = line * (1024 * 1024 // len(line))
    target = size_mb * 1024 * 1024
    if not big.exists() or big.stat().st_size < target:
        t0 = time.perf_counter()
        with open(big, "wb") as fh:
            written = 0
            while written < target:
                fh.write(block)
                written += len(block)
        print(f"generated {big} in {time.perf_counter() - t0:.1f} s")
    size = big.stat().st_size
    total = size // len(line)
    start, end = total - 20, total
    print(f"\nread_file {big.name}: {size / 2**30:.2f} GiB, {total:,} lines; lines {start}-{end}")
    for run in range(3):
        proc = subprocess.run(
            [sys.executable, "-c", _READER, str(WORK), str(start), str(end)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(proc.stdout)
        extra_mb = (r["peak_kb"] - r["base_kb"]) / 1024
        print(
            f"  run {run + 1}: {r['secs']:.2f} s, peak RSS {r['peak_kb'] / 1024:.0f} MB "
            f"(+{extra_mb:.1f} MB over the process after imports), ok={r['ok']}"
        )
    print(f"  footer: {r['out'].splitlines()[-1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--skip-read", action="store_true")
    parser.add_argument("--skip-grep", action="store_true")
    a = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    if not a.skip_grep:
        bench_grep(a.runs)
    if not a.skip_read:
        bench_read(a.size_mb)


if __name__ == "__main__":
    main()
