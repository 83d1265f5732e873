"""diff_edit: unified diffs applied with fuzz, all or nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from octos_tools.builtins import files
from octos_tools.workspace import Workspace

from ._files_helpers import call
from .tool_helpers import kind

pytestmark = pytest.mark.anyio


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
