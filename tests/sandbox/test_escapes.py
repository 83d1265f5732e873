"""Sandbox escapes found by a break test, as real processes on both
engines: a command plants a program the server runs next (a PATH hit, a hook script, the
server's own code) or reaches another terminal; each must stay confined."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from octos_tools import ToolCall, execute_batch
from octos_tools.config import Config
from octos_tools.profile import build_registry
from octos_tools.sandbox import engine_status

USABLE = [s.name for s in engine_status() if s.usable]
ENGINES = [
    pytest.param(e, marks=pytest.mark.skipif(e not in USABLE, reason=f"{e} unusable"))
    for e in ("bubblewrap", "landlock")
]


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the workspace and outside /tmp (which the private temp folder
    replaces under bubblewrap): where a planted program would leave its marker."""
    path = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="octos-escape-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _planter(marker: Path, real: str | None) -> str:
    """A shell script that leaves ``marker`` and then runs ``real`` (a faithful fake)."""
    tail = f'exec {real} "$@"' if real else "exit 0"
    return f"#!/bin/sh\ntouch {marker}\n{tail}\n"


def _run(ws: Path, config: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def main() -> list[Any]:
        reg = build_registry(Config.from_mapping(config), ws)
        try:
            out = []
            for name, args in calls:
                res = await execute_batch(reg, [ToolCall("c", name, json.dumps(args))])
                out.append(res[0])
            return out
        finally:
            await reg.aclose()

    return anyio.run(main)


def _write_cmd(path: str, text: str) -> str:
    """A command that writes ``text`` to ``path`` (relative) and makes it executable."""
    quoted = text.replace("'", "'\\''")
    return f"printf '%s' '{quoted}' > {path} && chmod +x {path} && echo planted"


# ---------------------------------------------------------------- #23 programs on PATH


@pytest.mark.parametrize("engine", ENGINES)
def test_a_planted_bwrap_or_git_on_path_is_never_run(
    tmp_path: Path, outside: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An activated venv inside the workspace is on the server's PATH; a command writes
    ``.venv/bin/bwrap`` and ``.venv/bin/git``. Before: the next command started through the
    planted bwrap (unconfined), the next file edit's checkpoint ran the planted git. Now the
    server takes its programs only from trusted PATH entries."""
    ws = tmp_path / "ws"
    (ws / ".venv" / "bin").mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{ws / '.venv' / 'bin'}:{os.environ.get('PATH', '/usr/bin')}")
    marker = outside / "hijacked"
    plant = " && ".join(
        _write_cmd(f".venv/bin/{name}", _planter(marker, shutil.which(name, path="/usr/bin")))
        for name in ("bwrap", "git")
    )
    cfg = {"sandbox": {"engine": engine}}
    first, second, edit, git = _run(
        ws,
        cfg,
        [
            ("exec_command", {"cmd": plant}),
            ("exec_command", {"cmd": f"echo hi; touch {outside}/direct"}),
            ("write_file", {"path": "a.txt", "content": "x\n"}),
            ("git", {"command": "status"}),
        ],
    )
    assert "planted" in first.output  # the sandbox lets the command write its workspace
    assert (ws / ".venv" / "bin" / "bwrap").exists()
    assert "hi" in second.output
    assert not (outside / "direct").exists()  # still confined
    assert edit.success
    assert not marker.exists(), "a planted program ran outside the sandbox"
    assert git is not None


def test_sandbox_check_names_an_untrusted_bwrap(tmp_path: Path) -> None:
    from octos_tools import trusted_programs

    ws = tmp_path / "ws"
    (ws / "bin").mkdir(parents=True)
    fake = ws / "bin" / "bwrap"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    trusted_programs.distrust_folders([ws])
    search = f"{ws / 'bin'}:/usr/bin:/bin"
    assert trusted_programs.which("bwrap", search) != str(fake)
    hits = trusted_programs.untrusted_hits("bwrap", search)
    assert [h for h, _ in hits] == [str(fake)]
    assert "sandboxed commands may write" in hits[0][1]
    import subprocess
    import sys

    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src, "PATH": search}
    done = subprocess.run(
        [sys.executable, "-m", "octos_tools", "sandbox", "check", "-w", str(ws), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    report = json.loads(done.stdout)
    assert [u["program"] for u in report["untrusted_programs"]] == [str(fake)]
    for entry in report["engines"]:
        assert entry["detail"] != str(fake)


def test_group_writable_program_folder_is_not_trusted(tmp_path: Path) -> None:
    from octos_tools import trusted_programs

    folder = tmp_path / "shared-bin"
    folder.mkdir()
    prog = folder / "git"
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o755)
    assert trusted_programs.why_untrusted(prog) is None  # tmp_path: ours, under sticky /tmp
    folder.chmod(folder.stat().st_mode | stat.S_IWGRP | stat.S_IWOTH)
    assert "writable by its group or by others" in (trusted_programs.why_untrusted(prog) or "")
    folder.chmod(0o755)
    prog.chmod(0o775)
    assert trusted_programs.why_untrusted(prog) is not None


def test_the_servers_own_environment_stays_trusted_inside_a_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ripgrep wheel's ``rg`` lives in the server's own venv; a project that installs
    octos-tools in its ``.venv`` serves itself: that venv is read-only for commands
    (``sandbox/_own_code.py``), so its programs stay trusted; a planted one next door
    does not."""
    import sys

    from octos_tools import trusted_programs

    env = tmp_path / "project" / ".venv"
    (env / "bin").mkdir(parents=True)
    own = env / "bin" / "rg"
    own.write_text("#!/bin/sh\n")
    own.chmod(0o755)
    planted = tmp_path / "project" / "tools" / "rg"
    planted.parent.mkdir()
    planted.write_text("#!/bin/sh\n")
    planted.chmod(0o755)
    monkeypatch.setattr(sys, "prefix", str(env))
    monkeypatch.setattr(sys, "exec_prefix", str(env))
    monkeypatch.setattr(trusted_programs, "_folders", {str(tmp_path / "project"): None})
    monkeypatch.setattr(trusted_programs, "_cache", {})
    assert trusted_programs.why_untrusted(own) is None
    assert "which sandboxed commands may write" in (trusted_programs.why_untrusted(planted) or "")


# ---------------------------------------------------------------- #21 hook programs


@pytest.mark.parametrize("engine", ENGINES)
def test_a_hook_script_in_the_workspace_cannot_be_rewritten(
    tmp_path: Path, outside: Path, engine: str, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/hooks.md's old example ran ``./check-write.sh`` from the workspace. Before: a
    command rewrote it and the next write_file ran the new script unconfined. Now the
    script is read-only for commands (renaming its folder away fails too), the file tools
    refuse it, and the start warns."""
    ws = tmp_path / "ws"
    (ws / "hooks").mkdir(parents=True)
    script = ws / "hooks" / "check-write.sh"
    original = "#!/bin/sh\ncat >/dev/null\nexit 0\n"
    script.write_text(original)
    script.chmod(0o755)
    marker = outside / "hook-escape"
    hook = {"type": "command", "command": "./hooks/check-write.sh"}
    cfg = {
        "sandbox": {"engine": engine},
        "hooks": {"PreToolUse": [{"matcher": "write_file", "hooks": [hook]}]},
    }
    evil = f"#!/bin/sh\ntouch {marker}\n"
    cmd = (
        f"{_write_cmd('hooks/check-write.sh', evil)}; "
        f"mv hooks hooks2 && mkdir hooks && {_write_cmd('hooks/check-write.sh', evil)}; "
        "echo done"
    )
    with caplog.at_level("WARNING"):
        rewrite, edit, direct = _run(
            ws,
            cfg,
            [
                ("exec_command", {"cmd": cmd}),
                ("write_file", {"path": "a.txt", "content": "x\n"}),
                ("write_file", {"path": "hooks/check-write.sh", "content": evil}),
            ],
        )
    assert "done" in rewrite.output
    assert edit.success, edit.output
    assert not marker.exists(), "the rewritten hook ran outside the sandbox"
    assert script.read_text() == original
    assert not direct.success and "permission_denied" in direct.output
    assert any("hook program" in r.getMessage() for r in caplog.records)


def test_hook_programs_names_scripts_and_path_hits(tmp_path: Path) -> None:
    from octos_tools.hook_programs import hook_programs

    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "scripts" / "lint.py").write_text("print()\n")
    (ws / "run.sh").write_text("#!/bin/sh\n")
    found = hook_programs(
        [
            "python3 scripts/lint.py --fix",
            "sh run.sh",
            '"$CLAUDE_PROJECT_DIR"/run.sh',
            "echo 'unterminated",
        ],
        ws,
    )
    assert str(ws / "scripts" / "lint.py") in found
    assert str(ws / "run.sh") in found
    assert shutil.which("python3") in found
    assert not any(p.endswith("--fix") for p in found)


# ---------------------------------------------------------------- #22 the server's own code


@pytest.mark.parametrize("engine", ENGINES)
def test_the_servers_own_code_in_the_workspace_stays_its_own(
    tmp_path: Path, outside: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder the server imports from (here a ``src`` put on ``sys.path``, as the
    editable install of the README's quick start does) inside the workspace. Before: a
    command appended code to a module imported later. Now bubblewrap mounts it read-only
    (and pins it: ``mv src`` fails), Landlock refuses commands (``sandbox_unavailable``),
    and the file tools refuse it."""
    ws = tmp_path / "ws"
    src = ws / "src"
    src.mkdir(parents=True)
    module = src / "octos_escape_probe.py"
    module.write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(src))
    cmd = (
        f'echo \'open("{outside}/ran", "w")\' >> src/octos_escape_probe.py; '
        "mv src src2; echo ok > other.txt; echo done"
    )
    ran, edit = _run(
        ws,
        {"sandbox": {"engine": engine}},
        [
            ("exec_command", {"cmd": cmd}),
            ("write_file", {"path": "src/octos_escape_probe.py", "content": "VALUE = 2\n"}),
        ],
    )
    assert module.read_text() == "VALUE = 1\n"
    assert src.is_dir()
    assert not edit.success and "the server's own code" in edit.output
    if engine == "bubblewrap":
        assert "done" in ran.output and "Read-only file system" in ran.output
        assert (ws / "other.txt").read_text() == "ok\n"  # the rest of the workspace is writable
    else:
        assert not ran.success
        assert ran.structured_metadata["error"]["kind"] == "sandbox_unavailable"
        assert "Landlock cannot keep" in ran.output
        assert not (ws / "other.txt").exists()


def test_serve_warns_when_the_workspace_holds_its_own_package(tmp_path: Path) -> None:
    import subprocess
    import sys

    ws = tmp_path / "clone"
    (ws / "src").mkdir(parents=True)
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": f"{src}:{ws / 'src'}"}
    done = subprocess.run(
        [sys.executable, "-m", "octos_tools", "serve", "-w", str(ws)],
        input="",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    if not USABLE:
        pytest.skip("no engine: the start line says commands will not run")
    assert "contains the server's own code" in done.stderr, done.stderr


# ---------------------------------------------------------------- #24 other terminals


@pytest.mark.parametrize("engine", ENGINES)
def test_a_command_cannot_open_another_terminal_of_the_user(tmp_path: Path, engine: str) -> None:
    """Another terminal of the same user (a pty this test holds). Before, under Landlock:
    a command wrote into it (text or escape sequences on the user's screen) and opened it
    for reading (keystrokes). Now only ``/dev/tty`` and the command's own pty slave are
    granted; a ``tty`` session still writes and reads its own terminal."""
    import select

    ws = tmp_path / "ws"
    ws.mkdir()
    master, slave = os.openpty()
    try:
        victim = os.ttyname(slave)
        probe = (
            f"echo INJECTED > {victim} && echo wrote; "
            f"(exec 3< {victim} && echo opened-for-read); "
            'own=$(tty); echo "own=$own"; echo mine > "$own" && echo own-ok; '
            "echo via-dev-tty > /dev/tty && echo dev-tty-ok"
        )
        cfg = {"sandbox": {"engine": engine}}
        plain, session = _run(
            ws,
            cfg,
            [
                ("exec_command", {"cmd": probe}),
                ("exec_command", {"cmd": probe, "tty": True, "yield_time_ms": 10_000}),
            ],
        )
        for res in (plain, session):
            assert "wrote" not in res.output and "opened-for-read" not in res.output, res.output
        assert "own-ok" in session.output and "dev-tty-ok" in session.output, session.output
        assert select.select([master], [], [], 0.2)[0] == [], "text reached the other terminal"
    finally:
        os.close(master)
        os.close(slave)


def test_only_code_folders_strictly_inside_a_root_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m`` started above the workspace puts that folder on ``sys.path``: it does
    not make the workspace read-only (an MCP client that starts the server there)."""
    from octos_tools.sandbox._own_code import own_code_inside

    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(ws))
    assert own_code_inside([str(ws)]) == []
    monkeypatch.syspath_prepend(str(ws / "src"))
    assert own_code_inside([str(ws)]) == [str(ws / "src")]
