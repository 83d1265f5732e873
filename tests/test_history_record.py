"""In-process checkpoints (history/_record.py, _tree.py, _objects.py) and the watcher that
tells a command's changes (history/_watch.py): every tree written without git is the tree
git itself makes of the workspace, ``git fsck`` finds the store sound, restores round-trip,
and changes made between calls are recorded apart from the command's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins import register_builtins
from octos_tools.config import Config
from octos_tools.history import HistoryStore, _watch, history_for
from octos_tools.history import _settings as history_settings
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace

pytestmark = pytest.mark.anyio

REF = "refs/octos/checkpoints"


@pytest.fixture(autouse=True)
def _close_stores() -> Iterator[None]:
    yield
    for store in list(history_settings._stores.values()):
        store.close()
    history_settings._stores.clear()


@pytest.fixture(params=["watcher", "scan"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways a command is recorded: told by the watcher, or a whole-tree git scan."""
    if request.param == "scan":
        monkeypatch.setattr(HistoryStore, "watch", False)
    return str(request.param)


def _registry(root: Path, **history: Any) -> ToolRegistry:
    ws = Workspace(root)
    registry = ToolRegistry(ws)
    register_builtins(registry, ws, Config.model_validate({"history": history}))
    return registry


def _store(reg: ToolRegistry) -> HistoryStore:
    store, reason = history_for(reg.workspace)  # type: ignore[arg-type]
    assert store is not None, reason
    return store


async def run(reg: ToolRegistry, name: str, args: dict[str, Any]) -> ToolResult:
    res = await reg.execute(name, args)
    assert res.success, res.output
    return res


def _git(store: HistoryStore, *args: str, index: Path | None = None) -> str:
    env = dict(store.git.env)
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return subprocess.run(
        [*store.git.prefix, *args], cwd=store.root, env=env, check=True, capture_output=True
    ).stdout.decode()


def _git_tree_of_workspace(store: HistoryStore) -> str:
    """The tree git makes of the workspace from scratch (its own index, its own rules;
    nested repositories and files over max_file_bytes left out, as the history does)."""
    index = store.folder / "fresh-index"
    index.unlink(missing_ok=True)
    out = _git(store, "ls-files", "-z", "-o", "--exclude-standard", index=index)
    names = [p for p in out.split("\0") if p and not p.endswith("/")]
    names = [
        p for p in names
        if os.path.islink(store.root / p) or os.path.getsize(store.root / p) <= store.max_file_bytes
    ]  # fmt: skip
    listed = "".join(p + "\0" for p in names)
    subprocess.run(
        [*store.git.prefix, "update-index", "-z", "--add", "--stdin"],
        input=listed.encode(), cwd=store.root, check=True, capture_output=True,
        env={**store.git.env, "GIT_INDEX_FILE": str(index)},
    )  # fmt: skip
    return _git(store, "write-tree", index=index).strip()


def _head_tree(store: HistoryStore) -> str:
    return _git(store, "rev-parse", f"{REF}^{{tree}}").strip()


async def _log(reg: ToolRegistry) -> list[dict[str, Any]]:
    res = await run(reg, "workspace_log", {"limit": 100})
    commits: list[dict[str, Any]] = res.structured_metadata["commits"]
    return commits


