"""A mounted stdio server's replies are read in linear time and capped
(mcp/stdio_client.py, ``[mcp_servers.NAME] max_reply_bytes``): over the cap is a typed
``reply_too_large`` error, the connection is reset, and the next call works."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from octos_tools.config import Config
from octos_tools.errors import ErrorKind
from octos_tools.mcp.client import mount_mcp_servers
from octos_tools.profile import build_registry

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

SERVER = textwrap.dedent(
    '''
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("big")

    @server.tool()
    def blob(megabytes: int) -> str:
        """A reply of that many megabytes."""
        return "x" * (megabytes * 1_000_000)

    server.run()
    '''
)


async def test_a_50_mb_reply_is_refused_and_the_server_recovers(tmp_path: Path) -> None:
    script = tmp_path / "big_server.py"
    script.write_text(SERVER)
    ws = tmp_path / "ws"
    ws.mkdir()
    server = {
        "command": sys.executable,
        "args": [str(script)],
        "defer": False,
        "max_reply_bytes": 16 * 1024 * 1024,
        "timeout_secs": 60,
    }
    config = Config.from_mapping({"mcp_servers": {"big": server}})
    registry = build_registry(config, ws, builtins=False)
    async with mount_mcp_servers(registry, config) as mounts:
        assert mounts.failures == {}
        ok = await registry.execute("big__blob", {"megabytes": 8})  # under the cap: whole
        assert ok.success, ok.output[:300]
        assert ok.output.count("x") >= 8_000_000 or "x" in ok.output
        huge = await registry.execute("big__blob", {"megabytes": 50})
        assert huge.error_kind is ErrorKind.REPLY_TOO_LARGE, huge.output[:300]
        assert "max_reply_bytes" in huge.output
        again = await registry.execute("big__blob", {"megabytes": 1})  # a fresh process
        assert again.success, again.output[:300]
        assert mounts.connections["big"].starts == 2
    await registry.aclose()
