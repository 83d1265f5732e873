"""ToolLifecycle: the seed's LRU (§6.2.4) and its three design choices."""

from __future__ import annotations

import pytest

from octos_tools.lifecycle import ToolLifecycle


def test_no_eviction_within_limit() -> None:
    lc = ToolLifecycle(max_active=100)
    for _ in range(10):
        lc.tick()
    assert lc.find_evictable([f"t{i}" for i in range(50)]) == []


def test_base_tools_never_evicted_even_if_they_fill_every_slot() -> None:
    lc = ToolLifecycle(max_active=2, idle_threshold=1, base_tools=["a", "b", "c"])
    for _ in range(5):
        lc.tick()
    assert lc.find_evictable(["a", "b", "c"]) == []
    assert lc.find_evictable(["a", "b", "c", "d"]) == ["d"]


def test_idle_threshold_prevents_thrashing() -> None:
    lc = ToolLifecycle(max_active=1, idle_threshold=5)
    lc.tick()
    lc.record_use("x")
    for _ in range(3):
        lc.tick()
    # y never used: idle 4 < 5, x idle 3 < 5: nothing evictable yet
    assert lc.find_evictable(["x", "y"]) == []
    lc.tick()  # y idle 5 now
    assert lc.find_evictable(["x", "y"]) == ["y"]


def test_only_the_excess_is_evicted_stalest_first() -> None:
    lc = ToolLifecycle(max_active=3, idle_threshold=2)
    for name in ("a", "b", "c", "d", "e"):
        lc.record_use(name)
    lc.tick()
    lc.record_use("d")  # d used at 1
    lc.tick()
    lc.tick()
    lc.tick()
    lc.tick()
    lc.record_use("e")  # e used at 5
    lc.tick()
    lc.tick()
    lc.tick()
    # a,b,c last used 0; d at 1; e at 5 (idle 3). Excess is 2: stalest two of a,b,c.
    assert lc.find_evictable(["a", "b", "c", "d", "e"]) == ["a", "b"]


def test_seed_flow_max3_idle2() -> None:
    """The seed's eviction flow with max 3 / idle 2 and base read/write."""
    lc = ToolLifecycle(max_active=3, idle_threshold=2, base_tools=["read_file", "write_file"])
    active = ["read_file", "write_file", "shell", "glob", "grep", "web_fetch"]
    lc.tick()
    lc.record_use("shell")
    assert lc.find_evictable(active) == []  # nobody idle long enough
    lc.tick()
    lc.tick()
    evicted = lc.find_evictable(active)
    # excess 3; candidates: glob, grep, web_fetch (idle 3) and shell (idle 2, used later)
    assert evicted == ["glob", "grep", "web_fetch"]
    assert "read_file" not in evicted and "write_file" not in evicted


def test_recently_used_survives() -> None:
    lc = ToolLifecycle(max_active=2, idle_threshold=2)
    for _ in range(4):
        lc.tick()
    lc.record_use("shell")
    assert lc.find_evictable(["shell", "a", "b"]) == ["a"]


def test_bad_settings() -> None:
    with pytest.raises(ValueError):
        ToolLifecycle(max_active=0)
    with pytest.raises(ValueError):
        ToolLifecycle(idle_threshold=0)
