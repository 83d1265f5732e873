"""check_workspace_contract (builtins/workspace_contract/): deliverables and validators of
.octos-workspace.toml, run for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from octos_tools.builtins.workspace_contract import CheckWorkspaceContractTool
from octos_tools.context import ToolContext
from octos_tools.errors import ToolError
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace

pytestmark = pytest.mark.anyio

CONTRACT = """
[[deliverables]]
path = "dist/*.html"

[[deliverables]]
path = "README.md"

[[validators]]
name = "passes"
command = "test -f README.md"

[[validators]]
name = "fails"
command = "echo some output; echo the last line >&2; exit 3"

[[validators]]
name = "slow"
command = "sleep 30"
timeout_secs = 1
"""


async def check(root: Path, **args: object) -> ToolResult:
    tool = CheckWorkspaceContractTool(Workspace(root))
    try:
        return await tool.execute_with_context(ToolContext(), dict(args))
    except ToolError as exc:
        return ToolResult.from_error(exc)


async def test_reports_missing_deliverables_and_failing_validators(tmp_path: Path) -> None:
    (tmp_path / ".octos-workspace.toml").write_text(CONTRACT)
    (tmp_path / "README.md").write_text("x\n")
    res = await check(tmp_path)
    assert res.success and res.structured_metadata["ready"] is False
    assert res.output.startswith("workspace: not ready")
    assert "MISSING deliverable dist/*.html" in res.output
    assert "ok deliverable README.md" in res.output and "ok validator passes" in res.output
    assert "FAILED validator fails (exit 3)" in res.output and "the last line" in res.output
    assert "FAILED validator slow (timed out)" in res.output
    only = await check(tmp_path, only_not_ready=True)
    assert "ok " not in only.output and "MISSING" in only.output


async def test_ready_in_a_project_subfolder(tmp_path: Path) -> None:
    proj = tmp_path / "site"
    (proj / "dist").mkdir(parents=True)
    (proj / "dist" / "index.html").write_text("<p>")
    (proj / ".octos-workspace.toml").write_text(
        '[[deliverables]]\npath = "dist/*.html"\n[[validators]]\nname = "t"\ncommand = "true"\n'
    )
    res = await check(tmp_path, project="site")
    assert res.success and res.structured_metadata["ready"] is True
    assert res.output.startswith("site: ready")


async def test_no_contract_or_a_bad_one(tmp_path: Path) -> None:
    res = await check(tmp_path)
    assert res.error_kind is not None and res.error_kind.value == "not_found"
    (tmp_path / ".octos-workspace.toml").write_text("[[deliverables]\n")
    res = await check(tmp_path)
    assert res.error_kind is not None and res.error_kind.value == "invalid_arguments"


async def test_a_deliverable_outside_the_project_never_counts(tmp_path: Path) -> None:
    proj = tmp_path / "p"
    proj.mkdir()
    (tmp_path / "secret.txt").write_text("s")
    (proj / ".octos-workspace.toml").write_text('[[deliverables]]\npath = "../secret.txt"\n')
    res = await check(tmp_path, project="p")
    assert res.structured_metadata["ready"] is False
