"""The git guard (octos_tools.sandbox._git_guard, ._git_config): what a sandboxed command
does to make the user's next git run a program is undone, on both engines, with real git,
real commands through exec_command and a real ``git status`` on the host afterwards."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from octos_tools.builtins.runtime import ExecCommandTool, SessionManager, WriteStdinTool
from octos_tools.config import ShellConfig
from octos_tools.sandbox import SandboxMode, SandboxSettings, engine_status
from octos_tools.sandbox._git_config import dangerous_entries, parse_config, safe_config_text
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace

USABLE = {s.name for s in engine_status() if s.usable}
ENGINES = pytest.mark.parametrize("engine", ["bubblewrap", "landlock"])
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _engine(name: str) -> str:
    if name not in USABLE:
        pytest.skip(f"{name} cannot run here")
    return name


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), **GIT_ENV}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    out = tmp_path / "out"  # where a planted program leaves its mark; commands cannot write
    out.mkdir()
    _git("init", "-q", cwd=ws)
    _git("commit", "-q", "--allow-empty", "-m", "init", cwd=ws)
    return ws, out


def _run(ws: Path, engine: str, cmd: str, **box: object) -> ToolResult:
    settings = SandboxSettings(engine=engine, **box)  # type: ignore[arg-type]
    tool = ExecCommandTool(Workspace(ws), ShellConfig(), sandbox=settings)
    env = " ".join(f"{k}={v}" for k, v in GIT_ENV.items())
    return asyncio.run(tool.run(tool.Args(cmd=f"export {env}; {cmd}"), None))


def _planted(out: Path, name: str) -> str:
    return shlex.quote(f"touch {out}/{name} #")


def _guard_lines(result: ToolResult) -> list[str]:
    lines = list((result.structured_metadata or {}).get("sandbox_guard", []))
    for line in lines:
        assert line in result.output and "\n" not in line
    return lines


def _undo(line: str) -> tuple[str, str]:
    match = re.search(r"mv (\S+) (\S+) to", line)
    assert match, line
    return match.group(1), match.group(2)


@ENGINES
def test_a_nested_repository_added_as_a_gitlink_runs_nothing(tmp_path: Path, engine: str) -> None:
    ws, out = _workspace(tmp_path)
    result = _run(
        ws,
        _engine(engine),
        "git init -q sub && git -C sub commit -q --allow-empty -m x && "
        f"git -C sub config core.fsmonitor {_planted(out, 'pwned')} && git add sub",
    )
    lines = _guard_lines(result)
    assert len(lines) == 1 and "sub/.git/config" in lines[0] and "core.fsmonitor" in lines[0]
    # the user's next git status, on the host, enters the gitlink: nothing runs
    assert _git("status", "--short", cwd=ws).returncode == 0
    assert _git("status", cwd=ws / "sub").returncode == 0
    assert not (out / "pwned").exists()
    # the repository keeps working with its safe entries; the original can be brought back
    assert "repositoryformatversion" in (ws / "sub/.git/config").read_text()
    kept, path = _undo(lines[0])
    assert "core.fsmonitor" not in (ws / "sub/.git/config").read_text()
    assert "fsmonitor" in Path(kept).read_text() and path == str(ws / "sub/.git/config")
    os.replace(kept, path)
    _git("status", cwd=ws / "sub")
    assert (out / "pwned").exists()  # the line's own mv gives the user back what was there


@ENGINES
@pytest.mark.parametrize("skipped", ["node_modules", ".venv"])
def test_a_gitlink_inside_a_skipped_folder_is_judged(
    tmp_path: Path, engine: str, skipped: str
) -> None:
    ws, out = _workspace(tmp_path)
    nm = f"{skipped}/nm"
    result = _run(
        ws,
        _engine(engine),
        f"git init -q {nm} && git -C {nm} config core.fsmonitor {_planted(out, 'pwned')} && "
        f"git -C {nm} commit --allow-empty -qm x && git add -f {nm}",
    )
    lines = _guard_lines(result)
    assert any(f"{nm}/.git/config" in line and "core.fsmonitor" in line for line in lines)
    assert "160000" in _git("ls-files", "-s", cwd=ws).stdout  # the gitlink is still there
    assert _git("status", cwd=ws).returncode == 0
    assert not (out / "pwned").exists()
    # a later command cannot change the gitlinked repository's config: bubblewrap mounts
    # it read-only now, under Landlock the change is judged
    again = _run(ws, engine, f"git -C {nm} config core.pager {_planted(out, 'p2')}")
    if engine == "bubblewrap":
        assert "Device or resource busy" in again.output
    else:
        assert any("core.pager" in line for line in _guard_lines(again)), again.output
    assert "pager" not in (ws / nm / ".git/config").read_text()
    _git("-c", "core.pager=cat", "status", cwd=ws)
    _git("log", "-1", cwd=ws / nm)
    assert not (out / "p2").exists()


@ENGINES
@pytest.mark.parametrize(
    "escape",
    [
        # a .git file pointing to a crafted git folder inside the workspace
        'git init -q --separate-git-dir="$PWD/crafted" gd && git -C gd config core.pager {p}',
        # a submodule's git folder under .git/modules and its gitlink
        'mkdir -p .git/modules && git init -q --separate-git-dir="$PWD/.git/modules/m" m && '
        "git -C m commit -q --allow-empty -m x && git -C m config core.fsmonitor {p} && "
        "git add m",
        # a worktree whose commondir names a crafted repository
        "git worktree add -q wt && git init -q --bare cm && git -C cm config core.bare false "
        '&& git -C cm config core.fsmonitor {p} && echo "$PWD/cm" > .git/worktrees/wt/commondir',
        # a bare repository anywhere in the workspace
        "git init -q --bare b && git -C b config core.fsmonitor {p}",
        # config syntax a line-based reader could miss
        "git init -q s && printf '[CoRe] fsMonitor = \"%s\"\\n' {p} >> s/.git/config",
        "git init -q s && printf '[include]\\n\\tpath = ../../evil\\n' >> s/.git/config",
    ],
)
def test_each_way_to_plant_a_program_is_neutralised(
    tmp_path: Path, engine: str, escape: str
) -> None:
    ws, out = _workspace(tmp_path)
    (ws / "evil").write_text(f"[core]\n\tfsmonitor = touch {out}/pwned #\n")
    result = _run(ws, _engine(engine), escape.format(p=_planted(out, "pwned")))
    assert result.structured_metadata["exit_code"] == 0, result.output
    assert _guard_lines(result), result.output
    for rel in (".", "gd", "m", "wt", "b", "s"):
        if (ws / rel).is_dir():
            _git("status", cwd=ws / rel)
            _git("log", "-1", cwd=ws / rel)
    assert not (out / "pwned").exists()


@ENGINES
def test_gitdir_and_commondir_pointing_outside_are_quarantined(tmp_path: Path, engine: str) -> None:
    ws, _ = _workspace(tmp_path)
    elsewhere = tmp_path / "elsewhere"  # not writable by the command: could be anything
    result = _run(
        ws,
        _engine(engine),
        f"mkdir d && echo 'gitdir: {elsewhere}' > d/.git && git worktree add -q wt && "
        f"echo {elsewhere} > .git/worktrees/wt/commondir",
    )
    lines = _guard_lines(result)
    assert any("d/.git" in line and "outside the writable roots" in line for line in lines)
    assert any("commondir" in line for line in lines)
    assert not (ws / "d/.git").exists() and not (ws / ".git/worktrees/wt/commondir").exists()


@ENGINES
def test_missing_config_worktree_and_new_hooks(tmp_path: Path, engine: str) -> None:
    ws, out = _workspace(tmp_path)
    _git("config", "core.repositoryformatversion", "1", cwd=ws)
    _git("config", "extensions.worktreeConfig", "true", cwd=ws)
    result = _run(
        ws,
        _engine(engine),
        f"printf '[core]\\n\\tfsmonitor = %s\\n' {_planted(out, 'pwned')} > .git/config.worktree;"
        "git init -q n && printf '#!/bin/sh\\ntouch x\\n' > n/.git/hooks/post-checkout && "
        "chmod +x n/.git/hooks/post-checkout",
    )
    lines = _guard_lines(result)
    assert any("config.worktree" in line and "core.fsmonitor" in line for line in lines)
    assert any("n/.git/hooks/post-checkout" in line and "git hook" in line for line in lines)
    assert not (ws / "n/.git/hooks/post-checkout").exists()
    assert (ws / "n/.git/hooks/pre-commit.sample").exists()  # samples never run: kept
    _git("status", cwd=ws)
    assert not (out / "pwned").exists()


@ENGINES
def test_ordinary_git_work_is_left_alone(tmp_path: Path, engine: str) -> None:
    ws, _ = _workspace(tmp_path)
    origin = tmp_path / "ws" / "origin"
    result = _run(
        ws,
        _engine(engine),
        "git init -q origin && git -C origin commit -q --allow-empty -m o && "
        "git clone -q origin clone && git -C clone config user.name me && "
        "git -C clone commit -q --allow-empty -m c && git worktree add -q wt && "
        "echo hi > f && git add f && git commit -q -m f && echo ok",
    )
    assert result.structured_metadata["exit_code"] == 0, result.output
    assert _guard_lines(result) == []
    assert "url = " in (ws / "clone/.git/config").read_text()
    assert "name = me" in (ws / "clone/.git/config").read_text()
    assert origin.is_dir() and _git("log", "--oneline", cwd=ws).stdout.count("\n") == 2


def test_landlock_puts_back_the_protected_files_of_existing_repositories(
    tmp_path: Path,
) -> None:
    ws, out = _workspace(tmp_path)
    config = ws / "octos-tools.toml"
    config.write_text("[sandbox]\n")
    before = (ws / ".git/config").read_bytes()
    (ws / ".git/hooks/pre-push").write_text("#!/bin/sh\necho mine\n")
    (ws / ".git/hooks/pre-push").chmod(0o755)
    result = _run(
        ws,
        _engine("landlock"),
        f"git config core.sshCommand {_planted(out, 'pwned')}; echo x >> octos-tools.toml; "
        "echo 'touch hacked' >> .git/hooks/pre-push; rm .git/hooks/pre-push.sample",
        read_only_paths=(str(config),),
    )
    lines = _guard_lines(result)
    assert len(lines) == 3, lines
    assert (ws / ".git/config").read_bytes() == before
    assert config.read_text() == "[sandbox]\n"
    hook = ws / ".git/hooks/pre-push"
    assert hook.read_text() == "#!/bin/sh\necho mine\n" and os.access(hook, os.X_OK)
    quarantined = [Path(_undo(line)[0]) for line in lines]
    assert any("sshCommand" in p.read_text() for p in quarantined if p.name == "config")
    # a harmless change to an existing config is kept
    kept = _run(ws, "landlock", "git config user.name someone")
    assert _guard_lines(kept) == [] and "someone" in (ws / ".git/config").read_text()


@ENGINES
def test_what_the_user_does_between_commands_is_not_judged(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from octos_tools.sandbox import _git_guard

    monkeypatch.setattr(_git_guard, "WALK_REUSE_SECS", 0.0)  # as after 5 s of quiet
    ws, _ = _workspace(tmp_path)
    assert _guard_lines(_run(ws, _engine(engine), "true")) == []
    _git("init", "-q", "mine", cwd=ws)  # the user, outside the sandbox
    _git("config", "core.pager", "less -R", cwd=ws / "mine")
    assert _guard_lines(_run(ws, engine, "true")) == []
    assert "pager" in (ws / "mine/.git/config").read_text()


@ENGINES
def test_a_session_is_checked_at_each_poll(tmp_path: Path, engine: str) -> None:
    ws, out = _workspace(tmp_path)

    async def run() -> str:
        sessions = SessionManager(4)
        box = SandboxSettings(mode=SandboxMode.WORKSPACE_WRITE, engine=_engine(engine))
        exec_tool = ExecCommandTool(Workspace(ws), ShellConfig(), sessions, box)
        stdin_tool = WriteStdinTool(sessions, ShellConfig())
        started = await exec_tool.run(exec_tool.Args(cmd="sh", yield_time_ms=300), None)
        sid = started.structured_metadata["session_id"]
        typed = f"git init -q late && git -C late config core.fsmonitor {_planted(out, 'p')}\n"
        polled = await stdin_tool.run(
            stdin_tool.Args(session_id=sid, chars=typed, yield_time_ms=2000), None
        )
        await sessions.aclose()
        return polled.output

    text = asyncio.run(run())
    assert "late/.git/config" in text and "core.fsmonitor" in text
    assert "fsmonitor" not in (ws / "late/.git/config").read_text()


@ENGINES
def test_a_background_process_of_a_session_is_caught_between_polls(
    tmp_path: Path, engine: str
) -> None:
    """A session's process plants a hook after its call returned and nobody polls: the
    background check (octos_tools.sandbox._guard_ticker) undoes it within one tick plus
    one check, the user's ``git commit`` meanwhile runs nothing, the next poll says so."""
    from octos_tools.sandbox._guard_ticker import TICK_SECS, ticker

    ws, out = _workspace(tmp_path)
    hook = ws / "bg/.git/hooks/pre-commit"
    plant = (
        "sleep 0.5; git init -q bg && "
        f"printf '#!/bin/sh\\n%s\\n' {_planted(out, 'pwned')} > bg/.git/hooks/pre-commit && "
        "chmod +x bg/.git/hooks/pre-commit && touch planted; sleep 30"
    )

    async def run() -> tuple[float, str]:
        sessions = SessionManager(4)
        box = SandboxSettings(mode=SandboxMode.WORKSPACE_WRITE, engine=_engine(engine))
        exec_tool = ExecCommandTool(Workspace(ws), ShellConfig(), sessions, box)
        stdin_tool = WriteStdinTool(sessions, ShellConfig())
        ticking = len(ticker())
        started = await exec_tool.run(exec_tool.Args(cmd=plant, yield_time_ms=100), None)
        sid = started.structured_metadata["session_id"]
        assert len(ticker()) == ticking + 1
        async with asyncio.timeout(30):
            while not (ws / "planted").exists():
                await asyncio.sleep(0.01)
            seen = time.monotonic()
            while hook.exists():
                await asyncio.sleep(0.01)
        exposed = time.monotonic() - seen
        _git("commit", "-q", "--allow-empty", "-m", "user", cwd=ws / "bg")
        polled = await stdin_tool.run(
            stdin_tool.Args(session_id=sid, chars="", yield_time_ms=100), None
        )
        await sessions.aclose()
        assert len(ticker()) == ticking
        return exposed, polled.output

    exposed, text = asyncio.run(run())
    assert exposed < TICK_SECS + 2.0, exposed  # one tick and one check, with slack for load
    assert not (out / "pwned").exists()
    assert f"{hook}: a git hook" in text, text


