"""The per-user state folder: where it is, its mode, one folder per resolved workspace."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from octos_tools.state_dir import STATE_DIR_ENV, state_root, workspace_state_dir


def test_env_override_and_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "state"))
    root = state_root()
    assert root == tmp_path / "state"
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


def test_xdg_state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STATE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_root(create=False) == tmp_path / "xdg" / "octos-tools"
    assert not (tmp_path / "xdg").exists()


def test_one_folder_per_resolved_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "state"))
    a, b = tmp_path / "one" / "ws", tmp_path / "two" / "ws"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(a)
    da, db = workspace_state_dir(a), workspace_state_dir(b)
    assert da != db
    assert da.name.startswith("ws-") and db.name.startswith("ws-")
    assert workspace_state_dir(link) == da
    assert stat.S_IMODE(da.stat().st_mode) == 0o700
    assert da.parent == tmp_path / "state" / "workspaces"
    assert os.path.commonpath([da, tmp_path / "state"]) == str(tmp_path / "state")
