"""Workspace history (octos_tools.history and builtins/workspace_history/): checkpoints recorded
around real tool calls, restore, drift, quota, bad stores, and the user's repository left
untouched."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins import register_builtins
from octos_tools.config import Config
from octos_tools.history import history_for
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace

pytestmark = pytest.mark.anyio


def _registry(root: Path, **history: Any) -> ToolRegistry:
    ws = Workspace(root)
    registry = ToolRegistry(ws)
    config = Config.model_validate({"history": history}) if history else Config()
    register_builtins(registry, ws, config)
    return registry


async def run(reg: ToolRegistry, name: str, args: dict[str, Any]) -> ToolResult:
    return await reg.execute(name, args)


def _kind(res: ToolResult) -> str | None:
    return res.error_kind.value if res.error_kind else None


async def _log(reg: ToolRegistry) -> list[dict[str, Any]]:
    res = await run(reg, "workspace_log", {"limit": 100})
    assert res.success, res.output
    commits: list[dict[str, Any]] = res.structured_metadata["commits"]
    return commits


async def test_each_file_tool_call_records_a_checkpoint_naming_tool_and_paths(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    reg = _registry(tmp_path)
    res = await run(reg, "edit_file", {"path": "a.txt", "old_string": "one", "new_string": "two"})
    assert res.success and res.structured_metadata["checkpoint"]
    patch = "*** Begin Patch\n*** Add File: sub/b.txt\n+bee\n*** End Patch\n"
    assert (await run(reg, "apply_patch", {"patch": patch})).success
    assert (await run(reg, "write_file", {"path": "c.txt", "content": "sea\n"})).success
    log = await _log(reg)
    assert [e["tool"] for e in log] == ["write_file", "apply_patch", "edit_file", "baseline"]
    assert log[0]["paths"] == ["c.txt"] and log[1]["paths"] == ["sub/b.txt"]
    shown = await run(reg, "workspace_show", {"commit": log[3]["commit"][:8], "file": "a.txt"})
    assert shown.output == "one\n"
    diff = await run(reg, "workspace_diff", {"from_commit": log[3]["commit"]})
    assert "-one" in diff.output and "+two" in diff.output and "+bee" in diff.output
    only = await run(reg, "workspace_log", {"project": "sub"})
    assert [e["tool"] for e in only.structured_metadata["commits"]] == ["apply_patch"]
    rel = await run(reg, "workspace_show", {"commit": "HEAD", "file": "b.txt", "project": "sub"})
    assert rel.output == "bee\n"


async def test_restore_brings_back_what_a_command_removed_and_removes_what_it_made(
    tmp_path: Path,
) -> None:
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "data.txt").write_text("precious\n")
    (tmp_path / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(tmp_path / "run.sh", 0o755)
    os.symlink("keep/data.txt", tmp_path / "link")
    reg = _registry(tmp_path)
    res = await run(
        reg, "exec_command", {"cmd": "rm -r keep run.sh link; mkdir new; echo x > new/f"}
    )
    assert res.structured_metadata["checkpoint"]
    assert not (tmp_path / "keep").exists()
    log = await _log(reg)
    assert [e["tool"] for e in log] == ["exec_command", "baseline"]
    res = await run(reg, "workspace_restore", {"commit": log[1]["commit"]})
    assert res.success, res.output
    assert (tmp_path / "keep" / "data.txt").read_text() == "precious\n"
    assert os.stat(tmp_path / "run.sh").st_mode & 0o111
    assert os.readlink(tmp_path / "link") == "keep/data.txt"
    assert not (tmp_path / "new").exists()
    assert "removed (created since): new/f" in res.output
    # the restore is a checkpoint: restoring the one before it undoes it
    log = await _log(reg)
    assert log[0]["tool"] == "workspace_restore"
    res = await run(reg, "workspace_restore", {"commit": log[1]["commit"]})
    assert res.success and (tmp_path / "new" / "f").exists() and not (tmp_path / "keep").exists()


async def test_restore_of_one_file(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("v1\n")
    (tmp_path / "b.txt").write_text("b1\n")
    reg = _registry(tmp_path)
    await run(reg, "write_file", {"path": "a.txt", "content": "v2\n"})
    await run(reg, "write_file", {"path": "b.txt", "content": "b2\n"})
    base = (await _log(reg))[-1]["commit"]
    res = await run(reg, "workspace_restore", {"commit": base, "file": "a.txt"})
    assert res.success, res.output
    assert (tmp_path / "a.txt").read_text() == "v1\n"
    assert (tmp_path / "b.txt").read_text() == "b2\n"


async def test_drift_is_refused_unless_force_and_then_recorded_first(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("v1\n")
    reg = _registry(tmp_path)
    await run(reg, "write_file", {"path": "a.txt", "content": "v2\n"})
    base = (await _log(reg))[-1]["commit"]
    (tmp_path / "a.txt").write_text("edited by a person\n")  # no checkpoint
    (tmp_path / "new.txt").write_text("also theirs\n")
    res = await run(reg, "workspace_restore", {"commit": base})
    assert _kind(res) == "stale_file"
    assert sorted(res.structured_metadata["drifted"]) == ["a.txt", "new.txt"]
    assert (tmp_path / "a.txt").read_text() == "edited by a person\n"
    res = await run(reg, "workspace_restore", {"commit": base})
    assert _kind(res) == "stale_file"  # asked again: still refused
    res = await run(reg, "workspace_restore", {"commit": base, "force": True})
    assert res.success, res.output
    assert (tmp_path / "a.txt").read_text() == "v1\n" and not (tmp_path / "new.txt").exists()
    drift = res.structured_metadata["drift_checkpoint"]
    shown = await run(reg, "workspace_show", {"commit": drift, "file": "a.txt"})
    assert shown.output == "edited by a person\n"


async def test_unknown_checkpoint_is_not_found_naming_the_newest(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    reg = _registry(tmp_path)
    res = await run(reg, "workspace_restore", {"commit": "deadbeef"})
    assert _kind(res) == "not_found" and "no checkpoint yet" in res.output
    await run(reg, "write_file", {"path": "a.txt", "content": "y\n"})
    newest = (await _log(reg))[0]["commit"]
    for tool, args in (
        ("workspace_restore", {"commit": "deadbeef"}),
        ("workspace_show", {"commit": "nothex!", "file": "a.txt"}),
        ("workspace_diff", {"from_commit": "0000000"}),
    ):
        res = await run(reg, tool, args)
        assert _kind(res) == "not_found" and newest[:12] in res.output, res.output


async def test_ignored_and_oversized_files_are_not_recorded_and_never_removed(
    tmp_path: Path,
) -> None:
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "a.log").write_text("ignored\n")
    (tmp_path / "small.txt").write_text("s\n")
    reg = _registry(tmp_path, max_file_bytes=100)
    await run(reg, "write_file", {"path": "small.txt", "content": "t\n"})
    base = (await _log(reg))[-1]["commit"]
    res = await run(
        reg, "exec_command", {"cmd": "head -c 1000 /dev/zero > big.bin; echo s > s2.txt"}
    )
    assert res.success
    store, _ = history_for(reg.workspace)  # type: ignore[arg-type]
    assert store is not None
    files = store.git.run("ls-tree", "-r", "--name-only", "refs/octos/checkpoints").decode().split()
    assert "a.log" not in files and "big.bin" not in files and "small.txt" in files
    log = store.git.run("log", "-1", "--format=%B", "refs/octos/checkpoints").decode()
    assert "Skipped: big.bin (1,000 bytes, over max_file_bytes)" in log
    res = await run(reg, "workspace_restore", {"commit": base})
    assert res.success, res.output
    assert (tmp_path / "big.bin").stat().st_size == 1000 and (tmp_path / "a.log").exists()


async def test_a_corrupt_store_never_blocks_an_edit(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    reg = _registry(tmp_path)
    await run(reg, "write_file", {"path": "a.txt", "content": "y\n"})
    store, _ = history_for(reg.workspace)  # type: ignore[arg-type]
    assert store is not None
    store.flush()  # the checkpoint written behind is on disk: now corrupt it
    (store.folder / "head").write_text("garbage")
    res = await run(reg, "write_file", {"path": "a.txt", "content": "z\n"})
    assert res.success and (tmp_path / "a.txt").read_text() == "z\n"
    assert "corrupt" in res.structured_metadata["checkpoint_skipped"]
    assert "[checkpoint skipped:" in res.output
    res = await run(reg, "workspace_log", {})
    assert _kind(res) == "history_unavailable" and "corrupt" in res.output


async def test_history_off_records_nothing_and_lists_no_history_tools(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    reg = _registry(tmp_path, enabled=False)
    res = await run(reg, "write_file", {"path": "a.txt", "content": "y\n"})
    assert res.success and "checkpoint" not in res.structured_metadata
    assert "workspace_log" not in reg


async def test_quota_collects_old_checkpoints(tmp_path: Path) -> None:
    reg = _registry(tmp_path, max_store_bytes=1 << 16)
    store, _ = history_for(reg.workspace)  # type: ignore[arg-type]
    assert store is not None
    store.quota_every = 1
    for i in range(40):
        blob = hashlib.sha256(str(i).encode()).hexdigest() * 64  # 4 KiB, incompressible-ish
        await run(reg, "write_file", {"path": f"f{i % 3}.txt", "content": blob})
    log = await _log(reg)
    assert 1 <= len(log) < 40
    assert store.size() <= (1 << 16) + 64 * 1024
    res = await run(reg, "workspace_restore", {"commit": log[-1]["commit"]})
    assert res.success, res.output


def _snapshot_git(root: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, _, files in os.walk(root / ".git"):
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = p.read_bytes() + str(p.stat().st_mtime_ns).encode()
    return out


async def test_the_users_repository_is_untouched_after_100_checkpoints(tmp_path: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=u", "-c", "user.email=u@x", *args],
            cwd=tmp_path, env=env, check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip

    git("init", "-q")
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    git("add", "a.txt", "b.txt")
    git("commit", "-qm", "first")
    (tmp_path / "b.txt").write_text("stashed\n")
    git("stash", "-q")
    (tmp_path / "a.txt").write_text("staged\n")
    git("add", "a.txt")
    (tmp_path / "nested").mkdir()
    subprocess.run(["git", "init", "-q"], cwd=tmp_path / "nested", env=env, check=True)
    status = git("status", "--porcelain")  # refreshes the index: before the snapshot
    before = _snapshot_git(tmp_path)
    nested_before = sorted(os.listdir(tmp_path / "nested" / ".git"))
    reg = _registry(tmp_path)
    for i in range(50):
        await run(reg, "write_file", {"path": "work.txt", "content": f"{i}\n"})
        await run(reg, "exec_command", {"cmd": f"echo {i} > cmd.txt"})
    assert len(await _log(reg)) >= 100
    assert _snapshot_git(tmp_path) == before
    assert sorted(os.listdir(tmp_path / "nested" / ".git")) == nested_before
    assert git("stash", "list").count("\n") == 1
    assert git("diff", "--cached", "--name-only") == "a.txt\n"
    assert sorted(git("status", "--porcelain").splitlines()) == sorted(
        [*status.splitlines(), "?? cmd.txt", "?? work.txt"]
    )


async def test_a_folder_turned_into_a_link_and_back_keeps_the_store_working(
    tmp_path: Path,
) -> None:
    """A path that changes between file, folder and link (a D/F conflict in the store's
    index) must not wedge the history: every later checkpoint and restore works."""
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "f.txt").write_text("f\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    reg = _registry(ws)
    link = f"rm d/f.txt; rmdir d; ln -s {outside} d"
    res = await run(reg, "exec_command", {"cmd": link})
    assert res.success and "checkpoint_skipped" not in (res.structured_metadata or {}), res.output
    base = (await _log(reg))[-1]["commit"]
    res = await run(reg, "workspace_restore", {"commit": base, "force": True})
    assert res.success, res.output
    assert (ws / "d" / "f.txt").read_text() == "f\n" and not (ws / "d").is_symlink()
    res = await run(reg, "exec_command", {"cmd": "echo x > d/g.txt"})
    assert res.success and "checkpoint_skipped" not in (res.structured_metadata or {}), res.output
    await reg.aclose()
