"""What a newcomer meets on the command line: exit codes, one-line messages, ``-v``
anywhere, typo suggestions, plain output when not on a terminal, quiet broken pipes.
Exit statuses, ``-v`` after the command, unwrapped lines and the closed pipe are checked on
the real command as a separate process; messages and help run the same entry point in
process (``run_in_process``), whose standard streams are not terminals either."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import run_in_process


def run(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The command as a separate process."""
    return subprocess.run(
        [sys.executable, "-m", "octos_tools", *args],
        input="",
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def run_here(*args: str) -> subprocess.CompletedProcess[str]:
    """The command run in this process (``run_in_process``), outputs decoded as ``run``'s."""
    proc = run_in_process(*args)
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "hello.txt").write_text("hello\n")
    return root


def test_failed_call_exits_0_by_default_and_says_what_failed(ws: Path) -> None:
    proc = run("call", "read_file", '{"path": "nope.md"}', "-w", str(ws))
    assert proc.returncode == 0
    assert proc.stderr == "error: not_found: nope.md does not exist\n"
    assert "nope.md" in proc.stdout


def test_exit_code_flag_makes_a_failed_result_exit_1(ws: Path) -> None:
    failed = run("call", "read_file", '{"path": "nope.md"}', "-w", str(ws), "--exit-code")
    assert failed.returncode == 1
    ok = run("call", "read_file", '{"path": "hello.txt"}', "-w", str(ws), "--exit-code")
    assert ok.returncode == 0, ok.stderr
    assert "hello" in ok.stdout


def test_usage_errors_exit_2_on_one_line(ws: Path) -> None:
    proc = run("call", "read_file", "{}", "-w", str(ws / "missing"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: workspace ")
    assert proc.stderr.count("\n") == 1


def test_verbose_works_after_the_subcommand_and_shows_what_happens(ws: Path) -> None:
    proc = run("call", "read_file", '{"path": "hello.txt"}', "-w", str(ws), "-v")
    assert proc.returncode == 0, proc.stderr
    assert f"workspace: {ws}" in proc.stderr
    assert "config: (none" in proc.stderr
    assert "tools loaded for this call (the families read_file needs)" in proc.stderr
    assert "call read_file: ok in " in proc.stderr
    assert "asyncio" not in proc.stderr.lower()
    before = run("-v", "call", "read_file", '{"path": "nope"}', "-w", str(ws))
    assert "call read_file: not_found in " in before.stderr


@pytest.mark.parametrize("command", [["tools"], ["contract"], ["policy", "explain", "shell"]])
def test_verbose_is_accepted_by_every_command(ws: Path, command: list[str]) -> None:
    proc = run_here(*command, "-w", str(ws), "-v")
    assert proc.returncode == 0, proc.stderr
    assert "workspace:" in proc.stderr


def test_policy_explain_suggests_the_nearest_name(ws: Path) -> None:
    proc = run_here("policy", "explain", "shel", "-w", str(ws))
    assert proc.returncode == 2
    assert "shel: unknown tool" in proc.stdout
    assert "did you mean 'shell'?" in proc.stderr


def test_policy_typos_are_reported(ws: Path, tmp_path: Path) -> None:
    warn = tmp_path / "warn.toml"
    warn.write_text('[tool_policy]\nallow = ["shel", "read_file"]\n')
    proc = run_here("tools", "-w", str(ws), "-c", str(warn))
    assert proc.returncode == 0
    assert "warning: tool_policy.allow: 'shel'" in proc.stderr
    assert "did you mean 'shell'?" in proc.stderr
    # a misspelt deny would serve the tool: a configuration error
    bad = tmp_path / "bad.toml"
    bad.write_text('[tool_policy]\ndeny = ["exec_comand"]\n')
    proc = run_here("tools", "-w", str(ws), "-c", str(bad))
    assert proc.returncode == 2
    assert "error: tool_policy.deny: 'exec_comand'" in proc.stderr
    assert "did you mean 'exec_command'?" in proc.stderr
    case = tmp_path / "case.toml"
    case.write_text('[tool_policy]\ndeny = ["Shell"]\n')
    proc = run_here("call", "shell", '{"command": "true"}', "-w", str(ws), "-c", str(case))
    assert proc.returncode == 2
    assert "case-sensitive" in proc.stderr and "'shell'" in proc.stderr


def test_messages_are_never_wrapped_when_not_on_a_terminal(ws: Path) -> None:
    long_name = "x" * 150
    proc = run("call", "read_file", f'{{"path": "{long_name}"}}', "-w", str(ws))
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and long_name in lines[0]
    table = run("tools", "-w", str(ws), env={**os.environ, "COLUMNS": "40"})
    assert "\x1b[" not in table.stdout
    rows = [line for line in table.stdout.splitlines() if line.startswith("read_file")]
    assert len(rows) == 1 and "fs" in rows[0] and "safe" in rows[0]


def test_help_reads_like_click(ws: Path) -> None:
    proc = run_here("--help")
    assert proc.returncode == 0
    assert "<bool>" not in proc.stdout and "╭" not in proc.stdout
    assert "--version" in proc.stdout
    call_help = run_here("call", "--help").stdout
    assert "Exit codes" in call_help and "--exit-code" in call_help


def test_a_closed_pipe_exits_141_quietly(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(20_000)))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "octos_tools",
            "call",
            "read_file",
            '{"path": "big.txt"}',
            "-w",
            str(ws),
            "--json",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before the command writes its 50 kB answer
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_a_model_entry_shadowing_the_provider_entry_is_said(ws: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "p.toml"
    cfg.write_text(
        'provider = "gemini"\nmodel = "gemini-2.5"\n'
        '[tool_policy_by_provider.gemini]\nallow = ["group:fs"]\n'
        '[tool_policy_by_provider."gemini-2.5"]\ndeny = ["read_file"]\n'
    )
    proc = run_here("policy", "explain", "exec_command", "-w", str(ws), "-c", str(cfg))
    assert proc.returncode == 0, proc.stderr
    assert "replaces the entry for provider 'gemini'" in proc.stderr
    assert "tool_policy_by_provider['gemini']: note - not applied" in proc.stdout


def test_a_hook_matcher_naming_claude_codes_tools_is_warned_about(tmp_path: Path) -> None:
    cfg = tmp_path / "octos.toml"
    cfg.write_text(
        '[[hooks.PreToolUse]]\nmatcher = "Bash"\n'
        '[[hooks.PreToolUse.hooks]]\ntype = "command"\ncommand = "true"\n'
    )
    (tmp_path / "a.txt").write_text("x\n")
    result = run_in_process(
        "call", "read_file", '{"path": "a.txt"}', "-w", str(tmp_path), "-c", str(cfg)
    )
    err = result.stderr.decode()
    assert result.returncode == 0, err
    assert "hooks.PreToolUse.0.matcher 'Bash' matches no tool" in err
    assert "exec_command|bash|shell" in err


def test_history_with_history_off_says_so(tmp_path: Path) -> None:
    cfg = tmp_path / "octos.toml"
    cfg.write_text("[history]\nenabled = false\n")
    result = run_in_process("history", "log", "-w", str(tmp_path), "-c", str(cfg))
    err = result.stderr.decode()
    assert result.returncode != 0
    assert "history is off in this config" in err and "unknown tool" not in err
