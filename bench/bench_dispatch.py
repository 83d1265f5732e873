"""Dispatch overhead, side by side with the peers in one run (run by hand; figures go in
bench/README.md).

The tool is ``add(a: int, b: int) -> int`` (an async function) called with the raw
argument string ``'{"a":1,"b":2}'`` as a model sends it. Contenders, interleaved round by
round so that machine load hits each alike:

* ``octos session``: :meth:`octos_tools.session.ToolSession.call` (the path of every
  host: policy, deferral, size check, validation into the typed model, dispatch under the
  session's lock and timeout, output post-processing);
* ``octos session+id``: the same with a ``tool_call_id`` (as hosts call it: the call's
  context is a copy carrying the id; openai-agents gets its id in its ``ToolContext``);
* ``octos registry``: :meth:`octos_tools.registry.ToolRegistry.execute` (the default view);
* ``openai-agents``: ``FunctionTool.on_invoke_tool`` of ``agents.function_tool``;
* ``pydantic-ai``: ``ToolManager.handle_call`` over a ``FunctionToolset``;
* ``pydantic``: ``Args.model_validate_json`` + the call (the floor: no tool layer at all).

Each figure is the median over rounds of the mean µs per call of a round; the ratio to
openai-agents is also given as the median of the per-round ratios (each round's contenders
run back to back, so a burst of load hits them alike: the steadier figure on a shared
machine). The peers come
with the ``bench`` extra (``pip install -e '.[bench]'``); a missing peer is skipped. Also
printed: ``specs()`` cached vs rebuilt for 15 and 200 tools.

Usage: ``.venv/bin/python bench/bench_dispatch.py [--calls N] [--rounds R]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Awaitable, Callable

import anyio

from octos_tools import FunctionTool, ToolRegistry, ToolSession, tool

RAW = '{"a":1,"b":2}'

Call = Callable[[], Awaitable[object]]


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def octos_contenders() -> dict[str, Call]:
    registry = ToolRegistry()
    registry.register(tool(add))
    session = ToolSession(registry)

    async def via_session() -> object:
        return await session.call("add", RAW)

    async def via_session_with_id() -> object:  # as hosts call it: with the model's call id
        return await session.call("add", RAW, tool_call_id="call_1")

    async def via_registry() -> object:
        return await registry.execute("add", RAW)

    return {
        "octos session": via_session,
        "octos session+id": via_session_with_id,
        "octos registry": via_registry,
    }


async def peer_contenders() -> dict[str, Call]:
    found: dict[str, Call] = {}
    try:
        from agents import function_tool
        from agents.tool_context import ToolContext as AgentsToolContext
    except ImportError:
        print("openai-agents not installed: skipped")
    else:
        agents_tool = function_tool(add)
        agents_ctx = AgentsToolContext(
            context=None, tool_name="add", tool_call_id="call_1", tool_arguments=RAW
        )

        async def via_agents() -> object:
            return await agents_tool.on_invoke_tool(agents_ctx, RAW)

        found["openai-agents"] = via_agents
    try:
        from pydantic_ai import RunContext
        from pydantic_ai.messages import ToolCallPart
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.tool_manager import ToolManager
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai.usage import RunUsage
    except ImportError:
        print("pydantic-ai not installed: skipped")
    else:
        run_ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
        manager = await ToolManager(FunctionToolset([add])).for_run_step(run_ctx)
        part = ToolCallPart(tool_name="add", args=RAW, tool_call_id="call_1")

        async def via_pydantic_ai() -> object:
            return await manager.handle_call(part)

        found["pydantic-ai"] = via_pydantic_ai
    from pydantic import BaseModel

    class AddArgs(BaseModel):
        a: int
        b: int

    async def via_pydantic() -> object:
        args = AddArgs.model_validate_json(RAW)
        return await add(args.a, args.b)

    found["pydantic"] = via_pydantic
    return found


async def round_us(call: Call, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        await call()
    return (time.perf_counter() - t0) / calls * 1e6


async def dispatch_table(calls: int, rounds: int) -> None:
    contenders = {**octos_contenders(), **(await peer_contenders())}
    for call in contenders.values():  # warm-up: caches, lazy imports, code paths
        for _ in range(300):
            await call()
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, call in contenders.items():
            samples[name].append(await round_us(call, calls))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    peer = medians.get("openai-agents")
    peer_rounds = samples.get("openai-agents")
    print(f"add(a, b) from {RAW!r}: median of {rounds} rounds x {calls} calls")
    print(
        f"{'contender':<16} {'µs/call':>8} {'min':>7} {'max':>7} {'vs openai-agents':>17} "
        f"{'per-round ratio':>16}"
    )
    for name, median in medians.items():
        ratio = f"{median / peer:.2f}x" if peer else "-"
        per_round = "-"
        if peer_rounds:
            pairs = zip(samples[name], peer_rounds, strict=True)
            per_round = f"{statistics.median(a / b for a, b in pairs):.3f}x"
        print(
            f"{name:<16} {median:>8.2f} {min(samples[name]):>7.2f} "
            f"{max(samples[name]):>7.2f} {ratio:>17} {per_round:>16}"
        )


def specs_table() -> None:
    print(f"\n{'tools':>5} {'specs cached µs':>16} {'specs rebuilt µs':>17}")
    for n in (15, 200):
        registry = ToolRegistry()
        for i in range(n):
            registry.register(FunctionTool(add, name=f"add_{i}"))
        cached, rebuilt = [], []
        registry.specs()
        for i in range(500):
            t0 = time.perf_counter()
            registry.specs()
            cached.append(time.perf_counter() - t0)
            registry.set_context_filter(["x"] if i % 2 else None)  # a mutation: cache dropped
            t0 = time.perf_counter()
            registry.specs()
            rebuilt.append(time.perf_counter() - t0)
        print(
            f"{n:>5} {statistics.median(cached) * 1e6:>16.2f} "
            f"{statistics.median(rebuilt) * 1e6:>17.1f}"
        )


async def main(calls: int, rounds: int) -> None:
    await dispatch_table(calls, rounds)
    specs_table()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds (at least 3)")
    ns = parser.parse_args()
    anyio.run(main, ns.calls, max(3, ns.rounds))
