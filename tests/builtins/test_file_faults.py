"""Files under real-world faults: permission bits on every write path, hard links, overwrites
shown by a patch, a full disk, over-long paths and our temporary names (issue 14)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins import files, register_builtins
from octos_tools.builtins.patch import ApplyPatchTool
from octos_tools.config import Config
from octos_tools.context import ToolContext
from octos_tools.errors import ErrorKind, PathError, ToolError
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import Tool, ToolResult
from octos_tools.workspace import FileChange, Workspace, is_internal_temp_name

pytestmark = pytest.mark.anyio


async def call(tool: Tool, args: dict[str, Any]) -> ToolResult:
    try:
        return await tool.execute_with_context(ToolContext(), args)
    except ToolError as exc:
        return ToolResult.from_error(exc)


def tools(ws: Workspace) -> dict[str, Tool]:
    cfg = Config()
    return {
        "write_file": files.WriteFileTool(ws, cfg),
        "edit_file": files.EditFileTool(ws, cfg),
        "diff_edit": files.DiffEditTool(ws, cfg),
        "apply_patch": ApplyPatchTool(ws),
    }


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch", ""])


def no_temp_left(root: Path) -> bool:
    return not [p for p in root.rglob("*") if p.name.startswith(".octos-tmp")]


# ----------------------------------------------------------------------------- permission bits


@pytest.mark.parametrize("bits", [0o755, 0o600, 0o640, 0o700, 0o444])
async def test_every_write_path_keeps_the_permission_bits(tmp_path: Path, bits: int) -> None:
    ws = Workspace(tmp_path)
    t = tools(ws)
    f = tmp_path / "f.sh"
    f.write_text("one\n")
    f.chmod(bits)
    steps: list[tuple[str, dict[str, Any], str]] = [
        ("write_file", {"path": "f.sh", "content": "two\n"}, "f.sh"),
        ("edit_file", {"path": "f.sh", "old_string": "two", "new_string": "three"}, "f.sh"),
        ("diff_edit", {"path": "f.sh", "diff": "@@ -1 +1 @@\n-three\n+four\n"}, "f.sh"),
        ("apply_patch", {"patch": patch("*** Update File: f.sh", "-four", "+five")}, "f.sh"),
        (
            "apply_patch",
            {"patch": patch("*** Update File: f.sh", "*** Move to: bin/g.sh", "-five", "+six")},
            "bin/g.sh",
        ),
        ("apply_patch", {"patch": patch("*** Update File: bin/g.sh", "*** Move to: h.sh")}, "h.sh"),
        (
            "apply_patch",
            {
                "patch": patch(
                    "*** Add File: x.txt", "+x", "*** Update File: h.sh", "-six", "+seven"
                )
            },
            "h.sh",
        ),
    ]
    for name, args, path in steps:
        res = await call(t[name], args)
        assert res.success, (name, res.output)
        assert mode(tmp_path / path) == bits, (name, oct(mode(tmp_path / path)))
    assert (tmp_path / "h.sh").read_text() == "seven\n"
    assert no_temp_left(tmp_path)


async def test_a_move_onto_an_existing_file_takes_the_source_bits(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("a\n")
    (tmp_path / "run.sh").chmod(0o755)
    (tmp_path / "dest.sh").write_text("old\n")
    (tmp_path / "dest.sh").chmod(0o600)
    res = await call(
        ApplyPatchTool(Workspace(tmp_path)),
        {"patch": patch("*** Update File: run.sh", "*** Move to: dest.sh", "-a", "+b")},
    )
    assert res.success and mode(tmp_path / "dest.sh") == 0o755


async def test_new_files_get_the_umask_default(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        ws = Workspace(tmp_path)
        t = tools(ws)
        assert (await call(t["write_file"], {"path": "w.txt", "content": "x"})).success
        assert (await call(t["apply_patch"], {"patch": patch("*** Add File: p.txt", "+x")})).success
        res = await call(
            t["apply_patch"], {"patch": patch("*** Add File: q.txt", "+x", "*** Add File: r", "+y")}
        )
        assert res.success
    finally:
        os.umask(old)
    for name in ("w.txt", "p.txt", "q.txt", "r"):
        assert mode(tmp_path / name) == 0o640, name


# ----------------------------------------------------------------------------- hard links


@pytest.mark.parametrize("tool", ["write_file", "edit_file", "diff_edit", "apply_patch"])
async def test_a_split_hard_link_is_named_in_the_result(tmp_path: Path, tool: str) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    (tmp_path / "docs").mkdir()
    os.link(tmp_path / "a.txt", tmp_path / "docs" / "b.txt")
    args = {
        "write_file": {"path": "a.txt", "content": "new\n"},
        "edit_file": {"path": "a.txt", "old_string": "old", "new_string": "new"},
        "diff_edit": {"path": "a.txt", "diff": "@@ -1 +1 @@\n-old\n+new\n"},
        "apply_patch": {"patch": patch("*** Update File: a.txt", "-old", "+new")},
    }[tool]
    res = await call(tools(Workspace(tmp_path))[tool], args)
    assert res.success, res.output
    assert (tmp_path / "a.txt").read_text() == "new\n"
    assert (tmp_path / "docs" / "b.txt").read_text() == "old\n"
    assert "1 other hard link" in res.output and "docs/b.txt" in res.output, res.output
    assert "keeps the old content" in res.output


async def test_a_hard_link_to_an_outside_file_is_never_written_through(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("keep\n")
    os.link(outside, root / "l.txt")
    res = await call(tools(Workspace(root))["write_file"], {"path": "l.txt", "content": "x\n"})
    assert res.success and outside.read_text() == "keep\n"
    assert "outside the workspace" in res.output


# ----------------------------------------------------------------------------- overwrites


async def test_a_patch_names_what_it_overwrote_and_shows_the_old_content(tmp_path: Path) -> None:
    (tmp_path / "src.txt").write_text("moved\n")
    (tmp_path / "dest.txt").write_text("precious destination\n")
    (tmp_path / "added.txt").write_text("precious added\n")
    res = await call(
        ApplyPatchTool(Workspace(tmp_path)),
        {
            "patch": patch(
                "*** Update File: src.txt",
                "*** Move to: dest.txt",
                "*** Add File: added.txt",
                "+fresh",
                "*** Add File: third.txt",
                "+3",
            )
        },
    )
    assert res.success, res.output
    assert "overwrote the existing dest.txt" in res.output
    assert "overwrote the existing added.txt" in res.output
    assert "-precious destination" in res.output and "-precious added" in res.output
    meta = res.structured_metadata or {}
    assert meta["overwritten"] == ["dest.txt", "added.txt"]
    assert meta["files_modified"] == ["src.txt", "dest.txt", "added.txt", "third.txt"]
    assert "third.txt" not in meta["overwritten"]


# ----------------------------------------------------------------------------- long paths


async def test_paths_over_path_max_or_name_max_are_refused_on_write(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    t = tools(ws)
    room = 4096 - len(os.fsencode(str(tmp_path))) - 1
    deep = "/".join(["d" * 200] * (room // 201 + 1)) + "/f.txt"
    long_name = "n" * 256 + ".txt"
    for args in ({"path": deep, "content": "x"}, {"path": long_name, "content": "x"}):
        res = await call(t["write_file"], args)
        assert res.error_kind is ErrorKind.INVALID_ARGUMENTS, res.output
        assert "PATH_MAX" in res.output or "255 bytes" in res.output
    res = await call(t["apply_patch"], {"patch": patch(f"*** Add File: {deep}", "+x")})
    assert res.error_kind is ErrorKind.INVALID_ARGUMENTS, res.output
    assert not list(tmp_path.iterdir())
    # just under the limit still works
    ok = "/".join(["d" * 200] * (room // 201 - 1)) + "/f.txt"
    assert (await call(t["write_file"], {"path": ok, "content": "x"})).success


# ----------------------------------------------------------------------------- temp names


def test_internal_temp_names_are_recognised_hidden_and_reserved(tmp_path: Path) -> None:
    assert is_internal_temp_name(".octos-tmp-0123456789abcdef")
    assert is_internal_temp_name(".octos-tmp-state")
    assert not is_internal_temp_name("octos-tmp-x") and not is_internal_temp_name("a.py")
    (tmp_path / ".octos-tmp-0123456789abcdef").write_text("left by a crash elsewhere")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".octos-tmp-feedfacefeedface.bak").write_text("x")
    (tmp_path / "real.txt").write_text("x")
    ws = Workspace(tmp_path)
    assert [e.name for e in ws.list_dir(".")] == ["real.txt", "sub"]
    assert [rel for rel, _ in ws.walk(".")] == ["real.txt", "sub"]
    with pytest.raises(PathError) as info:
        ws.write_bytes(".octos-tmp-state/x", b"x")
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS


def test_no_state_folder_is_left_in_an_idle_workspace(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.write_bytes("a.txt", b"1")
    ws.apply_changes([FileChange("a.txt", b"2"), FileChange("b/c.txt", b"3")])
    ws.apply_changes([FileChange("a.txt", None), FileChange("b/c.txt", b"4")])
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["b", "c.txt"]


# ----------------------------------------------------------------------------- full disk

_FULL_DISK_CHILD = textwrap.dedent(
    """
    import asyncio, json, os, subprocess, sys
    mnt = sys.argv[1]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt], check=True)
    from octos_tools.builtins.files import WriteFileTool, EditFileTool
    from octos_tools.builtins.patch import ApplyPatchTool
    from octos_tools.config import Config
    from octos_tools.context import ToolContext
    from octos_tools.errors import ToolError
    from octos_tools.tool_types import ToolResult
    from octos_tools.workspace import Workspace
    with open(os.path.join(mnt, "keep.txt"), "w") as fh:
        fh.write("original\\n")
    with open(os.path.join(mnt, "b.txt"), "w") as fh:
        fh.write("b\\n")
    ws = Workspace(mnt)
    big = "x" * 400_000
    async def call(tool, args):
        try:
            return await tool.execute_with_context(ToolContext(), args)
        except ToolError as exc:
            return ToolResult.from_error(exc)
    async def main():
        out = []
        for tool, args in (
            (WriteFileTool(ws, Config()), {"path": "keep.txt", "content": big}),
            (EditFileTool(ws, Config()), {"path": "keep.txt", "old_string": "original",
                                          "new_string": big}),
            (ApplyPatchTool(ws), {"patch": "*** Begin Patch\\n*** Update File: b.txt\\n-b\\n+c\\n"
                                   "*** Add File: new.txt\\n+" + big + "\\n*** End Patch\\n"}),
        ):
            res = await call(tool, args)
            out.append([res.success, (res.error or {}).get("kind"), res.output[:300]])
        left = sorted(os.listdir(mnt))
        print(json.dumps({"results": out, "keep": open(os.path.join(mnt, "keep.txt")).read(),
                          "b": open(os.path.join(mnt, "b.txt")).read(), "left": left}))
    asyncio.run(main())
    """
)


def test_a_full_disk_is_disk_full_and_leaves_the_files_intact(tmp_path: Path) -> None:
    """A real full file system: a 256 KiB tmpfs mounted in a user + mount namespace."""
    unshare = shutil.which("unshare")
    if unshare is None or sys.platform != "linux":
        pytest.skip("needs unshare (Linux user namespaces) to mount a small tmpfs")
    probe = subprocess.run([unshare, "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("user namespaces are not available here")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(
        [unshare, "-rm", sys.executable, "-c", _FULL_DISK_CHILD, str(mnt)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    import json

    got = json.loads(proc.stdout.strip().splitlines()[-1])
    for success, kind, output in got["results"]:
        assert success is False and kind == "disk_full", output
        assert "disk is full" in output
    assert got["keep"] == "original\n" and got["b"] == "b\n"
    assert got["left"] == ["b.txt", "keep.txt"]


def _killed_while_staging_beside(root: Path, multi: bool) -> None:  # pragma: no cover - child
    """Stage beside the target (as when its folder is on another file system), then die."""
    try:
        from octos_tools.workspace import _atomic, _commit

        _atomic.same_device = _commit.same_device = lambda a, b: False  # type: ignore[assignment]

        def die(*_a: Any, **_k: Any) -> None:
            os.kill(os.getpid(), signal.SIGKILL)

        os.replace = die  # type: ignore[assignment]
        ws = Workspace(root)
        if multi:
            ws.apply_changes([FileChange("sub/a.txt", b"new"), FileChange("sub/b.txt", b"new")])
        else:
            ws.write_bytes("sub/a.txt", b"new")
    finally:
        os._exit(1)


@pytest.mark.parametrize("multi", [False, True])
def test_temp_files_beside_their_target_are_swept_after_a_kill(tmp_path: Path, multi: bool) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("old")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        _killed_while_staging_beside(tmp_path, multi)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    left = [p.name for p in (tmp_path / "sub").iterdir() if p.name.startswith(".octos-tmp")]
    assert left  # the killed writer did leave its staged file beside the target
    Workspace(tmp_path)
    if multi:  # the journal was written before the first rename: rolled forward
        assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.txt", "b.txt", "sub"]
        assert (tmp_path / "sub" / "a.txt").read_text() == "new"
        assert (tmp_path / "sub" / "b.txt").read_text() == "new"
    else:
        assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.txt", "sub"]
        assert (tmp_path / "sub" / "a.txt").read_text() == "old"


def test_a_planted_state_folder_or_journal_never_leads_outside(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x").write_text("keep")
    # a symlink where the state folder goes: never followed, writes still atomic
    (root / ".octos-tmp-state").symlink_to(outside)
    ws = Workspace(root)
    ws.apply_changes([FileChange("a.txt", b"1"), FileChange("b.txt", b"2")])
    assert sorted(p.name for p in outside.iterdir()) == ["x"]
    assert (root / "a.txt").read_text() == "1" and (root / "b.txt").read_text() == "2"
    (root / ".octos-tmp-state").unlink()
    # a forged journal naming folders and files outside: ignored
    state = root / ".octos-tmp-state"
    state.mkdir()
    (state / ".octos-tmp-0000000000000000").write_text("forged")
    forged = [
        {"dir": "../outside", "name": "x", "tmp": ".octos-tmp-0000000000000000", "tmp_in": "state"},
        {"dir": "", "name": "../outside/x", "delete": True},
        {"dir": "", "name": "a.txt", "tmp": "../outside/x", "tmp_in": "dir"},
    ]
    import json

    (state / "journal-0000000000000000.json").write_text(json.dumps({"items": forged}))
    Workspace(root)
    assert (outside / "x").read_text() == "keep"
    assert (root / "a.txt").read_text() == "1"
    assert not state.exists()


def test_concurrent_writers_share_the_state_folder_safely(tmp_path: Path) -> None:
    """Threads and a second process write at once: the state folder is created, shared and
    removed under their feet without a write failing or a temporary file left behind."""
    import threading

    ws = Workspace(tmp_path)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(25):
                if i % 5 == 0:
                    ws.apply_changes(
                        [FileChange(f"t{n}/a.txt", b"%d" % i), FileChange(f"t{n}/b.txt", b"%d" % i)]
                    )
                else:
                    ws.write_bytes(f"t{n}/w.txt", b"%d" % i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\nfrom octos_tools.workspace import Workspace\n"
            "ws = Workspace(sys.argv[1])\n"
            "for i in range(60): ws.write_bytes('p/x.txt', b'%d' % i)\n",
            str(tmp_path),
        ]
    )
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert child.wait(timeout=120) == 0
    assert not errors, errors
    for n in range(6):
        assert (tmp_path / f"t{n}" / "w.txt").read_bytes() == b"24"
        assert (tmp_path / f"t{n}" / "a.txt").read_bytes() == b"20"
    assert (tmp_path / "p" / "x.txt").read_bytes() == b"59"
    assert no_temp_left(tmp_path) and not (tmp_path / ".octos-tmp-state").exists()


def test_the_hard_link_search_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    for i in range(60):
        (tmp_path / f"d{i:02d}").mkdir()
    os.link(tmp_path / "a.txt", tmp_path / "d59" / "b.txt")
    os.link(tmp_path / "a.txt", tmp_path / "d00" / "c.txt")
    st = (tmp_path / "a.txt").stat()
    ws = Workspace(tmp_path)
    assert ws.hard_links((st.st_dev, st.st_ino), exclude="a.txt") == (
        ["d00/c.txt", "d59/b.txt"],
        True,
    )
    names, complete = ws.hard_links((st.st_dev, st.st_ino), exclude="a.txt", max_dirs=10)
    assert names == ["d00/c.txt"] and complete is False


def test_a_commit_of_many_files_needs_few_descriptors(tmp_path: Path) -> None:
    """600 files in 3 folders (6 of them new) commit with at most 200 open descriptors."""
    import resource

    ws = Workspace(tmp_path)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    changes = [FileChange(f"d{i % 3}/e{i % 2}/f{i}.txt", b"%d" % i) for i in range(600)]
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(200, hard), hard))
    try:
        outcomes = ws.apply_changes(changes)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert len(outcomes) == 600 and all(o.created for o in outcomes)
    assert (tmp_path / "d2" / "e1" / "f599.txt").read_bytes() == b"599"
    assert no_temp_left(tmp_path)


# --- .git is git's own: no file tool writes there (an edited .git/config or hook would run
# code at the user's next git command, even with the command tools denied) ---


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_file", {"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\ntouch x\n"}),
        ("write_file", {"path": "sub/.GIT/config", "content": "x"}),
        (
            "edit_file",
            {"path": ".git/config", "old_string": "[core]", "new_string": "[core]\n\tx = 1"},
        ),
        ("diff_edit", {"path": ".git/config", "diff": "@@ -1 +1 @@\n-[core]\n+[core2]\n"}),
    ],
)
async def test_file_tools_never_write_inside_dot_git(
    tmp_path: Path, tool: str, args: dict[str, str]
) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / "sub" / ".GIT").mkdir(parents=True)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    registry = ToolRegistry(Workspace(tmp_path))
    register_builtins(registry, registry.workspace)  # type: ignore[arg-type]
    result = await registry.execute(tool, json.dumps(args))
    assert not result.success
    assert result.error_kind is ErrorKind.PERMISSION_DENIED, result.output
    assert ".git" in result.output
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before


def test_workspace_refuses_to_delete_or_rename_inside_dot_git(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "a.txt").write_text("a")
    ws = Workspace(tmp_path)
    for action in (
        lambda: ws.delete(".git/HEAD"),
        lambda: ws.rename("a.txt", ".git/a.txt"),
        lambda: ws.rename(".git/HEAD", "HEAD"),
        lambda: ws.mkdir(".git/x"),
    ):
        with pytest.raises(PathError) as info:
            action()
        assert info.value.kind is ErrorKind.PERMISSION_DENIED
    assert (tmp_path / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert (tmp_path / "a.txt").read_text() == "a"


# ----------------------------------------------------------------------------- EFBIG, EROFS, EDQUOT

_BIG = "x" * 20_000
_WRITES: list[tuple[str, dict[str, Any]]] = [
    ("write_file", {"path": "keep.txt", "content": _BIG}),
    ("write_file", {"path": "sub/new.txt", "content": _BIG}),
    ("edit_file", {"path": "keep.txt", "old_string": "original", "new_string": _BIG}),
    (
        "apply_patch",
        {
            "patch": "*** Begin Patch\n*** Update File: b.txt\n-b\n+c\n"
            f"*** Add File: new.txt\n+{_BIG}\n*** End Patch\n"
        },
    ),
]


def _cli_call(root: Path, tool: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "octos_tools", "call", tool, json.dumps(args)]
    proc = subprocess.run(
        [*cmd, "--workspace", str(root), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        **kw,
    )
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _limit_file_size() -> None:  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")
def test_a_file_size_limit_is_file_size_limit_and_changes_nothing(tmp_path: Path) -> None:
    """A real ``ulimit -f``: the child's RLIMIT_FSIZE is 8 KiB; each write is 20 KB."""
    (tmp_path / "keep.txt").write_text("original\n")
    (tmp_path / "b.txt").write_text("b\n")
    for tool, args in _WRITES:
        got = _cli_call(tmp_path, tool, args, preexec_fn=_limit_file_size)
        assert got["success"] is False, got
        assert got["error"]["kind"] == "file_size_limit", got
        assert "EFBIG" in got["error"]["message"] and "left as it was" in got["error"]["message"]
    assert (tmp_path / "keep.txt").read_text() == "original\n"
    assert (tmp_path / "b.txt").read_text() == "b\n"
    # no file was written; the folder a write made for its file stays, empty
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.txt", "keep.txt", "sub"]
    assert list((tmp_path / "sub").iterdir()) == []
    # a write under the limit still works in the same limited process
    small = _cli_call(
        tmp_path, "write_file", {"path": "keep.txt", "content": "ok\n"}, preexec_fn=_limit_file_size
    )
    assert small["success"] is True and (tmp_path / "keep.txt").read_text() == "ok\n"


