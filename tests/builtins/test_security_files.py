"""Adversarial workspace content for the file tools: hard links, FIFOs, /proc links.

Hard links are a documented limit: a hard link *is* the file (no path leads outside), so a
read through a link that someone outside the tools made (``ln /etc/x ws/x``; git and the
file tools cannot make one) shows the outside file's bytes. Refusing every file with
``st_nlink > 1`` would break pnpm/cargo stores and backups that hard-link on purpose. Writes
are safe: the atomic replace swaps the directory entry, so the outside file is untouched.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from octos_tools.builtins import register_builtins
from octos_tools.config import Config
from octos_tools.registry import ToolRegistry
from octos_tools.workspace import Workspace

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX links and FIFOs"),
]


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, ToolRegistry]:
    ws = tmp_path / "ws"
    out = tmp_path / "outside"
    ws.mkdir()
    out.mkdir()
    (out / "secret.txt").write_text("TOPSECRET\n")
    registry = ToolRegistry(workspace=Workspace(ws))
    register_builtins(registry, Workspace(ws), Config())
    return ws, out, registry


async def test_write_through_a_hard_link_leaves_the_outside_file_alone(
    setup: tuple[Path, Path, ToolRegistry],
) -> None:
    ws, out, registry = setup
    os.link(out / "secret.txt", ws / "hard.txt")
    for name, args in (
        ("write_file", {"path": "hard.txt", "content": "PWNED\n"}),
        ("edit_file", {"path": "hard.txt", "old_string": "PWNED", "new_string": "AGAIN"}),
    ):
        result = await registry.execute(name, args)
        assert result.success, result.output
    assert (out / "secret.txt").read_text() == "TOPSECRET\n"
    assert (ws / "hard.txt").read_text() == "AGAIN\n"
    assert os.stat(ws / "hard.txt").st_nlink == 1


async def test_apply_patch_through_a_hard_link_leaves_the_outside_file_alone(
    setup: tuple[Path, Path, ToolRegistry],
) -> None:
    ws, out, registry = setup
    os.link(out / "secret.txt", ws / "hard.txt")
    patch = "*** Begin Patch\n*** Update File: hard.txt\n@@\n-TOPSECRET\n+changed\n*** End Patch"
    result = await registry.execute("apply_patch", {"patch": patch})
    assert result.success, result.output
    assert (out / "secret.txt").read_text() == "TOPSECRET\n"
    patch = "*** Begin Patch\n*** Delete File: hard.txt\n*** End Patch"
    assert (await registry.execute("apply_patch", {"patch": patch})).success
    assert (out / "secret.txt").read_text() == "TOPSECRET\n"


async def test_fifo_and_proc_links_neither_hang_nor_leak(
    setup: tuple[Path, Path, ToolRegistry],
) -> None:
    ws, out, registry = setup
    os.mkfifo(ws / "fifo")
    os.symlink(f"/proc/self/root{out}", ws / "proc")
    os.symlink("/proc/self/cwd", ws / "cwd")
    calls = [
        ("read_file", {"path": "fifo"}),
        ("write_file", {"path": "fifo", "content": "x"}),
        ("edit_file", {"path": "fifo", "old_string": "a", "new_string": "b"}),
        ("grep", {"pattern": "x", "path": "fifo"}),
        ("read_file", {"path": "proc/secret.txt"}),
        ("list_dir", {"path": "proc"}),
        ("grep", {"pattern": "TOPSEC[R]ET", "path": "proc"}),
        ("read_file", {"path": "cwd/etc/hostname"}),
    ]
    with anyio.fail_after(30):
        for name, args in calls:
            result = await registry.execute(name, args)
            assert not result.success, (name, args, result.output)
            assert "TOPSECRET" not in result.output
        result = await registry.execute("grep", {"pattern": "TOPSEC[R]ET"})
        assert result.success and "TOPSECRET" not in result.output
        glob = await registry.execute("glob", {"pattern": "**/*"})
        assert "secret.txt" not in glob.output
    assert (out / "secret.txt").read_text() == "TOPSECRET\n"
