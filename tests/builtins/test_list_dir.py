"""list_dir: entries, links shown as links, refusals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from octos_tools.builtins import search
from octos_tools.config import Config
from octos_tools.workspace import Workspace

from .tool_helpers import call_in as run
from .tool_helpers import kind

LINKED_ROOT = True  # the root fixture adds notes.txt and links out (conftest.py)

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------ list_dir


async def test_list_dir_shows_links_as_links(root: Path, ws: Workspace) -> None:
    (root / "sub").mkdir()
    (root / ".hidden").write_text("h")
    res = await run(search.ListDirTool(ws), ws, {"path": "."})
    assert res.success
    lines = res.output.splitlines()
    assert lines[0] == "6 entries in .:"
    assert lines[1] == "[dir]  sub/"
    assert lines[2].startswith("[file] .hidden") and "(1 bytes)" in lines[2]
    assert lines[3].startswith("[file] notes.txt")
    assert [x.split()[1] for x in lines[4:]] == ["leak", "linkdir", "rel"]
    assert all(x.startswith("[link]") for x in lines[4:])
    assert "secret" not in res.output
    (root / "empty").mkdir()
    res = await run(search.ListDirTool(ws), ws, {"path": "empty"})
    assert res.success and "empty" in res.output


async def test_list_dir_refusals(root: Path, ws: Workspace, tmp_path: Path) -> None:
    for path, k in [
        ("linkdir", "symlink_refused"),
        ("rel", "symlink_refused"),
        (str(tmp_path / "ws_secret"), "path_outside_workspace"),
        ("../ws_secret", "path_outside_workspace"),
        ("\x00", "invalid_arguments"),
        ("notes.txt", "not_a_directory"),
        ("missing", "not_found"),
    ]:
        res = await run(search.ListDirTool(ws), ws, {"path": path})
        assert kind(res) == k, path
        assert "secret.txt" not in res.output and "key.txt" not in res.output


async def test_list_dir_path_defaults_to_root_through_registry(root: Path, ws: Workspace) -> None:
    from octos_tools.registry import ToolRegistry

    registry = ToolRegistry(ws)
    search.register(registry, ws, Config())
    result = await registry.execute("list_dir", "{}")
    assert result.success, result.output
    assert "notes.txt" in result.output


async def test_list_dir_groups_sorts_in_byte_order_and_shows_escaped_bytes(
    root: Path, ws: Workspace
) -> None:
    base = root / "mixed"
    base.mkdir()
    for name in ("b.txt", "a.txt", "Z.txt", "é.txt"):
        (base / name).write_text("x" * 1234)
    (base / "zdir").mkdir()
    (base / "adir").mkdir()
    (base / ".octos-tmp-0123456789abcdef").write_text("ours")  # never listed
    raw = os.path.join(os.fsencode(base), b"\xff.bin")  # not UTF-8: an escaped byte
    with open(raw, "wb") as fh:
        fh.write(b"12")
    res = await run(search.ListDirTool(ws), ws, {"path": "mixed"})
    assert res.success, res.output
    assert res.output.splitlines() == [
        "7 entries in mixed:",
        "[dir]  adir/",
        "[dir]  zdir/",
        "[file] Z.txt  (1,234 bytes)",
        "[file] a.txt  (1,234 bytes)",
        "[file] b.txt  (1,234 bytes)",
        "[file] é.txt  (1,234 bytes)",  # é sorts by its UTF-8 bytes (0xc3 0xa9)
        "[file] \u00ff.bin  (2 bytes)",  # b"\xff" shown as Latin-1, sorted last (0xff)
    ]
    assert res.structured_metadata is not None
    assert res.structured_metadata["counts"] == {"dir": 2, "file": 5, "symlink": 0, "other": 0}


async def test_list_dir_caps_the_lines_and_counts_the_rest(root: Path, ws: Workspace) -> None:
    from octos_tools.builtins.search._list_dir import MAX_LIST_ENTRIES

    big = root / "big"
    big.mkdir()
    for i in range(MAX_LIST_ENTRIES + 5):
        (big / f"f{i:05d}").touch()
    (big / "sub").mkdir()
    res = await run(search.ListDirTool(ws), ws, {"path": "big"})
    lines = res.output.splitlines()
    assert lines[0] == f"{MAX_LIST_ENTRIES + 6} entries in big:"
    assert lines[1] == "[dir]  sub/"  # directories first, even past the cap
    assert lines[2] == "[file] f00000  (0 bytes)"
    assert len(lines) == 1 + MAX_LIST_ENTRIES + 1
    assert lines[-1] == "… and 6 more entries not shown"