@ENGINES
def test_the_users_edit_during_a_session_is_not_blamed_on_the_command(
    tmp_path: Path, engine: str
) -> None:
    ws, _ = _workspace(tmp_path)

    async def run() -> str:
        sessions = SessionManager(4)
        box = SandboxSettings(mode=SandboxMode.WORKSPACE_WRITE, engine=_engine(engine))
        exec_tool = ExecCommandTool(Workspace(ws), ShellConfig(), sessions, box)
        stdin_tool = WriteStdinTool(sessions, ShellConfig())
        started = await exec_tool.run(exec_tool.Args(cmd="sleep 5", yield_time_ms=200), None)
        sid = started.structured_metadata["session_id"]
        _git("config", "core.pager", "less -R", cwd=ws)  # the user, on the host
        polled = await stdin_tool.run(
            stdin_tool.Args(session_id=sid, chars="", yield_time_ms=300), None
        )
        await sessions.aclose()
        return polled.output

    text = asyncio.run(run())
    if engine == "bubblewrap":  # .git/config is mounted read-only: not the command's
        assert "Sandbox git guard" not in text, text
        assert "less -R" in (ws / ".git/config").read_text()
    else:  # the command could have written it: judged, and the line says what is known
        assert "changed while the command ran" in text and "core.pager" in text, text
        assert "the command's" not in text


