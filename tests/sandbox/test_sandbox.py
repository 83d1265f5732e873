"""The sandbox through the tools and the CLI: config, modes, the blocked note, sessions,
read_only, a denied web, sandbox_unavailable, contract and ``sandbox check``."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from octos_tools.builtins.runtime import ExecCommandTool, SessionManager
from octos_tools.config import Config, ShellConfig, load_config
from octos_tools.errors import ConfigError, ToolError
from octos_tools.profile import build_registry
from octos_tools.sandbox import (
    SandboxMode,
    SandboxSettings,
    engine_status,
    settings_from_config,
    wrap_command,
)
from octos_tools.sandbox._probe import NOT_ENFORCED
from octos_tools.workspace import Workspace
from tests.helpers import command_tools, run_sandboxed

USABLE = [s.name for s in engine_status() if s.usable]
SRC = str(Path(__file__).resolve().parents[2] / "src")
needs_engine = pytest.mark.skipif(not USABLE, reason="no sandbox engine here")


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": SRC, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "octos_tools", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
        check=False,
    )


def test_malformed_table_is_one_line_naming_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[sandbox]\nmode = "workspace_rw"\n')
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    text = str(err.value)
    assert "\n" not in text and "sandbox.mode" in text
    cfg.write_text("[sandbox]\nnetwork = 1\n")
    with pytest.raises(ConfigError, match=r"sandbox\.network"):
        load_config(cfg)
    cfg.write_text('[sandbox]\nwritable_roots = ["rel/dir"]\n')
    with pytest.raises(ConfigError, match=r"sandbox\.writable_roots.*absolute"):
        load_config(cfg)
    cfg.write_text("[sandbox]\nnetwrok = true\n")
    with pytest.raises(ConfigError, match=r"sandbox\.netwrok: unknown key"):
        load_config(cfg)


def test_read_only_and_denied_web_resolve_the_settings(tmp_path: Path) -> None:
    base = Config.from_mapping({"sandbox": {"network": True}})
    assert settings_from_config(base).network is True
    assert settings_from_config(base).mode is SandboxMode.WORKSPACE_WRITE
    for deny in (["group:web"], ["web_fetch"], ["web_*"]):
        cfg = Config.from_mapping({"sandbox": {"network": True}, "tool_policy": {"deny": deny}})
        assert settings_from_config(cfg).network is False, deny
    ro = Config.from_mapping({"read_only": True})
    assert settings_from_config(ro).mode is SandboxMode.READ_ONLY
    assert settings_from_config(ro, mode="danger-full-access").mode is SandboxMode.READ_ONLY
    assert settings_from_config(base, mode="read_only").mode is SandboxMode.READ_ONLY
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text('[tool_policy]\ndeny = ["group:web"]\n')
    loaded = load_config(cfg_file)
    assert settings_from_config(loaded, config_path=loaded.source_path).read_only_paths == (
        str(cfg_file.absolute()),
    )


def _repo(ws: Path) -> None:
    subprocess.run(["git", "init", "-q", str(ws)], check=True)


@needs_engine
@pytest.mark.parametrize("engine", ["bubblewrap", "landlock"])
def test_blocked_command_returns_its_output_and_one_rule_line(tmp_path: Path, engine: str) -> None:
    if engine not in USABLE:
        pytest.skip(f"{engine} unusable")
    ws = tmp_path / "ws"
    ws.mkdir()
    # outside the workspace and outside /tmp (the private temp folder stands in for /tmp)
    outside_dir = Path(tempfile.mkdtemp(dir="/var/tmp"))
    outside = outside_dir / "outside.txt"
    tool = ExecCommandTool(Workspace(ws), ShellConfig(), sandbox=SandboxSettings(engine=engine))
    result = asyncio.run(tool.run(tool.Args(cmd=f"echo x > {outside}"), None))
    assert result.success  # not a tool error
    assert result.structured_metadata["exit_code"] != 0
    assert not outside.exists()
    assert "cannot create" in result.output
    note = result.structured_metadata["sandbox_note"]
    assert note.count("\n") == 0 and f"workspace-write, {engine}" in note
    assert "require_escalated" in note and note in result.output
    ok = asyncio.run(tool.run(tool.Args(cmd="echo fine > in-ws.txt && cat in-ws.txt"), None))
    assert ok.structured_metadata["exit_code"] == 0 and "sandbox_note" not in ok.structured_metadata
    assert (ws / "in-ws.txt").read_text() == "fine\n"
    outside_dir.rmdir()


@needs_engine
def test_write_stdin_session_inherits_the_sandbox(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    target = Path(tempfile.mkdtemp(dir="/var/tmp")) / "typed.txt"

    async def run() -> str:
        async with command_tools(ws, SandboxSettings(mode=SandboxMode.READ_ONLY)) as tools:
            sid = await tools.start("sh", 200)
            typed = f"echo x > {target}; echo y > {ws}/w.txt; echo done-$((1+1))\n"
            return await tools.type(sid, typed, 1500)

    text = asyncio.run(run())
    assert "done-2" in text
    assert not target.exists() and not (ws / "w.txt").exists()
    target.parent.rmdir()


@needs_engine
def test_read_only_config_keeps_commands_and_runs_them_read_only(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    registry = build_registry(Config.from_mapping({"read_only": True}), ws)
    assert "exec_command" in registry and "write_file" not in registry

    async def run() -> str:
        result = await registry.execute("exec_command", {"cmd": "cat a.txt; echo x > b.txt"})
        await registry.aclose()
        return result.output

    text = asyncio.run(run())
    assert ("hello" in text and "Read-only file system" in text) or "Permission denied" in text
    assert not (ws / "b.txt").exists()


def test_sandbox_unavailable_is_typed_and_nothing_runs(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    cfg = tmp_path / "c.toml"
    cfg.write_text('[sandbox]\nengine = "bubblewrap"\n')
    # no bwrap on PATH: the bubblewrap engine cannot run, and nothing else may stand in
    proc = _cli(
        "call",
        "exec_command",
        '{"cmd": "touch ran"}',
        "-w",
        str(ws),
        "-c",
        str(cfg),
        "--json",
        env={"PATH": "/nonexistent"},
    )
    data = json.loads(proc.stdout)
    assert data["error"]["kind"] == "sandbox_unavailable"
    assert "bwrap is not installed" in data["error"]["message"]
    assert "apt-get install bubblewrap" in data["error"]["message"]
    assert not (ws / "ran").exists()
    serve = subprocess.run(
        [sys.executable, "-m", "octos_tools", "serve", "-w", str(ws), "-c", str(cfg)],
        input="",
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC, "PATH": "/nonexistent"},
        timeout=60,
        check=False,
    )
    assert "commands will not run" in serve.stderr and "bwrap is not installed" in serve.stderr


def test_wrap_command_refuses_rather_than_running_unconfined(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from octos_tools.sandbox import _detect

    bad = _detect.EngineStatus("bubblewrap", False, "broken", "fix it")
    monkeypatch.setattr(_detect, "bubblewrap_status", lambda: bad)
    with pytest.raises(ToolError) as err:
        wrap_command(["true"], "/", {}, SandboxSettings(engine="bubblewrap"), "/")
    assert err.value.kind.value == "sandbox_unavailable"
    spawn = wrap_command(
        ["true"], "/", {}, SandboxSettings(mode=SandboxMode.DANGER_FULL_ACCESS), "/"
    )
    assert spawn.argv == ["true"] and spawn.engine == "none"


@needs_engine
def test_contract_reports_the_mode_in_force(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for args, mode in (
        ([], "workspace-write"),
        (["--read-only"], "read-only"),
        (["--sandbox", "danger-full-access"], "danger-full-access"),
    ):
        proc = _cli("contract", "-w", str(ws), *args)
        policy = json.loads(proc.stdout)["policy"]
        assert policy["sandbox_mode"] == mode
        assert policy["sandbox_engine"] in ("bubblewrap", "landlock", "none")
    assert _cli("call", "exec_command", "{}", "--sandbox", "nope").returncode == 2


@needs_engine
def test_sandbox_check_prints_each_mode(tmp_path: Path) -> None:
    proc = _cli("sandbox", "check", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["mode"] == "workspace-write" and report["engine"] in USABLE
    for engine in report["engines"]:
        if engine["usable"]:
            ws = engine["modes"]["workspace-write"]
            assert ws["allowed_refused"] == []
            ro = engine["modes"]["read-only"]
            limits = sorted(NOT_ENFORCED[engine["name"]])
            assert ro["forbidden_happened"] == limits and ro["allowed_refused"] == []
            assert ws["forbidden_happened"] == limits


@pytest.mark.parametrize("engine", ["bubblewrap", "landlock", "none"])
def test_background_children_die_with_their_session(tmp_path: Path, engine: str) -> None:
    """No cgroup (this runtime falls back to the /proc walk when it has none): a command's
    background child still ends, with the command (bubblewrap's pid namespace) or when the
    session of tools closes (its process group)."""
    if engine != "none" and engine not in USABLE:
        pytest.skip(f"{engine} unusable")
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = f"{time.time_ns() % 10_000_000}.5"
    box = (
        SandboxSettings(mode=SandboxMode.DANGER_FULL_ACCESS)
        if engine == "none"
        else SandboxSettings(engine=engine)
    )

    def alive() -> bool:
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if cmdline == f"sleep\0{marker}\0".encode():
                    return True
        return False

    async def run() -> None:
        sessions = SessionManager(4)
        tool = ExecCommandTool(Workspace(ws), ShellConfig(), sessions, box)
        tool.sandbox = box
        result = await tool.run(tool.Args(cmd=f"sleep {marker} & echo started"), None)
        assert "started" in result.output
        await sessions.aclose()

    import octos_tools.builtins.runtime._command as command

    real = command.CommandCgroup.create
    command.CommandCgroup.create = staticmethod(lambda: None)  # type: ignore[method-assign]
    try:
        asyncio.run(run())
    finally:
        command.CommandCgroup.create = real  # type: ignore[method-assign]
    deadline = time.monotonic() + 5
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive()


@needs_engine
@pytest.mark.parametrize("approved", [True, False])
def test_an_approved_escalation_runs_that_command_outside_the_sandbox(
    tmp_path: Path, approved: bool
) -> None:
    """``sandbox_permissions = "require_escalated"`` goes to the approval channel; a yes
    runs that one command in danger-full-access (it writes outside the workspace), a no
    runs nothing, and the next plain command is confined again."""
    from octos_tools.context import ApprovalRequest, ToolContext

    ws = tmp_path / "ws"
    ws.mkdir()
    outside_dir = Path(tempfile.mkdtemp(dir="/var/tmp"))
    outside = outside_dir / "escalated.txt"
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return approved

    tool = ExecCommandTool(Workspace(ws), ShellConfig(), sandbox=SandboxSettings(engine=USABLE[0]))
    ctx = ToolContext(approval=approve)
    args = tool.Args(
        cmd=f"echo x > {outside}",
        sandbox_permissions="require_escalated",
        justification="write the report outside the workspace",
    )
    if approved:
        result = asyncio.run(tool.run(args, ctx))
        assert result.success and result.structured_metadata["exit_code"] == 0
        assert outside.read_text() == "x\n"
        outside.unlink()
    else:
        with pytest.raises(ToolError) as err:
            asyncio.run(tool.run(args, ctx))
        assert err.value.kind.value == "approval_denied"
        assert not outside.exists()
    assert len(asked) == 1 and str(outside) in asked[0].action
    plain = asyncio.run(tool.run(tool.Args(cmd=f"echo y > {outside}"), ctx))
    assert plain.structured_metadata["exit_code"] != 0 and not outside.exists()
    outside_dir.rmdir()


@needs_engine
@pytest.mark.parametrize("engine", USABLE)
@pytest.mark.parametrize(
    "rel", [".config/gh/hosts.yml", ".cargo/credentials.toml", ".pgpass", ".config/hub"]
)
def test_cli_and_database_tokens_are_unreadable(tmp_path: Path, engine: str, rel: str) -> None:
    # Not under /tmp: bubblewrap mounts a private /tmp, which would hide the file anyway.
    home = Path(tempfile.mkdtemp(dir="/var/tmp"))
    secret = home / rel
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("TOKEN-XYZ\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    box = SandboxSettings(mode=SandboxMode.WORKSPACE_WRITE, engine=engine, home=str(home))
    try:
        done = run_sandboxed(["cat", str(secret)], box, ws)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert "TOKEN-XYZ" not in done.stdout
    assert done.returncode != 0 and "seccomp" not in done.stderr


def test_a_mounted_servers_virtual_environment_stays_visible(tmp_path: Path) -> None:
    """The program of a mounted server keeps its venv (``pyvenv.cfg``, ``lib/``) and the
    folder its link points to visible under the replaced ``/tmp``: a venv made under /tmp
    would otherwise start as a bare interpreter without its packages."""
    from octos_tools.sandbox._spawn import _environment_roots

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = venv / "bin" / "python"
    python.symlink_to(sys.executable)
    roots = _environment_roots(str(python))
    assert str(venv) in roots
    assert os.path.dirname(os.path.realpath(sys.executable)) in roots
    plain = tmp_path / "tool"
    plain.write_text("#!/bin/sh\n")
    assert _environment_roots(str(plain)) == [str(tmp_path)]
    assert _environment_roots("no-such-program-here") == []


@pytest.mark.skipif("bubblewrap" not in USABLE, reason="bubblewrap unusable")
def test_the_servers_own_venv_under_tmp_runs_in_a_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server started from a venv under /tmp (a clone there, CI's clean clone): `python`
    from that venv still runs inside a command, although the private temp folder replaces
    /tmp (before, exit 127: not found)."""
    from octos_tools.sandbox import _spawn

    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    ws = tmp_path / "ws"
    ws.mkdir()
    python = venv / "bin" / "python"
    monkeypatch.setattr(sys, "executable", str(python))
    _spawn._own_environment.cache_clear()
    try:
        tool = ExecCommandTool(
            Workspace(ws), ShellConfig(), sandbox=SandboxSettings(engine="bubblewrap")
        )
        cmd = f"{python} -c 'import sys; print(sys.prefix)'"
        result = asyncio.run(tool.run(tool.Args(cmd=cmd), None))
        assert result.structured_metadata["exit_code"] == 0, result.output
        assert str(venv) in result.output
        # what else lies under /tmp stays hidden
        other = tmp_path / "other.txt"
        other.write_text("x")
        hidden = asyncio.run(tool.run(tool.Args(cmd=f"cat {other}"), None))
        assert hidden.structured_metadata["exit_code"] != 0
    finally:
        monkeypatch.undo()
        _spawn._own_environment.cache_clear()


@needs_engine
@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
@pytest.mark.parametrize("engine", ["bubblewrap", "landlock"])
def test_curl_with_the_network_off_gets_the_network_line(tmp_path: Path, engine: str) -> None:
    # curl reports a refused socket() as "Couldn't connect to server" (exit 7): the model
    # must learn that the sandbox, not a stopped server, is the cause
    if engine not in USABLE:
        pytest.skip(f"{engine} unusable")
    tool = ExecCommandTool(
        Workspace(tmp_path), ShellConfig(), sandbox=SandboxSettings(engine=engine)
    )
    result = asyncio.run(tool.run(tool.Args(cmd="curl -sS -m 5 http://127.0.0.1:9/"), None))
    assert result.structured_metadata["exit_code"] == 7, result.output
    assert "network off" in result.structured_metadata["sandbox_note"]
