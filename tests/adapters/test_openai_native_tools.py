"""``WorkspaceEditor`` (an ``agents.ApplyPatchEditor``) and ``ShellExecutor`` (a ``ShellTool``
executor) on real files and real processes."""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if importlib.util.find_spec("agents") is None:
    pytest.skip("openai-agents is not installed", allow_module_level=True)
if TYPE_CHECKING:
    from octos_tools.adapters.openai_agents import ShellExecutor, WorkspaceEditor

pytestmark = pytest.mark.anyio

# The SDK (~1 s of imports) is imported by the tests that run, not at collection, where every
# xdist worker would import it.


def editor_in(root: Path) -> WorkspaceEditor:
    from octos_tools.adapters.openai_agents import WorkspaceEditor

    return WorkspaceEditor(root)


def shell_in(root: Path, **kwargs: Any) -> ShellExecutor:
    from octos_tools.adapters.openai_agents import ShellExecutor

    return ShellExecutor(root, **kwargs)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def _listing(root: Path) -> list[str]:
    """The folder's entries, without the workspace's own hidden state folder."""
    return sorted(p.name for p in root.iterdir() if p.name != ".octos-tmp-state")


def _op(kind: str, path: str, diff: str | None = None, move_to: str | None = None):
    from agents.editor import ApplyPatchOperation

    return ApplyPatchOperation(type=kind, path=path, diff=diff, move_to=move_to)  # type: ignore[arg-type]


def test_editor_satisfies_the_sdk_protocol(root: Path) -> None:
    from agents.editor import ApplyPatchEditor

    assert isinstance(editor_in(root), ApplyPatchEditor)


def test_create_update_delete(root: Path) -> None:
    editor = editor_in(root)
    created = editor.create_file(_op("create_file", "pkg/new.py", "+print('hi')\n+x = 1\n"))
    assert created.status == "completed", created.output
    assert (root / "pkg/new.py").read_bytes() == b"print('hi')\nx = 1\n"
    updated = editor.update_file(
        _op("update_file", "pkg/new.py", "@@\n print('hi')\n-x = 1\n+x = 2")
    )
    assert updated.status == "completed", updated.output
    assert (root / "pkg/new.py").read_bytes() == b"print('hi')\nx = 2\n"
    moved = editor.update_file(_op("update_file", "pkg/new.py", "", move_to="pkg/old.py"))
    assert moved.status == "completed", moved.output
    assert not (root / "pkg/new.py").exists()
    assert (root / "pkg/old.py").read_bytes() == b"print('hi')\nx = 2\n"
    deleted = editor.delete_file(_op("delete_file", "pkg/old.py"))
    assert deleted.status == "completed"
    assert not (root / "pkg/old.py").exists()


def test_update_keeps_crlf_bom_and_missing_final_newline(root: Path) -> None:
    data = "\ufeffuno\r\ndos\r\ntrès".encode()
    (root / "win.txt").write_bytes(data)
    result = editor_in(root).update_file(_op("update_file", "win.txt", "@@\n uno\n-dos\n+two"))
    assert result.status == "completed", result.output
    assert (root / "win.txt").read_bytes() == "\ufeffuno\r\ntwo\r\ntrès".encode()


def test_update_keeps_bytes_that_are_not_utf8(root: Path) -> None:
    (root / "l1.txt").write_bytes("café\nbar\nend\n".encode("latin-1"))
    result = editor_in(root).update_file(_op("update_file", "l1.txt", "@@\n-bar\n+baz\n end"))
    assert result.status == "completed", result.output
    assert (root / "l1.txt").read_bytes() == "café\nbaz\nend\n".encode("latin-1")


@pytest.mark.parametrize("path", ["../escape.txt", "/tmp/abs.txt", "a/../../escape.txt"])
def test_paths_outside_are_refused(root: Path, path: str) -> None:
    editor = editor_in(root)
    result = editor.create_file(_op("create_file", path, "+x\n"))
    assert result.status == "failed"
    assert result.output and result.output.startswith("Error [")
    assert not (root.parent / "escape.txt").exists()
    assert _listing(root) == []


def test_symlink_is_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"secret\n")
    (root / "link.txt").symlink_to(outside)
    result = editor_in(root).update_file(_op("update_file", "link.txt", "@@\n-secret\n+owned"))
    assert result.status == "failed"
    assert outside.read_bytes() == b"secret\n"


def test_failed_update_changes_nothing(root: Path) -> None:
    (root / "a.txt").write_bytes(b"one\ntwo\nthree\n")
    result = editor_in(root).update_file(
        _op("update_file", "a.txt", "@@\n one\n-two\n+2\n@@\n-absent line\n+x")
    )
    assert result.status == "failed"
    assert result.output and "Error [" in result.output
    assert (root / "a.txt").read_bytes() == b"one\ntwo\nthree\n"
    assert _listing(root) == ["a.txt"]  # no temp file left behind