async def test_in_process_trees_are_gits_trees_and_the_store_is_sound(
    tmp_path: Path, mode: str
) -> None:
    ws = tmp_path / "ws"
    (ws / "src" / "deep" / "er").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("a = 1\n")
    (ws / "src" / "deep" / "er" / "b.py").write_text("b = 1\n")
    (ws / "src" / "deep" / "er-x").write_text("sorts after the folder 'er' in git\n")
    (ws / ".gitignore").write_text("*.log\nbuild/\n")
    (ws / "top.txt").write_text("t\n")
    reg = _registry(ws, max_file_bytes=1000)
    store = _store(reg)
    await run(reg, "edit_file", {"path": "src/a.py", "old_string": "1", "new_string": "2"})
    assert _head_tree(store) == _git_tree_of_workspace(store)
    patch = (
        "*** Begin Patch\n*** Add File: new/dir/c.py\n+c\n*** Delete File: top.txt\n"
        "*** Update File: src/deep/er/b.py\n*** Move to: moved/b.py\n@@\n-b = 1\n+b = 2\n"
        "*** End Patch\n"
    )
    await run(reg, "apply_patch", {"patch": patch})
    await run(reg, "write_file", {"path": "x.log", "content": "ignored\n"})
    await run(reg, "write_file", {"path": "build/out.txt", "content": "ignored too\n"})
    res = await run(reg, "write_file", {"path": "big.txt", "content": "z" * 2000})
    assert res.structured_metadata.get("checkpoint") is None  # nothing recorded changed
    assert _head_tree(store) == _git_tree_of_workspace(store)
    log = await _log(reg)
    assert log[0]["tool"] == "apply_patch"
    assert sorted(log[0]["paths"]) == ["moved/b.py", "new/dir/c.py", "src/deep/er/b.py", "top.txt"]
    cmd = (
        "chmod +x src/a.py && ln -s src/a.py link && mkdir -p n1/n2/n3 && echo n > n1/n2/n3/f"
        " && mv src/deep renamed && rm -r new && mkdir -p build/x && echo i > build/x/i"
        " && echo l > y.log && head -c 3000 /dev/zero > huge.bin && mkdir sub"
        " && git init -q sub && echo s > sub/s.txt"
    )
    res = await run(reg, "exec_command", {"cmd": cmd})
    assert res.structured_metadata["checkpoint"]
    assert _head_tree(store) == _git_tree_of_workspace(store)
    files = _git(store, "ls-tree", "-r", "--name-only", REF).split()
    assert "renamed/er/b.py" not in files  # moved away by the patch before
    assert {"link", "n1/n2/n3/f", "renamed/er-x", "moved/b.py", "src/a.py"} <= set(files)
    assert not {"y.log", "build/x/i", "huge.bin", "sub/s.txt", "x.log"} & set(files)
    body = _git(store, "log", "-1", "--format=%B", REF)
    assert "Skipped: huge.bin (3,000 bytes, over max_file_bytes)" in body
    assert "Skipped: sub (a nested repository)" in body
    assert _git(store, "ls-tree", REF, "--", "src/a.py").startswith("100755 blob")
    assert _git(store, "ls-tree", REF, "--", "link").startswith("120000 blob")
    assert _git(store, "cat-file", "blob", f"{REF}:moved/b.py") == "b = 2\n"
    _git(store, "fsck", "--strict", "--no-dangling", "--full")
    assert not (ws / "sub" / ".git").is_symlink() and (ws / "sub" / ".git" / "HEAD").is_file()


async def test_restore_round_trips_after_edits_and_after_a_commands_rm(
    tmp_path: Path, mode: str
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "keep.py").write_text("precious = 1\n")
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(tmp_path / "run.sh", 0o755)
    reg = _registry(tmp_path)
    store = _store(reg)
    await run(reg, "write_file", {"path": "lib/keep.py", "content": "precious = 2\n"})
    await run(reg, "exec_command", {"cmd": "rm -r lib run.sh && echo junk > junk.txt"})
    assert (store._watcher is not None) == (mode == "watcher")
    log = await _log(reg)
    assert [e["tool"] for e in log] == ["exec_command", "write_file", "baseline"]
    assert sorted(log[0]["paths"]) == ["junk.txt", "lib/keep.py", "run.sh"]
    res = await run(reg, "workspace_restore", {"commit": log[1]["commit"]})
    assert (tmp_path / "lib" / "keep.py").read_text() == "precious = 2\n"
    assert os.stat(tmp_path / "run.sh").st_mode & 0o111 and not (tmp_path / "junk.txt").exists()
    res = await run(reg, "workspace_restore", {"commit": log[2]["commit"], "file": "lib/keep.py"})
    assert (tmp_path / "lib" / "keep.py").read_text() == "precious = 1\n", res.output
    # the restores are checkpoints of their own; edits after them still record
    await run(reg, "write_file", {"path": "lib/after.py", "content": "after = 1\n"})
    assert _head_tree(store) == _git_tree_of_workspace(store)
    tools = [e["tool"] for e in await _log(reg)]
    assert tools[:3] == ["write_file", "workspace_restore", "workspace_restore"]
    _git(store, "fsck", "--strict", "--no-dangling")


async def test_changes_between_calls_are_recorded_apart_from_the_commands(
    tmp_path: Path, mode: str
) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    reg = _registry(tmp_path)
    await run(reg, "exec_command", {"cmd": "echo 1 > cmd.txt"})
    (tmp_path / "by-a-person.txt").write_text("theirs\n")  # no tool call
    (tmp_path / "a.txt").write_text("changed by a person\n")
    await run(reg, "exec_command", {"cmd": "echo 2 > cmd.txt"})
    log = await _log(reg)
    assert [e["tool"] for e in log] == ["exec_command", "outside", "exec_command", "baseline"]
    assert log[0]["paths"] == ["cmd.txt"]
    assert sorted(log[1]["paths"]) == ["a.txt", "by-a-person.txt"]


