"""``serve`` keeps the workspace's state folder between writes (no folder created and removed
per edit) and removes it when it leaves: at end of input and after a signal."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.mcp.test_server_robustness import StdioPeer

pytestmark = [pytest.mark.timeout(90)]

STATE = ".octos-tmp-state"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    return ws


def _edit(peer: StdioPeer, rid: int, old: str, new: str) -> None:
    args = {"path": "a.txt", "old_string": old, "new_string": new}
    peer.send(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "edit_file", "arguments": args},
        }
    )
    answer = peer.recv_id(rid)
    assert answer["result"].get("isError") is not True, answer


def _read(peer: StdioPeer, rid: int) -> None:
    call = {"name": "read_file", "arguments": {"path": "a.txt"}}
    peer.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": call})
    assert "one" in peer.recv_id(rid)["result"]["content"][0]["text"]


def test_the_folder_appears_with_the_first_write_stays_and_goes_at_eof(workspace: Path) -> None:
    peer = StdioPeer(workspace)
    try:
        peer.initialize()
        _read(peer, 2)
        assert not (workspace / STATE).exists()  # reads create nothing
        _edit(peer, 3, "one", "two")
        assert (workspace / STATE).is_dir()
        inode = (workspace / STATE).stat().st_ino
        _edit(peer, 4, "two", "three")
        assert (workspace / STATE).stat().st_ino == inode  # the same folder, kept
        assert list((workspace / STATE).iterdir()) == []
        assert peer.proc.stdin is not None
        peer.proc.stdin.close()
        assert peer.proc.wait(30) == 0
    finally:
        peer.close()
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt"]
    assert (workspace / "a.txt").read_text() == "three\n"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_exit_removes_the_folder_too(workspace: Path, signum: int) -> None:
    peer = StdioPeer(workspace)
    try:
        peer.initialize()
        _edit(peer, 2, "one", "two")
        assert (workspace / STATE).is_dir()
        peer.proc.send_signal(signum)
        assert peer.proc.wait(30) == 128 + signum
    finally:
        peer.close()
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt"]
