"""The history store's write-behind (history/_store.py): a file tool's checkpoint is hashed on
the call's path and written by a worker thread, and nothing reads or writes the store before
it is written. Real files, real ``serve`` processes, a real ``kill -9``.

* undo after many quick edits: every checkpoint id a result named restores its state, asked
  at once (no wait for the writes);
* a deferred write that fails: the result named a checkpoint that is not in the store; the
  next call records what it held as ``outside``, nothing of the workspace is lost;
* two ``serve`` processes editing one workspace at once: every reply's checkpoint is in the
  store, on one line of history, and restores its file;
* a crash right after a reply (``kill -9``, the write held up by a FIFO where the object's
  temporary file goes): the reply's checkpoint is lost, the edit and every checkpoint before
  it are not; a forced restore records the edit first (docs/history.md, "Crash").
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from octos_tools.builtins import register_builtins
from octos_tools.config import Config
from octos_tools.history import REF, HistoryStore, history_for
from octos_tools.history import _objects as history_objects
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace

pytestmark = [pytest.mark.timeout(180)]

SERVE = [sys.executable, "-m", "octos_tools", "serve"]


def _registry(root: Path) -> ToolRegistry:
    ws = Workspace(root)
    registry = ToolRegistry(ws)
    register_builtins(registry, ws, Config())
    return registry


def _store(reg: ToolRegistry) -> HistoryStore:
    store, reason = history_for(reg.workspace)  # type: ignore[arg-type]
    assert store is not None, reason
    return store


async def run(reg: ToolRegistry, name: str, args: dict[str, Any]) -> ToolResult:
    res = await reg.execute(name, args)
    assert res.success, res.output
    return res


def _git(store_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "GIT_DIR": str(store_dir / "git"), "HOME": str(store_dir)}
    return subprocess.run(["git", *args], env=env, capture_output=True, text=True, check=check)


@pytest.mark.anyio
async def test_undo_after_many_quick_edits_restores_every_state(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a = 0\n")
    (tmp_path / "b.py").write_text("b = 0\n")
    reg = _registry(tmp_path)
    states: list[tuple[str, str, str]] = []  # (checkpoint, a.py, b.py) after each edit
    for i in range(1, 41):
        name = "a.py" if i % 2 else "b.py"
        old = (tmp_path / name).read_text()
        res = await run(reg, "write_file", {"path": name, "content": f"{name[0]} = {i}\n"})
        assert old != (tmp_path / name).read_text()
        cp = res.structured_metadata["checkpoint"]
        states.append((cp, (tmp_path / "a.py").read_text(), (tmp_path / "b.py").read_text()))
    assert len({cp for cp, _, _ in states}) == 40
    for k in (38, 0, 19, 39, 7):  # at once after the last edit, then back and forth
        cp, a, b = states[k]
        res = await run(reg, "workspace_restore", {"commit": cp})
        assert (tmp_path / "a.py").read_text() == a, (k, res.output)
        assert (tmp_path / "b.py").read_text() == b, (k, res.output)
    log = (await run(reg, "workspace_log", {"limit": 100})).structured_metadata["commits"]
    listed = [e["commit"][:12] for e in log]
    assert all(cp in listed for cp, _, _ in states)  # every id a result named is kept
    store = _store(reg)
    store.flush()
    assert _git(store.folder, "fsck", "--strict", "--no-dangling").returncode == 0


@pytest.mark.anyio
async def test_a_failed_write_behind_loses_the_checkpoint_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_text("a0\n")
    reg = _registry(tmp_path)
    first = await run(reg, "write_file", {"path": "a.txt", "content": "a1\n"})
    before = first.structured_metadata["checkpoint"]
    _store(reg).flush()  # that one is written: only the next write fails
    real_write = history_objects.ObjectBatch.write

    def full(self: history_objects.ObjectBatch) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(history_objects.ObjectBatch, "write", full)
    lost = await run(reg, "write_file", {"path": "a.txt", "content": "a2\n"})
    named = lost.structured_metadata["checkpoint"]  # named before it was written
    store = _store(reg)
    store.flush()
    assert store.last_write_error is not None and "No space left" in store.last_write_error
    monkeypatch.setattr(history_objects.ObjectBatch, "write", real_write)
    assert (tmp_path / "a.txt").read_text() == "a2\n"  # the edit itself is on disk
    assert store.resolve(named) is None and store.resolve(before) is not None
    res = await run(reg, "write_file", {"path": "b.txt", "content": "b\n"})
    assert res.structured_metadata["checkpoint"]
    log = (await run(reg, "workspace_log", {})).structured_metadata["commits"]
    assert [e["tool"] for e in log[:3]] == ["write_file", "outside", "write_file"]
    assert log[1]["paths"] == ["a.txt"]  # what the lost checkpoint held, recorded again
    await run(reg, "workspace_restore", {"commit": log[1]["commit"], "file": "a.txt"})
    assert (tmp_path / "a.txt").read_text() == "a2\n"
    await run(reg, "workspace_restore", {"commit": before, "file": "a.txt"})
    assert (tmp_path / "a.txt").read_text() == "a1\n"


class _Peer:
    """A raw client of ``serve`` over stdio: JSON-RPC lines, no SDK (so a test can kill the
    server the moment a reply is read)."""

    def __init__(self, workspace: Path) -> None:
        self.proc = subprocess.Popen(
            [*SERVE, "--workspace", str(workspace)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proc.stdout is not None
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.proc.stdout, selectors.EVENT_READ)
        self._buf = b""
        self._next = 1
        self._request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "crash-test", "version": "1"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid, self._next = self._next, self._next + 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 60
        while True:
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                assert left > 0 and self._sel.select(left), "no reply from serve"
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                assert chunk, "serve closed stdout"
                self._buf += chunk
            line, _, self._buf = self._buf.partition(b"\n")
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == rid and "method" not in message:
                result: dict[str, Any] = message["result"]
                return result

    def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """The structured metadata of a successful call."""
        result = self._request("tools/call", {"name": tool, "arguments": args})
        assert not result.get("isError"), result
        meta: dict[str, Any] = result["_meta"]["io.octos-tools/result"]["structured_metadata"]
        return meta

    def close(self) -> None:
        """End the session as a client does (stdin closed): serve exits on its own."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(30)
        self.proc.stdout.close()

    def kill(self) -> None:
        self.proc.kill()  # SIGKILL: no atexit, no flush
        self.proc.wait(10)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def _cli(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "octos_tools", *args, "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _call(workspace: Path, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    proc = _cli(workspace, "call", tool, json.dumps(args), "--json")
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def _store_dir(workspace: Path) -> Path:
    from octos_tools.state_dir import workspace_state_dir

    return workspace_state_dir(workspace) / "history"


def test_a_crash_right_after_a_reply_loses_that_checkpoint_only(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a0\n")
    peer = _Peer(ws)
    try:
        earlier = peer.call("write_file", {"path": "a.txt", "content": "a1\n"})["checkpoint"]
        # hold the next write up where its blob's temporary file goes: a FIFO blocks the
        # worker thread's open() (no reader), so the reply goes out and nothing is written
        content = b"a2, never recorded by its own checkpoint\n"
        blob = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
        folder = _store_dir(ws) / "git" / "objects" / blob[:2]
        folder.mkdir(exist_ok=True)
        os.mkfifo(folder / f"tmp_obj_{peer.proc.pid}_{blob[2:10]}")
        named = peer.call("write_file", {"path": "a.txt", "content": content.decode()})
        lost = named["checkpoint"]
    finally:
        peer.kill()
    store = _store_dir(ws)
    assert (ws / "a.txt").read_bytes() == content  # the edit is on disk
    assert _git(store, "cat-file", "-e", f"{lost}^{{commit}}", check=False).returncode != 0
    head = _git(store, "rev-parse", REF).stdout.strip()
    assert head.startswith(earlier)  # every checkpoint before the lost one is intact
    assert (store / "head").read_text().startswith(head)
    assert _git(store, "fsck", "--strict", "--no-dangling", check=False).returncode == 0
    # the next process: the lost id is unknown, the earlier one restores, the edit is not
    # lost (drift: recorded first by a forced restore)
    res = _call(ws, "workspace_restore", {"commit": lost})
    assert res["error"]["kind"] == "not_found"
    res = _call(ws, "workspace_restore", {"commit": earlier})
    assert res["error"]["kind"] == "stale_file" and "a.txt" in res["output"]
    res = _call(ws, "workspace_restore", {"commit": earlier, "force": True})
    assert res["success"] and (ws / "a.txt").read_text() == "a1\n"
    drift = res["structured_metadata"]["drift_checkpoint"]
    res = _call(ws, "workspace_restore", {"commit": drift})
    assert res["success"] and (ws / "a.txt").read_bytes() == content


def test_a_kill_right_after_each_reply_leaves_a_sound_store(tmp_path: Path) -> None:
    """No FIFO: the write races the kill. Either the reply's checkpoint is in the store, or
    the one before it is the newest; the store is sound either way."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("0\n")
    store = _store_dir(ws)
    previous: str | None = None
    for i in range(1, 5):
        peer = _Peer(ws)
        try:
            named = peer.call("write_file", {"path": "a.txt", "content": f"{i}\n"})["checkpoint"]
        finally:
            peer.kill()
        head = _git(store, "rev-parse", REF, check=False).stdout.strip()
        if not head:  # the first process died before its store's first write: nothing lost
            assert previous is None
            continue
        if not head.startswith(named):
            assert _git(store, "cat-file", "-e", f"{named}^{{commit}}", check=False).returncode
            # lost: the newest is the one before, or the next process's "outside" record
            # of what the killed one wrote (docs/history.md, "Crash"): a descendant of it
            if previous is not None:
                ancestor = _git(store, "merge-base", "--is-ancestor", previous, head, check=False)
                assert ancestor.returncode == 0, (previous, head)
        show = _git(store, "show", f"{head}:a.txt", check=False).stdout
        assert show in (f"{i}\n", f"{i - 1}\n")
        assert _git(store, "fsck", "--strict", "--no-dangling", check=False).returncode == 0
        previous = head[:12]


def test_two_serve_processes_editing_at_once_keep_every_checkpoint(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text(f"{name} 0\n")
    (ws / "seed.txt").write_text("seed\n")
    _call(ws, "write_file", {"path": "seed.txt", "content": "baseline recorded\n"})
    named: dict[str, list[tuple[str, str]]] = {"a.txt": [], "b.txt": []}

    def edit(name: str) -> None:
        peer = _Peer(ws)
        try:
            for i in range(1, 16):
                content = f"{name} {i}\n"
                meta = peer.call("write_file", {"path": name, "content": content})
                named[name].append((meta["checkpoint"], content))
        finally:
            peer.close()  # the last checkpoint is written before serve exits

    async def both() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, edit, "a.txt")
            tg.start_soon(anyio.to_thread.run_sync, edit, "b.txt")

    anyio.run(both)
    store = _store_dir(ws)
    chain = _git(store, "rev-list", "--first-parent", REF).stdout.split()
    parents = _git(store, "rev-list", "--min-parents=2", REF).stdout.split()
    assert not parents  # one line of history: no checkpoint took another's parent twice
    for name, cps in named.items():
        for cp, content in cps:
            full = [c for c in chain if c.startswith(cp)]
            assert full, f"{name}: checkpoint {cp} is not in the history"
            assert _git(store, "show", f"{full[0]}:{name}").stdout == content
    assert len(set(chain)) == len(chain)
    assert _git(store, "fsck", "--strict", "--no-dangling", check=False).returncode == 0
