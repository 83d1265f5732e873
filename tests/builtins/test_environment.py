"""What a command's environment holds: secrets scrubbed by name and by value, pagers and
prompts off; and the host's own secrets kept out of ``/proc/$PPID/environ``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from octos_tools.builtins.runtime import (
    NONINTERACTIVE_ENV,
    ExecCommandTool,
    SessionManager,
    ShellTool,
    command_env,
    is_secret_name,
    is_secret_value,
    scrubbed_env,
)
from octos_tools.config import ShellConfig
from octos_tools.workspace import Workspace

from .tool_helpers import call

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shells")


@pytest.mark.parametrize(
    "name",
    [
        "STRIPE_SK",
        "CREDS",
        "AUTH",
        "SIGNING_CERT_PEM",
        "DOCKER_AUTH_CONFIG",
        "KUBECONFIG",
        "NETRC",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "SLACK_WEBHOOK_URL",
        "APP_COOKIE",
        "NPM_CONFIG__AUTH",
        "ANDROID_KEYSTORE",
        "MYSQL_PWD",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name) and is_secret_name(name.lower())


@pytest.mark.parametrize(
    "name",
    ["PATH", "HOME", "SSH_AUTH_SOCK", "GIT_AUTHOR_NAME", "XAUTHORITY", "PWD", "SKIP_TESTS", "TASK"],
)
def test_ordinary_names_kept(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    "value",
    [
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNz\n-----END OPENSSH PRIVATE KEY-----",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9",
        "postgres://app:s3cr3t@db.internal/app",
        "Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1u",  # random-looking base64
    ],
)
def test_secret_values(value: str) -> None:
    assert is_secret_value(value)
    assert scrubbed_env({"INNOCENT_NAME": value, "PATH": "/bin"}) == {"PATH": "/bin"}


@pytest.mark.parametrize(
    "value",
    [
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # a digest
        "123e4567-e89b-12d3-a456-426614174000",
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01",
        "/home/User/Projects/MyApp2024/build/output/Release",
        "en_US.UTF-8",
        "Ubuntu-22.04-Jammy-Jellyfish-Release-2024",
        "com.example.MyApplication.Service2024.Release",
        "https://proxy.internal:3128",
    ],
)
def test_ordinary_values_kept(value: str) -> None:
    assert not is_secret_value(value)


def test_command_env_turns_pagers_and_prompts_off() -> None:
    env = command_env(
        {"PATH": "/bin", "GIT_ASKPASS": "/usr/bin/ksshaskpass", "SSH_ASKPASS": "x", "PAGER": "less"}
    )
    for key, value in NONINTERACTIVE_ENV.items():
        assert env[key] == value
    assert env["PAGER"] == "cat" and env["GIT_PAGER"] == "cat" and env["MANPAGER"] == "cat"
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["GCM_INTERACTIVE"] == "never"
    assert "GIT_ASKPASS" not in env and "SSH_ASKPASS" not in env
    assert env["TERM"] == "dumb" and command_env({}, tty=True)["TERM"] != "dumb"


def _repo_with_many_commits(path: Path, count: int) -> None:
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    stream = []
    for i in range(count):
        msg = f"commit number {i}\n"
        stream.append(
            f"commit refs/heads/master\ncommitter t <t@example.org> {1_700_000_000 + i} +0000\n"
            f"data {len(msg)}\n{msg}" + "\n"
        )
    subprocess.run([*git, "fast-import", "--quiet"], input="".join(stream), text=True, check=True)
    subprocess.run([*git, "checkout", "-q", "master"], check=True)


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
async def test_tty_git_log_returns_instead_of_waiting_in_a_pager(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _repo_with_many_commits(repo, 400)
    sessions = SessionManager()
    tool = ExecCommandTool(Workspace(tmp_path), ShellConfig(), sessions)
    r = await call(tool, {"cmd": "git log", "workdir": "repo", "tty": True, "yield_time_ms": 8000})
    assert r.structured_metadata is not None
    assert r.structured_metadata["running"] is False, r.output[-500:]
    assert r.structured_metadata["exit_code"] == 0
    assert "commit number 0" in r.output and "(END)" not in r.output
    # no credential prompt on the terminal either
    r = await call(
        tool,
        {
            "cmd": "printf 'protocol=https\\nhost=example.invalid\\n\\n' | git credential fill",
            "tty": True,
            "yield_time_ms": 8000,
        },
    )
    assert r.structured_metadata is not None and r.structured_metadata["running"] is False
    assert "terminal prompts disabled" in r.output, r.output
    await sessions.aclose()


def test_host_secrets_are_not_readable_through_proc_ppid_environ(tmp_path: Path) -> None:
    """A host started with secrets in its environment: a command reading its parent's
    ``/proc/<pid>/environ`` finds no secret value (names and plain values remain), while the
    host itself still has them."""
    if not sys.platform.startswith("linux"):
        pytest.skip("Linux /proc")
    planted = f"plant-{uuid.uuid4().hex}"
    shaped = "ghp_" + uuid.uuid4().hex + "ABCD"
    script = textwrap.dedent(
        """
        import asyncio, os, sys
        from octos_tools.builtins.runtime import ShellTool
        from octos_tools.config import ShellConfig
        from octos_tools.context import ToolContext
        from octos_tools.workspace import Workspace

        tool = ShellTool(Workspace(sys.argv[1]), ShellConfig())
        args = {"command": "tr '\\\\0' '\\\\n' < /proc/$PPID/environ"}
        result = asyncio.run(tool.execute_with_context(ToolContext(), args))
        print(result.output)
        print("HOST:", os.environ["OCTOS_PLANT_TOKEN"], os.environ["OCTOS_PLANT_SHAPED"])
        """
    )
    env = {
        **os.environ,
        "OCTOS_PLANT_TOKEN": planted,
        "OCTOS_PLANT_SHAPED": shaped,
        "OCTOS_PLANT_PLAIN": "visible-value",
    }
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    command_part, _, host_part = out.partition("HOST:")
    assert "OCTOS_PLANT_PLAIN=visible-value" in command_part
    assert "OCTOS_PLANT_TOKEN=****" in command_part
    assert planted not in command_part and shaped not in command_part
    assert planted in host_part and shaped in host_part  # the host keeps its values


@pytest.mark.anyio
async def test_commands_do_not_see_secret_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STRIPE_SK", "sk_live_abcdefghijklmnop1234")
    monkeypatch.setenv("KUBECONFIG", "/home/u/.kube/config")
    monkeypatch.setenv("INNOCENT", "ghp_abcdefghijklmnopqrstuvwxyz0123456789")
    monkeypatch.setenv("OCTOS_PLAIN", "visible")
    r = await call(ShellTool(Workspace(tmp_path), ShellConfig()), {"command": "env"})
    assert "OCTOS_PLAIN=visible" in r.output and "PAGER=cat" in r.output
    for gone in ("STRIPE_SK", "KUBECONFIG", "INNOCENT"):
        assert f"{gone}=" not in r.output


def _env_dumper(tmp_path: Path, real: str, name: str) -> tuple[Path, Path]:
    """A program named ``name`` that writes its environment to a file, then runs ``real``
    with its arguments (so the tool still works)."""
    folder = tmp_path / f"fake-{name}"
    folder.mkdir()
    dump = tmp_path / f"{name}.env"
    script = folder / name
    script.write_text(f'#!/bin/sh\nenv > "{dump}"\nexec "{real}" "$@"\n')
    script.chmod(0o755)
    return script, dump


@pytest.mark.anyio
async def test_rg_and_git_children_get_the_scrubbed_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rg and git are real processes printing their environment: the server's API key and
    MCP bearer token never reach them (one helper, command_env, builds every child's)."""
    from octos_tools.builtins.search import GrepTool, _grep_tool, find_rg
    from octos_tools.builtins.vcs import _git_tool as git_module

    real_rg, real_git = find_rg(), shutil.which("git")
    if real_rg is None or real_git is None:
        pytest.skip("needs rg and git")
    key = "sk-proj-" + uuid.uuid4().hex + "AbC"
    token = uuid.uuid4().hex + "XyZ9" + uuid.uuid4().hex
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("OCTOS_TOOLS_MCP_TOKEN", token)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("needle\n")
    subprocess.run([real_git, "init", "-q"], cwd=ws, check=True)

    fake_rg, rg_dump = _env_dumper(tmp_path, real_rg, "rg")
    monkeypatch.setattr(_grep_tool, "find_rg", lambda: str(fake_rg))
    found = await call(GrepTool(Workspace(ws)), {"pattern": "needle"})
    assert found.success and "a.txt" in found.output, found.output

    fake_git, git_dump = _env_dumper(tmp_path, real_git, "git")
    monkeypatch.setattr(git_module.trusted_programs, "which", lambda _name: str(fake_git))
    status = await call(git_module.GitTool(Workspace(ws)), {"command": "status"})
    assert status.success, status.output

    for dump in (rg_dump, git_dump):
        seen = dump.read_text()
        assert "PATH=" in seen  # the program really ran and wrote its environment
        assert key not in seen and "OPENAI_API_KEY" not in seen
        assert token not in seen and "OCTOS_TOOLS_MCP_TOKEN" not in seen
