"""The SafePolicy: deny and ask patterns on the parsed command."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from octos_tools.builtins.runtime import (
    ShellTool,
    check_command,
)
from octos_tools.config import ShellConfig
from octos_tools.context import ApprovalRequest, ToolContext
from octos_tools.errors import ErrorKind
from octos_tools.workspace import Workspace

from .tool_helpers import call

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


# ----------------------------------------------------------------------------- pure parts


def test_safe_policy_patterns() -> None:
    assert check_command("rm -rf /") == ("deny", "rm -rf /")
    assert check_command("rm   -rf   /*")[0] == "deny"
    assert check_command(":(){ :|:& };:")[0] == "deny"
    assert check_command("dd if=/dev/zero of=x")[0] == "deny"
    assert check_command("rm -rf /tmp/x") == ("ask", "rm -rf")
    assert check_command("sudo ls")[0] == "ask"
    assert check_command("git push --force origin")[0] == "ask"
    assert check_command("echo pseudo") == ("allow", None)
    assert check_command("ls -la") == ("allow", None)


@pytest.mark.anyio
async def test_safe_policy_deny_and_ask(ws: Workspace, cfg: ShellConfig) -> None:
    tool = ShellTool(ws, cfg)
    denied = await call(tool, {"command": "rm -rf /"})
    assert denied.error_kind is ErrorKind.POLICY_DENIED
    risky = "git reset --hard 2>/dev/null; echo ran"  # not a repository: harmless here
    asked = await call(tool, {"command": risky})
    assert asked.error_kind is ErrorKind.APPROVAL_REQUIRED
    assert (await call(tool, {"command": "echo sudo"})).success  # words, not text
    seen: list[ApprovalRequest] = []

    async def approve(req: ApprovalRequest) -> bool:
        seen.append(req)
        return True

    async def refuse(req: ApprovalRequest) -> bool:
        return False

    ran = await call(tool, {"command": risky}, ToolContext(approval=approve))
    assert ran.success and "ran" in ran.output
    assert seen[0].tool == "shell" and seen[0].action == risky
    assert seen[0].kind == "ask_pattern" and "git reset --hard" in seen[0].reason
    no = await call(tool, {"command": risky}, ToolContext(approval=refuse))
    assert no.error_kind is ErrorKind.APPROVAL_DENIED
    off = ShellTool(ws, cfg.model_copy(update={"safe_policy": False}))
    assert (await call(off, {"command": risky})).success


@pytest.mark.parametrize(
    ("command", "verdict", "rule"),
    [
        ("rm -rf build", "ask", "rm -rf"),
        ("rm -r -f build", "ask", "rm -rf"),
        ("rm -fr build", "ask", "rm -rf"),
        ("rm -Rf build", "ask", "rm -rf"),
        ("rm --recursive --force build", "ask", "rm -rf"),
        ("/bin/rm -r -f build", "ask", "rm -rf"),
        ("sudo rm -rf /", "deny", "rm -rf /"),
        ("env FOO=1 rm -r -f /", "deny", "rm -rf /"),
        ("command rm -fr //", "deny", "rm -rf /"),
        ("timeout 5 rm -rf x", "ask", "rm -rf"),
        ("bash -c 'rm -r -f build'", "ask", "rm -rf"),
        ('sh -lc "git push --force"', "ask", "git push --force"),
        ("ls; rm -rf /", "deny", "rm -rf /"),
        ("make && rm -r -f /*", "deny", "rm -rf /"),
        ("echo hi | sudo tee /etc/x", "ask", "sudo"),
        ("r''m -rf /", "deny", "rm -rf /"),
        ("git -C sub push -fu origin main", "ask", "git push --force"),
        ("git push origin +main", "ask", "git push --force"),
        ("git reset --hard HEAD~1", "ask", "git reset --hard"),
        ("mkfs.ext4 /dev/sdz", "deny", "mkfs"),
        ("chmod -R 777 /", "deny", "chmod -R 777 /"),
        (":(){ :|:& };:", "deny", ":(){:|:&};:"),
        ("echo 'rm -rf /'", "allow", None),
        ("rm -r build", "allow", None),
        ("git push origin main", "allow", None),
        ("grep -rf patterns.txt .", "allow", None),
        ("ls 'unbalanced", "allow", None),
    ],
)
def test_safe_policy_matches_the_parsed_command(
    command: str, verdict: str, rule: str | None
) -> None:
    assert check_command(command) == (verdict, rule)
