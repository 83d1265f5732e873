"""Start-up cost of an octos-tools process, side by side (run by hand; figures go in
bench/README.md, "Start-up, round 3").

Cases, each one fresh process, interleaved run by run so that machine load hits each alike:

* ``python -c pass``: the interpreter alone (the floor of every other case);
* ``floor: pydantic+typer+anyio``: what no change of ours can remove from a call process:
  one pydantic model with a ``Field`` built and validated (the tool's arguments), a typer
  app with two commands run, one ``anyio.run`` (see :data:`FLOOR`);
* ``import octos_tools``: the package module (target ≤ 60 ms);
* ``octos-tools --version``: the command's own start (typer, the app);
* ``octos-tools call read_file``: one call process,
  ``call read_file '{"path":"src/octos_tools/tool_types.py","end_line":3}' -w DIR``
  (target ≤ 150 ms, issue 10);
* ``serve → tools/list`` (``--serve``): spawn ``octos-tools serve``, answer ``initialize``,
  answer the first ``tools/list``, over raw JSON-RPC lines on stdio; the ``mcp`` SDK's
  import is most of it.

With ``--baseline OLD/src`` every octos case also runs with another checkout's ``src`` ahead
of the installed one (``PYTHONPATH``), in the same rounds (ABBA order), and the table shows
the ratio new/old per case (median of the per-round ratios).

Each figure is the median over runs of the wall time (ms) and of the CPU time (user + system
of the child, from ``wait4``; less sensitive to other processes than wall time). Bytecode
matters: this machine sets ``PYTHONDONTWRITEBYTECODE=1``, so compile both trees first
(``--compile``, or ``python -m compileall -q src``), as a real ``pip install`` does.

Usage::

    .venv/bin/python bench/bench_startup.py [--runs N] [--serve] [--baseline /tmp/base/src]
        [--compile] [--workspace DIR]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALL_ARGS = '{"path":"src/octos_tools/tool_types.py","end_line":3}'

#: The libraries' share of a call process, without any octos-tools code.
FLOOR = """
from pydantic import BaseModel, Field
class Args(BaseModel):
    path: str = Field(description="a path")
Args.model_validate_json('{"path": "x"}')
import typer
app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
@app.command()
def call(tool: str, args: str) -> None:
    import anyio
    async def run() -> None:
        pass
    anyio.run(run)
@app.command()
def other() -> None:
    pass
app(["call", "read_file", "{}"])
"""


@dataclass
class Case:
    """One command line to start, timed by ``run``."""

    label: str
    argv: list[str]
    octos: bool = True  # runs once per tree (installed, baseline)
    serve: bool = False
    wall: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)


def _command() -> list[str]:
    """The ``octos-tools`` console script next to this interpreter, else ``-m``."""
    script = Path(sys.executable).with_name("octos-tools")
    return [str(script)] if script.exists() else [sys.executable, "-m", "octos_tools"]


def _run_plain(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, cwd=ROOT
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} exited {proc.returncode}")
    return wall * 1000, (usage.ru_utime + usage.ru_stime) * 1000


def _rpc(proc: subprocess.Popen[bytes], payload: dict[str, object]) -> dict[str, object]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(payload).encode() + b"\n")
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit("serve closed its output before answering")
        message: dict[str, object] = json.loads(line)
        if message.get("id") == payload.get("id"):
            return message


def _run_serve(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Spawn → ``initialize`` answered → ``tools/list`` answered; then close stdin."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench_startup", "version": "0"},
    }
    _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    assert proc.stdin is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    listed = _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    wall = time.perf_counter() - started
    if "result" not in listed:
        raise SystemExit(f"tools/list failed: {listed}")
    proc.stdin.close()
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    assert proc.stdout is not None
    proc.stdout.close()
    return wall * 1000, (usage.ru_utime + usage.ru_stime) * 1000


def _ratio(new: list[float], old: list[float]) -> float:
    return statistics.median(n / o for n, o in zip(new, old, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per case (default 15)")
    parser.add_argument("--serve", action="store_true", help="also time serve → tools/list")
    parser.add_argument("--baseline", help="another checkout's src, timed in the same rounds")
    parser.add_argument("--compile", action="store_true", help="compileall the trees first")
    parser.add_argument("--workspace", default=str(ROOT), help="the call's workspace")
    args = parser.parse_args()

    trees: dict[str, dict[str, str]] = {"new": dict(os.environ)}
    if args.baseline:
        base = Path(args.baseline).resolve()
        trees["old"] = {**os.environ, "PYTHONPATH": str(base)}
    if args.compile:
        import octos_tools

        compileall.compile_dir(str(Path(octos_tools.__file__).parent), quiet=1)
        if args.baseline:
            compileall.compile_dir(str(Path(args.baseline) / "octos_tools"), quiet=1)

    cmd = _command()
    cases = [
        Case("python -c pass", [sys.executable, "-c", "pass"], octos=False),
        Case("floor: pydantic+typer+anyio", [sys.executable, "-c", FLOOR], octos=False),
        Case("import octos_tools", [sys.executable, "-c", "import octos_tools"]),
        Case("octos-tools --version", [*cmd, "--version"]),
        Case(
            "octos-tools call read_file",
            [*cmd, "call", "read_file", CALL_ARGS, "-w", args.workspace],
        ),
    ]
    if args.serve:
        cases.append(Case("serve → tools/list", [*cmd, "serve", "-w", args.workspace], serve=True))
    names = list(trees)
    for i in range(args.runs):
        order = names if i % 2 == 0 else names[::-1]  # ABBA
        for case in cases:
            for tree in order if case.octos else ["new"]:
                runner: Callable[[list[str], dict[str, str]], tuple[float, float]]
                runner = _run_serve if case.serve else _run_plain
                wall, cpu = runner(case.argv, trees[tree])
                case.wall.setdefault(tree, []).append(wall)
                case.cpu.setdefault(tree, []).append(cpu)

    floor = statistics.median(cases[0].wall["new"])
    where = shutil.which(cmd[0]) or cmd[0]
    print(f"{args.runs} interleaved runs; medians in ms (wall / cpu); cmd: {where}")
    head = f"{'case':30} {'new wall':>9} {'new cpu':>8} {'x pass':>7}"
    if args.baseline:
        head += f" {'old wall':>9} {'old cpu':>8} {'new/old wall':>13} {'new/old cpu':>12}"
    print(head)
    for case in cases:
        w, c = statistics.median(case.wall["new"]), statistics.median(case.cpu["new"])
        line = f"{case.label:30} {w:9.1f} {c:8.1f} {w / floor:7.2f}"
        if args.baseline and "old" in case.wall:
            ow, oc = statistics.median(case.wall["old"]), statistics.median(case.cpu["old"])
            rw = _ratio(case.wall["new"], case.wall["old"])
            rc = _ratio(case.cpu["new"], case.cpu["old"])
            line += f" {ow:9.1f} {oc:8.1f} {rw:13.2f} {rc:12.2f}"
        print(line)


if __name__ == "__main__":
    main()
