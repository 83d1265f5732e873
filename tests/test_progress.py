"""Progress heartbeats of long built-in calls (octos_tools._progress)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest


@pytest.mark.anyio
async def test_a_long_command_reports_progress_while_it_runs(tmp_path: Path) -> None:
    from octos_tools import _progress
    from octos_tools.context import ToolContext
    from octos_tools.profile import build_registry

    reports: list[tuple[float, float | None, str | None]] = []

    async def reporter(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    saved = _progress.INTERVAL
    registry = build_registry(None, tmp_path)
    try:
        _progress.INTERVAL = 0.2
        ctx = ToolContext(progress=reporter)
        result = await registry.execute("shell", {"command": "sleep 1; echo done"}, ctx)
        assert result.success and "done" in result.output
        assert len(reports) >= 2
        assert [p for p, _t, _m in reports] == sorted(p for p, _t, _m in reports)
        assert all(m and m.startswith("running: sleep 1") for _p, _t, m in reports)
        quick = len(reports)
        await registry.execute("grep", {"pattern": "x"}, ctx)
        assert len(reports) == quick  # a quick call sends none
    finally:
        _progress.INTERVAL = saved
        await registry.aclose()


@pytest.mark.anyio
async def test_exec_command_reports_progress_during_its_yield(tmp_path: Path) -> None:
    """The listed command tool: its default call waits up to 10 s for the command, and a host
    that asked for progress hears a heartbeat meanwhile, whether the command ends within the
    yield or becomes a session."""
    from octos_tools import _progress
    from octos_tools.context import ToolContext
    from octos_tools.profile import build_registry

    reports: list[tuple[float, float | None, str | None]] = []

    async def reporter(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    saved = _progress.INTERVAL
    registry = build_registry(None, tmp_path)
    try:
        _progress.INTERVAL = 0.2
        ctx = ToolContext(progress=reporter)
        result = await registry.execute("exec_command", {"cmd": "sleep 1; echo done"}, ctx)
        assert result.success and "done" in result.output
        assert len(reports) >= 2
        assert all(m and m.startswith("running: sleep 1") for _p, _t, m in reports)
        reports.clear()
        yielded = await registry.execute(
            "exec_command", {"cmd": "sleep 5", "yield_time_ms": 1000}, ctx
        )
        assert yielded.success and yielded.structured_metadata["running"] is True
        assert len(reports) >= 2
        count = len(reports)
        await anyio.sleep(0.5)
        assert len(reports) == count  # the heartbeat ends with the call, not the command
    finally:
        _progress.INTERVAL = saved
        await registry.aclose()
