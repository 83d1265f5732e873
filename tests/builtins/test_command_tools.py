"""shell / exec_command / write_stdin: real processes, process groups, sessions, caps."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from octos_tools.builtins import runtime
from octos_tools.builtins.runtime import (
    BashTool,
    ExecCommandTool,
    SessionManager,
    ShellTool,
    WriteStdinTool,
    is_secret_name,
    scrubbed_env,
)
from octos_tools.config import Config, ShellConfig
from octos_tools.errors import ErrorKind
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import Tool, ToolResult
from octos_tools.workspace import Workspace

from ..helpers import CommandTools, command_tools
from .tool_helpers import call, living, marker

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


def our_zombies() -> list[str]:
    out = subprocess.run(
        ["ps", "-o", "pid=,stat=,args=", "--ppid", str(os.getpid())],
        capture_output=True,
        text=True,
    ).stdout
    return [ln for ln in out.splitlines() if ln.split()[1].startswith("Z")]


async def gone(mark: str, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not living(mark):
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


@pytest.fixture
async def tools(ws: Workspace, cfg: ShellConfig) -> AsyncIterator[CommandTools]:
    """``exec_command`` and ``write_stdin`` over one session table, closed after the test."""
    async with command_tools(ws, config=cfg) as both:
        yield both


def test_secret_and_injection_names_are_scrubbed() -> None:
    for name in ("GITHUB_TOKEN", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "KEY"):
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "LANG", "KEYBOARD_LAYOUT_X", "MONKEY"):
        assert not is_secret_name(name) or name == "KEYBOARD_LAYOUT_X", name
    env = scrubbed_env(
        {
            "PATH": "/bin",
            "MY_TOKEN": "t",
            "LD_PRELOAD": "x.so",
            "DYLD_INSERT_LIBRARIES": "y",
            "PYTHONPATH": "/evil",
            "BASH_ENV": "/evil.sh",
            "HOME": "/home/u",
        }
    )
    assert env == {"PATH": "/bin", "HOME": "/home/u"}


def test_more_secret_spellings_are_scrubbed() -> None:
    """Beyond octos's words: passwords spelled PWD/PASS, JWTs, DSNs, connection strings,
    npm's _auth, and any value that is a URL carrying a password."""
    for name in (
        "MYSQL_PWD",
        "SMTP_PASS",
        "DB_PASS",
        "CI_JOB_JWT",
        "SENTRY_DSN",
        "AZURE_STORAGE_CONNECTION_STRING",
        "NPM_CONFIG__AUTH",
    ):
        assert is_secret_name(name), name
    for name in ("PWD", "OLDPWD", "GIT_AUTHOR_NAME", "BYPASS_CACHE", "PASSWD_FILE_FORMAT_X"):
        assert not is_secret_name(name) or name == "PASSWD_FILE_FORMAT_X", name
    env = scrubbed_env(
        {
            "PWD": "/w",
            "DATABASE_URL": "postgres://app:s3cr3t@db.internal:5432/app",
            "REDIS_URL": "redis://:s3cr3t@cache:6379/0",
            "HTTP_PROXY": "http://proxy.internal:3128",
            "DOCS_URL": "https://user@example.org/docs",
        }
    )
    assert env == {
        "PWD": "/w",
        "HTTP_PROXY": "http://proxy.internal:3128",
        "DOCS_URL": "https://user@example.org/docs",
    }


# ----------------------------------------------------------------------------- shell


@pytest.mark.anyio
async def test_shell_output_exit_code_and_failure(ws: Workspace, cfg: ShellConfig) -> None:
    tool = ShellTool(ws, cfg)
    ok = await call(tool, {"command": "echo out; echo err >&2; pwd"})
    assert ok.success
    assert "out\nerr\n" in ok.output and str(ws.root) in ok.output
    assert ok.output.startswith("Exit code: 0\nWall time: ")
    assert "\nOutput:\nout\n" in ok.output
    # a command that ran and exited non-zero is an answer, not a broken call (Codex)
    bad = await call(tool, {"command": "echo nope; exit 3"})
    assert bad.success and bad.error_kind is None
    assert bad.output.startswith("Exit code: 3\n") and bad.output.endswith("Output:\nnope")
    assert bad.structured_metadata is not None and bad.structured_metadata["exit_code"] == 3
    for command in ("grep -q nothing /dev/null", "test -f /nonexistent/x"):
        r = await call(tool, {"command": command})
        assert r.success and r.output.startswith("Exit code: 1\n"), r.output
    empty = await call(tool, {"command": "true"})
    assert "(no output)" in empty.output