def test_a_read_only_mount_moved_away_does_not_cover_what_replaces_it(tmp_path: Path) -> None:
    ws, out = _workspace(tmp_path)
    _git("init", "-q", "d/sub", cwd=ws)
    result = _run(
        ws,
        _engine("bubblewrap"),
        "mv d d2 && mkdir d && git init -q d/sub && "
        f"git -C d/sub config core.fsmonitor {_planted(out, 'p')}; ls d2",
    )
    # the folders above a read-only mount are pinned as mount points themselves: the
    # folder holding the mounts cannot be moved away any more (before, it moved, and the
    # guard took the planted config out afterwards)
    assert "Device or resource busy" in result.output, result.output
    assert (ws / "d" / "sub" / ".git").is_dir() and not (ws / "d2").exists()
    _git("status", cwd=ws / "d/sub")
    assert not (out / "p").exists()


@ENGINES
def test_a_repository_prepared_earlier_and_moved_in_is_judged(tmp_path: Path, engine: str) -> None:
    """Its files keep the ctime of the earlier command: the guard does not go by ctime."""
    ws, out = _workspace(tmp_path)
    where = '"$TMPDIR/prep"'
    prep = f"git init -q {where} && git -C {where} config core.fsmonitor {_planted(out, 'p')}"
    assert _guard_lines(_run(ws, _engine(engine), prep)) == []  # in the private temp folder
    time.sleep(0.1)
    lines = _guard_lines(_run(ws, engine, 'mv "$TMPDIR/prep" moved'))
    assert any("moved/.git/config" in line for line in lines)
    _git("status", cwd=ws / "moved")
    assert not (out / "p").exists()


