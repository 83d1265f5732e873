"""edit_file: matches, hints, line endings, encodings, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octos_tools.builtins import files
from octos_tools.config import Config
from octos_tools.context import ToolContext, ToolPermissions
from octos_tools.workspace import Workspace

from ._files_helpers import call
from .tool_helpers import kind

pytestmark = pytest.mark.anyio


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
