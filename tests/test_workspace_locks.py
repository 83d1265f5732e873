"""Cross-process writer locks (octos_tools.workspace._locks): no lost update.

Real processes (``octos-tools call``) edit one file at once; every edit that reports success
must be on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from octos_tools.workspace import Workspace
from octos_tools.workspace._locks import LOCK_SLOTS, lock_slots

N = 20


def _call(ws: Path, tool: str, args: dict[str, object]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "octos_tools", "call", "--json", "-w", str(ws), tool],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    ), json.dumps(args)


def _run_all(calls: list[tuple[subprocess.Popen[str], str]]) -> list[dict[str, object]]:
    results = []
    for proc, payload in calls:
        assert proc.stdin is not None
        proc.stdin.write(payload)
        proc.stdin.close()
    for proc, _ in calls:
        out = proc.stdout.read() if proc.stdout else ""
        proc.wait(timeout=120)
        results.append(json.loads(out))
    return results


@pytest.mark.slow
def test_twenty_processes_editing_one_file_lose_nothing(tmp_path: Path) -> None:
    target = tmp_path / "counter.txt"
    target.write_text("".join(f"line {i} = 0\n" for i in range(N)))
    calls = [
        _call(
            tmp_path,
            "edit_file",
            {"path": "counter.txt", "old_string": f"line {i} = 0", "new_string": f"line {i} = 1"},
        )
        for i in range(N)
    ]
    results = _run_all(calls)
    ok = [r for r in results if r["success"]]
    assert len(ok) == N, [r for r in results if not r["success"]]
    assert target.read_text() == "".join(f"line {i} = 1\n" for i in range(N))


@pytest.mark.slow
def test_mixed_apply_patch_and_edit_file_processes_lose_nothing(tmp_path: Path) -> None:
    target = tmp_path / "mixed.txt"
    target.write_text("".join(f"item {i}\n" for i in range(N)))
    calls = []
    for i in range(N):
        if i % 2:
            args: dict[str, object] = {
                "path": "mixed.txt",
                "old_string": f"item {i}\n",
                "new_string": f"item {i} edited\n",
            }
            calls.append(_call(tmp_path, "edit_file", args))
        else:
            patch = (
                "*** Begin Patch\n*** Update File: mixed.txt\n@@\n"
                f"-item {i}\n+item {i} patched\n*** End Patch\n"
            )
            calls.append(_call(tmp_path, "apply_patch", {"patch": patch}))
    results = _run_all(calls)
    assert all(r["success"] for r in results), [r for r in results if not r["success"]]
    want = "".join(f"item {i} {'edited' if i % 2 else 'patched'}\n" for i in range(N))
    assert target.read_text() == want


def test_slots_are_sorted_distinct_and_bounded() -> None:
    slots = lock_slots(["b", "a", "a", "c/d"])
    assert slots == sorted(set(slots))
    assert all(0 <= s < LOCK_SLOTS for s in slots)


def test_a_held_lock_excludes_another_thread_until_released(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    order: list[str] = []
    with ws.lock_paths(["x.txt"]) as held:
        assert held
        with ws.lock_paths(["x.txt"], blocking=False) as other:
            assert other is False  # another descriptor: busy, even in this process

        def waiter() -> None:
            with ws.lock_paths(["x.txt"]):
                order.append("waiter")

        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.2)
        order.append("holder done")
    t.join(5)
    assert order == ["holder done", "waiter"]


def test_two_multi_file_lockers_in_opposite_order_do_not_deadlock(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    names = [f"f{i}" for i in range(30)]
    done: list[int] = []

    def worker(k: int, paths: list[str]) -> None:
        for _ in range(50):
            with ws.lock_paths(paths):
                pass
        done.append(k)

    threads = [
        threading.Thread(target=worker, args=(0, names)),
        threading.Thread(target=worker, args=(1, list(reversed(names)))),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert sorted(done) == [0, 1]
