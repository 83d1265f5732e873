"""The file tools as a family: classes, registration order, policy groups."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octos_tools.builtins import files
from octos_tools.config import Config
from octos_tools.tool_types import ConcurrencyClass
from octos_tools.workspace import Workspace

from ._files_helpers import call
from .tool_helpers import kind

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------ metadata


def test_tool_classes_follow_octos() -> None:
    expected = {
        files.ReadFileTool: ("read_file", ConcurrencyClass.SAFE),
        files.WriteFileTool: ("write_file", ConcurrencyClass.EXCLUSIVE),
        files.EditFileTool: ("edit_file", ConcurrencyClass.EXCLUSIVE),
        files.DiffEditTool: ("diff_edit", ConcurrencyClass.EXCLUSIVE),
    }
    for cls, (name, cc) in expected.items():
        assert cls.name == name
        assert cls.concurrency_class is cc
        assert cls.cwd_bound
        assert cls.tags == ("fs", "code")
        assert cls.input_schema["additionalProperties"] is False


async def test_registry_order_and_dispatch(ws: Workspace, root: Path) -> None:
    from octos_tools.registry import ToolRegistry

    reg = ToolRegistry(workspace=ws)
    files.register(reg, ws, Config())
    assert reg.names() == ["read_file", "diff_edit", "edit_file", "write_file"]
    res = await reg.execute("write_file", json.dumps({"path": "a/b.txt", "content": "x\ny\n"}))
    assert res.success and res.file_modified == "a/b.txt"
    res = await reg.execute("read_file", '{"path": "a/b.txt"}')
    assert res.success and "1│ x\n2│ y" in res.output
    res = await reg.execute("read_file", "")
    assert kind(res) == "invalid_arguments" and "path" in (res.error or {})["message"]
    res = await reg.execute("read_file", '{"path": "../ws_secret/key.txt"}')
    assert kind(res) == "path_outside_workspace" and "TOPSECRET" not in res.output
    res = await reg.execute("write_file", '{"path": "x.txt", "content": "x"')
    assert kind(res) == "invalid_json" and not (root / "x.txt").exists()


async def test_register_builtins_includes_file_tools(ws: Workspace) -> None:
    from octos_tools.builtins import FAMILIES, register_builtins
    from octos_tools.registry import ToolRegistry

    assert FAMILIES.index("files") < FAMILIES.index("search")
    reg = ToolRegistry(workspace=ws)
    names = register_builtins(reg, ws)
    for n in ("read_file", "diff_edit", "edit_file", "write_file", "glob", "grep", "list_dir"):
        assert n in names
    assert names.index("read_file") < names.index("diff_edit") < names.index("edit_file")
    assert names.index("edit_file") < names.index("write_file") < names.index("glob")


async def test_a_cut_of_non_ascii_lines_shows_every_line_that_fits(
    root: Path, ws: Workspace
) -> None:
    """The budget counts each line's UTF-8 bytes (its number column, ``│ `` and newline
    too): the cut is after the last line that fits, whatever mix of scripts the lines hold."""
    lines = [
        ("é" * (i % 7) + "a" * (i % 5) + "密钥" * (i % 3) + "😀" * (i % 2)) for i in range(9000)
    ]
    (root / "mixed.txt").write_text("\n".join(lines) + "\n", "utf-8")
    res = await call(files.ReadFileTool, ws, {"path": "mixed.txt"})
    assert res.success and "output cut" in res.output
    body, footer = res.output.split("\n\n(showing lines ", 1)
    shown = body.split("\n")
    last = int(footer.split("-", 1)[1].split(" ", 1)[0])
    assert len(shown) == last and shown[-1] == f"{last:>{len(str(last))}}│ {lines[last - 1]}"
    # the budget (0.8 x 50,000 bytes) counts each line's bytes plus the view's widest
    # number column (4 digits here), "│ " and "\n" counted as 3
    cost = [len(x.encode()) + 4 + 3 for x in lines]
    assert sum(cost[:last]) <= 40_000 < sum(cost[: last + 1])


# ------------------------------------------------------------------ policy (BC-30 class)


@pytest.mark.parametrize(
    ("allow", "deny"),
    [
        (["group:fs", "exec_command", "web_*"], ["exec_*", "write_file"]),
        (["web_*", "exec_command", "group:fs"], ["write_file", "exec_*"]),
    ],
)
async def test_policy_names_file_tools_by_group(
    root: Path, ws: Workspace, allow: list[str], deny: list[str]
) -> None:
    from octos_tools.builtins import search
    from octos_tools.policy import ToolPolicy
    from octos_tools.registry import ToolRegistry

    reg = ToolRegistry(workspace=ws)
    files.register(reg, ws, Config())
    search.register(reg, ws, Config())
    reg.apply_policy(ToolPolicy(allow=allow, deny=deny))
    (root / "e.txt").write_text("e1\n")
    res = await reg.execute("write_file", {"path": "w.txt", "content": "x"})
    assert kind(res) == "policy_denied" and not (root / "w.txt").exists()
    res = await reg.execute("list_dir", {"path": "."})
    assert kind(res) == "policy_denied" and "e.txt" not in res.output
    res = await reg.execute("edit_file", {"path": "e.txt", "old_string": "e1", "new_string": "e2"})
    assert res.success and (root / "e.txt").read_text() == "e2\n"
    res = await reg.execute("diff_edit", {"path": "e.txt", "diff": "@@ -1 +1 @@\n-e2\n+e3\n"})
    assert res.success and (root / "e.txt").read_text() == "e3\n"
    assert (await reg.execute("read_file", {"path": "e.txt"})).success
