"""Benchmark: what a flood of half-open connections costs an authenticated client of
``octos-tools serve --transport http``, what the caps do, and the POST-body reader.

Three parts, each side by side in one run:

* **latency under a flood**: one server process (open-file limit 1,024, as a default
  Linux user has), a client that holds the token sends ``ping`` requests on its session
  while N half-open connections (a third of them slow-loris: a header block never ended)
  are held open; median and 95th-percentile latency per N, as a ratio to N = 0;
* **over the caps**: after each flood, how many of the N connections the server still
  holds (the gate closes the oldest unauthenticated ones over its cap of 256, and every
  one after its 10 s deadline);
* **the POST-body reader** (``--baseline OLD/src``): the ASGI stack that keeps a POST body
  for the id recovery and the disconnect cancel, ours (``mcp/request_body.py``, one reader)
  against the baseline's (``mcp/disconnect.py`` and ``mcp/rpc_errors.py``, a reader each),
  in-process on the same fake app, ABBA-alternated; calls per second and their ratio.

Run::

    PYTHONPATH=src .venv/bin/python bench/bench_connections.py [--floods 0,100,500,1100,2000]
        [--pings 50] [--baseline /path/to/old/src] [--posts 20000]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import resource
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.mcp.http_serve import start_http  # noqa: E402

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}


def _limit_files(n: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


def _flood(port: int, n: int) -> list[socket.socket]:
    held = []
    for i in range(n):
        s = socket.socket()
        s.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            s.connect(("127.0.0.1", port))
        if i % 3 == 0:
            with contextlib.suppress(OSError):
                s.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        held.append(s)
    return held


def _still_open(socks: list[socket.socket]) -> int:
    alive = 0
    for s in socks:
        try:
            alive += s.recv(1) != b""
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    return alive


def latency_under_floods(floods: list[int], pings: int) -> list[dict[str, float]]:
    need = max(floods) + 200
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    with tempfile.TemporaryDirectory() as ws:
        served = start_http(
            [sys.executable, "-m", "octos_tools", "serve", "-w", ws, "-t", "http", "-p", "0"],
            preexec_fn=lambda: _limit_files(1024),
        )
        port = int(served.url.rsplit(":", 1)[1].split("/")[0])
        rows = []
        try:
            for n in floods:
                socks = _flood(port, n)
                time.sleep(0.5)  # accepted by now
                times = []
                with httpx.Client(timeout=30) as http:
                    init = http.post(served.url, json=INIT, headers={**HEADERS, **served.auth})
                    session = {
                        **HEADERS,
                        **served.auth,
                        "mcp-session-id": init.headers["mcp-session-id"],
                        "mcp-protocol-version": "2025-06-18",
                    }
                    for i in range(pings):
                        began = time.perf_counter()
                        answer = http.post(
                            served.url,
                            json={"jsonrpc": "2.0", "id": 100 + i, "method": "ping"},
                            headers=session,
                        )
                        times.append(time.perf_counter() - began)
                        assert answer.status_code == 200, answer.text
                held = _still_open(socks)
                times.sort()
                rows.append(
                    {
                        "flood": n,
                        "median_ms": statistics.median(times) * 1000,
                        "p95_ms": times[int(len(times) * 0.95) - 1] * 1000,
                        "held": held,
                    }
                )
                for s in socks:
                    s.close()
                time.sleep(0.5)
        finally:
            served.proc.terminate()
            served.proc.wait(30)
    return rows


# ------------------------------------------------------------------ the POST-body reader


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


async def _inner_app(scope: Any, receive: Any, send: Any) -> None:
    """What the SDK does with a POST, reduced: read the whole body, answer 200 JSON."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    answer = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": answer})


def _stacks(baseline: Path) -> dict[str, Any]:
    from octos_tools.mcp.disconnect import CancelOnDisconnect
    from octos_tools.mcp.request_body import KeepBody
    from octos_tools.mcp.rpc_errors import RecoverIds

    limit = 4 * 1024 * 1024
    old_rpc = _load(baseline / "octos_tools/mcp/rpc_errors.py", "old_rpc_errors")
    old_disc = _load(baseline / "octos_tools/mcp/disconnect.py", "old_disconnect")
    return {
        "ours": KeepBody(CancelOnDisconnect(RecoverIds(_inner_app)), limit),
        "baseline": old_disc.CancelOnDisconnect(old_rpc.RecoverIds(_inner_app, limit), limit),
    }


async def _posts(app: Any, n: int, body: bytes) -> float:
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": []}

    async def discard(_message: Any) -> None:
        return None

    class Receive:
        def __init__(self) -> None:
            self.sent = False

        async def __call__(self) -> Any:
            if self.sent:
                await anyio.sleep_forever()
            self.sent = True
            return {"type": "http.request", "body": body, "more_body": False}

    began = time.perf_counter()
    for _ in range(n):
        await app(scope, Receive(), discard)
    return n / (time.perf_counter() - began)


def body_reader(baseline: Path, posts: int) -> dict[str, float]:
    stacks = _stacks(baseline)
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "x" * 2000}},
        }
    ).encode()
    rates: dict[str, list[float]] = {"ours": [], "baseline": []}
    batch = max(1, posts // 20)

    async def run() -> None:
        await _posts(stacks["ours"], batch, body)  # warm-up
        await _posts(stacks["baseline"], batch, body)
        for pair in range(10):
            order = ["ours", "baseline"] if pair % 2 == 0 else ["baseline", "ours"]
            for name in order + order[::-1]:
                rates[name].append(await _posts(stacks[name], batch, body))

    anyio.run(run)
    ours, base = statistics.median(rates["ours"]), statistics.median(rates["baseline"])
    return {"ours_per_s": ours, "baseline_per_s": base, "ratio": ours / base}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--floods", default="0,100,500,1100,2000")
    parser.add_argument("--pings", type=int, default=50)
    parser.add_argument("--baseline", type=Path, help="an older src/ for the body reader")
    parser.add_argument("--posts", type=int, default=20000)
    parser.add_argument("--skip-floods", action="store_true")
    args = parser.parse_args()
    if not args.skip_floods:
        rows = latency_under_floods([int(n) for n in args.floods.split(",")], args.pings)
        base = rows[0]
        print("half-open  ping median  p95      ratio(median)  held by the server")
        for row in rows:
            print(
                f"{row['flood']:>9}  {row['median_ms']:8.2f} ms {row['p95_ms']:6.2f} ms"
                f"  {row['median_ms'] / base['median_ms']:10.2f}x    "
                f"{row['held']:.0f} of {row['flood']}"
            )
    if args.baseline is not None:
        figures = body_reader(args.baseline, args.posts)
        print(
            f"POST-body reader: ours {figures['ours_per_s']:,.0f}/s, baseline "
            f"{figures['baseline_per_s']:,.0f}/s, ratio {figures['ratio']:.2f}x"
        )


if __name__ == "__main__":
    main()
