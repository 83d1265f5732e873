"""write_file: writes, refusals, large writes measured in bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from octos_tools.builtins import files
from octos_tools.config import Config
from octos_tools.context import ToolPermissions
from octos_tools.workspace import Workspace

from ._files_helpers import call
from .tool_helpers import kind

pytestmark = pytest.mark.anyio


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
