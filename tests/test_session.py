"""ToolSession: tick → auto_evict → specs before each request; the batch after."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from octos_tools.context import ToolContext
from octos_tools.execution import ToolCall
from octos_tools.lifecycle import ToolLifecycle
from octos_tools.registry import ToolRegistry
from octos_tools.session import ToolSession
from octos_tools.tool_types import ToolResult

from .helpers import EchoTool


def _registry(count: int = 6, max_active: int = 3, idle: int = 2) -> ToolRegistry:
    registry = ToolRegistry(lifecycle=ToolLifecycle(max_active, idle, ["t0"]))
    for i in range(count):
        registry.register(EchoTool(f"t{i}"))
    return registry


def test_before_model_request_ticks_evicts_and_reports_change() -> None:
    registry = _registry()
    session = ToolSession(registry)
    first = session.before_model_request()
    assert [s.name for s in first] == [f"t{i}" for i in range(6)]
    assert session.changed and session.evicted == []
    assert session.lifecycle.iteration == 1
    assert registry.lifecycle.iteration == 0  # the session's LRU is its own
    second = session.before_model_request()  # idle 2 >= threshold: evict down to 3
    assert session.evicted == ["t1", "t2", "t3"]
    assert session.changed
    assert [s.name for s in second] == ["t0", "t4", "t5"]
    session.before_model_request()
    assert not session.changed and session.evicted == []
    assert session.requests == 3


@pytest.mark.anyio
async def test_changes_made_by_tool_calls_are_seen_at_the_next_request() -> None:
    registry = _registry()
    session = ToolSession(registry)
    session.before_model_request()
    session.before_model_request()
    assert session.is_deferred("t1")
    assert not registry.is_deferred("t1")  # evicted in this session only
    assert not session.specs_changed()
    results = await session.after_tool_calls([ToolCall("c1", "t1", '{"text": "hi"}')])
    assert [r.output for r in results] == ["hi"]
    assert session.specs_changed()  # t1 came back on use
    specs = session.before_model_request()
    assert session.changed
    assert "t1" in [s.name for s in specs]


@pytest.mark.anyio
async def test_calls_use_the_session_context() -> None:
    seen: list[str | None] = []

    class Probe(EchoTool):
        async def execute_with_context(self, ctx: ToolContext, args: dict[str, object]):  # type: ignore[no-untyped-def,override]
            seen.append(ctx.session_key)
            seen.append(ctx.tool_call_id)
            return await super().execute_with_context(ctx, args)

    registry = ToolRegistry()
    registry.register(Probe("probe"))
    session = ToolSession(registry, ToolContext(session_key="abc"))
    await session.after_tool_calls([ToolCall("call-1", "probe", "{}")])
    await session.call("probe", {}, tool_call_id="call-2")
    assert seen == ["abc", "call-1", "abc", "call-2"]
    await session.aclose()


def test_default_context_takes_the_registry_session_key() -> None:
    registry = ToolRegistry(session_key="k")
    session = ToolSession(registry)
    assert session.ctx.session_key == "k"
    assert session.ctx.registry is registry


# ---------------------------------------------------------------- per-session views


def _deferred_registry() -> ToolRegistry:
    registry = ToolRegistry()
    for name in ("read_file", "exec_command", "write_stdin", "web_fetch", "web_search"):
        registry.register(EchoTool(name))
    registry.defer_group("group:runtime")
    registry.defer_group("group:web")
    return registry


@pytest.mark.anyio
async def test_sessions_over_one_registry_keep_their_own_activations() -> None:
    registry = _deferred_registry()
    a, b = ToolSession(registry), ToolSession(registry)
    assert a.specs() == b.specs() == registry.specs()
    assert a.activate("group:web") == ["web_search", "web_fetch"]  # group order
    assert "web_fetch" in a.visible_names()
    assert "web_fetch" not in b.visible_names() and b.is_deferred("web_fetch")
    assert registry.is_deferred("web_fetch")  # the default view did not change either
    # A deferred tool called by name is activated in the calling session only.
    result = await b.call("exec_command", {"text": "hi"})
    assert result.success and result.output == "hi"
    assert "exec_command" in b.visible_names() and "write_stdin" in b.visible_names()
    assert a.is_deferred("exec_command") and registry.is_deferred("exec_command")
    assert b.deferred_names() == ["web_fetch", "web_search"]
    # A new session starts from the configured defaults.
    configured = {"exec_command", "write_stdin", "web_fetch", "web_search"}
    assert registry.configured_deferred() == configured
    assert ToolSession(registry).deferred_names() == sorted(configured)


def test_specs_is_a_pure_read() -> None:
    registry = _registry(count=6, max_active=3, idle=1)
    session = ToolSession(registry)
    first = session.specs()
    for _ in range(10):
        assert session.specs() is first
    assert session.lifecycle.iteration == 0 and session.evicted == []
    assert session.deferred_names() == []


def test_no_eviction_when_the_session_says_so() -> None:
    registry = _registry(count=6, max_active=3, idle=1)
    session = ToolSession(registry, evict=False)
    for _ in range(5):
        specs = session.before_model_request()
    assert len(specs) == 6 and session.evicted == [] and session.deferred_names() == []
    evicting = ToolSession(registry)
    evicting.before_model_request()
    evicting.before_model_request()
    assert len(evicting.specs()) == 3
    assert len(session.specs()) == 6  # the other session's eviction is not seen here


def test_hide_leaves_a_tool_out_of_one_session_only() -> None:
    registry = _registry(count=3)
    a, b = ToolSession(registry), ToolSession(registry)
    a.hide(["t1"])
    assert a.visible_names() == ["t0", "t2"]
    assert b.visible_names() == ["t0", "t1", "t2"]
    assert {e.name: e.state for e in a.catalog()}["t1"] == "hidden"
    assert "t1" not in a.view.active_names()


def test_listeners_are_per_session_and_hear_registry_mutations() -> None:
    registry = _deferred_registry()
    a, b = ToolSession(registry), ToolSession(registry)
    heard: list[str] = []
    a.add_listener(lambda s: heard.append("a"))
    b.add_listener(lambda s: heard.append("b"))
    registry_heard: list[int] = []
    registry.add_listener(lambda r: registry_heard.append(r.version))
    a.activate(["group:web"])
    assert heard == ["a"] and registry_heard == []
    registry.register(EchoTool("later"))
    assert sorted(heard) == ["a", "a", "b"] and len(registry_heard) == 1
    assert "later" in a.visible_names() and "later" in b.visible_names()


def test_configured_deferral_after_a_session_starts_applies_unless_activated() -> None:
    registry = _deferred_registry()
    session = ToolSession(registry)
    session.activate("web_fetch")
    registry.defer(["read_file", "web_fetch"])
    assert session.is_deferred("read_file")
    assert not session.is_deferred("web_fetch")  # the session's activation stands
    assert registry.is_deferred("web_fetch")


@pytest.mark.anyio
async def test_calls_carry_the_session_and_closing_keeps_shared_tools() -> None:
    closed: list[str] = []
    sessions: list[object] = []
    ended: list[object] = []

    class Closing(EchoTool):
        async def execute_with_context(self, ctx: ToolContext, args: dict[str, object]):  # type: ignore[no-untyped-def,override]
            sessions.append(ctx.session)
            return await super().execute_with_context(ctx, args)

        async def aclose(self) -> None:
            closed.append(self.name)

        async def session_closed(self, session: object) -> None:
            ended.append(session)
            raise RuntimeError("a hook that fails must not stop the others")

    registry = ToolRegistry()
    registry.register(Closing("c"))
    shared = ToolSession(registry)
    await shared.call("c", {})
    await registry.execute("c", {})
    assert sessions == [shared, registry.default_session]  # the conveniences run in a session
    await shared.aclose()
    assert closed == []  # other sessions may still use the registry's tools
    assert ended == [shared]  # but what this session started is released
    await shared.aclose()
    assert ended == [shared]  # idempotent
    assert (await ToolSession(registry).call("c", {"text": "still"})).output == "still"
    async with ToolSession(registry, owns_registry=True) as owner:
        await owner.call("c", {})
    assert closed == ["c"]


# ---------------------------------------------------------------- one concurrency rule


class _FilesWriter(EchoTool):
    """Exclusive: rewrites every file, one at a time, yielding between files."""

    def __init__(self, root: Path) -> None:
        super().__init__("write_all", exclusive=True)
        self.root = root
        self.running = False

    async def execute(self, args: dict[str, object]) -> ToolResult:
        self.running = True
        try:
            for path in sorted(self.root.iterdir()):
                await anyio.sleep(0.02)
                path.write_text(str(args["text"]))
        finally:
            self.running = False
        return ToolResult.ok("written")


class _FileReader(EchoTool):
    """Safe: the content of one file, read after a pause."""

    def __init__(self, root: Path) -> None:
        super().__init__("read_one")
        self.root = root

    async def execute(self, args: dict[str, object]) -> ToolResult:
        await anyio.sleep(0.001)
        return ToolResult.ok((self.root / str(args["text"])).read_text())


@pytest.mark.anyio
async def test_an_exclusive_call_runs_alone_against_batches_and_concurrent_calls(
    tmp_path: Path,
) -> None:
    for i in range(5):
        (tmp_path / f"f{i}").write_text("old")
    writer, reader = _FilesWriter(tmp_path), _FileReader(tmp_path)
    registry = ToolRegistry()
    registry.register(writer)
    registry.register(reader)
    session = ToolSession(registry)
    batch = [ToolCall(f"r{i}", "read_one", {"text": f"f{i}"}) for i in range(5)]
    seen_batches: list[set[str]] = []
    seen_single: list[str] = []
    issued_while_writing = 0
    writes_done = anyio.Event()
    write_pending = False  # between the first write's call and the second write's answer

    async def read_batches() -> None:
        nonlocal issued_while_writing
        rounds = 0
        # keep reading until both writes are over (at least 30 rounds), so that under any
        # load some batches are issued while the writer runs
        while (rounds < 30 or not writes_done.is_set()) and rounds < 2000:
            rounds += 1
            issued_while_writing += write_pending
            results = await session.after_tool_calls(batch)
            seen_batches.append({r.output for r in results})
            await anyio.sleep(0.002)

    async def read_single() -> None:
        for _ in range(30):
            seen_single.append((await session.call("read_one", {"text": "f4"})).output)
            await anyio.sleep(0.001)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_batches)
            tg.start_soon(read_single)
            await anyio.sleep(0.01)
            write_pending = True
            result = await session.call("write_all", {"text": "new"})
            assert result.success
            # a second writer through a batch of its own: also alone
            await session.after_tool_calls([ToolCall("w", "write_all", {"text": "newer"})])
            write_pending = False
            writes_done.set()
    assert issued_while_writing > 0  # the readers really raced the writer
    assert all(len(outputs) == 1 for outputs in seen_batches), seen_batches
    assert {"old", "new", "newer"} >= {o for outputs in seen_batches for o in outputs}
    assert set(seen_single) <= {"old", "new", "newer"}


@pytest.mark.anyio
async def test_safe_calls_of_a_session_run_together() -> None:
    both = anyio.Event()
    started = 0

    class Meeting(EchoTool):
        async def execute(self, args: dict[str, object]) -> ToolResult:
            nonlocal started
            started += 1
            if started == 2:
                both.set()
            await both.wait()  # a serialised second call would never start
            return ToolResult.ok("met")

    registry = ToolRegistry()
    registry.register(Meeting("meet"))
    session = ToolSession(registry)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.call, "meet", {})
            tg.start_soon(session.call, "meet", {})


@pytest.mark.anyio
async def test_reads_during_a_multi_file_apply_patch_see_one_state(tmp_path: Path) -> None:
    from octos_tools.profile import build_registry

    names = [f"m{i}.txt" for i in range(6)]
    for name in names:
        (tmp_path / name).write_text("old line\n" * 2000)
    registry = build_registry(workspace=tmp_path)
    session = ToolSession(registry)
    patch = "*** Begin Patch\n"
    for name in names:
        patch += f"*** Update File: {name}\n@@\n-old line\n+new line\n"
    patch += "*** End Patch\n"
    reads = [ToolCall(f"r{i}", "read_file", {"path": n}) for i, n in enumerate(names)]
    states: list[set[str]] = []

    async def reader() -> None:
        for _ in range(6):
            results = await session.after_tool_calls(reads)
            assert all(r.success for r in results), [r.output[:200] for r in results]
            states.append({"new" if "new line" in r.output else "old" for r in results})

    try:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(reader)
                tg.start_soon(reader)
                result = await session.call("apply_patch", {"patch": patch})
                assert result.success, result.output
    finally:
        await registry.aclose()
    assert all((tmp_path / n).read_text().startswith("new line\n") for n in names)
    assert states and all(len(state) == 1 for state in states), states


def test_a_session_without_state_of_its_own_shares_the_default_list() -> None:
    registry = _deferred_registry()
    fresh = [ToolSession(registry) for _ in range(3)]
    assert all(s.specs() is registry.specs() for s in fresh)
    fresh[0].activate("web_fetch")
    assert fresh[0].specs() is not registry.specs()
    assert "web_fetch" in fresh[0].visible_names()
    assert fresh[1].specs() is registry.specs()
