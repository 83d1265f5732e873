"""A multi-file apply_patch killed with SIGKILL at random moments ends all applied or not at
all once the workspace is opened again, and leaves no temporary file behind (issue 14)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins.patch import ApplyPatchTool
from octos_tools.context import ToolContext
from octos_tools.workspace import Workspace

FILES = 40
TRIALS = 30


def _content(gen: int, i: int) -> str:
    return f"gen {gen}\n" + f"file {i} of generation {gen}\n" * 20


def _patch(gen: int) -> str:
    body = ["*** Begin Patch"]
    for i in range(FILES):
        body += [f"*** Update File: d{i % 3}/f{i}.txt", f"-gen {gen}", f"+gen {gen + 1}"]
    body += ["*** End Patch", ""]
    return "\n".join(body)


def _patcher(root: Path, ready_w: int) -> None:  # pragma: no cover - runs in the child
    try:
        ws = Workspace(root)
        tool = ApplyPatchTool(ws)
        gen = int((root / "d0" / "f0.txt").read_text().split("\n", 1)[0].split()[1])
        os.write(ready_w, b"r")

        async def loop() -> None:
            nonlocal gen
            while True:
                res = await tool.execute_with_context(ToolContext(), {"patch": _patch(gen)})
                assert res.success, res.output
                gen += 1
                os.write(ready_w, b"p")  # one patch applied

        asyncio.run(loop())
    finally:
        os._exit(1)


def _reset(root: Path, gen: int) -> None:
    for i in range(FILES):
        (root / f"d{i % 3}" / f"f{i}.txt").write_text(_content(gen, i))


def _generations(root: Path) -> set[int]:
    gens = set()
    for i in range(FILES):
        first = (root / f"d{i % 3}" / f"f{i}.txt").read_text().split("\n", 1)[0]
        gens.add(int(first.split()[1]))
    return gens


@pytest.mark.slow
def test_sigkill_during_a_multi_file_patch_leaves_all_old_or_all_new(tmp_path: Path) -> None:
    """Each trial forks a child that applies 40-file patches in a loop (the first line of
    each file bumped by one generation) and SIGKILLs it: in even trials at a random moment
    of its second patch, in odd trials right after the first file of a patch was renamed
    into place (the commit is then half done). Opening the
    workspace then finds every file at one generation, and nothing of ours left over."""
    for d in range(3):
        (tmp_path / f"d{d}").mkdir()
    _reset(tmp_path, 0)
    rng = random.Random(20261130)
    torn = leftovers = journals = 0
    started = time.monotonic()
    for trial in range(TRIALS):
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            os.close(ready_r)
            _patcher(tmp_path, ready_w)
        os.close(ready_w)
        assert os.read(ready_r, 1) == b"r"
        if trial % 2:
            # kill just after the commit's first rename: the moment a patch is half applied
            first = tmp_path / "d0" / "f0.txt"
            ino = first.stat().st_ino
            deadline = time.monotonic() + 30
            while first.stat().st_ino == ino and time.monotonic() < deadline:
                pass
            time.sleep(rng.uniform(0.0, 0.0005))
        else:
            t0 = time.monotonic()
            assert os.read(ready_r, 1) == b"p"  # the first patch took this long:
            time.sleep(rng.uniform(0.0, time.monotonic() - t0))  # kill within the second
        os.kill(pid, signal.SIGKILL)
        os.close(ready_r)
        os.waitpid(pid, 0)
        state = tmp_path / ".octos-tmp-state"
        if state.is_dir():
            journals += any(p.name.startswith("journal-") for p in state.iterdir())
        Workspace(tmp_path)  # the next start rolls a cut commit forward and sweeps
        gens = _generations(tmp_path)
        if len(gens) != 1:
            torn += 1
            _reset(tmp_path, max(gens))  # go on from a consistent tree
        leftovers += len([p for p in tmp_path.rglob("*") if p.name.startswith(".octos-tmp")])
    seconds = time.monotonic() - started
    print(
        f"\nkill test: {TRIALS} trials, {torn} torn, {leftovers} leftovers, "
        f"{journals} journals rolled forward, {seconds:.1f} s"
    )
    assert torn == 0 and leftovers == 0
    assert max(_generations(tmp_path)) > 0  # the child really made progress


def _die_after_renames(root: Path, k: int) -> None:  # pragma: no cover - runs in the child
    """Apply one patch, SIGKILLing this process right after its k-th rename into place."""
    try:
        real = os.replace
        count = 0

        def replace(src: Any, dst: Any, **kw: Any) -> None:
            nonlocal count
            real(src, dst, **kw)
            if str(dst).startswith("f"):
                count += 1
                if count == k:
                    os.kill(os.getpid(), signal.SIGKILL)

        os.replace = replace  # type: ignore[assignment]
        tool = ApplyPatchTool(Workspace(root))
        gen = int((root / "d0" / "f0.txt").read_text().split("\n", 1)[0].split()[1])
        asyncio.run(tool.execute_with_context(ToolContext(), {"patch": _patch(gen)}))
    finally:
        os._exit(1)


@pytest.mark.slow
def test_a_kill_after_any_rename_of_the_commit_is_rolled_forward(tmp_path: Path) -> None:
    """The child kills itself (SIGKILL) right after the k-th file of a 40-file commit was
    renamed into place (k = 1, 2, 20, 39): the next open of the workspace, or the next
    write through one opened before, finishes the patch every time."""
    for d in range(3):
        (tmp_path / f"d{d}").mkdir()
    _reset(tmp_path, 0)
    ws = Workspace(tmp_path)  # opened before the crashes, as by a long-running server
    gen = 0
    for k in (1, 2, FILES // 2, FILES - 1):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            _die_after_renames(tmp_path, k)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        assert len(_generations(tmp_path)) == 2  # really half applied on disk
        if k % 2:
            Workspace(tmp_path)  # the next start recovers ...
        else:
            ws.write_bytes("unrelated.txt", b"x")  # ... and so does the next write
        assert _generations(tmp_path) == {gen + 1}, k
        gen += 1
        assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".octos-tmp")]
    assert (tmp_path / "unrelated.txt").read_bytes() == b"x"
