"""What the file tools never touch inside a workspace (octos_tools.workspace._off_limits): the
credential stores and the state folder when the workspace holds the home folder (found by a break
test), with real files in a fake home: reads, listings, walks (both grep engines,
glob, code_structure, hard-link search), writes, patches, the history and a restore, the
``deny_read`` entries of the config, and the warning of ``call``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from octos_tools.config import Config
from octos_tools.profile import build_registry
from octos_tools.registry import ToolRegistry
from octos_tools.state_dir import state_root
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace

from .cli_helpers import run_in_process

pytestmark = pytest.mark.anyio

KEY = "FAKE-PRIVATE-KEY-0123"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home folder with an SSH key, a gh token and a project; ``HOME`` and
    ``XDG_STATE_HOME`` point into it, so the state folder lies inside it too."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(f"-----BEGIN PRIVATE KEY-----\n{KEY}\n")
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".config" / "gh" / "hosts.py").write_text(f"def leaked_token():\n    '{KEY}'\n")
    (home / ".config" / "app.toml").write_text("theme = 'dark'\n")
    (home / "proj").mkdir()
    (home / "proj" / "notes.txt").write_text("PRIVATE notes, no key here\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("OCTOS_TOOLS_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    state = state_root()
    assert state == home / ".local" / "state" / "octos-tools"
    (state / "token").write_text("server-token\n")
    return home


def _reg(root: Path, **config: Any) -> ToolRegistry:
    return build_registry(Config.model_validate(config), root)


async def _run(reg: ToolRegistry, name: str, args: dict[str, Any]) -> ToolResult:
    return await reg.execute(name, args)


def _denied(res: ToolResult, rule: str) -> None:
    assert not res.success, res.output
    assert res.error_kind is not None and res.error_kind.value == "permission_denied", res.output
    assert rule in res.output and "off limits" in res.output, res.output
    assert KEY not in res.output


@pytest.mark.parametrize(
    "path",
    [
        ".ssh/id_ed25519",
        ".ssh",
        "./proj/../.ssh/id_ed25519",
        ".SSH/id_ed25519",
        "{home}/.ssh/id_ed25519",
    ],
)
async def test_read_file_refuses_a_credential_store_in_every_spelling(
    home: Path, path: str
) -> None:
    res = await _run(_reg(home), "read_file", {"path": path.format(home=home)})
    _denied(res, "~/.ssh")


async def test_read_file_refuses_the_state_folder_and_reads_the_rest(home: Path) -> None:
    reg = _reg(home)
    _denied(
        await _run(reg, "read_file", {"path": ".local/state/octos-tools/token"}), "state folder"
    )
    res = await _run(reg, "read_file", {"path": "proj/notes.txt"})
    assert res.success and "PRIVATE notes" in res.output
    res = await _run(reg, "read_file", {"path": ".config/app.toml"})  # .config itself is fine
    assert res.success and "dark" in res.output


@pytest.mark.parametrize("engine", ["rg", "python"])
async def test_grep_never_searches_credential_stores_or_the_state_folder(
    home: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if engine == "python":
        monkeypatch.setenv("OCTOS_TOOLS_NO_RG", "1")
    reg = _reg(home)
    for args in (
        {"pattern": "PRIVATE"},
        {"pattern": "FAKE|token", "file_pattern": "*"},
        {"pattern": "PRIVATE", "file_pattern": "id_*"},
        {"pattern": "token", "path": ".local"},
        {"pattern": "leaked", "path": ".config"},
    ):
        res = await _run(reg, "grep", args)
        assert res.success, res.output
        assert KEY not in res.output and "server-token" not in res.output, (args, res.output)
        assert ".ssh" not in res.output and "octos-tools" not in res.output, (args, res.output)
        assert res.structured_metadata["engine"] == ("rg" if engine == "rg" else "python")
    res = await _run(reg, "grep", {"pattern": "PRIVATE"})
    assert "proj/notes.txt" in res.output  # the rest is still searched
    _denied(await _run(reg, "grep", {"pattern": "KEY", "path": ".ssh"}), "~/.ssh")
    _denied(await _run(reg, "grep", {"pattern": "K", "path": ".ssh/id_ed25519"}), "~/.ssh")


async def test_glob_and_list_dir_leave_them_out(home: Path) -> None:
    reg = _reg(home)
    for pattern in ("**/*", ".ssh/*", "**/id_*", ".local/**", ".config/**"):
        res = await _run(reg, "glob", {"pattern": pattern})
        listed = res.output.splitlines()[1:]  # the first line echoes the pattern
        assert not [p for p in listed if p.startswith((".ssh", ".config/gh"))], res.output
        assert "octos-tools" not in res.output and "id_ed25519" not in res.output, res.output
    res = await _run(reg, "glob", {"pattern": "**/*.txt"})
    assert "proj/notes.txt" in res.output
    res = await _run(reg, "list_dir", {"path": "."})
    assert res.success and "proj/" in res.output and ".ssh" not in res.output, res.output
    res = await _run(reg, "list_dir", {"path": ".config"})
    assert "app.toml" in res.output and "gh" not in res.output, res.output
    res = await _run(reg, "list_dir", {"path": ".local/state"})
    assert res.success and "octos-tools" not in res.output, res.output
    _denied(await _run(reg, "list_dir", {"path": ".ssh"}), "~/.ssh")
    _denied(await _run(reg, "list_dir", {"path": ".local/state/octos-tools"}), "state folder")


async def test_code_structure_never_outlines_them(home: Path) -> None:
    reg = _reg(home)
    for path in (".", ".config"):
        res = await _run(reg, "code_structure", {"path": path})
        assert "leaked_token" not in res.output and KEY not in res.output, res.output
    _denied(await _run(reg, "code_structure", {"path": ".config/gh/hosts.py"}), "~/.config/gh")


async def test_writers_refuse_and_create_nothing(home: Path) -> None:
    reg = _reg(home)
    state = home / ".local" / "state" / "octos-tools"
    res = await _run(reg, "write_file", {"path": ".local/state/octos-tools/x.txt", "content": "x"})
    _denied(res, "state folder")
    res = await _run(reg, "write_file", {"path": ".ssh/authorized_keys", "content": "ssh-ed25519"})
    _denied(res, "~/.ssh")
    res = await _run(reg, "write_file", {"path": ".aws/credentials", "content": "[default]"})
    _denied(res, "~/.aws")
    assert not (home / ".aws").exists() and not (home / ".ssh" / "authorized_keys").exists()
    res = await _run(
        reg,
        "edit_file",
        {"path": ".ssh/id_ed25519", "old_string": "FAKE", "new_string": "MINE"},
    )
    _denied(res, "~/.ssh")
    for patch in (
        "*** Begin Patch\n*** Add File: .ssh/new\n+x\n*** End Patch\n",
        "*** Begin Patch\n*** Delete File: .ssh/id_ed25519\n*** End Patch\n",
        "*** Begin Patch\n*** Update File: proj/notes.txt\n*** Move to: .ssh/notes.txt\n"
        "@@\n-PRIVATE notes, no key here\n+moved\n*** End Patch\n",
    ):
        res = await _run(reg, "apply_patch", {"patch": patch})
        assert not res.success and "off limits" in res.output, res.output
    assert (home / ".ssh" / "id_ed25519").read_text().endswith(f"{KEY}\n")
    assert (home / "proj" / "notes.txt").read_text() == "PRIVATE notes, no key here\n"
    assert not (state / "x.txt").exists()  # the server's own history and locks are there


def test_hard_link_search_never_names_a_path_inside_them(home: Path) -> None:
    (home / "proj" / "pub").write_text("shared\n")
    (home / ".ssh" / "linked").hardlink_to(home / "proj" / "pub")
    (home / "proj" / "other").hardlink_to(home / "proj" / "pub")
    ws = Workspace(home)
    st = (home / "proj" / "pub").stat()
    names, _ = ws.hard_links((st.st_dev, st.st_ino), exclude="proj/pub")
    assert names == ["proj/other"]


async def test_deny_read_entries_of_the_config_are_off_limits_too(home: Path) -> None:
    (home / "proj" / "secrets").mkdir()
    (home / "proj" / "secrets" / "db.txt").write_text(f"{KEY}\n")
    reg = _reg(home, sandbox={"deny_read": ["proj/secrets"]})
    _denied(await _run(reg, "read_file", {"path": "proj/secrets/db.txt"}), "deny_read")
    res = await _run(reg, "grep", {"pattern": "FAKE"})
    assert KEY not in res.output, res.output


def test_a_project_folder_has_nothing_off_limits(home: Path) -> None:
    assert not Workspace(home / "proj").off_limits
    assert Workspace(home).off_limits.rule_for([".local", "state", "octos-tools", "x"])


async def test_history_never_records_its_store_and_a_restore_keeps_every_checkpoint(
    home: Path,
) -> None:
    reg = _reg(home, sandbox={"mode": "danger-full-access"})
    res = await _run(reg, "exec_command", {"cmd": "echo 1 > one.txt"})
    assert res.success, res.output
    res = await _run(reg, "exec_command", {"cmd": "echo 2 > two.txt; echo k > .ssh/k2"})
    assert res.success, res.output
    log = (await _run(reg, "workspace_log", {"limit": 50})).structured_metadata["commits"]
    assert [e["tool"] for e in log] == ["exec_command", "exec_command", "baseline"]
    for entry in log:
        assert not any(p.startswith((".local/state", ".ssh")) for p in entry["paths"]), entry
    objects = home / ".local" / "state" / "octos-tools"
    count = sum(1 for _ in objects.rglob("objects/*/*"))
    assert count > 0
    res = await _run(reg, "workspace_restore", {"commit": log[-1]["commit"], "force": True})
    assert res.success, res.output
    assert not (home / "one.txt").exists() and not (home / "two.txt").exists()
    assert (home / ".ssh" / "k2").exists()  # never recorded, never removed
    assert sum(1 for _ in objects.rglob("objects/*/*")) >= count
    log2 = (await _run(reg, "workspace_log", {"limit": 50})).structured_metadata["commits"]
    assert [e["tool"] for e in log2][:2] == ["workspace_restore", "exec_command"]
    res = await _run(reg, "workspace_restore", {"commit": log2[1]["commit"]})  # undo works
    assert res.success, res.output
    assert (home / "one.txt").read_text() == "1\n" and (home / "two.txt").read_text() == "2\n"


def test_call_warns_when_the_workspace_holds_the_home_folder(home: Path) -> None:
    env = {"HOME": str(home), "XDG_STATE_HOME": str(home / ".local" / "state")}
    out = run_in_process("call", "list_dir", "{}", "-w", str(home), env=env)
    assert out.returncode == 0, out.stderr
    err = out.stderr.decode()
    assert "contains the home folder" in err and ".ssh" in err, err
    assert ".local/state/octos-tools" in err, err
    out = run_in_process("call", "list_dir", "{}", "-w", str(home / "proj"), env=env)
    assert b"contains" not in out.stderr, out.stderr


def test_call_warns_when_the_workspace_holds_the_state_folder_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = tmp_path / "proj"
    (proj / "state").mkdir(parents=True)
    env = {"HOME": str(tmp_path / "elsewhere"), "XDG_STATE_HOME": str(proj / "state")}
    monkeypatch.delenv("OCTOS_TOOLS_STATE_DIR", raising=False)
    out = run_in_process(
        "call", "write_file", '{"path": "a.txt", "content": "a"}', "-w", str(proj), env=env
    )
    err = out.stderr.decode()
    assert out.returncode == 0 and "contains the octos-tools state folder" in err, err
    assert "state/octos-tools" in err
    res = run_in_process(
        "call", "read_file", '{"path": "state/octos-tools/workspaces"}', "-w", str(proj), env=env
    )
    assert b"permission_denied" in res.stdout + res.stderr  # call exits 0 on a tool error
