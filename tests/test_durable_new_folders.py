"""With ``durable_writes``, a write that creates folders also syncs the parent of each new
folder, or the new folder's entry could be lost in a power cut with the file in it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from octos_tools.config import Config
from octos_tools.profile import build_registry
from octos_tools.session import ToolSession

pytestmark = pytest.mark.anyio


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[tuple[int, int]]]:
    """``(st_dev, st_ino)`` of everything passed to ``os.fsync`` (the real one still runs)."""
    seen: set[tuple[int, int]] = set()
    real = os.fsync

    def recording(fd: Any) -> None:
        st = os.fstat(fd)
        seen.add((st.st_dev, st.st_ino))
        real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    yield seen


def _ino(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_dev, st.st_ino


def _session(root: Path, durable: bool) -> ToolSession:
    cfg = Config.model_validate({"files": {"durable_writes": durable}})
    return ToolSession(build_registry(cfg, root, defer=False))


async def test_write_file_into_new_folders_syncs_each_parent(
    tmp_path: Path, synced: set[tuple[int, int]]
) -> None:
    result = await _session(tmp_path, True).call(
        "write_file", {"path": "new/deeper/f.txt", "content": "x\n"}
    )
    assert result.success, result.output
    assert (tmp_path / "new/deeper/f.txt").read_text() == "x\n"
    for folder in (tmp_path, tmp_path / "new", tmp_path / "new/deeper"):
        assert _ino(folder) in synced, folder


async def test_apply_patch_adding_into_a_new_folder_syncs_its_parent(
    tmp_path: Path, synced: set[tuple[int, int]]
) -> None:
    patch = "*** Begin Patch\n*** Add File: pkg/mod.py\n+x = 1\n*** End Patch\n"
    result = await _session(tmp_path, True).call("apply_patch", {"input": patch})
    assert result.success, result.output
    assert (tmp_path / "pkg/mod.py").read_text() == "x = 1\n"
    assert _ino(tmp_path) in synced and _ino(tmp_path / "pkg") in synced


async def test_without_durable_writes_new_folders_are_not_synced(
    tmp_path: Path, synced: set[tuple[int, int]]
) -> None:
    result = await _session(tmp_path, False).call(
        "write_file", {"path": "new/f.txt", "content": "x\n"}
    )
    assert result.success, result.output
    assert synced == set()
