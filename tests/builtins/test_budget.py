"""Search under faults: time limits, directory/symlink swap races, paths over PATH_MAX."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from octos_tools.builtins import search
from octos_tools.builtins.search._budget import Budget, BudgetExceeded, run_in_thread
from octos_tools.builtins.search._hits import GrepQuery
from octos_tools.builtins.search._rg import grep_rg
from octos_tools.config import Config
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace

pytestmark = pytest.mark.anyio

ENGINES = ["rg", "python"]


def registry(ws: Workspace, *, timeout: float, engine: str | None = None) -> ToolRegistry:
    reg = ToolRegistry(workspace=ws)
    search.register(reg, ws, Config())
    for name in ("glob", "grep", "list_dir"):
        tool = reg.get(name)
        assert tool is not None
        tool.timeout = timeout
        if isinstance(tool, search.GrepTool):
            tool.engine = engine
    return reg


def cpu_seconds_over(wait: float) -> float:
    start = time.process_time()
    time.sleep(wait)
    return time.process_time() - start


def child_pids() -> set[int]:
    out: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        try:
            text = Path(f"/proc/self/task/{task}/children").read_text()
        except OSError:
            continue
        out |= {int(x) for x in text.split()}
    return out


# ------------------------------------------------------------------ time limits


async def test_a_stopped_budget_ends_its_thread_at_the_limit() -> None:
    ended = threading.Event()

    def spin(budget: Budget) -> None:
        try:
            while True:
                budget.check()
        finally:
            ended.set()

    t0 = time.monotonic()
    # the scope's timeout or the thread's own deadline check, whichever comes first
    with pytest.raises((TimeoutError, BudgetExceeded)):
        with anyio.fail_after(0.3):
            await run_in_thread(spin)
    assert time.monotonic() - t0 < 2.0
    assert await anyio.to_thread.run_sync(ended.wait, 2.0)


async def test_run_in_thread_passes_the_scope_deadline() -> None:
    with anyio.move_on_after(5.0):
        left = await run_in_thread(lambda b: b.remaining())
    assert left is not None and 3.0 < left <= 5.0
    assert await run_in_thread(lambda b: b.remaining()) is None


@pytest.mark.slow
async def test_python_grep_stops_a_runaway_regex_at_its_limit(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 40 + "b\n")
    ws = Workspace(tmp_path)
    reg = registry(ws, timeout=1.0, engine="python")
    before = child_pids()
    t0 = time.monotonic()
    res = await reg.execute("grep", {"pattern": "(a|a)+$"})
    took = time.monotonic() - t0
    assert res.error_kind is not None and res.error_kind.value == "timeout", res.output
    assert took < 3.0
    # the matching process is killed, and no worker thread keeps running
    deadline = time.monotonic() + 2.0
    while child_pids() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not child_pids() - before
    assert cpu_seconds_over(0.5) < 0.2
    # and the server stays usable: a plain search right after works
    res = await reg.execute("grep", {"pattern": "b$"})
    assert res.success and "a.txt:1:" in res.output


async def test_glob_with_many_double_stars_finishes_within_its_limit(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["a"] * 30)
    deep.mkdir(parents=True)
    (deep / "ab.txt").write_text("x")
    ws = Workspace(tmp_path)
    reg = registry(ws, timeout=5.0)
    res = await reg.execute("glob", {"pattern": "/".join(["**/a*"] * 9) + "/z"})
    assert res.success and "No files found" in res.output
    res = await reg.execute("glob", {"pattern": "/".join(["**/a*"] * 9)})
    assert res.success and "ab.txt" in res.output


async def test_a_hostile_gitignore_line_does_not_hang_the_walk(tmp_path: Path) -> None:
    # Python's re backtracks for minutes on this line against long names
    (tmp_path / ".gitignore").write_text("*a*a*a*a*a*a*a*a*a*b\n")
    for i in range(30):
        (tmp_path / ("a" * 200 + f"{i:02}")).write_text("x")
    ws = Workspace(tmp_path)
    reg = registry(ws, timeout=5.0)
    t0 = time.monotonic()
    res = await reg.execute("glob", {"pattern": "**/*", "limit": 100})
    assert time.monotonic() - t0 < 7.0
    assert res.success or (res.error_kind is not None and res.error_kind.value == "timeout")
    if res.success:
        assert res.structured_metadata is not None and res.structured_metadata["count"] == 31


def test_glob_walk_stops_when_its_budget_ends(tmp_path: Path) -> None:
    from octos_tools.builtins.search._glob_tool import _glob
    from octos_tools.builtins.search._globmatch import GlobMatcher

    for i in range(300):
        (tmp_path / f"f{i}.txt").write_text("x")
    ws = Workspace(tmp_path)
    budget = Budget(time.monotonic())
    with pytest.raises(BudgetExceeded):
        _glob(ws, GlobMatcher([["**", "*.txt"]]), 10_000, budget)


def test_rg_is_killed_when_the_budget_ends(tmp_path: Path) -> None:
    for i in range(50):
        (tmp_path / f"f{i}.txt").write_text("needle\n" * 100)
    ws = Workspace(tmp_path)
    rg = search.find_rg()
    assert rg is not None
    before = child_pids()
    q = GrepQuery("needle", False, 0, 10_000, None)
    budget = Budget(time.monotonic() - 1)
    with pytest.raises(BudgetExceeded):
        grep_rg(rg, ws, ".", False, q, budget)
    assert child_pids() <= before


# ------------------------------------------------------------------ races


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_metadata_never_answers_for_outside_files(tmp_path: Path, engine: str) -> None:
    root = tmp_path / "race"
    out = tmp_path / "race_out"
    (root / "d").mkdir(parents=True)
    out.mkdir()
    (root / "d" / "f.txt").write_text("needle inside\n")
    (out / "f.txt").write_text("needle TOPSECRET\n")
    (out / "secret.bin").write_bytes(b"needle\x00TOPSECRET\n")
    for i in range(40):
        (out / f"o{i:02}.txt").write_text("needle outside\n" * 3)
    ws = Workspace(root)
    reg = registry(ws, timeout=10.0, engine=engine)
    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        d, parked = root / "d", root / "parked"
        while not stop.is_set():
            os.rename(d, parked)
            os.symlink(out, d)
            time.sleep(0.0005)
            os.unlink(d)
            os.rename(parked, d)
            swaps += 1

    t = threading.Thread(target=swapper)
    t.start()
    calls = 0
    try:
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            res: ToolResult = await reg.execute("grep", {"pattern": "needle", "limit": 5})
            calls += 1
            assert "TOPSECRET" not in res.output and "outside" not in res.output
            meta: dict[str, Any] = res.structured_metadata or {}
            assert meta.get("binary_skipped", []) == [], meta
            assert meta.get("truncated") in (False, None), meta
            assert meta.get("matches", 0) <= 1, meta
            for item in meta.get("skipped", []):
                assert not item["path"].startswith("d/o"), meta
    finally:
        stop.set()
        t.join()
    assert swaps > 50 and calls > 3


# ------------------------------------------------------------------ long paths


def make_long_path(root: Path, levels: int = 18, leaf: str = "deep.txt") -> str:
    """A file ``leaf`` below ``levels`` folders of 250-byte names."""
    name = "d" * 250
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        f = os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(f, b"needle in a deep file\n")
        os.close(f)
    finally:
        os.close(fd)
    rel = "/".join([name] * levels + [leaf])
    assert len(rel.encode()) > 4096
    return rel


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("levels", "leaf"),
    [(18, "deep.txt"), (16, "f" * 240 + "deep.txt")],
    ids=["folder-too-long", "file-too-long"],
)
async def test_grep_finds_a_file_whose_path_is_over_4096_bytes(
    tmp_path: Path, engine: str, levels: int, leaf: str
) -> None:
    rel = make_long_path(tmp_path, levels, leaf)
    (tmp_path / "top.txt").write_text("needle at the top\n")
    ws = Workspace(tmp_path)
    reg = registry(ws, timeout=30.0, engine=engine)
    res = await reg.execute("grep", {"pattern": "needle"})
    assert res.success, res.output
    assert f"{rel}:1: needle in a deep file" in res.output
    assert "top.txt:1: needle at the top" in res.output
    assert res.structured_metadata is not None and res.structured_metadata["matches"] == 2
    res = await reg.execute("glob", {"pattern": "**/*deep.txt"})
    assert res.success and rel in res.output


def test_rg_error_lines_are_read() -> None:
    from octos_tools.builtins.search._rg import _errors

    long = "d" * 250 + "/" + "d" * 250
    err = (
        f"rg: ./{long}: File name too long (os error 36)\n"
        "rg: ./locked: Permission denied (os error 13)\n"
        "some other noise\n"
    )
    too_long, other = _errors(err)
    assert too_long == [long]
    assert other == [("locked", "Permission denied (os error 13)")]


async def test_rg_reports_what_it_cannot_read(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every folder")
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "x.txt").write_text("needle\n")
    (tmp_path / "locked").chmod(0)
    try:
        ws = Workspace(tmp_path)
        res = await registry(ws, timeout=10.0, engine="rg").execute("grep", {"pattern": "needle"})
        assert res.success and res.structured_metadata is not None
        assert [s["path"] for s in res.structured_metadata["skipped"]] == ["locked"]
        assert "[not searched: locked" in res.output
    finally:
        (tmp_path / "locked").chmod(0o755)


@pytest.mark.parametrize("engine", ENGINES)
async def test_unreadable_folders_are_named_not_dropped(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from octos_tools.builtins.search import _walk

    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "x.txt").write_text("needle\n")
    (tmp_path / "open.txt").write_text("needle\n")
    real_scan = _walk._scan

    def scan(fd: int) -> Any:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("/locked"):
            raise PermissionError(13, "Permission denied")
        return real_scan(fd)

    monkeypatch.setattr(_walk, "_scan", scan)
    ws = Workspace(tmp_path)
    reg = registry(ws, timeout=10.0, engine=engine)
    res = await reg.execute("glob", {"pattern": "**/*.txt"})
    assert res.success and "open.txt" in res.output
    assert "[folders not listed: locked/ (Permission denied)]" in res.output
    assert res.structured_metadata is not None
    assert res.structured_metadata["skipped"] == [{"path": "locked", "reason": "Permission denied"}]
    if engine == "python":
        res = await reg.execute("grep", {"pattern": "needle"})
        assert res.success and "open.txt:1:" in res.output
        assert "[not searched: locked (Permission denied)]" in res.output


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_plain_task_cancel_stops_the_search(tmp_path: Path, engine: str) -> None:
    """A host that times calls out by cancelling the task (no anyio deadline to read):
    the thread, rg and the matching process still stop right away."""
    import asyncio

    from octos_tools.context import ToolContext

    (tmp_path / "a.txt").write_text(("a" * 40 + "b\n") * 3)
    for i in range(2000):
        (tmp_path / f"f{i:04}.txt").write_text("x\n")
    ws = Workspace(tmp_path)
    tool = search.GrepTool(ws, Config())
    tool.engine = engine
    # rg finishes this quickly; the Python engine's child backtracks for minutes
    pattern = "(a|a)+$" if engine == "python" else "x"
    before = child_pids()
    task = asyncio.ensure_future(
        tool.execute_with_context(ToolContext(workspace=ws), {"pattern": pattern})
    )
    asyncio.get_running_loop().call_later(0.5, task.cancel)
    t0 = time.monotonic()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert time.monotonic() - t0 < 2.0
    deadline = time.monotonic() + 2.0
    while child_pids() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not child_pids() - before
    assert cpu_seconds_over(0.5) < 0.2
