"""File tools: read_file, write_file, edit_file, diff_edit (directly and via the registry)."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins import files
from octos_tools.config import Config
from octos_tools.context import ToolContext, ToolPermissions
from octos_tools.tool import ConcurrencyClass, Tool, ToolResult
from octos_tools.workspace import Workspace

pytestmark = pytest.mark.anyio


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "ws"
    r.mkdir()
    (tmp_path / "ws_secret").mkdir()
    (tmp_path / "ws_secret" / "key.txt").write_text("TOPSECRET\n")
    return r


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root)


async def call(tool_cls: type[Tool], ws: Workspace, args: dict[str, Any], **ctx: Any) -> ToolResult:
    tool = tool_cls(ws, Config())  # type: ignore[call-arg]
    from octos_tools.errors import ToolError

    try:
        return await tool.execute_with_context(ToolContext(workspace=ws, **ctx), args)
    except ToolError as exc:
        return ToolResult.from_error(exc)


def kind(result: ToolResult) -> str | None:
    return result.error_kind.value if result.error_kind else None


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


# ------------------------------------------------------------------ read_file


async def test_read_numbered_and_aligned(ws: Workspace, root: Path) -> None:
    (root / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 13)))
    res = await call(files.ReadFileTool, ws, {"path": "f.txt"})
    assert res.success
    lines = res.output.splitlines()
    assert lines[0] == " 1│ line 1" and lines[11] == "12│ line 12"
    assert "showing" not in res.output
    res = await call(files.ReadFileTool, ws, {"path": "f.txt", "start_line": 3, "end_line": 5})
    assert res.output.startswith("3│ line 3\n4│ line 4\n5│ line 5")
    assert "showing lines 3-5 of 12" in res.output and "start_line=6" in res.output
    res = await call(files.ReadFileTool, ws, {"path": "f.txt", "start_line": 11, "end_line": 99})
    assert "12│ line 12" in res.output and "showing lines 11-12 of 12" in res.output


async def test_read_edge_cases(ws: Workspace, root: Path) -> None:
    (root / "empty.txt").write_bytes(b"")
    res = await call(files.ReadFileTool, ws, {"path": "empty.txt"})
    assert res.success and "empty" in res.output
    (root / "two.txt").write_text("a\nb\n")
    res = await call(files.ReadFileTool, ws, {"path": "two.txt", "start_line": 100})
    assert kind(res) == "invalid_arguments" and "2 line" in res.output
    res = await call(files.ReadFileTool, ws, {"path": "two.txt", "start_line": 2, "end_line": 1})
    assert kind(res) == "invalid_arguments"
    res = await call(files.ReadFileTool, ws, {"path": "missing.txt"})
    assert kind(res) == "not_found"
    (root / "d").mkdir()
    assert kind(await call(files.ReadFileTool, ws, {"path": "d"})) == "is_a_directory"
    for bad in ({"start_line": 0}, {"start_line": -3}, {"start_line": 1, "end_line": 0}):
        res = await call(files.ReadFileTool, ws, {"path": "two.txt", **bad})
        assert kind(res) == "invalid_arguments" and "greater than or equal to 1" in res.output


async def test_read_line_numbers_below_one_refused_by_the_schema(ws: Workspace, root: Path) -> None:
    from octos_tools.registry import ToolRegistry

    (root / "two.txt").write_text("a\nb\n")
    reg = ToolRegistry(ws)
    files.register(reg, ws, Config())
    tool = reg.get("read_file")
    assert tool is not None
    assert tool.input_schema["properties"]["start_line"]["minimum"] == 1
    assert tool.input_schema["properties"]["end_line"]["minimum"] == 1
    res = await reg.execute("read_file", {"path": "two.txt", "start_line": 0})
    assert kind(res) == "invalid_arguments" and "start_line" in res.output
    assert (await reg.execute("read_file", {"path": "two.txt", "start_line": 1})).success


async def test_read_cuts_long_lines_and_big_output(root: Path, ws: Workspace) -> None:
    (root / "long.txt").write_text("x" * 5000 + "\nshort\n")
    res = await call(files.ReadFileTool, ws, {"path": "long.txt"})
    assert "line 1 cut: it is 5,000 characters long" in res.output and "2│ short" in res.output
    assert "start_line=1, end_line=1, start_column=2001" in res.output
    # every line is shown, but not all of line 1: the metadata says so
    assert res.structured_metadata is not None
    assert res.structured_metadata["truncated"] is True
    assert res.structured_metadata["lines_cut"] == 1
    whole = await call(files.ReadFileTool, ws, {"path": "long.txt", "start_line": 2})
    assert whole.structured_metadata is not None and whole.structured_metadata["lines_cut"] == 0
    (root / "many.txt").write_text("".join(f"{'y' * 90} {i}\n" for i in range(5000)))
    res = await call(files.ReadFileTool, ws, {"path": "many.txt"})
    assert res.success and len(res.output.encode()) <= 50_000
    assert "output cut" in res.output
    nxt = int(res.output.rsplit("start_line=", 1)[1].split(".")[0])
    res2 = await call(files.ReadFileTool, ws, {"path": "many.txt", "start_line": nxt})
    assert res2.output.startswith(f"{nxt}│ ")


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


async def test_a_cut_line_can_be_read_on_by_column(root: Path, ws: Workspace) -> None:
    """A 3 MB single line: the cut states its full length and the exact arguments that show
    the next part; following them walks through the whole line."""
    line = "".join(f"{i:07d}," for i in range(375_000))  # 3,000,000 characters
    (root / "min.js").write_text(line + "\n")
    res = await call(files.ReadFileTool, ws, {"path": "min.js"})
    assert "it is 3,000,000 characters long" in res.output
    assert "start_column=2001" in res.output
    got = res.output.split("1│ ", 1)[1].split(" … [", 1)[0]
    col = 2001
    for _ in range(3):
        nxt = await call(
            files.ReadFileTool,
            ws,
            {"path": "min.js", "start_line": 1, "end_line": 1, "start_column": col},
        )
        assert nxt.success and f"start_column={col + 2000}" in nxt.output
        got += nxt.output.split("1│ ", 1)[1].split(" … [", 1)[0]
        col += 2000
    assert got == line[:8000]
    end = await call(files.ReadFileTool, ws, {"path": "min.js", "start_column": 2_999_001})
    assert end.output.split("1│ ", 1)[1] == line[-1000:]
    assert end.structured_metadata is not None and end.structured_metadata["lines_cut"] == 0


async def test_a_cut_line_of_a_streamed_file_gives_its_length_in_bytes(
    root: Path, ws: Workspace
) -> None:
    big = root / "big.txt"
    with big.open("w") as fh:
        fh.write("a" * 11_000_000 + "\nend\n")
    res = await call(files.ReadFileTool, ws, {"path": "big.txt", "start_line": 1, "end_line": 2})
    assert "it is 11,000,000 bytes long" in res.output and "2│ end" in res.output
    nxt = await call(
        files.ReadFileTool,
        ws,
        {"path": "big.txt", "start_line": 1, "end_line": 1, "start_column": 2001},
    )
    assert nxt.success and "characters 2,001-4,000" in nxt.output


async def test_edit_no_match_hint_names_what_differs(root: Path, ws: Workspace) -> None:
    (root / "h.py").write_text("def f():\n    return 1\n")
    for old, says in (
        ("\ndef f():", "starts with a line break"),
        ("return 1   \n", "trailing spaces"),
        ("def f():\n        return 1", "indentation"),
        ("def  f():", "runs of spaces"),
    ):
        res = await call(
            files.EditFileTool, ws, {"path": "h.py", "old_string": old, "new_string": "x"}
        )
        assert kind(res) == "no_match" and says in res.output, (old, res.output)
        assert "whitespace is ignored" not in res.output


async def test_read_binary_file_refused_with_size(root: Path, ws: Workspace) -> None:
    blob = b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(range(256)) * 8
    (root / "data.txt").write_bytes(blob)
    res = await call(files.ReadFileTool, ws, {"path": "data.txt"})
    assert kind(res) == "binary_file" and "2,058 bytes" in res.output
    assert "\x00" not in res.output and "ABCDEF" not in res.output
    # NUL late in a file (after the sniffed head) is still binary.
    (root / "late.txt").write_bytes(b"a\n" * 10_000 + b"\x00\x01\x02")
    assert kind(await call(files.ReadFileTool, ws, {"path": "late.txt"})) == "binary_file"


@pytest.mark.parametrize(
    ("data", "note"),
    [
        (b"\xef\xbb\xbfhello\r\nworld\r\n", "UTF-8 with BOM"),
        (b"\xff\xfe" + "hello\r\nworld\r\n".encode("utf-16-le"), "UTF-16LE"),
        (b"\xfe\xff" + "hello\nworld\n".encode("utf-16-be"), "UTF-16BE"),
    ],
)
async def test_read_encodings(root: Path, ws: Workspace, data: bytes, note: str) -> None:
    (root / "e.txt").write_bytes(data)
    res = await call(files.ReadFileTool, ws, {"path": "e.txt"})
    assert res.success and note in res.output
    assert "1│ hello\n2│ world" in res.output
    assert "\x00" not in res.output and "\r" not in res.output and "\ufeff" not in res.output


async def test_read_latin1_is_shown_with_a_note(root: Path, ws: Workspace) -> None:
    (root / "latin1.js").write_bytes(b"const x = 1;\n// caf\xe9 note\n")
    res = await call(files.ReadFileTool, ws, {"path": "latin1.js"})
    assert res.success and "not valid UTF-8" in res.output and "offset 19" in res.output
    assert "2│ // café note" in res.output and "\ufffd" not in res.output


async def _call_traced(ws: Workspace, args: dict[str, Any]) -> tuple[ToolResult, int]:
    """Run read_file and return its result and the peak of newly traced memory (bytes).

    tracemalloc sees allocations of every thread, so the worker thread that reads the file
    is counted too.
    """
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        res = await call(files.ReadFileTool, ws, args)
        return res, tracemalloc.get_traced_memory()[1] - base
    finally:
        if not was_tracing:
            tracemalloc.stop()


# A ranged read keeps a 1 MiB chunk and the lines asked for; reading the file whole would
# take at least MAX_FULL_READ_BYTES (10 MB) for the dense file and 200 MB for the sparse one.
_RANGED_READ_PEAK = 6 * 1024 * 1024


async def test_read_range_of_huge_file_streams(root: Path, ws: Workspace) -> None:
    line = b"0123456789" * 9 + b"\r\n"  # 92 bytes
    n = files.MAX_FULL_READ_BYTES // len(line) + 2000
    (root / "big.log").write_bytes(line * n)
    res = await call(files.ReadFileTool, ws, {"path": "big.log"})
    assert kind(res) == "file_too_large" and "start_line" in res.output
    res, peak = await _call_traced(ws, {"path": "big.log", "start_line": n - 1})
    assert res.success, res.output
    assert f"{n - 1}│ 0123" in res.output and f"{n}│ 0123" in res.output
    assert f"of {n:,}" in res.output and "\r" not in res.output
    assert peak < _RANGED_READ_PEAK, peak
    res, peak = await _call_traced(ws, {"path": "big.log", "start_line": 5, "end_line": 6})
    assert "5│ 0123" in res.output and "7│" not in res.output
    assert peak < _RANGED_READ_PEAK, peak


async def test_read_range_of_200mb_file_keeps_memory_bounded(root: Path, ws: Workspace) -> None:
    # 1,000 text lines, a 200 MB hole (NUL bytes, sparse so it costs no disk and little
    # time), then 1,000 more lines: line 1,001 is the hole plus one text line.
    line = b"0123456789" * 9 + b"\n"
    hole = 200 * 1024 * 1024
    with open(root / "huge.log", "wb") as fh:
        fh.write(line * 1000)
        fh.seek(hole, os.SEEK_CUR)
        fh.write(line * 1000)
    size = (root / "huge.log").stat().st_size
    assert size > hole
    res, peak = await _call_traced(ws, {"path": "huge.log", "start_line": 3, "end_line": 4})
    assert res.success, res.output
    assert "3│ 0123" in res.output and "4│ 0123" in res.output and "5│" not in res.output
    assert peak < _RANGED_READ_PEAK, peak
    res, peak = await _call_traced(ws, {"path": "huge.log", "start_line": 1999})
    assert res.success, res.output
    assert "1999│ 0123" in res.output and "2000│ 0123" in res.output and "of 2,000" in res.output
    assert peak < _RANGED_READ_PEAK, peak
    # The 200 MB line itself: shown cut, never held whole.
    res, peak = await _call_traced(ws, {"path": "huge.log", "start_line": 1001, "end_line": 1001})
    assert res.success, res.output
    assert "1001│ " in res.output and len(res.output.encode()) < 64 * 1024
    assert peak < _RANGED_READ_PEAK, peak


async def test_read_refuses_escapes(root: Path, ws: Workspace, tmp_path: Path) -> None:
    (root / "leak").symlink_to(tmp_path / "ws_secret" / "key.txt")
    (root / "linkdir").symlink_to(tmp_path / "ws_secret")
    for path, k in [
        ("leak", "symlink_refused"),
        ("linkdir/key.txt", "symlink_refused"),
        (str(tmp_path / "ws_secret" / "key.txt"), "path_outside_workspace"),
        ("../ws_secret/key.txt", "path_outside_workspace"),
        ("a.txt\x00.png", "invalid_arguments"),
    ]:
        res = await call(files.ReadFileTool, ws, {"path": path})
        assert kind(res) == k, path
        assert "TOPSECRET" not in res.output


# ------------------------------------------------------------------ write_file


async def test_write_file(root: Path, ws: Workspace) -> None:
    res = await call(files.WriteFileTool, ws, {"path": "n/e/w.txt", "content": "a\nb\nc"})
    assert res.success and res.file_modified == "n/e/w.txt"
    assert "3 line(s)" in res.output and "5 bytes" in res.output
    assert (root / "n/e/w.txt").read_text() == "a\nb\nc"
    res = await call(files.WriteFileTool, ws, {"path": "n/e/w.txt", "content": "a" * 69_999 + "\n"})
    assert "70,000 bytes" in res.output and "Replaced" in res.output
    res = await call(files.WriteFileTool, ws, {"path": "empty", "content": ""})
    assert res.success and "0 line(s)" in res.output and (root / "empty").read_bytes() == b""


async def test_write_file_refusals(root: Path, ws: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "ws_secret"
    (root / "dangling").symlink_to(secret / "new.txt")
    (root / "linkdir").symlink_to(secret)
    cases = [
        ({"path": "dangling", "content": "x"}, "symlink_refused"),
        ({"path": "linkdir/new.txt", "content": "x"}, "symlink_refused"),
        ({"path": str(secret / "new.txt"), "content": "x"}, "path_outside_workspace"),
        ({"path": "b\x00.txt", "content": "x"}, "invalid_arguments"),
        ({"path": "lone.txt", "content": "\ud800"}, "invalid_arguments"),
    ]
    for args, k in cases:
        assert kind(await call(files.WriteFileTool, ws, args)) == k, args
    assert sorted(os.listdir(secret)) == ["key.txt"]
    assert not (root / "b").exists() and not (root / "lone.txt").exists()
    res = await call(
        files.WriteFileTool,
        ws,
        {"path": "ro.txt", "content": "x"},
        permissions=ToolPermissions(read_only=True),
    )
    assert kind(res) == "policy_denied" and not (root / "ro.txt").exists()


# ------------------------------------------------------------------ edit_file (BC-08)


async def test_edit_ambiguous_replace_all_no_match_empty_identical(
    root: Path, ws: Workspace
) -> None:
    f = root / "dup.py"
    f.write_text("x = 1\nprint(x)\nx = 1\nx = 1\n")
    args = {"path": "dup.py", "old_string": "x = 1", "new_string": "x = 2"}
    res = await call(files.EditFileTool, ws, args)
    assert kind(res) == "ambiguous_match"
    assert "3 times" in res.output and "lines 1, 3, 4" in res.output
    assert "replace_all" in res.output
    assert f.read_text() == "x = 1\nprint(x)\nx = 1\nx = 1\n"
    res = await call(files.EditFileTool, ws, {**args, "replace_all": True})
    assert res.success and "3 occurrences" in res.output and res.file_modified == "dup.py"
    assert f.read_text() == "x = 2\nprint(x)\nx = 2\nx = 2\n"
    assert "-x = 1" in res.output and "+x = 2" in res.output
    before = f.read_bytes()
    res = await call(
        files.EditFileTool, ws, {"path": "dup.py", "old_string": "", "new_string": "y"}
    )
    assert kind(res) == "invalid_arguments"
    res = await call(
        files.EditFileTool,
        ws,
        {"path": "dup.py", "old_string": "print(x)", "new_string": "print(x)"},
    )
    assert kind(res) == "no_change" and res.file_modified is None
    res = await call(
        files.EditFileTool, ws, {"path": "dup.py", "old_string": "nope", "new_string": "y"}
    )
    assert kind(res) == "no_match"
    assert f.read_bytes() == before


async def test_edit_no_match_hints(root: Path, ws: Workspace) -> None:
    (root / "t.go").write_text('func main() {\n\tfmt.Println("hi")\n\treturn\n}\n')
    res = await call(
        files.EditFileTool,
        ws,
        {"path": "t.go", "old_string": '    fmt.Println("hi")', "new_string": "x"},
    )
    assert kind(res) == "no_match"
    assert "indentation" in res.output and "tabs" in res.output
    res = await call(
        files.EditFileTool,
        ws,
        {"path": "t.go", "old_string": 'fmt.Printn("hi")', "new_string": "x"},
    )
    assert kind(res) == "no_match" and "closest line is 2" in res.output


async def test_edit_counts_the_file_as_on_disk(root: Path, ws: Workspace) -> None:
    f = root / "a.txt"
    f.write_text("one\n")
    tool = files.EditFileTool(ws, Config())
    ctx = ToolContext(workspace=ws)
    f.write_text("one\none\n")  # changed after the tool was made, before the call
    from octos_tools.errors import ToolError

    with pytest.raises(ToolError) as info:
        await tool.execute_with_context(
            ctx, {"path": "a.txt", "old_string": "one", "new_string": "two"}
        )
    assert info.value.kind.value == "ambiguous_match"


# ------------------------------------------------------------------ edit_file (BC-09)


@pytest.mark.parametrize(
    ("data", "old", "new", "expected", "replace_all"),
    [
        (b"alpha\r\nbeta\r\ngamma", "alpha\nbeta", "ALPHA\nBETA", b"ALPHA\r\nBETA\r\ngamma", False),
        (b"alpha\r\nbeta\r\ngamma", "alpha\nbeta", "ALPHA\nBETA", b"ALPHA\r\nBETA\r\ngamma", True),
        (
            b"alpha\r\nbeta\r\ngamma",
            "alpha\r\nbeta",
            "ALPHA\r\nBETA",
            b"ALPHA\r\nBETA\r\ngamma",
            False,
        ),
        (b"a\r\nb\nc\r\n", "b", "B", b"a\r\nB\nc\r\n", False),
        (b"a\r\nb\r\n", "a\n", "x\ny\n", b"x\r\ny\r\nb\r\n", False),
        (b"k\r\nk\r\n", "k\n", "K\n", b"K\r\nK\r\n", True),
        (b"no final newline", "final", "last", b"no last newline", False),
    ],
)
async def test_edit_keeps_line_endings(
    root: Path,
    ws: Workspace,
    data: bytes,
    old: str,
    new: str,
    expected: bytes,
    replace_all: bool,
) -> None:
    (root / "f.txt").write_bytes(data)
    res = await call(
        files.EditFileTool,
        ws,
        {"path": "f.txt", "old_string": old, "new_string": new, "replace_all": replace_all},
    )
    assert res.success, res.output
    assert (root / "f.txt").read_bytes() == expected


# ------------------------------------------------------------------ edit_file (BC-26/28)


async def test_edit_non_utf8_keeps_every_other_byte(root: Path, ws: Workspace) -> None:
    f = root / "latin1.js"
    f.write_bytes(b"const x = 1;\n// caf\xe9 note\n")
    res = await call(
        files.EditFileTool,
        ws,
        {"path": "latin1.js", "old_string": "const x = 1;", "new_string": "const x = 2;"},
    )
    assert res.success
    assert f.read_bytes() == b"const x = 2;\n// caf\xe9 note\n"
    # The Latin-1 line itself, as read_file shows it, can be edited too.
    res = await call(
        files.EditFileTool,
        ws,
        {"path": "latin1.js", "old_string": "// café note", "new_string": "// thé note"},
    )
    assert res.success and "Latin-1" in json.dumps(res.structured_metadata)
    assert f.read_bytes() == b"const x = 2;\n// th\xe9 note\n"
    assert b"\xef\xbf\xbd" not in f.read_bytes()
    res = await call(
        files.EditFileTool,
        ws,
        {"path": "latin1.js", "old_string": "// thé note", "new_string": "// ☃"},
    )
    assert kind(res) == "invalid_arguments" and f.read_bytes().endswith(b"th\xe9 note\n")


async def test_edit_keeps_bom_and_utf16(root: Path, ws: Workspace) -> None:
    (root / "bom.txt").write_bytes(b"\xef\xbb\xbfkey = 1\r\nother\r\n")
    res = await call(
        files.EditFileTool, ws, {"path": "bom.txt", "old_string": "key = 1", "new_string": "k = é"}
    )
    assert res.success
    assert (root / "bom.txt").read_bytes() == "\ufeffk = é\r\nother\r\n".encode()
    u16 = b"\xff\xfe" + "hello\r\nworld\r\n".encode("utf-16-le")
    (root / "u16.txt").write_bytes(u16)
    res = await call(
        files.EditFileTool,
        ws,
        {"path": "u16.txt", "old_string": "hello\nworld", "new_string": "hallo\nwelt"},
    )
    assert res.success
    assert (root / "u16.txt").read_bytes() == b"\xff\xfe" + "hallo\r\nwelt\r\n".encode("utf-16-le")


async def test_edit_binary_refused(root: Path, ws: Workspace) -> None:
    blob = b"PK\x03\x04\x14\x00\x00\x00" + bytes(range(256))
    (root / "data.txt").write_bytes(blob)
    res = await call(
        files.EditFileTool, ws, {"path": "data.txt", "old_string": "PK", "new_string": "QK"}
    )
    assert kind(res) == "binary_file" and (root / "data.txt").read_bytes() == blob


async def test_edit_refuses_links_and_read_only(root: Path, ws: Workspace, tmp_path: Path) -> None:
    (root / "leak").symlink_to(tmp_path / "ws_secret" / "key.txt")
    res = await call(
        files.EditFileTool, ws, {"path": "leak", "old_string": "TOPSECRET", "new_string": "x"}
    )
    assert kind(res) == "symlink_refused"
    assert (tmp_path / "ws_secret" / "key.txt").read_text() == "TOPSECRET\n"
    (root / "a.txt").write_text("a")
    res = await call(
        files.EditFileTool,
        ws,
        {"path": "a.txt", "old_string": "a", "new_string": "b"},
        permissions=ToolPermissions(read_only=True),
    )
    assert kind(res) == "policy_denied" and (root / "a.txt").read_text() == "a"


# ------------------------------------------------------------------ diff_edit


async def test_diff_edit_basic_and_fuzz(root: Path, ws: Workspace) -> None:
    f = root / "d.txt"
    f.write_text("line1\nline2\n")
    res = await call(
        files.DiffEditTool,
        ws,
        {"path": "d.txt", "diff": "@@ -1,2 +1,2 @@\n line1\n-line2\n+LINE2\n"},
    )
    assert res.success and res.file_modified == "d.txt"
    assert f.read_text() == "line1\nLINE2\n"
    f.write_text("".join(f"l{i}\n" for i in range(1, 21)))
    # Header says line 5 but the context is at line 8: +3 is within the fuzz.
    res = await call(
        files.DiffEditTool, ws, {"path": "d.txt", "diff": "@@ -5,2 +5,2 @@\n l8\n-l9\n+L9\n"}
    )
    assert res.success and "3 line(s) below" in res.output
    assert "L9\n" in f.read_text()
    before = f.read_bytes()
    res = await call(
        files.DiffEditTool, ws, {"path": "d.txt", "diff": "@@ -1,2 +1,2 @@\n l8\n-L9\n+X\n"}
    )
    assert kind(res) == "patch_conflict" and f.read_bytes() == before


async def test_diff_edit_all_or_nothing(root: Path, ws: Workspace) -> None:
    f = root / "d.txt"
    f.write_text("a\nb\nc\nd\ne\nf\ng\nh\n")
    before = f.read_bytes()
    diff = "@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -7,2 +7,2 @@\n g\n-WRONG\n+H\n"
    res = await call(files.DiffEditTool, ws, {"path": "d.txt", "diff": diff})
    assert kind(res) == "patch_conflict" and "hunk 2" in res.output
    assert f.read_bytes() == before
    diff = (
        "--- a/d.txt\n+++ b/d.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -7,2 +7,3 @@\n g\n-h\n+H\n+I\n"
    )
    res = await call(files.DiffEditTool, ws, {"path": "d.txt", "diff": diff})
    assert res.success and "2 hunk(s)" in res.output
    assert f.read_text() == "a\nB\nc\nd\ne\nf\ng\nH\nI\n"


async def test_diff_edit_errors(root: Path, ws: Workspace) -> None:
    (root / "d.txt").write_text("a\nb\nc\n")
    for diff, k in [
        ("no hunks here", "invalid_patch"),
        ("@@ bogus @@\n a\n", "invalid_patch"),
        ("@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n", "invalid_patch"),
        ("@@ -1,1 +1,1 @@\n a\n", "no_change"),
    ]:
        res = await call(files.DiffEditTool, ws, {"path": "d.txt", "diff": diff})
        assert kind(res) == k, diff
    assert (root / "d.txt").read_text() == "a\nb\nc\n"


async def test_diff_edit_keeps_crlf_and_missing_final_newline(root: Path, ws: Workspace) -> None:
    f = root / "w.txt"
    f.write_bytes(b"one\r\ntwo\r\nthree")
    res = await call(
        files.DiffEditTool, ws, {"path": "w.txt", "diff": "@@ -2,2 +2,3 @@\n two\n-three\n+3\n+4\n"}
    )
    assert res.success, res.output
    assert f.read_bytes() == b"one\r\ntwo\r\n3\r\n4"
    res = await call(files.DiffEditTool, ws, {"path": "w.txt", "diff": "@@ -0,0 +1 @@\n+zero\n"})
    assert res.success and f.read_bytes() == b"zero\r\none\r\ntwo\r\n3\r\n4"
    f.write_bytes(b"x\ny")
    res = await call(files.DiffEditTool, ws, {"path": "w.txt", "diff": "@@ -2 +2,2 @@\n y\n+z\n"})
    assert res.success and f.read_bytes() == b"x\ny\nz"


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


# ------------------------------------------------------------------ sizes (BC-22 class)


async def test_large_writes_are_complete_and_measured_in_bytes(root: Path, ws: Workspace) -> None:
    from octos_tools.registry import ToolRegistry

    reg = ToolRegistry(workspace=ws)
    files.register(reg, ws, Config())
    raw = '{"path":"bg1.txt","content":"' + "a" * 69_999 + '\\n"}'
    res = await reg.execute("write_file", raw)
    assert res.success and "70,000 bytes" in res.output
    assert (root / "bg1.txt").read_bytes() == b"a" * 69_999 + b"\n"
    raw = '{"path":"bg5.txt","content":"' + "é" * 400_000 + '"}'
    res = await reg.execute("write_file", raw)
    assert res.success and "800,000 bytes" in res.output
    assert (root / "bg5.txt").read_bytes() == "é".encode() * 400_000
    raw = '{"path":"bg3.txt","content":"' + "a" * 1_048_546 + '"}'
    res = await reg.execute("write_file", raw)
    assert kind(res) == "args_too_large" and not (root / "bg3.txt").exists()


async def test_read_file_trailing_slash_on_a_file_is_not_a_directory(
    ws: Workspace, root: Path
) -> None:
    (root / "ok.txt").write_text("fine\n")
    result = await call(files.ReadFileTool, ws, {"path": "ok.txt/"})
    assert kind(result) == "not_a_directory" and "fine" not in result.output
    edit = await call(
        files.EditFileTool, ws, {"path": "ok.txt/", "old_string": "fine", "new_string": "x"}
    )
    assert kind(edit) == "not_a_directory"
    write = await call(files.WriteFileTool, ws, {"path": "ok.txt/", "content": "x"})
    assert kind(write) == "not_a_directory" and (root / "ok.txt").read_text() == "fine\n"


async def test_a_streamed_column_range_stays_bounded(root: Path, ws: Workspace) -> None:
    """30 lines of 1 MB read from column 900,000: the kept text is capped (about 16 MiB),
    the answer ends early and says where to go on."""
    with (root / "wide.txt").open("w") as fh:
        for i in range(30):
            fh.write(f"{i:02d}" + "z" * 999_998 + "\n")
    tracemalloc.start()
    try:
        res = await call(
            files.ReadFileTool,
            ws,
            {"path": "wide.txt", "start_line": 1, "end_line": 30, "start_column": 900_000},
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.success and "next part: start_line=" in res.output, res.output[-300:]
    assert "characters 900,000-" in res.output
    assert peak < 64 * 1024 * 1024, peak
