"""Dispatch overhead of the registry (run by hand; figures go in bench/README.md).

Measures:
* median microseconds per ``registry.execute`` of a no-op ``@tool`` called with a raw JSON
  string (policy, size check, parse, lookup, schema validation, dispatch, post-processing);
* ``specs()`` cached vs rebuilt (after a mutation), for 15 and 200 tools.

Usage: ``.venv/bin/python bench/bench_dispatch.py [--calls N]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import anyio

from octos_tools import ToolRegistry, tool


def make_registry(n: int) -> ToolRegistry:
    registry = ToolRegistry()
    for i in range(n):

        @tool(name=f"noop_{i}", description=f"Do nothing, variant {i}.")
        async def noop(text: str = "", count: int = 0) -> str:
            return ""

        registry.register(noop)
    return registry


def median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


async def bench_execute(registry: ToolRegistry, calls: int) -> float:
    raw = '{"text": "hello", "count": 3}'
    for _ in range(200):  # warm-up: schema compile cache, code paths
        await registry.execute("noop_0", raw)
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        await registry.execute("noop_0", raw)
        samples.append(time.perf_counter() - t0)
    return median_us(samples)


def bench_specs(registry: ToolRegistry, rounds: int) -> tuple[float, float]:
    registry.specs()
    cached = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        registry.specs()
        cached.append(time.perf_counter() - t0)
    rebuilt = []
    for i in range(rounds):
        registry.set_context_filter(["x"] if i % 2 else None)  # a mutation: cache dropped
        t0 = time.perf_counter()
        registry.specs()
        rebuilt.append(time.perf_counter() - t0)
    return median_us(cached), median_us(rebuilt)


async def main(calls: int) -> None:
    print(f"{'tools':>5} {'execute µs':>11} {'specs cached µs':>16} {'specs rebuilt µs':>17}")
    for n in (15, 200):
        registry = make_registry(n)
        execute = await bench_execute(registry, calls)
        cached, rebuilt = bench_specs(registry, 500)
        print(f"{n:>5} {execute:>11.1f} {cached:>16.2f} {rebuilt:>17.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="timed execute calls")
    args = parser.parse_args()
    anyio.run(main, args.calls)