@pytest.mark.anyio
async def test_timeout_clamps(ws: Workspace, cfg: ShellConfig) -> None:
    tool = ShellTool(ws, cfg)
    assert (await call(tool, {"command": "echo fine", "timeout_secs": 9999})).success
    started = time.monotonic()
    result = await call(tool, {"command": "sleep 5", "timeout_secs": 0})
    assert result.error_kind is ErrorKind.TIMEOUT
    assert time.monotonic() - started < 4.5
    assert "timed out after 1 second and was killed" in result.output
    assert "after 1 seconds" not in result.output
    # the timeout and the exit code are stated once, in the first line
    assert result.output.startswith("Error [timeout]: command timed out after 1 second ")
    assert result.output.count("timed out") == 1 and result.output.count("exit code") == 1
    assert "timed out after 1 second " in (result.error or {}).get("message", "")


@pytest.mark.anyio
@pytest.mark.parametrize("tool_name", ["shell", "exec_command", "bash"])
async def test_timeout_kills_grandchildren(ws: Workspace, cfg: ShellConfig, tool_name: str) -> None:
    mark = marker()
    # a grandchild in the group, one that ignores SIGTERM, and one in a sub-shell
    command = (
        f"sleep {mark} & "
        f"sh -c 'trap \"\" TERM; sleep {mark}' & "
        f"(sleep {mark}; echo late) & "
        f"echo started; sleep {mark}"
    )
    sessions = SessionManager()
    tool: Tool
    if tool_name == "shell":
        tool, args = ShellTool(ws, cfg), {"command": command, "timeout_secs": 1}
    elif tool_name == "exec_command":
        tool, args = ExecCommandTool(ws, cfg, sessions), {"cmd": command, "timeout_secs": 1}
    else:
        tool, args = BashTool(ws, cfg, sessions), {"cmd": command, "timeout_ms": 1000}
    started = time.monotonic()
    result = await call(tool, args)
    assert result.error_kind is ErrorKind.TIMEOUT, result.output
    assert "started" in result.output
    assert time.monotonic() - started < 10
    assert await gone(mark), living(mark)


@pytest.mark.anyio
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux child subreaper")
async def test_timeout_kills_orphaned_setsid_grandchildren(ws: Workspace, cfg: ShellConfig) -> None:
    """A grandchild that leaves the process group (setsid) and whose parent exits (double
    fork) is no longer a descendant of the shell unless the shell is a child subreaper."""
    mark = marker()
    command = (
        f"(setsid sleep {mark} &); "
        f"(setsid sh -c 'trap \"\" TERM; sleep {mark}' &); "
        f"echo started; sleep {mark}"
    )
    result = await call(ShellTool(ws, cfg), {"command": command, "timeout_secs": 1})
    assert result.error_kind is ErrorKind.TIMEOUT, result.output
    assert await gone(mark), living(mark)


@pytest.mark.anyio
async def test_background_child_holding_stdout_does_not_hang(
    ws: Workspace, cfg: ShellConfig
) -> None:
    mark = marker()
    tool = ExecCommandTool(ws, cfg, SessionManager())
    started = time.monotonic()
    result = await call(tool, {"cmd": f"printf 'child-%s\\n' done; sleep {mark} &"})
    assert result.success and "child-done" in result.output
    assert "Exit code: 0" in result.output
    assert time.monotonic() - started < 10
    started = time.monotonic()
    result = await call(tool, {"cmd": f"echo y-ok; sleep {mark} &", "yield_time_ms": 5000})
    assert result.success and "y-ok" in result.output
    assert "exited with code 0" in result.output
    assert time.monotonic() - started < 4.5
    subprocess.run(["pkill", "-f", f"sleep {mark}"], check=False)  # our own marker only