def test_delete_missing_and_update_missing(root: Path) -> None:
    editor = editor_in(root)
    assert editor.delete_file(_op("delete_file", "nope.txt")).output.startswith("Error [not_found]")
    assert editor.update_file(_op("update_file", "nope.txt", "@@\n-a\n+b")).status == "failed"


def _request(*commands: str, timeout_ms: int | None = None, max_len: int | None = None):
    from agents import RunContextWrapper
    from agents.tool import ShellActionRequest, ShellCallData, ShellCommandRequest

    return ShellCommandRequest(
        ctx_wrapper=RunContextWrapper(context=None),
        data=ShellCallData(
            call_id="s1",
            action=ShellActionRequest(
                commands=list(commands), timeout_ms=timeout_ms, max_output_length=max_len
            ),
        ),
    )


async def test_shell_exit_codes_and_cwd(root: Path) -> None:
    (root / "marker.txt").write_text("here")
    result = await shell_in(root)(_request("cat marker.txt", "echo oops >&2; exit 3"))
    first, second = result.output
    assert first.stdout == "here" and first.exit_code == 0 and first.status == "completed"
    assert second.exit_code == 3 and "oops" in second.stdout


async def test_shell_timeout_kills_the_process_group(root: Path) -> None:
    pidfile = root / "child.pid"
    from octos_tools.sandbox import SandboxMode, SandboxSettings

    # unconfined: `$!` must be a host pid (bubblewrap's pid namespace has its own); the
    # sandboxed kill is exec_command's, tested with it
    free = SandboxSettings(mode=SandboxMode.DANGER_FULL_ACCESS)
    executor = shell_in(root, sandbox=free)  # the SDK is imported here, before the clock
    request = _request(f"sleep 60 & echo $! > {pidfile}; sleep 60", "echo never", timeout_ms=1000)
    started = time.monotonic()
    result = await executor(request)
    elapsed = time.monotonic() - started
    assert len(result.output) == 1  # the command after a timeout is not started
    assert result.output[0].outcome.type == "timeout"
    assert elapsed < 10
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the background child survived the timeout")


async def test_shell_environment_is_scrubbed(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCTOS_TEST_API_KEY", "sk-secret")
    monkeypatch.setenv("LD_PRELOAD", "/tmp/evil.so")
    monkeypatch.setenv("OCTOS_PLAIN", "visible")
    result = await shell_in(root)(_request("env"))
    out = result.output[0].stdout
    assert "OCTOS_PLAIN=visible" in out
    assert "sk-secret" not in out and "LD_PRELOAD" not in out


async def test_shell_output_is_capped(root: Path) -> None:
    result = await shell_in(root, max_output_bytes=2000)(_request("seq 1 100000"))
    out = result.output[0].stdout
    assert len(out.encode()) < 2200
    assert out.startswith("1\n2\n") and out.rstrip().endswith("100000")
    assert "bytes omitted" in out


async def test_shell_safe_policy(root: Path) -> None:
    (root / "keep.txt").write_text("x")
    executor = shell_in(root)
    denied = await executor(_request("rm -rf / --no-preserve-root"))
    assert denied.output[0].exit_code is None
    assert denied.output[0].stderr.startswith("Error [policy_denied]")
    ask = await executor(_request("rm -rf keep.txt"))
    assert ask.output[0].stderr.startswith("Error [approval_required]")
    assert (root / "keep.txt").exists()

    async def yes(command: str) -> bool:
        return True

    approved = await shell_in(root, approve=yes)(_request("rm -rf keep.txt"))
    assert approved.output[0].exit_code == 0
    assert not (root / "keep.txt").exists()


async def test_shell_runs_in_the_command_sandbox(root: Path, tmp_path: Path) -> None:
    from octos_tools.profile import build_registry
    from octos_tools.sandbox import SandboxMode, SandboxSettings, engine_status

    if not any(s.usable for s in engine_status()):
        pytest.skip("no sandbox engine here")
    outside = tmp_path / "outside.txt"
    confined = await shell_in(root)(_request(f"touch {outside}", "touch inside.txt"))
    assert not outside.exists()  # refused, or written to the sandbox's private /tmp
    assert confined.output[1].exit_code == 0 and (root / "inside.txt").exists()
    registry = build_registry(None, root)
    from octos_tools.adapters.openai_agents import ShellExecutor

    from_registry = ShellExecutor(registry)
    assert from_registry.sandbox == registry.get("exec_command").sandbox  # type: ignore[union-attr]
    free = SandboxSettings(mode=SandboxMode.DANGER_FULL_ACCESS)
    unconfined = await shell_in(root, sandbox=free)(_request(f"touch {outside}"))
    assert unconfined.output[0].exit_code == 0 and outside.exists()
    await registry.aclose()
