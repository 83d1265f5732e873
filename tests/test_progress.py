"""Progress heartbeats of long built-in calls (octos_tools._progress)."""

from __future__ import annotations

from pathlib import Path

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
