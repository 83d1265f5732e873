"""Durability is a setting (``files.durable_writes``): off, writes are atomic but not synced;
on, every staged file, journal and folder is ``fsync``-ed. And a host may hold the state
folder between writes (``Workspace.holding_state_folder``) instead of removing it after each.

The ``fsync`` and ``rmdir`` calls are counted with wrappers around the real functions, on
real files."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from octos_tools.config import Config
from octos_tools.profile import build_registry
from octos_tools.session import ToolSession
from octos_tools.workspace import FileChange, Workspace

pytestmark = pytest.mark.anyio

STATE = ".octos-tmp-state"
PATCH = (
    "*** Begin Patch\n*** Update File: src/a.py\n@@\n-y = 2\n+y = 20\n"
    "*** Update File: src/b.py\n@@\n-z = 3\n+z = 30\n*** End Patch\n"
)


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The descriptors passed to ``os.fsync`` (the real one still runs)."""
    seen: list[int] = []
    real = os.fsync

    def counting(fd: Any) -> None:
        seen.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    yield seen


def _count(monkeypatch: pytest.MonkeyPatch, name: str) -> list[object]:
    seen: list[object] = []
    real: Callable[..., Any] = getattr(os, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        seen.append(args[0] if args else None)
        return real(*args, **kwargs)

    monkeypatch.setattr(os, name, counting)
    return seen


def _tree(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("x = 1\ny = 2\n")
    (root / "src" / "b.py").write_text("z = 3\n")


def _session(root: Path, durable: bool | None) -> ToolSession:
    cfg = (
        Config()
        if durable is None
        else Config.model_validate({"files": {"durable_writes": durable}})
    )
    return ToolSession(build_registry(cfg, root, defer=False))


async def _edit_write_patch(session: ToolSession) -> None:
    edit = await session.call(
        "edit_file", {"path": "src/a.py", "old_string": "x = 1", "new_string": "x = 10"}
    )
    assert edit.success, edit.output
    write = await session.call("write_file", {"path": "src/c.py", "content": "c = 1\n"})
    assert write.success, write.output
    patched = await session.call("apply_patch", {"input": PATCH})
    assert patched.success, patched.output


@pytest.mark.parametrize("durable", [None, False])
async def test_by_default_writes_are_not_synced(
    tmp_path: Path, fsyncs: list[int], durable: bool | None
) -> None:
    _tree(tmp_path)
    session = _session(tmp_path, durable)
    assert session.registry.workspace is not None
    assert session.registry.workspace.durable_writes is False
    await _edit_write_patch(session)
    assert fsyncs == []
    assert (tmp_path / "src" / "a.py").read_text() == "x = 10\ny = 20\n"
    assert (tmp_path / "src" / "b.py").read_text() == "z = 30\n"
    assert (tmp_path / "src" / "c.py").read_text() == "c = 1\n"
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".octos-tmp")]


async def test_durable_writes_reach_every_write_path(tmp_path: Path, fsyncs: list[int]) -> None:
    _tree(tmp_path)
    session = _session(tmp_path, True)
    assert session.registry.workspace is not None
    assert session.registry.workspace.durable_writes is True
    edit = await session.call(
        "edit_file", {"path": "src/a.py", "old_string": "x = 1", "new_string": "x = 10"}
    )
    assert edit.success, edit.output
    assert len(fsyncs) >= 2  # the staged file, then its folder
    before = len(fsyncs)
    write = await session.call("write_file", {"path": "src/c.py", "content": "c = 1\n"})
    assert write.success and len(fsyncs) >= before + 2
    before = len(fsyncs)
    patched = await session.call("apply_patch", {"input": PATCH})
    assert patched.success, patched.output
    # two staged files, the state folder, the journal and its folder, the target folder
    assert len(fsyncs) >= before + 5
    assert (tmp_path / "src" / "a.py").read_text() == "x = 10\ny = 20\n"


def test_the_workspace_setting_decides_for_its_own_methods(
    tmp_path: Path, fsyncs: list[int]
) -> None:
    Workspace(tmp_path).write_bytes("a.txt", b"a")
    Workspace(tmp_path).apply_changes([FileChange("b.txt", b"b"), FileChange("c.txt", b"c")])
    assert fsyncs == []
    durable = Workspace(tmp_path, durable_writes=True)
    durable.write_bytes("a.txt", b"a2")
    assert len(fsyncs) == 2
    durable.rename("a.txt", "d.txt")
    durable.delete("d.txt")
    assert len(fsyncs) == 5  # both folders of the rename (here one), the folder of the delete


def test_config_files_section() -> None:
    assert Config().files.durable_writes is False
    assert Config.model_validate({"files": {"durable_writes": True}}).files.durable_writes is True
    with pytest.raises(ValueError):
        Config.model_validate({"files": {"durable_writes": "yes please"}})
    with pytest.raises(ValueError):
        Config.model_validate({"files": {"fsync": True}})


def test_a_held_state_folder_is_kept_between_writes_and_removed_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rmdirs = _count(monkeypatch, "rmdir")
    ws = Workspace(tmp_path)
    ws.write_bytes("a.txt", b"1")
    assert rmdirs == [STATE] and not (tmp_path / STATE).exists()  # unheld: removed per write
    rmdirs.clear()
    with ws.holding_state_folder():
        assert not (tmp_path / STATE).exists()  # nothing before the first write
        for i in range(3):
            ws.write_bytes("a.txt", b"%d" % i)
            ws.apply_changes([FileChange("b.txt", b"%d" % i), FileChange("c.txt", b"%d" % i)])
            assert (tmp_path / STATE).is_dir()
            assert os.listdir(tmp_path / STATE) == []
        with ws.holding_state_folder():  # nested: shares the outer hold
            ws.write_bytes("a.txt", b"n")
        assert (tmp_path / STATE).is_dir() and rmdirs == []
        # another writer of the same folder leaves it too
        Workspace(tmp_path).write_bytes("other.txt", b"o")
        assert (tmp_path / STATE).is_dir() and rmdirs == []
    assert rmdirs == [STATE] and not (tmp_path / STATE).exists()
    assert (tmp_path / "a.txt").read_bytes() == b"n" and (tmp_path / "c.txt").read_bytes() == b"2"


def test_a_hold_without_writes_creates_nothing(tmp_path: Path) -> None:
    (tmp_path / "r.txt").write_text("r")
    ws = Workspace(tmp_path)
    with ws.holding_state_folder():
        assert ws.read_bytes("r.txt") == b"r"
    assert os.listdir(tmp_path) == ["r.txt"]


def test_a_held_folder_removed_meanwhile_is_held_again(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    with ws.holding_state_folder():
        ws.write_bytes("a.txt", b"1")
        os.rmdir(tmp_path / STATE)  # someone removed the (empty) folder
        ws.write_bytes("a.txt", b"2")
        assert (tmp_path / STATE).is_dir()
    assert os.listdir(tmp_path) == ["a.txt"]


def test_a_killed_holder_leaves_a_folder_the_next_open_removes(tmp_path: Path) -> None:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            ws = Workspace(tmp_path)
            with ws.holding_state_folder():
                ws.write_bytes("a.txt", b"new")
                os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    assert (tmp_path / STATE).is_dir()
    Workspace(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]
    assert (tmp_path / "a.txt").read_bytes() == b"new"