def test_many_files_made_by_the_command_do_not_hide_a_repository(tmp_path: Path) -> None:
    ws, out = _workspace(tmp_path)
    engine = "bubblewrap" if "bubblewrap" in USABLE else _engine("landlock")
    filled = _run(ws, engine, "mkdir -p a/many && (cd a/many && seq 1 21000 | xargs touch)")
    assert filled.structured_metadata["exit_code"] == 0
    result = _run(
        ws,
        engine,
        f"mkdir -p z/deep && git init -q z/deep/r && "
        f"git -C z/deep/r config core.fsmonitor {_planted(out, 'p')}",
    )
    assert any("z/deep/r/.git/config" in line for line in _guard_lines(result)), result.output


def test_read_only_and_danger_full_access_have_no_guard(tmp_path: Path) -> None:
    ws, out = _workspace(tmp_path)
    cmd = f"git init -q s && git -C s config core.fsmonitor {_planted(out, 'p')}"
    result = _run(ws, "auto", cmd, mode=SandboxMode.DANGER_FULL_ACCESS)
    assert _guard_lines(result) == []  # unconfined on purpose: the user's choice
    assert "fsmonitor" in (ws / "s/.git/config").read_text()


# ---------------------------------------------------------------- the allow-list


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("[core]\n\tbare = false\n\tfsmonitor = x\n", ["core.fsmonitor"]),
        ("[CORE] hooksPath = .h\n", ["core.hookspath"]),
        (
            '[remote "o"]\n\turl = ext::sh -c x\n\tuploadpack = x\n',
            ["remote.o.url", "remote.o.uploadpack"],
        ),
        ('[submodule "s"]\n\tupdate = !rm -rf /\n', ["submodule.s.update"]),
        ('[submodule "s"]\n\tupdate = rebase\n', []),
        ("[alias]\n\tst = !sh\n", ["alias.st"]),
        ('[includeIf "gitdir:/"]\n\tpath = /x\n', ["includeif.gitdir:/.path"]),
        ("[core]\n\tpager = a \\\n b\n", ["core.pager"]),
        ('[filter "lfs"]\n\tclean = x\n', ["filter.lfs.clean"]),
        ("[diff.x]\n\ttextconv = x\n", ["diff.x.textconv"]),
        ("garbage line\n", ["?.?"]),
        ('[user]\n\tname = a\n[branch "m"]\n\tremote = o\n\tmerge = refs/heads/m\n', []),
    ],
)
def test_only_known_keys_are_safe(text: str, keys: list[str]) -> None:
    assert [e.key for e in dangerous_entries(text)] == keys


