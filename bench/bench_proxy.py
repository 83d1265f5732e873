"""The egress proxy's own cost per request, side by side: this tree's proxy against another
tree's (``--baseline SRC``, e.g. a ``git archive`` of main), in alternating rounds.

Each round starts a worker process per tree (``PYTHONPATH`` = that tree's ``src``); the
worker starts an :class:`EgressProxy` loopback listener (the Landlock engine's) for a local
upstream, then measures from raw sockets:

* ``get``: one absolute-URI ``GET`` (head parsed, checked, forwarded, response relayed),
  a new connection each, median milliseconds;
* ``connect``: ``CONNECT`` to an echo server and one 4-byte round trip, median ms;
* ``get_cpu``, ``connect_cpu``: the CPU time of the whole worker (client, proxy and
  servers) per call, ms: less sensitive to a loaded machine than the wall time;
* ``download``: one plain-HTTP ``GET`` of a ``--mib`` MiB body, MiB/s;
* ``head``: checking and parsing one curl-like head, no I/O, microseconds (the old
  hand parser did less: it did not build the request to forward).

Run (figures go to bench/README.md)::

    git archive main src | tar -x -C /tmp/proxy-base
    PYTHONPATH=src python bench/bench_proxy.py --baseline /tmp/proxy-base/src
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path


def _upstream(body_mib: int) -> tuple[int, int]:
    """An HTTP server (``/big`` answers ``body_mib`` MiB, anything else ``ok``) and an echo
    server on loopback: their ports."""
    big = b"x" * (1 << 20)

    def http(conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            if data.startswith(b"GET /big "):
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (body_mib << 20))
                for _ in range(body_mib):
                    conn.sendall(big)
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    def echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    ports = []
    for handler in (http, echo):
        srv = socket.create_server(("127.0.0.1", 0), backlog=128)
        ports.append(srv.getsockname()[1])

        def serve(srv: socket.socket = srv, handler=handler) -> None:  # type: ignore[no-untyped-def]
            while True:
                conn, _ = srv.accept()
                threading.Thread(target=handler, args=(conn,), daemon=True).start()

        threading.Thread(target=serve, daemon=True).start()
    return ports[0], ports[1]


def _read_all(s: socket.socket) -> int:
    n = 0
    while chunk := s.recv(1 << 16):
        n += len(chunk)
    return n


def worker(calls: int, body_mib: int) -> dict[str, float]:
    """Measure this process's proxy (the ``octos_tools`` on ``PYTHONPATH``)."""
    from octos_tools.sandbox._egress import HostRules
    from octos_tools.sandbox._proxy import EgressProxy

    web, echo = _upstream(body_mib)
    proxy = EgressProxy()
    port = proxy.tcp_port(HostRules.parse([f"127.0.0.1:{web}", f"127.0.0.1:{echo}"]))
    get = f"GET http://127.0.0.1:{web}/ HTTP/1.1\r\nHost: x\r\nUser-Agent: bench\r\n\r\n".encode()
    connect = f"CONNECT 127.0.0.1:{echo} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    times: dict[str, list[float]] = {"get": [], "connect": []}
    cpu = {"get": 0.0, "connect": 0.0}
    for i in range(calls + 20):  # 20 warm-up calls
        c0 = time.process_time()
        t0 = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(get)
            _read_all(s)
        t1 = time.perf_counter()
        c1 = time.process_time()
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(connect)
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(4096)
            s.sendall(b"ping")
            s.recv(4)
        t2 = time.perf_counter()
        c2 = time.process_time()
        if i >= 20:
            cpu["get"] += (c1 - c0) / calls
            cpu["connect"] += (c2 - c1) / calls
            times["get"].append(t1 - t0)
            times["connect"].append(t2 - t1)
    big = f"GET http://127.0.0.1:{web}/big HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    t0 = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(big)
        got = _read_all(s)
    took = time.perf_counter() - t0
    proxy.close()
    assert got >= body_mib << 20, got
    return {
        "head": _head_cost(web),
        "get": statistics.median(times["get"]) * 1000,
        "connect": statistics.median(times["connect"]) * 1000,
        "get_cpu": cpu["get"] * 1000,
        "connect_cpu": cpu["connect"] * 1000,
        "download": body_mib / took,
    }


def _head_cost(web: int, count: int = 20000) -> float:
    """Microseconds to check and parse one curl-like request head (no I/O)."""
    head = (
        f"GET http://127.0.0.1:{web}/simple/pip/ HTTP/1.1\r\nHost: 127.0.0.1:{web}\r\n"
        "User-Agent: curl/8.5.0\r\nAccept: */*\r\nProxy-Connection: Keep-Alive\r\n\r\n"
    ).encode()
    try:  # this tree: h11 and the RFC 9112 checks
        from octos_tools.sandbox._proxy_http import check_head, origin_request, parse_request

        def parse() -> object:
            check_head(head)
            return origin_request(parse_request(head, b"")[1])
    except ImportError:  # before: the hand parser
        from octos_tools.sandbox import _proxy

        def parse() -> object:
            return _proxy._parse_head(head[:-4])  # type: ignore[attr-defined]

    start = time.perf_counter()
    for _ in range(count):
        parse()
    return (time.perf_counter() - start) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the other tree's src folder")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.calls, args.mib)))
        return
    ours = str(Path(__file__).resolve().parents[1] / "src")
    results: dict[str, list[dict[str, float]]] = {"baseline": [], "ours": []}
    for _ in range(args.rounds):
        for name, src in (("baseline", args.baseline), ("ours", ours)):
            argv = [sys.executable, __file__, "--worker", "--baseline", src]
            argv += ["--calls", str(args.calls), "--mib", str(args.mib)]
            env = {**os.environ, "PYTHONPATH": src}
            out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
            results[name].append(json.loads(out.stdout))
    print(f"load average {os.getloadavg()[0]:.2f}; {args.rounds} rounds, {args.calls} calls")
    print("| measure | baseline | ours | ours / baseline | per round |")
    print("|---|---:|---:|---:|---|")
    measures = [("head", "us"), ("get", "ms"), ("get_cpu", "ms"), ("connect", "ms")]
    measures += [("connect_cpu", "ms"), ("download", "MiB/s")]
    for key, unit in measures:
        base = statistics.median(r[key] for r in results["baseline"])
        mine = statistics.median(r[key] for r in results["ours"])
        rounds = ", ".join(
            f"{o[key] / b[key]:.2f}"
            for b, o in zip(results["baseline"], results["ours"], strict=True)
        )
        print(f"| {key} ({unit}) | {base:.2f} | {mine:.2f} | {mine / base:.2f}x | {rounds} |")


if __name__ == "__main__":
    main()
