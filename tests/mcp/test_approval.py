"""The approval channel over MCP (octos_tools.mcp.approval), driven by the official
Python client: elicitation mid-call for 2025 clients, the input-required round trip for
2026-07-28 clients; accept runs the exact command, decline and "no capability" run
nothing. The stdio tests run ``octos-tools serve`` as a real process."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from mcp import Client, StdioServerParameters
from octos_tools.mcp.server import OctosMcpServer
from octos_tools.profile import build_registry

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

REPO_SRC = Path(__file__).resolve().parents[2] / "src"
RISKY = "rm -r -f build && echo removed"  # SafePolicy asks (rm -rf, spelt apart)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "build").mkdir(parents=True)
    (ws / "build" / "out.o").write_text("x")
    return ws


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


class Person:
    """An elicitation callback that records what it was asked and answers ``action``."""

    def __init__(self, action: str, approve: bool = True) -> None:
        self.action, self.approve = action, approve
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, _ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        content = {"approve": self.approve} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_accept_runs_the_command_decline_and_no_capability_do_not(
    workspace: Path, mode: str
) -> None:
    registry = build_registry(None, workspace)
    server = OctosMcpServer(registry)
    yes = Person("accept")
    async with Client(server.server, mode=mode, elicitation_callback=yes) as client:  # type: ignore[arg-type]
        result = await client.call_tool("exec_command", {"cmd": RISKY})
        assert not result.is_error, _text(result)
        assert "removed" in _text(result)
    assert not (workspace / "build").exists()
    assert len(yes.asked) == 1
    asked = yes.asked[0]
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert RISKY in asked.message and "rm -rf" in asked.message
    assert asked.requested_schema["properties"]["approve"]["type"] == "boolean"

    (workspace / "build").mkdir()
    for person in (Person("decline"), Person("cancel"), Person("accept", approve=False)):
        async with Client(server.server, mode=mode, elicitation_callback=person) as client:  # type: ignore[arg-type]
            refused = await client.call_tool("exec_command", {"cmd": RISKY})
        assert refused.is_error
        assert _text(refused).startswith("Error [approval_denied]"), _text(refused)
        assert (workspace / "build").exists()

    async with Client(server.server, mode=mode) as client:  # declares no elicitation
        nobody = await client.call_tool("exec_command", {"cmd": RISKY})
    assert nobody.is_error and _text(nobody).startswith("Error [approval_required]")
    assert (workspace / "build").exists()
    await registry.aclose()


async def test_escalation_asks_with_the_justification(workspace: Path) -> None:
    registry = build_registry(None, workspace)
    server = OctosMcpServer(registry)
    yes = Person("accept")
    args = {
        "cmd": "echo outside",
        "sandbox_permissions": "require_escalated",
        "justification": "Do you want to run echo outside the sandbox?",
    }
    async with Client(server.server, mode="2026-07-28", elicitation_callback=yes) as client:
        result = await client.call_tool("exec_command", args)
        assert not result.is_error, _text(result)
        assert result.meta is not None
    asked = yes.asked[0]
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert asked.message.startswith("exec_command wants to run: echo outside\n")
    assert asked.message.endswith("\nthe model says: Do you want to run echo outside the sandbox?")
    await registry.aclose()


async def test_an_answer_for_another_command_approves_nothing(workspace: Path) -> None:
    """A client that answers with a key it was not asked for (or for another command)
    gets the question again, not a run."""
    registry = build_registry(None, workspace)
    server = OctosMcpServer(registry)
    async with Client(server.server, mode="2026-07-28") as client:
        first = await client.session.call_tool(
            "exec_command",
            {"cmd": "git reset --hard; echo ran"},
            input_responses={"approval-0000000000000000": types.ElicitResult(action="accept")},
            allow_input_required=True,
        )
    # no elicitation declared: refused, nothing ran
    assert isinstance(first, types.CallToolResult) and first.is_error
    await registry.aclose()


def _serve(workspace: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "octos_tools", "serve", "--workspace", str(workspace)],
        cwd=str(workspace.parent),
        env={**os.environ, "PYTHONPATH": str(REPO_SRC)},  # this tree's code, not an install
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_over_stdio_accept_decline_and_none(workspace: Path, mode: str) -> None:
    for person, kind in ((Person("decline"), "approval_denied"), (None, "approval_required")):
        async with Client(_serve(workspace), mode=mode, elicitation_callback=person) as client:  # type: ignore[arg-type]
            refused = await client.call_tool("exec_command", {"cmd": RISKY})
        assert refused.is_error and _text(refused).startswith(f"Error [{kind}]"), _text(refused)
        assert (workspace / "build" / "out.o").exists()
    yes = Person("accept")
    async with Client(_serve(workspace), mode=mode, elicitation_callback=yes) as client:  # type: ignore[arg-type]
        done = await client.call_tool("exec_command", {"cmd": RISKY})
    assert not done.is_error, _text(done)
    assert len(yes.asked) == 1 and not (workspace / "build").exists()


@pytest.mark.parametrize(
    ("answer", "yes"),
    [
        ({"action": "accept", "content": {"approve": True}}, True),
        ({"action": "accept", "content": {"approve": False}}, False),
        ({"action": "accept"}, False),  # the required field missing: fail closed
        ({"action": "accept", "content": {}}, False),
        ({"action": "accept", "content": {"approve": "true"}}, False),
        ({"action": "decline", "content": {"approve": True}}, False),
        (types.ElicitResult(action="accept", content={"approve": True}), True),
        (types.ElicitResult(action="accept"), False),
    ],
)
def test_only_an_explicit_approve_true_is_a_yes(answer: object, yes: bool) -> None:
    from octos_tools.mcp.approval import approved

    assert approved(answer) is yes
