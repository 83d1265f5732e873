"""End to end: the official MCP client drives ``octos-tools serve`` over stdio.

A copy of this repository's ``src/`` tree is the workspace; every edit is checked on disk.
Both protocol eras of the SDK are exercised: 2026-07-28 (``mode="auto"``: list_changed on a
``subscriptions/listen`` stream) and the 2025 handshake (``mode="legacy"``: pushed).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp import Client, StdioServerParameters

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

REPO_SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(REPO_SRC, ws / "src", ignore=shutil.ignore_patterns("__pycache__"))
    return ws


def _server(workspace: Path, config: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "octos_tools", "serve"),
            *("--workspace", str(workspace), "--config", str(config)),
            *extra,
        ],
        cwd=str(workspace.parent),
    )


def _config(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "octos.json"
    path.write_text(json.dumps(data))
    return path


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_stdio_end_to_end(tmp_path: Path, workspace: Path) -> None:
    config = _config(tmp_path, {"tool_policy": {"deny": ["write_file"]}})
    async with Client(_server(workspace, config)) as client:
        listing = await client.list_tools()
        tools = {t.name: t for t in listing.tools}
        assert {"read_file", "grep", "edit_file", "apply_patch"} <= set(tools)
        # Annotations: Safe → readOnlyHint, Exclusive → destructiveHint, and a title.
        assert tools["read_file"].annotations is not None
        assert tools["read_file"].annotations.read_only_hint is True
        assert tools["apply_patch"].annotations is not None
        assert tools["apply_patch"].annotations.destructive_hint is True
        assert tools["apply_patch"].annotations.read_only_hint is False
        assert all(t.title for t in listing.tools)
        assert tools["read_file"].input_schema["required"] == ["path"]

        # Denied: absent from the list, refused when called anyway, nothing written.
        assert "write_file" not in tools
        denied = await client.call_tool("write_file", {"path": "x.txt", "content": "no"})
        assert denied.is_error
        assert _text(denied).startswith("Error [policy_denied]")
        assert not (workspace / "x.txt").exists()

        # Read.
        read = await client.call_tool("read_file", {"path": "src/octos_tools/tool_types.py"})
        assert not read.is_error, _text(read)
        assert "class ToolSpec" in _text(read)
        assert read.structured_content is None  # no outputSchema: no structuredContent
        assert read.meta is not None and "io.octos-tools/result" in read.meta

        # Grep.
        found = await client.call_tool("grep", {"pattern": "class ToolRegistry", "path": "src"})
        assert not found.is_error, _text(found)
        assert "src/octos_tools/registry/_registry.py" in _text(found)

        # Edit: the bytes on disk change exactly once.
        target = workspace / "src/octos_tools/errors.py"
        before = target.read_bytes()
        edit = await client.call_tool(
            "edit_file",
            {
                "path": "src/octos_tools/errors.py",
                "old_string": 'UNKNOWN_TOOL = "unknown_tool"',
                "new_string": 'UNKNOWN_TOOL = "unknown_tool"  # edited over MCP',
            },
        )
        assert not edit.is_error, _text(edit)
        assert target.read_bytes() == before.replace(
            b'UNKNOWN_TOOL = "unknown_tool"', b'UNKNOWN_TOOL = "unknown_tool"  # edited over MCP'
        )

        # A multi-file patch: update one file, add another, delete a third.
        lifecycle = workspace / "src/octos_tools/lifecycle.py"
        lifecycle_before = lifecycle.read_bytes()
        (workspace / "src/octos_tools/doomed.py").write_bytes(b"x = 1\n")
        patch = (
            "*** Begin Patch\n"
            "*** Update File: src/octos_tools/lifecycle.py\n"
            "@@\n"
            '-__all__ = ["ToolLifecycle"]\n'
            '+__all__ = ["ToolLifecycle"]  # patched\n'
            "*** Add File: src/octos_tools/added.py\n"
            "+ADDED = True\n"
            "*** Delete File: src/octos_tools/doomed.py\n"
            "*** End Patch\n"
        )
        applied = await client.call_tool("apply_patch", {"patch": patch})
        assert not applied.is_error, _text(applied)
        assert lifecycle.read_bytes() == lifecycle_before.replace(
            b'__all__ = ["ToolLifecycle"]\n', b'__all__ = ["ToolLifecycle"]  # patched\n'
        )
        assert (workspace / "src/octos_tools/added.py").read_bytes().startswith(b"ADDED = True")
        assert not (workspace / "src/octos_tools/doomed.py").exists()

        # A failing patch leaves every file as it was (typed failure, nothing half-applied).
        snapshot = lifecycle.read_bytes()
        bad = await client.call_tool(
            "apply_patch",
            {
                "patch": "*** Begin Patch\n*** Update File: src/octos_tools/lifecycle.py\n@@\n"
                "-this line is not there\n+x\n*** End Patch\n"
            },
        )
        assert bad.is_error
        assert _text(bad).startswith("Error [")
        assert lifecycle.read_bytes() == snapshot

        # The workspace cannot be left.
        escape = await client.call_tool("read_file", {"path": "../../etc/passwd"})
        assert escape.is_error
        assert "path_outside_workspace" in _text(escape)

        # Deferred: not listed; calling it activates its group and list_changed arrives
        # on the subscriptions/listen stream (2026-07-28 era).
        assert "shell" not in tools
        async with client.listen(tools_list_changed=True) as sub:
            ran = await client.call_tool("shell", {"command": "echo activated"})
            assert not ran.is_error, _text(ran)
            assert "activated" in _text(ran)
            with anyio.fail_after(20):
                event = await sub.__anext__()
            assert type(event).__name__ == "ToolsListChanged"
        after = {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}
        assert "shell" in after
        assert "write_file" not in after


async def test_stdio_legacy_handshake_gets_list_changed_pushed(
    tmp_path: Path, workspace: Path
) -> None:
    config = _config(tmp_path, {})
    received: list[Any] = []
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        received.append(message)
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with Client(
        _server(workspace, config, "--read-only"), mode="legacy", message_handler=on_message
    ) as client:
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed is True
        names = {t.name for t in (await client.list_tools()).tools}
        # --read-only removes every Exclusive tool but the commands (read-only sandbox).
        assert "read_file" in names and "exec_command" in names
        assert not names & {"edit_file", "apply_patch", "write_file"}
        refused = await client.call_tool(
            "edit_file", {"path": "a", "old_string": "b", "new_string": "c"}
        )
        assert refused.is_error
        assert "policy_denied" in _text(refused)
        # A deferred Safe tool (web group) becomes visible when called, and the change is
        # pushed on the stdio pipe without asking.
        assert "web_fetch" not in names
        await client.call_tool("web_fetch", {"url": "http://127.0.0.1:9/"})
        with anyio.fail_after(20):
            await changed.wait()
        names = {t.name for t in (await client.list_tools()).tools}
        assert "web_fetch" in names
