"""``octos-tools serve`` on the wire, byte by byte (raw JSON-RPC, no SDK on our side):
what a result carries, what is listed, the stdio size cap, calls in flight at end of input,
the start-up line and the broad-workspace warning."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.test_server_robustness import INIT, StdioPeer

pytestmark = [pytest.mark.timeout(90)]


class Peer(StdioPeer):
    """:class:`StdioPeer` with extra ``serve`` arguments and environment."""

    def __init__(self, workspace: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "octos_tools", "serve", "--workspace", str(workspace), *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        assert self.proc.stdout is not None
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.proc.stdout, selectors.EVENT_READ)

    def call(self, rid: int, name: str, arguments: dict[str, Any]) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )

    def list_names(self, rid: int) -> list[str]:
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/list"})
        return [t["name"] for t in self.recv_id(rid)["result"]["tools"]]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.md").write_text("first line\nsecond line\n")
    return ws


def test_read_file_text_is_in_content_and_metadata_in_meta(workspace: Path) -> None:
    peer = Peer(workspace)
    try:
        peer.send(INIT)
        instructions = peer.recv_id(1)["result"]["instructions"]
        assert str(workspace.resolve()) in instructions
        assert "confined to the workspace" in instructions
        from octos_tools.sandbox import engine_status

        if any(s.usable for s in engine_status()):  # the default sandbox, named as in force
            assert "run in the workspace-write sandbox" in instructions, instructions
            assert "require_escalated" in instructions and "NOT confined" not in instructions
        else:
            assert "sandbox_unavailable" in instructions
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        peer.call(2, "read_file", {"path": "notes.md"})
        result = peer.recv_id(2)["result"]
        assert result["isError"] is False
        assert "structuredContent" not in result  # no outputSchema, so no structured result
        assert [block["type"] for block in result["content"]] == ["text"]
        assert "second line" in result["content"][0]["text"]
        ours = result["_meta"]["io.octos-tools/result"]
        assert isinstance(ours["structured_metadata"], dict)
        assert "second line" not in json.dumps(ours)  # metadata only, not the file again
    finally:
        peer.close()


def test_unusable_tools_are_not_listed_but_deferred_ones_stay_callable(workspace: Path) -> None:
    peer = Peer(workspace)
    try:
        peer.initialize()  # no elicitation capability declared
        names = peer.list_names(2)
        for hidden in ("request_user_input", "read_task_output", "spawn_agent", "wait_agent"):
            assert hidden not in names
        assert "read_file" in names
        # A tool that is not listed (deferred or hidden) still answers when called by name.
        peer.call(3, "request_user_input", {"prompt": "which branch?"})
        answer = peer.recv_id(3)["result"]
        assert answer["isError"] is True
        assert answer["content"][0]["text"].startswith("Error [unavailable]")
    finally:
        peer.close()


def test_no_defer_lists_everything(workspace: Path) -> None:
    deferred, everything = Peer(workspace), Peer(workspace, "--no-defer")
    try:
        deferred.initialize()
        everything.initialize()
        few, many = deferred.list_names(2), everything.list_names(2)
        assert set(few) - {"activate_tools"} < set(many)
        assert "web_fetch" not in few and "web_fetch" in many
    finally:
        deferred.close()
        everything.close()


def test_oversized_stdio_line_is_refused_with_its_id_and_serving_goes_on(
    workspace: Path,
) -> None:
    peer = Peer(workspace)
    try:
        peer.initialize()
        big = "x" * (6 * 1024 * 1024)
        line = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 41,
                "method": "tools/call",
                "params": {"name": "write_file", "arguments": {"path": "big.txt", "content": big}},
            }
        ).encode()
        peer.send(line)
        error = peer.recv_id(41)
        assert error["error"]["code"] == -32600
        assert "over the limit" in error["error"]["message"]
        assert not (workspace / "big.txt").exists()
        # The id at the end of the line (as the TypeScript SDK orders keys) is found too.
        tail_id = b'{"method":"ping","params":{"pad":"' + b"y" * (5 * 1024 * 1024) + b'"},'
        peer.send(tail_id + b'"jsonrpc":"2.0","id":"late"}')
        assert peer.recv_id("late")["error"]["code"] == -32600
        peer.send(b"   ")  # a blank line is no message: nothing answers it
        peer.call(42, "read_file", {"path": "notes.md"})
        assert "first line" in peer.recv(20)["result"]["content"][0]["text"]
    finally:
        peer.close()


def test_calls_in_flight_are_answered_after_stdin_closes(workspace: Path) -> None:
    peer = Peer(workspace)
    try:
        peer.initialize()
        peer.call(5, "exec_command", {"cmd": "sleep 1; echo finished-late"})
        peer.call(6, "read_file", {"path": "notes.md"})
        assert peer.proc.stdin is not None
        peer.proc.stdin.close()
        answers = {}
        for _ in range(2):
            message = peer.recv(30)
            answers[message["id"]] = message
        assert "finished-late" in answers[5]["result"]["content"][0]["text"]
        assert "first line" in answers[6]["result"]["content"][0]["text"]
        assert peer.proc.wait(30) == 0
    finally:
        peer.close()


def _start_and_read_stderr(workspace: Path, env: dict[str, str]) -> str:
    proc = subprocess.Popen(
        [sys.executable, "-m", "octos_tools", "serve", "--workspace", str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **env},
    )
    assert proc.stdin is not None and proc.stderr is not None
    deadline = time.monotonic() + 30
    lines: list[str] = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline().decode()
        if not line:
            break
        lines.append(line)
        if "serving" in line:
            break
    proc.stdin.close()
    proc.wait(30)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return "".join(lines)


def test_start_line_names_absolute_workspace_transport_and_count(workspace: Path) -> None:
    err = _start_and_read_stderr(workspace, {})
    line = next(x for x in err.splitlines() if "serving" in x)
    assert f"serving {workspace.resolve()} over stdio (" in line
    assert int(line.rsplit("(", 1)[1].split()[0]) >= 10
    assert "warning" not in err


def test_serving_the_home_folder_warns(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    err = _start_and_read_stderr(home, {"HOME": str(home)})
    assert "warning" in err and "home folder" in err


def test_a_question_pending_when_stdin_closes_is_answered_unavailable(workspace: Path) -> None:
    peer = Peer(workspace)
    try:
        init = json.loads(json.dumps(INIT))
        init["params"]["capabilities"] = {"elicitation": {}}
        peer.send(init)
        peer.recv_id(1)
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert "request_user_input" in peer.list_names(2)  # this client can be asked
        peer.call(3, "request_user_input", {"prompt": "Deploy now?"})
        question = peer.recv(30)
        assert question["method"] == "elicitation/create"
        assert question["params"]["message"] == "Deploy now?"
        assert peer.proc.stdin is not None
        peer.proc.stdin.close()  # the host leaves without answering
        answer = peer.recv_id(3, 30)["result"]
        assert answer["isError"] is True
        assert answer["content"][0]["text"].startswith("Error [unavailable]")
        assert peer.proc.wait(30) == 0
    finally:
        peer.close()


def test_instructions_name_each_mode_as_it_is() -> None:
    from octos_tools.mcp.server import server_instructions
    from octos_tools.sandbox import SandboxMode, SandboxSettings

    free = server_instructions("/ws", SandboxSettings(mode=SandboxMode.DANGER_FULL_ACCESS))
    assert "NOT confined (danger-full-access)" in free and "require_escalated" not in free
    unknown = server_instructions("/ws", None)  # no command tool registered
    assert "Commands" not in unknown
    hosts = SandboxSettings(allowed_hosts=("pypi.org",))
    text = server_instructions("/ws", hosts)
    assert "NOT confined" not in text
    assert "pypi.org" in text or "sandbox_unavailable" in text
