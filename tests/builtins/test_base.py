"""The shared base of the workspace-bound built-ins and the argument readers."""

from __future__ import annotations

from pathlib import Path

import pytest

from octos_tools.builtins._base import WorkspaceTool, int_arg, str_arg
from octos_tools.builtins.code_structure import CodeStructureTool
from octos_tools.builtins.files import ReadFileTool
from octos_tools.builtins.patch import ApplyPatchTool
from octos_tools.builtins.runtime import ExecCommandTool, SessionManager, ShellTool
from octos_tools.builtins.search import GlobTool, GrepTool, ListDirTool
from octos_tools.builtins.vcs import GitTool
from octos_tools.config import ShellConfig
from octos_tools.context import ToolContext, use_context
from octos_tools.errors import ErrorKind, ToolError
from octos_tools.tool_types import JSONObject, ToolResult
from octos_tools.workspace import Workspace

pytestmark = pytest.mark.anyio


class _Echo(WorkspaceTool):
    name = "echo_root"

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        return ToolResult.ok(str(self.workspace_for(ctx).root))


def test_the_workspace_bound_builtins_share_the_base(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    shell = ShellConfig()
    tools = [
        CodeStructureTool(ws),
        GitTool(ws),
        ApplyPatchTool(ws),
        ReadFileTool(ws),
        ListDirTool(ws),
        GlobTool(ws),
        GrepTool(ws),
        ShellTool(ws, shell),
        ExecCommandTool(ws, shell, SessionManager()),
    ]
    for tool in tools:
        assert isinstance(tool, WorkspaceTool) and tool.cwd_bound and tool.workspace is ws


async def test_own_workspace_wins_over_the_context(tmp_path: Path) -> None:
    own, other = tmp_path / "own", tmp_path / "other"
    own.mkdir()
    other.mkdir()
    tool = _Echo(Workspace(own))
    result = await tool.execute_with_context(ToolContext(workspace=Workspace(other)), {})
    assert result.output == str(own.resolve())


async def test_context_workspace_is_used_without_an_own_one(tmp_path: Path) -> None:
    result = await _Echo().execute_with_context(ToolContext(workspace=Workspace(tmp_path)), {})
    assert result.output == str(tmp_path.resolve())


async def test_execute_reads_the_current_context(tmp_path: Path) -> None:
    with use_context(ToolContext(workspace=Workspace(tmp_path))):
        result = await _Echo().execute({})
    assert result.output == str(tmp_path.resolve())


async def test_no_workspace_anywhere_is_not_configured() -> None:
    with pytest.raises(ToolError) as info:
        await _Echo().execute_with_context(ToolContext(), {})
    assert info.value.kind is ErrorKind.NOT_CONFIGURED
    assert info.value.message == "echo_root has no workspace to work in"


def test_argument_readers() -> None:
    args: JSONObject = {"s": "x", "n": 3, "b": True, "f": 1.5, "null": None}
    assert str_arg(args, "s") == "x"
    assert str_arg(args, "missing", default="d") == "d"
    assert int_arg(args, "n") == 3
    assert int_arg(args, "missing") is None and int_arg(args, "null") is None
    for key in ("b", "f"):
        with pytest.raises(ToolError) as info:
            int_arg(args, key)
        assert info.value.kind is ErrorKind.INVALID_ARGUMENTS
        assert info.value.message == f"{key!r} must be an integer"
    with pytest.raises(ToolError) as info:
        int_arg(args, "b", label="mode.b")
    assert info.value.message == "mode.b must be an integer"
    with pytest.raises(ToolError) as info:
        str_arg(args, "n")
    assert info.value.message == "'n' must be a string"
