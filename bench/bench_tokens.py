"""First-request tokens with and without deferral (run by hand; figures in bench/README.md).

Runs ``octos-tools tools --tokens --json`` twice on a fresh empty workspace: once with the
default profile (deferral on) and once with ``{"lifecycle": {"defer": false}}``, and prints
the visible tool count and the first request's tokens of each. Tokens are the CLI's
documented estimate, ``ceil(utf8_bytes / 4)`` of each spec's OpenAI JSON.

Usage: ``.venv/bin/python bench/bench_tokens.py [--cmd PATH_TO_octos-tools]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def measure(cmd: str, workspace: Path, config: Path | None) -> dict[str, Any]:
    argv = [cmd, "tools", "--tokens", "--json", "--workspace", str(workspace)]
    if config is not None:
        argv += ["--config", str(config)]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    data: dict[str, Any] = json.loads(out)
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_cmd = shutil.which("octos-tools") or str(Path(sys.executable).with_name("octos-tools"))
    parser.add_argument("--cmd", default=default_cmd)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        no_defer = Path(tmp) / "no-defer.json"
        no_defer.write_text('{"lifecycle": {"defer": false}}')
        rows = [
            ("default profile (deferral on)", measure(args.cmd, workspace, None)),
            ("lifecycle.defer = false", measure(args.cmd, workspace, no_defer)),
        ]
    print(f"tokenizer: {rows[0][1]['tokenizer']}")
    print(f"{'profile':34} {'registered':>10} {'visible':>8} {'deferred':>9} {'tokens':>7}")
    for label, data in rows:
        tools = data["tools"]
        visible = sum(1 for t in tools if t["state"] == "visible")
        deferred = sum(1 for t in tools if t["state"] == "deferred")
        print(
            f"{label:34} {len(tools):>10} {visible:>8} {deferred:>9} "
            f"{data['first_request_tokens']:>7}"
        )
    saved = rows[1][1]["first_request_tokens"] - rows[0][1]["first_request_tokens"]
    print(f"saved by deferral: {saved} tokens per request")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
