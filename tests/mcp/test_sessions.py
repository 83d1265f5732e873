"""Per-session behaviour of the MCP server, in process (the SDK's in-memory transport):
``request_user_input`` through elicitation for clients that can answer, hidden for the
others; tools that cannot work hidden; the concurrency rule; lists are reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from mcp import Client
from octos_tools.config import Config
from octos_tools.mcp.elicitation import elicitation_form
from octos_tools.mcp.server import OctosMcpServer
from octos_tools.profile import build_registry

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


async def test_request_user_input_asks_through_elicitation(workspace: Path) -> None:
    registry = build_registry(None, workspace)
    server = OctosMcpServer(registry)
    asked: list[types.ElicitRequestParams] = []

    async def answer(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"branch": "main"})

    async def decline(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with Client(server.server, mode="legacy", elicitation_callback=answer) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "request_user_input" in names
        question = {
            "questions": [
                {
                    "id": "branch",
                    "question": "Which branch?",
                    "options": [{"label": "main"}, {"label": "dev"}],
                }
            ]
        }
        result = await client.call_tool("request_user_input", question)
        assert not result.is_error
        text = result.content[0]
        assert isinstance(text, types.TextContent) and "main" in text.text
        assert isinstance(asked[0], types.ElicitRequestFormParams)
        assert asked[0].message == "Which branch?"
        schema = asked[0].requested_schema
        assert schema["properties"]["branch"]["enum"] == ["main", "dev"]

    async with Client(server.server, mode="legacy", elicitation_callback=decline) as client:
        refused = await client.call_tool("request_user_input", {"prompt": "Go on?"})
        assert refused.is_error
        text = refused.content[0]
        assert isinstance(text, types.TextContent) and text.text.startswith("Error [cancelled]")

    async with Client(server.server, mode="legacy") as client:  # cannot be asked
        names = [t.name for t in (await client.list_tools()).tools]
        assert "request_user_input" not in names
    await registry.aclose()


async def test_tools_that_need_a_delegate_or_handles_are_hidden(workspace: Path) -> None:
    registry = build_registry(Config.from_mapping({"lifecycle": {"defer": False}}), workspace)
    server = OctosMcpServer(registry)
    async with Client(server.server, mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
    for name in ("spawn_agent", "wait_agent", "close_agent", "send_input", "read_task_output"):
        if name in registry:
            assert name not in names
    assert "read_file" in names

    from octos_tools.builtins.agents import bind_spawn_delegate

    class Runner:
        async def run(self, request: Any, ctx: Any) -> str:
            return "done"

    assert bind_spawn_delegate(registry, Runner())  # type: ignore[arg-type]
    bound = OctosMcpServer(registry)
    async with Client(bound.server, mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert "spawn_agent" in names and "read_task_output" in names
    await registry.aclose()


def test_elicitation_form_for_a_plain_prompt() -> None:
    message, schema, asked = elicitation_form({"prompt": "Proceed?"})
    assert message == "Proceed?"
    assert schema["required"] == ["answer"]
    assert asked == {"answer": "Proceed?"}


async def test_view_image_reaches_the_host_as_image_content(workspace: Path) -> None:
    import base64

    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    (workspace / "dot.png").write_bytes(png)
    registry = build_registry(None, workspace)
    if "view_image" not in registry:
        pytest.skip("view_image needs the image extra (Pillow)")
    async with Client(OctosMcpServer(registry).server, mode="legacy") as client:
        result = await client.call_tool("view_image", {"path": "dot.png"})  # deferred: by name
        assert not result.is_error, result.content
        images = [b for b in result.content if isinstance(b, types.ImageContent)]
        assert len(images) == 1 and images[0].mime_type.startswith("image/")
        assert base64.b64decode(images[0].data)[:4] in (b"\x89PNG", b"\xff\xd8\xff\xe0")
    await registry.aclose()