async def test_a_changed_gitignore_is_taken_by_a_whole_scan(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.dat\n")
    (tmp_path / "x.dat").write_text("hidden at first\n")
    reg = _registry(tmp_path)
    store = _store(reg)
    await run(reg, "exec_command", {"cmd": "echo > y.dat"})
    assert "x.dat" not in _git(store, "ls-tree", "--name-only", REF)
    await run(reg, "exec_command", {"cmd": "echo > .gitignore"})
    assert {"x.dat", "y.dat"} <= set(_git(store, "ls-tree", "--name-only", REF).split())
    assert _head_tree(store) == _git_tree_of_workspace(store)


async def test_a_checkpoint_of_another_process_is_read_before_the_next(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    reg = _registry(tmp_path)
    store = _store(reg)
    await run(reg, "write_file", {"path": "a.txt", "content": "mine\n"})
    await run(reg, "exec_command", {"cmd": "true"})  # the watcher is on from here
    cfg = tmp_path.parent / f"{tmp_path.name}.toml"
    cfg.write_text("[history]\nenabled = true\n")
    proc = subprocess.run(
        [sys.executable, "-m", "octos_tools", "call", "--workspace", str(tmp_path),
         "--config", str(cfg), "write_file", '{"path": "b.txt", "content": "theirs\\n"}'],
        capture_output=True, text=True, check=False, env=os.environ.copy(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    await run(reg, "exec_command", {"cmd": "echo c > c.txt"})
    log = await _log(reg)
    assert [e["tool"] for e in log[:2]] == ["exec_command", "write_file"]
    assert log[0]["paths"] == ["c.txt"] and log[1]["paths"] == ["b.txt"]
    assert _head_tree(store) == _git_tree_of_workspace(store)


async def test_an_unwritable_store_never_blocks_the_edit(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    reg = _registry(tmp_path)
    store = _store(reg)
    await run(reg, "write_file", {"path": "a.txt", "content": "b\n"})
    objects = store.git_dir / "objects"
    os.rename(objects, store.git_dir / "objects.away")
    objects.write_text("not a folder\n")  # every object write fails (even as root)
    res = await run(reg, "write_file", {"path": "c.txt", "content": "c\n"})
    assert (tmp_path / "c.txt").read_text() == "c\n"
    assert res.structured_metadata["checkpoint_skipped"]  # the reason, from git or the OS
    res = await run(reg, "exec_command", {"cmd": "echo d > a.txt"})
    assert "checkpoint_skipped" in res.structured_metadata
    objects.unlink()
    os.rename(store.git_dir / "objects.away", objects)
    res = await run(reg, "write_file", {"path": "e.txt", "content": "e\n"})
    assert res.structured_metadata["checkpoint"]  # the store heals: its tree read again
    log = await _log(reg)  # what the skipped ones missed is recorded before the edit
    assert log[0]["tool"] == "write_file" and log[0]["paths"] == ["e.txt"]
    assert log[1]["tool"] == "outside" and sorted(log[1]["paths"]) == ["a.txt", "c.txt"]
    res = await run(reg, "exec_command", {"cmd": "true"})
    assert res.structured_metadata["checkpoint_skipped"].startswith("nothing changed")
    assert _head_tree(store) == _git_tree_of_workspace(store)


async def test_more_watchers_than_kept_close_the_least_recently_used(tmp_path: Path) -> None:
    regs = []
    for i in range(_watch.MAX_WATCHERS + 1):
        (tmp_path / f"w{i}").mkdir()
        reg = _registry(tmp_path / f"w{i}")
        await run(reg, "exec_command", {"cmd": "echo 1 > f"})
        regs.append(reg)
    assert _store(regs[0])._watcher is None or not _store(regs[0])._watcher.healthy
    assert len(_watch._live) == _watch.MAX_WATCHERS
    # the closed one still records its commands (a whole-tree scan)
    await run(regs[0], "exec_command", {"cmd": "echo 2 > f"})
    assert (await _log(regs[0]))[0]["tool"] == "exec_command"


@pytest.mark.slow
async def test_an_overflowed_queue_falls_back_to_a_whole_scan(tmp_path: Path) -> None:
    reg = _registry(tmp_path)
    store = _store(reg)
    await run(reg, "exec_command", {"cmd": "true"})
    assert store._watcher is not None
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    (tmp_path / "many").mkdir()
    await run(reg, "write_file", {"path": "one.txt", "content": "1\n"})  # watched folder
    code = f"import os\nfor i in range({limit}):\n    os.utime('one.txt')\n"
    await run(reg, "exec_command", {"cmd": f'python3 -c "{code}"; echo x > many/x'})
    assert store._watcher is not None and store._watcher.healthy  # started again
    files = _git(store, "ls-tree", "-r", "--name-only", REF).split()
    assert "many/x" in files
    assert _head_tree(store) == _git_tree_of_workspace(store)


async def test_an_ignored_folder_made_by_a_command_is_not_watched(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("node_modules/\n")
    reg = _registry(tmp_path)
    store = _store(reg)
    await run(reg, "exec_command", {"cmd": "true"})
    await run(reg, "exec_command", {"cmd": "mkdir -p node_modules/p && echo 1 > node_modules/p/i"})
    assert store._watcher is not None and not store._watcher.watching("node_modules")
    res = await run(reg, "exec_command", {"cmd": "echo 2 > node_modules/p/i && echo k > k"})
    assert store._watcher.healthy and not store._watcher.watching("node_modules/p")
    assert (await _log(reg))[0]["paths"] == ["k"], res.output
    assert _head_tree(store) == _git_tree_of_workspace(store)


async def test_an_edit_after_an_outside_deletion_records_it_first(tmp_path: Path) -> None:
    # the red-team case: the edit's checkpoint is the workspace as it was, so restoring it
    # does not bring back (nor claim to recreate) what the user deleted before the edit
    (tmp_path / "keep.txt").write_text("keep\n")
    (tmp_path / "deleted_by_user.txt").write_text("gone soon\n")
    reg = _registry(tmp_path)
    store = _store(reg)
    await run(reg, "exec_command", {"cmd": "true"})  # the watcher is on from here
    assert store._watcher is not None
    (tmp_path / "deleted_by_user.txt").unlink()  # outside octos-tools
    edit = await run(
        reg, "edit_file", {"path": "keep.txt", "old_string": "keep", "new_string": "kept"}
    )
    assert "deleted_by_user.txt" not in _git(store, "ls-tree", "--name-only", REF)
    await run(reg, "exec_command", {"cmd": "rm keep.txt"})
    log = await _log(reg)
    assert [e["tool"] for e in log[:3]] == ["exec_command", "edit_file", "outside"]
    assert log[2]["paths"] == ["deleted_by_user.txt"] and log[1]["paths"] == ["keep.txt"]
    assert edit.structured_metadata["checkpoint"] == log[1]["commit"][:12]
    res = await run(reg, "workspace_restore", {"commit": edit.structured_metadata["checkpoint"]})
    assert "deleted_by_user.txt" not in res.output, res.output
    assert not (tmp_path / "deleted_by_user.txt").exists()
    assert (tmp_path / "keep.txt").read_text() == "kept\n"


def test_parallel_edits_of_one_file_each_record_their_own_checkpoint(tmp_path: Path) -> None:
    # 12 real processes edit one file at once: none loses its update, each result names its
    # checkpoint (or says why it was skipped), and no edit shows in the log as "outside"
    n = 12
    (tmp_path / "f.txt").write_text("".join(f"slot{i}\n" for i in range(n)))
    cfg = tmp_path.parent / f"{tmp_path.name}.toml"
    cfg.write_text("[history]\nenabled = true\n")
    reg = _registry(tmp_path)
    store = _store(reg)
    store.checkpoint(None, tool="baseline")

    def edit(i: int) -> subprocess.Popen[str]:
        change = {"path": "f.txt", "old_string": f"slot{i}\n", "new_string": f"done{i}\n"}
        cmd = [sys.executable, "-m", "octos_tools", "call", "--workspace", str(tmp_path)]
        cmd += ["--config", str(cfg), "--json", "edit_file", json.dumps(change)]
        return subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy()
        )

    procs = [edit(i) for i in range(n)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err + out
        results.append(json.loads(out))
    assert (tmp_path / "f.txt").read_text() == "".join(f"done{i}\n" for i in range(n))
    assert all(r["success"] for r in results), results
    meta = [r["structured_metadata"] for r in results]
    assert all("checkpoint" in m or m.get("checkpoint_skipped") for m in meta), meta
    out = _git(store, "log", "--format=%s", REF)
    assert "outside" not in out, out
    recorded = {m["checkpoint"] for m in meta if "checkpoint" in m}
    assert len(recorded) == sum("checkpoint" in m for m in meta)  # one each, not shared
