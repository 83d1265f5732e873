"""Schema patterns run on RE2 (schema_regex.py): a catastrophic ``pattern`` of a mounted
server's tool is checked in linear time, the event loop keeps serving."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from octos_tools.arguments import compile_schema
from octos_tools.config import Config
from octos_tools.errors import ErrorKind
from octos_tools.mcp.client import mount_mcp_servers
from octos_tools.profile import build_registry
from octos_tools.schema_regex import bounded_search

# Python's re needs about 2**n steps for n characters here: 100,000 would never end.
EVIL = r"^(a+)+$"
HOSTILE = "a" * 100_000 + "!"


@pytest.mark.timeout(20)
def test_catastrophic_patterns_are_linear() -> None:
    assert bounded_search(EVIL, "aaaa")
    assert not bounded_search(EVIL, HOSTILE)
    validator = compile_schema(
        {
            "type": "object",
            "properties": {"s": {"type": "string", "pattern": EVIL}},
            "patternProperties": {EVIL: {"type": "integer"}},
            "propertyNames": {"pattern": "^(x+x+)+y$|^s$|^a+$"},
        }
    )
    errors = list(validator.iter_errors({"s": HOSTILE}))
    assert len(errors) == 1 and "does not match" in errors[0].message
    assert list(validator.iter_errors({"s": "aaa", "aaaa": 3})) == []
    assert len(list(validator.iter_errors({"aaaa": "x"}))) == 1  # patternProperties applies
    assert len(list(validator.iter_errors({HOSTILE: 1}))) >= 1  # propertyNames refuses


def test_a_pattern_re2_cannot_run_is_left_to_the_server() -> None:
    assert bounded_search(r"(a)\1", "zz")  # a backreference: not checked here
    assert bounded_search(r"\p{L}+", "é") and not bounded_search(r"^\d+$", "12a")


SERVER = textwrap.dedent(
    '''
    from typing import Annotated
    from pydantic import Field
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("evil")

    @server.tool()
    def echo(text: Annotated[str, Field(pattern=r"^(a+)+$")]) -> str:
        """Echo."""
        return text

    @server.tool()
    def ping() -> str:
        """Pong."""
        return "pong"

    server.run()
    '''
)


@pytest.mark.anyio
@pytest.mark.timeout(120)
async def test_mounted_tool_with_a_catastrophic_pattern_does_not_stall_others(
    tmp_path: Path,
) -> None:
    script = tmp_path / "evil_server.py"
    script.write_text(SERVER)
    ws = tmp_path / "ws"
    ws.mkdir()
    config = Config.from_mapping(
        {
            "mcp_servers": {
                "evil": {"command": sys.executable, "args": [str(script)], "defer": False}
            }
        }
    )
    registry = build_registry(config, ws, builtins=False)
    async with mount_mcp_servers(registry, config) as mounts:
        assert mounts.failures == {}
        results: dict[str, object] = {}

        async def hostile() -> None:
            results["echo"] = await registry.execute("evil__echo", {"text": "a" * 28 + "!"})

        async def neighbour() -> None:
            with anyio.fail_after(5):
                results["ping"] = await registry.execute("evil__ping", {})

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(hostile)
                tg.start_soon(neighbour)
        echo = results["echo"]
        assert getattr(echo, "error_kind", None) is ErrorKind.INVALID_ARGUMENTS
        assert getattr(results["ping"], "output", None) == "pong"
    await registry.aclose()
