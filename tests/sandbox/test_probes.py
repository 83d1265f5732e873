"""Every probe class of issue 20 in every confined mode, on both engines (forced with
``engine=``), as real commands through the command runtime (octos_tools.sandbox._probe);
also with the server run as an unprivileged user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from octos_tools.sandbox import SandboxMode, engine_status
from octos_tools.sandbox._probe import ALLOWED, FORBIDDEN, NOT_ENFORCED, run_check

USABLE = {s.name for s in engine_status() if s.usable}
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _engine(name: str) -> str:
    if name not in USABLE:
        pytest.skip(f"{name} cannot run on this machine")
    return name


@pytest.mark.parametrize("engine", ["bubblewrap", "landlock"])
@pytest.mark.parametrize("mode", [SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE])
def test_probes(engine: str, mode: SandboxMode) -> None:
    results = run_check(_engine(engine), mode)
    assert {r.name for r in results} == set(FORBIDDEN) | set(ALLOWED)
    failed = {r.name for r in results if not r.ok}
    # exactly what the engine documents it cannot enforce (Landlock: host command lines);
    # nothing else: no git escape, no lingering setsid child, on either engine
    assert failed == set(NOT_ENFORCED[engine])
    allowed = {r.name for r in results if r.expected == "allowed"}
    if mode is SandboxMode.READ_ONLY:
        assert allowed == {"read_ws", "run_program", "mktemp"}
    else:
        assert allowed == set(ALLOWED)


def test_danger_full_access_confines_nothing() -> None:
    results = run_check("auto", SandboxMode.DANGER_FULL_ACCESS)
    happened = {r.name for r in results if r.happened}
    # the probes are real: unconfined, the forbidden actions do happen (the git escapes
    # run their program at the host's next git status; the setsid child outlives it)
    assert {"write_outside", "git_hooks", "read_ssh", "net_tcp", "signal_host"} <= happened
    assert {
        "nested_repo",
        "gitdir_file",
        "git_modules",
        "worktree_commondir",
        "config_worktree",
        "setsid_child",
        "read_cmdline",
    } <= happened


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root")
@pytest.mark.parametrize("engine", ["bubblewrap", "landlock"])
def test_probes_as_unprivileged_user(engine: str) -> None:
    _engine(engine)
    state = tempfile.mkdtemp(prefix="octos-nobody-state-")
    os.chown(state, 65534, 65534)
    code = (
        "import json; from octos_tools.sandbox import SandboxMode;"
        "from octos_tools.sandbox._probe import run_check;"
        f"r = run_check({engine!r}, SandboxMode.WORKSPACE_WRITE);"
        "print(json.dumps([[x.name, x.ok] for x in r]))"
    )
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": SRC,
        "HOME": state,
        "OCTOS_TOOLS_STATE_DIR": state,
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
    try:
        done = subprocess.run(
            [*cmd, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
        )
    finally:
        shutil.rmtree(state, ignore_errors=True)
    if done.returncode != 0 and "cannot create its namespaces" in done.stderr:
        pytest.skip("bwrap needs user namespaces for an unprivileged user here")
    assert done.returncode == 0, done.stderr
    failed = {name for name, ok in json.loads(done.stdout.splitlines()[-1]) if not ok}
    assert failed == set(NOT_ENFORCED[engine])
