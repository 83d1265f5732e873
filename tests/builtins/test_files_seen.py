"""What a session has seen (builtins/files/_seen.py): stale_file, unchanged reads, and the
BOM / line endings write_file keeps and read_file names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins import files
from octos_tools.builtins.files import _seen
from octos_tools.config import Config
from octos_tools.context import ToolContext
from octos_tools.errors import ToolError
from octos_tools.tool_types import Tool, ToolResult
from octos_tools.workspace import Workspace

pytestmark = pytest.mark.anyio


ON = Config.model_validate({"files": {"unchanged_reads": True}})


@pytest.fixture(autouse=True)
def no_min_age(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_seen, "MIN_AGE_SECS", 0.0)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


@pytest.fixture
def ctx(ws: Workspace) -> ToolContext:
    return ToolContext(workspace=ws)  # one session: its state is shared by the calls


async def call(cls: type[Tool], ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    tool = cls(ctx.workspace, ON)  # type: ignore[call-arg]
    try:
        return await tool.execute_with_context(ctx, args)
    except ToolError as exc:
        return ToolResult.from_error(exc)


async def test_an_edit_of_a_file_changed_since_the_read_is_stale_and_shows_the_change(
    ws: Workspace, ctx: ToolContext
) -> None:
    (ws.root / "a.py").write_text("x = 1\ny = 2\n")
    assert (await call(files.ReadFileTool, ctx, {"path": "a.py"})).success
    (ws.root / "a.py").write_text("x = 1\ny = 3\n")  # someone else
    res = await call(
        files.EditFileTool, ctx, {"path": "a.py", "old_string": "x = 1", "new_string": "x = 9"}
    )
    assert res.error_kind is not None and res.error_kind.value == "stale_file"
    assert "-y = 2" in res.output and "+y = 3" in res.output
    assert (ws.root / "a.py").read_text() == "x = 1\ny = 3\n"
    # after reading again the edit goes through
    assert (await call(files.ReadFileTool, ctx, {"path": "a.py"})).success
    res = await call(
        files.EditFileTool, ctx, {"path": "a.py", "old_string": "x = 1", "new_string": "x = 9"}
    )
    assert res.success, res.output
    assert (ws.root / "a.py").read_text() == "x = 9\ny = 3\n"


async def test_write_file_and_diff_edit_check_staleness_too(
    ws: Workspace, ctx: ToolContext
) -> None:
    (ws.root / "b.txt").write_text("one\ntwo\n")
    await call(files.ReadFileTool, ctx, {"path": "b.txt"})
    (ws.root / "b.txt").write_text("one\nTWO\n")
    res = await call(files.WriteFileTool, ctx, {"path": "b.txt", "content": "new\n"})
    assert res.error_kind is not None and res.error_kind.value == "stale_file"
    diff = "@@ -1,2 +1,2 @@\n-one\n+uno\n TWO\n"
    res = await call(files.DiffEditTool, ctx, {"path": "b.txt", "diff": diff})
    assert res.error_kind is not None and res.error_kind.value == "stale_file"
    assert (ws.root / "b.txt").read_text() == "one\nTWO\n"


async def test_own_edits_are_not_stale(ws: Workspace, ctx: ToolContext) -> None:
    (ws.root / "c.txt").write_text("a\nb\n")
    await call(files.ReadFileTool, ctx, {"path": "c.txt"})
    for old, new in (("a", "A"), ("b", "B")):
        res = await call(
            files.EditFileTool, ctx, {"path": "c.txt", "old_string": old, "new_string": new}
        )
        assert res.success, res.output
    assert (await call(files.WriteFileTool, ctx, {"path": "c.txt", "content": "z\n"})).success


async def test_a_repeated_read_answers_unchanged_once_then_the_text(
    ws: Workspace, ctx: ToolContext
) -> None:
    (ws.root / "d.txt").write_text("hello\nworld\n")
    first = await call(files.ReadFileTool, ctx, {"path": "d.txt"})
    assert "hello" in first.output
    second = await call(files.ReadFileTool, ctx, {"path": "d.txt"})
    assert second.success and second.output.startswith("[FILE_UNCHANGED]")
    assert "hello" not in second.output
    third = await call(files.ReadFileTool, ctx, {"path": "d.txt"})
    assert "hello" in third.output  # asked again: the model wants the text


async def test_unchanged_never_hides_text_not_shown_in_this_session(
    ws: Workspace, ctx: ToolContext
) -> None:
    (ws.root / "e.txt").write_text("".join(f"l{i}\n" for i in range(10)))
    await call(files.ReadFileTool, ctx, {"path": "e.txt", "start_line": 1, "end_line": 3})
    other = await call(files.ReadFileTool, ctx, {"path": "e.txt", "start_line": 4})
    assert "l5" in other.output  # another range: shown in full
    # another session never gets "unchanged"
    fresh = ToolContext(workspace=ws)
    res = await call(files.ReadFileTool, fresh, {"path": "e.txt", "start_line": 1, "end_line": 3})
    assert "l1" in res.output
    # a change (same size, same range) shows the text again
    (ws.root / "e.txt").write_text("".join(f"L{i}\n" for i in range(10)))
    res = await call(files.ReadFileTool, ctx, {"path": "e.txt", "start_line": 1, "end_line": 3})
    assert "L1" in res.output
    # after the session's own write its earlier reads do not stand
    await call(
        files.WriteFileTool,
        ctx,
        {"path": "e.txt", "content": "".join(f"L{i}\n" for i in range(10))},
    )
    res = await call(files.ReadFileTool, ctx, {"path": "e.txt", "start_line": 1, "end_line": 3})
    assert "L1" in res.output


async def test_unchanged_reads_are_off_by_default(ws: Workspace) -> None:
    (ws.root / "f.txt").write_text("x\n")
    tool = files.ReadFileTool(ws, Config())
    ctx = ToolContext(workspace=ws)
    for _ in range(2):
        res = await tool.execute_with_context(ctx, {"path": "f.txt"})
        assert "x" in res.output and "UNCHANGED" not in res.output


async def test_a_read_repeated_in_the_same_burst_gets_the_text(
    ws: Workspace, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_seen, "MIN_AGE_SECS", 60.0)  # a parallel batch: no answer seen yet
    (ws.root / "g.txt").write_text("gee\n")
    for _ in range(3):
        assert "gee" in (await call(files.ReadFileTool, ctx, {"path": "g.txt"})).output


async def test_write_file_keeps_bom_and_crlf_and_says_so(ws: Workspace, ctx: ToolContext) -> None:
    path = ws.root / "win.txt"
    path.write_bytes(b"\xef\xbb\xbfold\r\nlines\r\n")
    res = await call(files.WriteFileTool, ctx, {"path": "win.txt", "content": "new\ntext\n"})
    assert res.success
    assert path.read_bytes() == b"\xef\xbb\xbfnew\r\ntext\r\n"
    assert res.structured_metadata["kept"] == ["bom", "crlf"]
    assert "byte-order mark and CRLF line endings" in res.output


async def test_write_file_content_that_decides_its_line_endings_wins(
    ws: Workspace, ctx: ToolContext
) -> None:
    path = ws.root / "w.txt"
    path.write_bytes(b"a\r\nb\r\n")
    res = await call(files.WriteFileTool, ctx, {"path": "w.txt", "content": "x\r\ny\n"})
    assert path.read_bytes() == b"x\r\ny\n"
    assert "kept" not in res.structured_metadata
    ctx = ToolContext(workspace=ws)  # a new session: changes on disk are not stale
    path.write_bytes(b"\xef\xbb\xbfa\n")
    await call(files.WriteFileTool, ctx, {"path": "w.txt", "content": "\ufeffb\n"})
    assert path.read_bytes() == b"\xef\xbb\xbfb\n"  # one BOM, the content's own
    ctx = ToolContext(workspace=ws)
    path.write_bytes(b"plain\n")
    res = await call(files.WriteFileTool, ctx, {"path": "w.txt", "content": "c\n"})
    assert path.read_bytes() == b"c\n" and "Kept" not in res.output


async def test_write_file_keeps_a_utf16_file_utf16(ws: Workspace, ctx: ToolContext) -> None:
    path = ws.root / "u16.txt"
    path.write_bytes(b"\xff\xfe" + "hi\n".encode("utf-16-le"))
    await call(files.WriteFileTool, ctx, {"path": "u16.txt", "content": "hé\n"})
    assert path.read_bytes() == b"\xff\xfe" + "hé\n".encode("utf-16-le")


async def test_read_file_names_bom_and_crlf(ws: Workspace, ctx: ToolContext) -> None:
    (ws.root / "r.txt").write_bytes(b"\xef\xbb\xbfa\r\nb\r\n")
    res = await call(files.ReadFileTool, ctx, {"path": "r.txt"})
    first = res.output.splitlines()[0]
    assert "BOM" in first and "CRLF line endings" in first
    (ws.root / "lf.txt").write_bytes(b"a\nb\n")
    res = await call(files.ReadFileTool, ctx, {"path": "lf.txt"})
    assert res.output.splitlines()[0].endswith("a")


@pytest.mark.parametrize("config", [Config(), ON], ids=["default", "unchanged_reads"])
async def test_a_read_after_an_outside_change_is_the_new_base_with_any_config(
    ws: Workspace, ctx: ToolContext, config: Config
) -> None:
    # the session writes, someone else changes the file, the model reads it again: the
    # read is what the model knows now, so its next edit goes through (it was stale_file
    # forever with unchanged_reads off: only the opt-in cache recorded reads)
    async def run(cls: type[Tool], args: dict[str, Any]) -> ToolResult:
        try:
            return await cls(ws, config).execute_with_context(ctx, args)  # type: ignore[call-arg]
        except ToolError as exc:
            return ToolResult.from_error(exc)

    assert (await run(files.WriteFileTool, {"path": "c.txt", "content": "one\ntwo\n"})).success
    (ws.root / "c.txt").write_text("one\nTWO\n")  # a restore, a command, the user
    res = await run(files.EditFileTool, {"path": "c.txt", "old_string": "one", "new_string": "1"})
    assert res.error_kind is not None and res.error_kind.value == "stale_file"
    assert (await run(files.ReadFileTool, {"path": "c.txt"})).success
    res = await run(files.EditFileTool, {"path": "c.txt", "old_string": "one", "new_string": "1"})
    assert res.success, res.output
    assert (ws.root / "c.txt").read_text() == "1\nTWO\n"
    # and a read with the default config still makes a later outside change stale
    (ws.root / "c.txt").write_text("1\nzwei\n")
    res = await run(files.EditFileTool, {"path": "c.txt", "old_string": "1", "new_string": "2"})
    assert res.error_kind is not None and res.error_kind.value == "stale_file"
