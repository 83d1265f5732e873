"""read_file: numbering, cuts, column ranges, encodings, streaming, refusals."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins import files
from octos_tools.config import Config
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace

from ._files_helpers import call
from .tool_helpers import kind

pytestmark = pytest.mark.anyio


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
