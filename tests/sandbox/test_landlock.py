"""The Landlock engine's read split (octos_tools.sandbox._landlock), with real processes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from octos_tools.sandbox import SandboxMode, SandboxSettings, engine_status, wrap_command

pytestmark = pytest.mark.skipif(
    "landlock" not in {s.name for s in engine_status() if s.usable}, reason="no Landlock here"
)


def _run(argv: list[str], settings: SandboxSettings, cwd: Path) -> subprocess.CompletedProcess[str]:
    spawn = wrap_command(argv, cwd, {"PATH": "/usr/bin:/bin"}, settings, cwd)
    try:
        return subprocess.run(
            spawn.argv,
            cwd=cwd,
            env=spawn.env,
            preexec_fn=spawn.preexec,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    finally:
        spawn.close()


def test_a_symlink_to_an_ancestor_does_not_open_a_credential_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("SECRET")
    (home / "notes.txt").write_text("visible")
    (tmp_path / "alias").symlink_to(home)  # a rule set through it would cover ~/.aws
    ws = tmp_path / "ws"
    ws.mkdir()
    box = SandboxSettings(mode=SandboxMode.READ_ONLY, engine="landlock", home=str(home))
    for path in (home / ".aws" / "credentials", tmp_path / "alias" / ".aws" / "credentials"):
        done = _run(["cat", str(path)], box, ws)
        assert done.returncode != 0 and "SECRET" not in done.stdout
    assert _run(["cat", str(home / "notes.txt")], box, ws).stdout == "visible"
    listing = _run(["ls", str(tmp_path)], box, ws)
    assert listing.returncode == 0 and "ws" in listing.stdout