def test_only_added_entries_are_judged_and_safe_text_keeps_the_rest() -> None:
    old = '[filter "lfs"]\n\tprocess = git-lfs filter-process\n'
    assert dangerous_entries(old + "[user]\n\tname = x\n", old) == []
    assert [e.key for e in dangerous_entries(old + "[core]\n\tpager = p\n", old)] == ["core.pager"]
    safe = safe_config_text('[core]\n\tbare = false\n\tfsmonitor = x\n[remote "o"]\n\turl = u\n')
    assert [e.key for e in parse_config(safe)] == ["core.bare", "remote.o.url"]
    assert dangerous_entries(safe) == []


@pytest.mark.parametrize(
    "text",
    [
        "[core]\n\tcompression = 1 ; \\\n\tfsmonitor = touch pwn\n",  # a comment's "\" ends nothing
        "[core]\n# note \\\n\tfsmonitor = touch pwn\n",
        "[core] ; \\\n\thookspath = .h\n",
        "[core]\n# \x0c[user]\n\tfsmonitor = touch pwn\n",  # git splits lines at "\n" only
        "[core]\n# \u2028[user]\n\tfsmonitor = touch pwn\n",
        '[core]\n\tabbrev = "a;b" \\\n\tfsmonitor = x\n',  # a quoted ";" is no comment: continued
        "[core]\r\n\tbare = false\r\n\tfsmonitor = touch pwn\r\n",
        "[core]\n\tabbrev = 7 \\\\\\\n\tfsmonitor = x\n",  # "\\" then a continuation
    ],
)
def test_the_parser_reads_lines_as_git_does(tmp_path: Path, text: str) -> None:
    # every key real git reads from the file that is not on the allow-list is judged
    config = tmp_path / "config"
    config.write_bytes(text.encode())
    listed = subprocess.run(
        ["git", "config", "--file", str(config), "--list", "--name-only"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    judged = {e.key.lower() for e in dangerous_entries(text)}
    safe = {e.key.lower() for e in parse_config(text)} - judged
    unsafe_for_git = {k.lower() for k in listed} - safe
    assert unsafe_for_git <= judged


def test_a_file_put_back_by_one_check_is_not_judged_again_by_another(tmp_path: Path) -> None:
    """Two views of the same roots (two live sessions, a session and a mounted server): the
    first check puts the user's hook back; the second finds the same bytes and mode as
    before and leaves it (it used to quarantine the restored original too)."""
    from octos_tools.sandbox._git_guard import GitGuard

    ws, _ = _workspace(tmp_path)
    hook = ws / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho mine\n")
    hook.chmod(0o755)
    guard = GitGuard([os.path.realpath(ws)], quarantine=str(tmp_path / "q"))
    first, second = guard.watch(), guard.watch()
    hook.write_text("#!/bin/sh\ntouch /tmp/pwned\n")  # what a sandboxed process did
    lines = first.check()
    assert len(lines) == 1 and "the version from before the command is back" in lines[0]
    assert hook.read_text() == "#!/bin/sh\necho mine\n"
    assert second.check() == []
    assert hook.read_text() == "#!/bin/sh\necho mine\n"
    assert len(list((tmp_path / "q").rglob("pre-commit"))) == 1
    hook.chmod(0o644)  # the same bytes, another mode: judged
    assert len(second.check()) == 1