@pytest.mark.anyio
async def test_huge_output_is_capped_with_tail_and_exit_code(
    ws: Workspace, cfg: ShellConfig
) -> None:
    tool = ExecCommandTool(ws, cfg, SessionManager())
    cmd = (
        f"{sys.executable} -c \"import sys; sys.stdout.write('x'*5000000+'\\n'); "
        "print('FINAL: %d tests failed' % 3); sys.exit(1)\""
    )
    result = await call(tool, {"cmd": cmd})
    assert result.success and result.structured_metadata is not None
    assert result.structured_metadata["exit_code"] == 1
    assert len(result.output.encode()) <= cfg.max_output_bytes
    assert result.output.startswith("Exit code: 1\n")
    assert "Output:\nxxxxxxxxxx" in result.output
    assert "bytes omitted" in result.output
    assert result.output.endswith("FINAL: 3 tests failed")
    small = await call(tool, {"cmd": "seq 1 100000", "max_output_tokens": 100})
    assert len(small.output) < 1000 and "100000" in small.output


@pytest.mark.anyio
async def test_environment_is_scrubbed(
    ws: Workspace, cfg: ShellConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCTOS_TEST_API_KEY", "sk-test-123")
    monkeypatch.setenv("OCTOS_TEST_PLAIN", "visible")
    monkeypatch.setenv("PYTHONSTARTUP", "/nonexistent/startup.py")
    result = await call(ShellTool(ws, cfg), {"command": "env"})
    assert "OCTOS_TEST_PLAIN=visible" in result.output
    assert "sk-test-123" not in result.output and "PYTHONSTARTUP" not in result.output


@pytest.mark.anyio
async def test_workdir_checks(ws: Workspace, cfg: ShellConfig) -> None:
    (ws.root / "sub").mkdir()
    tool = ExecCommandTool(ws, cfg, SessionManager())
    ok = await call(tool, {"cmd": "pwd", "workdir": "sub"})
    assert ok.success and f"Output:\n{ws.root / 'sub'}" in ok.output
    nul = await call(tool, {"cmd": "pwd", "workdir": "sub\x00dir"})
    assert nul.error_kind is ErrorKind.INVALID_ARGUMENTS and "NUL" in nul.output
    out = await call(tool, {"cmd": "pwd", "workdir": "../"})
    assert out.error_kind is ErrorKind.PATH_OUTSIDE_WORKSPACE
    missing = await call(tool, {"cmd": "pwd", "workdir": "nope"})
    assert missing.error_kind is ErrorKind.NOT_FOUND
    (ws.root / "file.txt").write_text("x\n")
    not_dir = await call(tool, {"cmd": "pwd", "workdir": "file.txt"})
    assert not_dir.error_kind is ErrorKind.NOT_A_DIRECTORY
    (ws.root / "linked").symlink_to(ws.root / "sub", target_is_directory=True)
    for spelling in ("linked", "linked/"):
        link = await call(tool, {"cmd": "pwd", "workdir": spelling})
        assert link.error_kind is ErrorKind.SYMLINK_REFUSED, link.output
        assert "symbolic link" in link.output
    nocmd = await call(tool, {"workdir": "sub"})
    assert nocmd.error_kind is ErrorKind.INVALID_ARGUMENTS
    alias = await call(tool, {"command": "echo via-alias"})
    assert alias.success and "via-alias" in alias.output


# ----------------------------------------------------------------------------- sessions


@pytest.mark.anyio
async def test_cat_session_returns_only_new_output(tools: CommandTools) -> None:
    exec_tool, stdin_tool = tools.exec_command, tools.write_stdin
    first = await call(exec_tool, {"cmd": "cat", "yield_time_ms": 100})
    meta = first.structured_metadata
    assert first.success and meta is not None and meta["running"] is True
    sid = meta["session_id"]
    one = await call(stdin_tool, {"session_id": sid, "chars": "alpha\n", "yield_time_ms": 300})
    assert "alpha" in one.output
    two = await call(stdin_tool, {"session_id": sid, "chars": "beta\n", "yield_time_ms": 300})
    assert "beta" in two.output and "alpha" not in two.output
    idle = await call(stdin_tool, {"session_id": sid})
    assert "none since the last read" in idle.output
    big = await call(stdin_tool, {"session_id": sid, "chars": "z" * 300_000 + "\nEND\n"})
    assert big.success and "bytes omitted" in big.output
    tail = big.output
    for _ in range(10):
        if "END" in tail:
            break
        tail = (await call(stdin_tool, {"session_id": sid, "yield_time_ms": 300})).output
    assert "END" in tail
    await tools.sessions.aclose()
    unknown = await call(stdin_tool, {"session_id": sid})
    assert unknown.error_kind is ErrorKind.UNKNOWN_SESSION


@pytest.mark.anyio
async def test_python_repl_on_a_tty(tools: CommandTools) -> None:
    exec_tool, stdin_tool = tools.exec_command, tools.write_stdin
    first = await call(exec_tool, {"cmd": f"{sys.executable} -i -q", "tty": True})
    assert first.structured_metadata is not None
    sid = first.structured_metadata["session_id"]
    answer = ""
    for _ in range(20):  # a slow box may need a few polls
        r = await call(
            stdin_tool,
            {"session_id": sid, "chars": "" if answer else "print(6*7)\n", "yield_time_ms": 300},
        )
        answer += r.output
        if "42" in answer:
            break
    assert "42" in answer
    tty = await call(
        stdin_tool,
        {
            "session_id": sid,
            "chars": "import sys; print(sys.stdin.isatty())\n",
            "yield_time_ms": 500,
        },
    )
    assert "True" in tty.output
    done = await call(stdin_tool, {"session_id": sid, "chars": "exit()\n", "yield_time_ms": 3000})
    assert done.structured_metadata is not None
    assert done.structured_metadata["running"] is False
    assert done.structured_metadata["exit_code"] == 0
    again = await call(stdin_tool, {"session_id": sid})
    assert again.error_kind is ErrorKind.UNKNOWN_SESSION


@pytest.mark.anyio
async def test_tty_read_line(tools: CommandTools) -> None:
    exec_tool, stdin_tool = tools.exec_command, tools.write_stdin
    first = await call(exec_tool, {"cmd": "read x; echo got:$x", "tty": True, "yield_time_ms": 200})
    assert first.structured_metadata is not None
    sid = first.structured_metadata["session_id"]
    r = await call(stdin_tool, {"session_id": sid, "chars": "octos\n", "yield_time_ms": 3000})
    assert "got:octos" in r.output


@pytest.mark.anyio
async def test_sessions_are_bounded_timed_and_closed(ws: Workspace, cfg: ShellConfig) -> None:
    mark = marker()
    sessions = SessionManager(max_sessions=2, max_per_owner=2)
    exec_tool = ExecCommandTool(ws, cfg, sessions)
    ids = []
    for _ in range(3):
        r = await call(exec_tool, {"cmd": f"sleep {mark}", "yield_time_ms": 0})
        assert r.structured_metadata is not None
        ids.append(r.structured_metadata["session_id"])
    assert sessions.ids() == ids[1:]  # the oldest idle session was closed
    assert len(living(mark)) <= 2 + 2  # sh and sleep of each live session at most
    # killed at its timeout
    tmark = marker()
    r = await call(exec_tool, {"cmd": f"sleep {tmark}", "yield_time_ms": 0, "timeout_secs": 1})
    assert r.structured_metadata is not None
    assert await gone(tmark, within=6.0)
    sid = r.structured_metadata["session_id"]
    after = await call(WriteStdinTool(sessions, cfg), {"session_id": sid})
    assert after.structured_metadata is not None and after.structured_metadata["running"] is False
    assert "timeout" in after.output
    await exec_tool.aclose()
    assert await gone(mark)
    assert len(sessions) == 0


@pytest.mark.anyio
async def test_registry_close_ends_sessions(tmp_path: Path) -> None:
    mark = marker()
    ws = Workspace(tmp_path)
    registry = ToolRegistry(ws)
    runtime.register(registry, ws, Config())
    assert registry.names() == ["shell", "exec_command", "bash", "write_stdin"]
    r = await registry.execute("exec_command", {"cmd": f"sleep {mark}", "yield_time_ms": 0})
    assert r.success, r.output
    r = await registry.execute("exec_command", {"cmd": f"sleep {mark}", "tty": True})
    assert r.success, r.output
    r = await registry.execute("write_stdin", {"session_id": "exec-99"})
    assert r.error_kind is ErrorKind.UNKNOWN_SESSION
    assert living(mark)
    await registry.aclose()
    assert await gone(mark)


@pytest.mark.anyio
@pytest.mark.slow
async def test_thousand_timed_out_commands_leave_nothing(
    ws: Workspace, cfg: ShellConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Test-only lower bound: 0.2 s instead of 1 s keeps this under half a minute on 2 cores.
    monkeypatch.setattr(runtime._command_tools, "MIN_TIMEOUT_SECS", 0.2)
    mark = marker()
    tool = ShellTool(ws, cfg)
    command = f"sleep {mark} & sleep {mark}"
    batch = 100

    async def one() -> ToolResult:
        return await call(tool, {"command": command, "timeout_secs": 0})

    results: list[ToolResult] = []
    for _ in range(1000 // batch):
        results.extend(await asyncio.gather(*(one() for _ in range(batch))))
    assert len(results) == 1000
    assert all(r.error_kind is ErrorKind.TIMEOUT for r in results)
    assert await gone(mark, within=10.0), living(mark)[:5]
    assert our_zombies() == []


@pytest.mark.anyio
async def test_exit_codes_through_the_registry_are_answers_not_failures(tmp_path: Path) -> None:
    """Issue: a command that ran and exited is a successful call (its exit code in text and
    metadata, as Codex does); only calls that could not do their job fail."""
    ws = Workspace(tmp_path)
    registry = ToolRegistry(ws)
    runtime.register(registry, ws, Config())
    for name, args in (
        ("exec_command", {"cmd": "echo failing test; exit 1"}),
        ("shell", {"command": "grep -q needle /dev/null"}),
        ("bash", {"cmd": "test -f missing.txt"}),
    ):
        r = await registry.execute(name, args)
        assert r.success and r.error is None, (name, r.output)
        assert r.output.startswith("Exit code: 1\n")
        assert r.structured_metadata is not None and r.structured_metadata["exit_code"] == 1
    refused = await registry.execute("exec_command", {"cmd": "rm -rf /"})
    assert refused.error_kind is ErrorKind.POLICY_DENIED
    bad = await registry.execute("exec_command", {"cmd": 5})
    assert bad.error_kind is ErrorKind.INVALID_ARGUMENTS
    missing = await registry.execute("exec_command", {"cmd": "ls", "workdir": "nope"})
    assert missing.error_kind is ErrorKind.NOT_FOUND
    await registry.aclose()


@pytest.mark.anyio
async def test_a_command_running_past_the_default_yield_becomes_a_session(
    ws: Workspace, cfg: ShellConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex's unified exec: after the default yield (10 s; shortened here) the call
    returns the output so far and a session_id, and write_stdin reads the end."""
    from octos_tools.builtins.runtime import _command_tools as tools_module

    monkeypatch.setattr(tools_module, "EXEC_DEFAULT_YIELD_MS", 300)
    sessions = SessionManager()
    exec_tool = ExecCommandTool(ws, cfg, sessions)
    first = await call(exec_tool, {"cmd": "echo started; sleep 2; echo finished"})
    assert first.success and first.structured_metadata is not None
    assert first.structured_metadata["running"] is True
    session_id = first.structured_metadata["session_id"]
    assert "started" in first.output and "finished" not in first.output
    assert sessions.ids() == [session_id]
    poll = WriteStdinTool(sessions, cfg)
    rest = await call(poll, {"session_id": session_id, "yield_time_ms": 20_000})
    assert rest.success and "finished" in rest.output and "exited with code 0" in rest.output
    assert sessions.ids() == []
    quick = await call(exec_tool, {"cmd": "echo quick"})  # ends within the yield: as before
    assert quick.output.startswith("Exit code: 0") and "quick" in quick.output
    await sessions.aclose()


def test_write_stdin_is_not_read_only_and_follows_the_commands_sandbox(tmp_path: Path) -> None:
    """write_stdin is never advertised read-only; --read-only keeps it only beside command
    tools that run in the read-only sandbox (what it types runs in its session's sandbox),
    and removes it where commands are removed."""
    from octos_tools.profile import build_registry

    spec = WriteStdinTool(SessionManager(), ShellConfig()).spec()
    assert spec.read_only is False and spec.destructive is True
    registry = build_registry(Config(read_only=True), tmp_path)
    assert "read_file" in registry
    removed = registry.removed_by_policy()
    assert "write_file" in removed
    assert ("write_stdin" in removed) == ("exec_command" in removed)
