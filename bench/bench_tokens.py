"""First-request tokens: our ``serve`` profiles vs the reference filesystem server.

Every server is started over stdio and asked for ``tools/list`` by the official ``mcp``
Python client, in the same run; each listed tool is counted as a host forwards it to the
model, compact JSON of ``{"name", "description", "parameters"}``, with the exact
``o200k_base`` tokenizer of ``bpe-openai`` (the ``tokens`` extra; ``--encoding
cl100k_base`` for the older vocabulary). Rows:

* ``octos-tools serve`` with the default profile (deferral on);
* the same with ``{"lifecycle": {"defer": false}}`` (every tool listed);
* the default profile with a 14-tool MCP server mounted (``tests/mcp_servers/tracker.py``,
  deferred), to show the first request does not grow with mounted tools;
* ``@modelcontextprotocol/server-filesystem``, installed with ``npm`` into a cache folder
  (``--npm-dir``, default ``~/.cache/octos-tools/bench-npm``) before anything is measured.

"Reachable" counts the tools a model can call: listed ones plus, for ours, the deferred
ones the discovery tool finds (``octos-tools tools --json``: every tool not denied).

Usage: ``.venv/bin/python bench/bench_tokens.py [--encoding o200k_base] [--npm-dir DIR]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from bench_mcp import install_reference

from mcp import Client, StdioServerParameters
from octos_tools.tokens import token_counter

ROOT = Path(__file__).resolve().parents[1]
TRACKER = ROOT / "tests" / "mcp_servers" / "tracker.py"


def _payload(tool: Any) -> str:
    return json.dumps(
        {"name": tool.name, "description": tool.description or "", "parameters": tool.input_schema},
        ensure_ascii=False,
        separators=(",", ":"),
    )


async def listed(params: StdioServerParameters, mode: str) -> list[str]:
    """The compact JSON payload of every tool ``tools/list`` answers, in list order."""
    async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.list_tools()
        return [_payload(t) for t in result.tools]


def reachable(workspace: Path, config: Path | None) -> int:
    argv = [sys.executable, "-m", "octos_tools", "tools", "--json", "--workspace", str(workspace)]
    if config is not None:
        argv += ["--config", str(config)]
    data = json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
    return sum(1 for t in data["tools"] if t["state"] != "denied")


def octos_params(workspace: Path, config: Path | None) -> StdioServerParameters:
    args = ["-m", "octos_tools", "serve", "--workspace", str(workspace)]
    if config is not None:
        args += ["--config", str(config)]
    return StdioServerParameters(command=sys.executable, args=args, cwd=str(workspace))


async def main_async(args: argparse.Namespace) -> None:
    counter = token_counter(args.encoding, exact=True)
    entry, version = install_reference(Path(args.npm_dir).expanduser())
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        configs = {"no-defer": Path(tmp) / "no-defer.json", "mounted": Path(tmp) / "mounted.json"}
        configs["no-defer"].write_text('{"lifecycle": {"defer": false}}')
        server = {"command": sys.executable, "args": [str(TRACKER)], "defer": True}
        configs["mounted"].write_text(json.dumps({"mcp_servers": {"tracker": server}}))
        rows: list[tuple[str, list[str], int]] = []
        for label, config in (
            ("`octos-tools serve` (default)", None),
            ("`octos-tools serve` (`lifecycle.defer: false`)", configs["no-defer"]),
            ("`octos-tools serve` (default) + 14-tool MCP server", configs["mounted"]),
        ):
            print(f"measuring {label} ...", file=sys.stderr)
            tools = await listed(octos_params(ws, config), "legacy")
            rows.append((label, tools, reachable(ws, config)))
            if config is None:
                default_tools = tools
        print(f"measuring server-filesystem {version} ...", file=sys.stderr)
        ref_params = StdioServerParameters(command="node", args=[str(entry), str(ws)], cwd=str(ws))
        ref = await listed(ref_params, "legacy")
        rows.append((f"`@modelcontextprotocol/server-filesystem` {version}", ref, len(ref)))

    print(f"tokenizer: {counter.label}; payload: compact JSON of name, description, parameters\n")
    print("| server | tools listed | reachable | first-request tokens | per listed tool |")
    print("|---|---:|---:|---:|---:|")
    for label, tools, reach in rows:
        total = counter.count("[" + ",".join(tools) + "]")
        per = round(total / len(tools)) if tools else 0
        print(f"| {label} | {len(tools)} | {reach} | {total:,} | {per} |")
    print("\nper listed tool, `octos-tools serve` (default):\n")
    print("| tool | tokens |")
    print("|---|---:|")
    for payload in default_tools:
        print(f"| {json.loads(payload)['name']} | {counter.count(payload)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encoding", default="o200k_base", choices=["o200k_base", "cl100k_base"])
    parser.add_argument(
        "--npm-dir",
        default="~/.cache/octos-tools/bench-npm",
        help="npm cache folder the reference server is installed into (reused)",
    )
    anyio.run(main_async, parser.parse_args())


if __name__ == "__main__":
    main()
