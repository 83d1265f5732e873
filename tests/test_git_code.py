"""Where git runs code from (octos_tools._git_code), as git itself reads it, and the two
rules built on it: the file tools refuse those paths, and the command sandbox keeps them
read-only (bubblewrap) or puts them back (the git guard, Landlock). Real git, real files,
real sandboxed commands, a real ``git status`` / ``git commit`` on the host afterwards."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from octos_tools import _git_code
from octos_tools.builtins.runtime import ExecCommandTool
from octos_tools.config import ShellConfig, load_config
from octos_tools.errors import ErrorKind, PathError
from octos_tools.profile import build_registry
from octos_tools.sandbox import SandboxSettings, engine_status
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


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), **GIT_ENV}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=True
    )


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    _git("init", "-q", cwd=ws)
    _git("commit", "-q", "--allow-empty", "-m", "init", cwd=ws)
    return ws, out


# ---------------------------------------------------------------- what git reads


def test_hooks_path_as_git_reads_it_with_inline_comment_and_key_on_section_line(
    tmp_path: Path,
) -> None:
    ws, _ = _repo(tmp_path)
    config = ws / ".git" / "config"
    config.write_text(config.read_text() + "[core] hooksPath = .husky ; shared hooks\n")
    assert _git("config", "core.hooksPath", cwd=ws).stdout.strip() == ".husky"
    paths = _git_code.code_paths(str(ws / ".git"), str(ws))
    assert paths.hooks[0] == str(ws / ".husky")
    assert str(ws / ".git" / "hooks") in paths.hooks


def test_included_files_are_config_files_and_their_hooks_path_counts(tmp_path: Path) -> None:
    ws, _ = _repo(tmp_path)
    _git("config", "include.path", "../.gitconfig-project", cwd=ws)
    _git("config", "includeIf.onbranch:never.path", "../.gitconfig-never", cwd=ws)
    (ws / ".gitconfig-project").write_text("[core]\n\thooksPath = hooks-shared\n")
    paths = _git_code.code_paths(str(ws / ".git"), str(ws))
    assert str(ws / ".gitconfig-project") in paths.configs
    assert str(ws / ".gitconfig-never") in paths.configs  # missing, any condition
    assert paths.hooks[0] == str(ws / "hooks-shared")


def test_the_answer_follows_a_change_of_the_config(tmp_path: Path) -> None:
    ws, _ = _repo(tmp_path)
    assert len(_git_code.code_paths(str(ws / ".git"), str(ws)).hooks) == 1
    _git("config", "core.hooksPath", ".husky", cwd=ws)
    assert _git_code.code_paths(str(ws / ".git"), str(ws)).hooks[0] == str(ws / ".husky")


# ---------------------------------------------------------------- the file tools


@pytest.mark.parametrize(
    "target",
    [".husky/pre-commit", ".husky/new-hook", ".gitconfig-project", ".gitconfig-never"],
)
def test_file_tools_refuse_hooks_folder_and_included_configs(tmp_path: Path, target: str) -> None:
    ws, _ = _repo(tmp_path)
    _git("config", "core.hooksPath", ".husky", cwd=ws)
    _git("config", "include.path", "../.gitconfig-project", cwd=ws)
    _git("config", "includeIf.gitdir:/nowhere/.path", "../.gitconfig-never", cwd=ws)
    (ws / ".husky").mkdir()
    hook = ws / ".husky" / "pre-commit"
    hook.write_text("#!/bin/sh\necho lint\n")
    (ws / ".gitconfig-project").write_text("[alias]\n\tst = status\n")
    before = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and ".git/" not in str(p)}
    with pytest.raises(PathError) as err:
        Workspace(ws).write_bytes(target, b"#!/bin/sh\ntouch /tmp/x\n")
    assert err.value.kind is ErrorKind.PERMISSION_DENIED
    assert target in str(err.value)
    after = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and ".git/" not in str(p)}
    assert after == before


def test_file_tools_refuse_a_nested_repositorys_hooks_path(tmp_path: Path) -> None:
    ws, _ = _repo(tmp_path)
    sub = ws / "vendor" / "lib"
    sub.mkdir(parents=True)
    _git("init", "-q", cwd=sub)
    _git("config", "core.hooksPath", "githooks", cwd=sub)
    with pytest.raises(PathError):
        Workspace(ws).write_bytes("vendor/lib/githooks/pre-commit", b"#!/bin/sh\n")
    Workspace(ws).write_bytes("vendor/lib/githooks.txt", b"fine\n")  # beside it: allowed
    assert (sub / "githooks.txt").read_text() == "fine\n"


def test_file_tools_still_write_ordinary_files_of_a_repository(tmp_path: Path) -> None:
    ws, _ = _repo(tmp_path)
    _git("config", "core.hooksPath", ".husky", cwd=ws)
    Workspace(ws).write_bytes("src/app.py", b"print(1)\n")
    Workspace(ws).write_bytes(".huskyrc", b"x\n")
    assert (ws / "src" / "app.py").read_text() == "print(1)\n"


def test_registry_protects_its_config_file_and_audit_log(tmp_path: Path) -> None:
    ws, _ = _repo(tmp_path)
    cfg = ws / "octos.toml"
    cfg.write_text('[sandbox]\nmode = "read-only"\n[audit]\npath = "audit.jsonl"\n')
    registry = build_registry(load_config(cfg), ws)
    for name in ("octos.toml", "audit.jsonl"):
        with pytest.raises(PathError) as err:
            registry.workspace.write_bytes(name, b"x\n")  # type: ignore[union-attr]
        assert err.value.kind is ErrorKind.PERMISSION_DENIED
    assert 'mode = "read-only"' in cfg.read_text()
    registry.workspace.write_bytes("notes.md", b"ok\n")  # type: ignore[union-attr]


# ---------------------------------------------------------------- commands


def _run(ws: Path, engine: str, cmd: str) -> str:
    if engine not in USABLE:
        pytest.skip(f"{engine} cannot run here")
    tool = ExecCommandTool(Workspace(ws), ShellConfig(), sandbox=SandboxSettings(engine=engine))
    result = asyncio.run(tool.run(tool.Args(cmd=cmd), None))
    return result.output


@ENGINES
def test_a_command_cannot_plant_through_an_included_config(tmp_path: Path, engine: str) -> None:
    ws, out = _repo(tmp_path)
    _git("config", "include.path", "../.gitconfig-project", cwd=ws)
    shared = ws / ".gitconfig-project"
    shared.write_text("[alias]\n\tst = status\n")
    mark = out / "pwn-include"
    line = f'[core]\n\tfsmonitor = "touch {mark}; false"\n'
    _run(ws, engine, f"printf {shlex.quote(line)} >> .gitconfig-project")
    assert "fsmonitor" not in shared.read_text()
    subprocess.run(["git", "status", "--short"], cwd=ws, capture_output=True, check=False)
    assert not mark.exists()


@ENGINES
def test_a_command_cannot_create_a_missing_included_config(tmp_path: Path, engine: str) -> None:
    ws, out = _repo(tmp_path)
    _git("config", "include.path", "../.gitconfig-local", cwd=ws)
    mark = out / "pwn-new-include"
    line = f'[core]\n\tfsmonitor = "touch {mark}; false"\n'
    output = _run(ws, engine, f"printf {shlex.quote(line)} > .gitconfig-local")
    local = ws / ".gitconfig-local"
    assert not local.exists() or "fsmonitor" not in local.read_text(), output
    subprocess.run(["git", "status", "--short"], cwd=ws, capture_output=True, check=False)
    assert not mark.exists()


@ENGINES
@pytest.mark.parametrize(
    "spelling", ["[core]\n\thooksPath = .husky ; shared\n", "[core] hooksPath = .husky\n"]
)
def test_a_command_cannot_plant_a_hook_where_git_reads_hooks_path(
    tmp_path: Path, engine: str, spelling: str
) -> None:
    ws, out = _repo(tmp_path)
    config = ws / ".git" / "config"
    config.write_text(config.read_text() + spelling)
    (ws / ".husky").mkdir()
    mark = out / "pwn-husky"
    hook = f"#!/bin/sh\ntouch {mark}\n"
    _run(ws, engine, f"printf {shlex.quote(hook)} > .husky/pre-commit; chmod +x .husky/pre-commit")
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "x"],
        cwd=ws,
        env={"PATH": os.environ["PATH"], "HOME": str(ws), **GIT_ENV},
        capture_output=True,
        check=False,
    )
    assert not mark.exists()


@ENGINES
def test_a_new_commondir_that_redirects_the_repository_is_taken_out(
    tmp_path: Path, engine: str
) -> None:
    ws, _ = _repo(tmp_path)
    cmd = (
        "mkdir -p .cache-x/evil && cp -r .git/objects .git/refs .git/HEAD .cache-x/evil/ && "
        "printf '[core]\\n\\trepositoryformatversion = 0\\n' > .cache-x/evil/config && "
        "echo ../.cache-x/evil > .git/commondir"
    )
    output = _run(ws, engine, cmd)
    assert not (ws / ".git" / "commondir").exists(), output
    assert "commondir" in output
    subprocess.run(["rm", "-rf", str(ws / ".cache-x")], check=True)
    _git("status", "--short", cwd=ws)  # the user's repository still works (check=True)


@ENGINES
def test_git_worktree_add_in_a_command_keeps_its_commondir(tmp_path: Path, engine: str) -> None:
    ws, _ = _repo(tmp_path)
    env = " ".join(f"{k}={v}" for k, v in GIT_ENV.items())
    output = _run(ws, engine, f"export {env}; git worktree add -q wt-b && git -C wt-b status -s")
    assert (ws / ".git" / "worktrees" / "wt-b" / "commondir").exists(), output
    assert "commondir" not in output, output