_READ_ONLY_CHILD = textwrap.dedent(
    """
    import json, os, subprocess, sys
    mnt = sys.argv[1]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt], check=True)
    with open(os.path.join(mnt, "keep.txt"), "w") as fh:
        fh.write("original\\n")
    with open(os.path.join(mnt, "b.txt"), "w") as fh:
        fh.write("b\\n")
    subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
    out = []
    for tool, args in json.loads(sys.argv[2]):
        proc = subprocess.run(
            [sys.executable, "-m", "octos_tools", "call", tool, json.dumps(args),
             "--workspace", mnt, "--json"], capture_output=True, text=True)
        out.append(json.loads(proc.stdout))
    read = subprocess.run(
        [sys.executable, "-m", "octos_tools", "call", "read_file", '{"path": "keep.txt"}',
         "--workspace", mnt, "--json"], capture_output=True, text=True)
    print(json.dumps({"results": out, "read": json.loads(read.stdout),
                      "left": sorted(os.listdir(mnt)),
                      "keep": open(os.path.join(mnt, "keep.txt")).read()}))
    """
)


def test_a_read_only_file_system_is_read_only_filesystem(tmp_path: Path) -> None:
    """A real read-only mount: a tmpfs remounted ``ro`` in a user + mount namespace."""
    unshare = shutil.which("unshare")
    if unshare is None or sys.platform != "linux":
        pytest.skip("needs unshare (Linux user namespaces) to mount a tmpfs")
    if subprocess.run([unshare, "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("user namespaces are not available here")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(
        [unshare, "-rm", sys.executable, "-c", _READ_ONLY_CHILD, str(mnt), json.dumps(_WRITES)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    for result in got["results"]:
        assert result["success"] is False, result
        assert result["error"]["kind"] == "read_only_filesystem", result
        assert "EROFS" in result["error"]["message"]
    assert got["read"]["success"] is True and "original" in got["read"]["output"]
    assert got["keep"] == "original\n" and got["left"] == ["b.txt", "keep.txt"]


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("EDQUOT", "quota_exceeded"),
        ("ENOSPC", "disk_full"),
        ("EFBIG", "file_size_limit"),
        ("EROFS", "read_only_filesystem"),
    ],
)
async def test_each_write_errno_has_its_kind_through_every_write_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, kind: str
) -> None:
    """A disk quota cannot be set up in a test: the write system call fails with the code
    (the file system's answer), and every write tool reports its own kind, changing nothing."""
    import errno as errno_mod

    number = getattr(errno_mod, code, None)
    if number is None:
        pytest.skip(f"{code} is not defined on this platform")
    (tmp_path / "keep.txt").write_text("original\n")
    (tmp_path / "b.txt").write_text("b\n")
    real_write = os.write

    def failing_write(fd: int, data: Any) -> int:
        if len(data) >= len(_BIG):
            raise OSError(number, os.strerror(number))
        return real_write(fd, data)

    ws = Workspace(tmp_path)
    by_name = tools(ws)
    monkeypatch.setattr(os, "write", failing_write)
    for tool, args in _WRITES:
        res = await call(by_name[tool], args)
        assert res.success is False and res.error_kind is not None, (tool, res.output)
        assert res.error_kind.value == kind, (tool, res.output)
        assert code in res.output
    monkeypatch.undo()
    assert (tmp_path / "keep.txt").read_text() == "original\n"
    assert (tmp_path / "b.txt").read_text() == "b\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.txt", "keep.txt", "sub"]
    assert list((tmp_path / "sub").iterdir()) == []  # the folder made for the file, empty
