"""The git guard in the background (octos_tools.sandbox._guard_ticker): a hook planted in
a real repository is put back by the ticker's thread alone, the thread ends when nothing
is registered, and ticks space out when a round is slow."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from octos_tools.sandbox._git_guard import GitGuard
from octos_tools.sandbox._guard_ticker import GuardTicker


def _repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True, env={**os.environ, "HOME": str(ws)})
    return ws


def _wait(condition: Callable[[], bool], secs: float = 10.0) -> None:
    deadline = time.monotonic() + secs
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_tick_undoes_a_hook_and_keeps_its_line_for_the_next_check(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    watch = GitGuard([os.path.realpath(ws)], quarantine=str(tmp_path / "q")).watch()
    ticker = GuardTicker(period=0.05)
    handle = ticker.add(watch)
    hook = ws / ".git/hooks/post-checkout"
    hook.write_text("#!/bin/sh\ntouch /tmp/pwned\n")
    _wait(lambda: not hook.exists())
    lines = watch.check()  # the tick's line, handed out once
    assert len(lines) == 1 and f"{hook}: a git hook" in lines[0]
    assert watch.check() == []
    ticker.remove(handle)
    _wait(lambda: ticker._thread is None)
    assert len(ticker) == 0


def test_slow_rounds_space_the_ticks_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _repo(tmp_path)
    watch = GitGuard([os.path.realpath(ws)], quarantine=str(tmp_path / "q")).watch()
    real_tick = watch.tick

    def slow() -> list[str]:
        time.sleep(0.05)  # a round as slow as a check of a very big tree
        return real_tick()

    monkeypatch.setattr(watch, "tick", slow)
    ticker = GuardTicker(period=0.01, share=0.1)
    handle = ticker.add(watch)
    _wait(lambda: ticker.ticks >= 1)
    assert ticker.last_wait >= 0.05 * 9 * 0.9  # 10% of a core: 9 times the round's time
    ticker.remove(handle)
