"""Mounting MCP servers into our registry (``mcp_servers``), with a real SDK server process.

The fixture server (written below with the SDK's ``MCPServer``) has two tools: ``measure``
(read-only, its schema uses ``$defs``/``$ref``) and ``hang`` (sleeps as long as asked).
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from octos_tools.config import Config
from octos_tools.errors import ErrorKind
from octos_tools.mcp.client import mount_mcp_servers, mounted_tool_name
from octos_tools.policy import GROUPS, ToolPolicy
from octos_tools.profile import build_registry
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import ConcurrencyClass

pytestmark = pytest.mark.timeout(120)

SERVER = textwrap.dedent(
    '''
    import os
    import anyio
    from pydantic import BaseModel
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    server = MCPServer("fixture")

    class Point(BaseModel):
        x: int
        y: int

    @server.tool(annotations=ToolAnnotations(read_only_hint=True), title="Measure")
    def measure(a: Point, b: Point) -> str:
        """Squared distance between two points."""
        return f"d2={(a.x - b.x) ** 2 + (a.y - b.y) ** 2} pid={os.getpid()}"

    @server.tool()
    async def hang(seconds: float = 3600.0) -> str:
        """Sleep, then answer."""
        await anyio.sleep(seconds)
        return f"woke pid={os.getpid()}"

    server.run()
    '''
)


@pytest.fixture(autouse=True)
def _restore_groups() -> Iterator[None]:
    """Mounting registers ``group:mcp:<server>`` process-wide; undo it after each test."""
    saved = dict(GROUPS)
    yield
    GROUPS.clear()
    GROUPS.update(saved)


@pytest.fixture
def server_script(tmp_path: Path) -> Path:
    path = tmp_path / "fixture_server.py"
    path.write_text(SERVER)
    return path


def _config(script: Path, **extra: Any) -> Config:
    # listed, so that these tests see the mounted tools (deferral of mounts is tested apart)
    servers: dict[str, dict[str, Any]] = {
        "fx": {"command": sys.executable, "args": [str(script)], "timeout_secs": 3, "defer": False}
    }
    servers["fx"].update(extra.pop("server", {}))
    return Config.from_mapping({"mcp_servers": servers, **extra})


def _registry(config: Config, tmp_path: Path) -> ToolRegistry:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return build_registry(config, ws, builtins=False)


def _pid(text: str, script: Path) -> int:
    """The host pid of the server that answered: it prints its own pid, which inside the
    sandbox's pid namespace (bubblewrap) is the namespace's, so the server process is found
    by its ``NSpid`` line (the newest match: an older generation has been stopped)."""
    match = re.search(r"pid=(\d+)", text)
    assert match, text
    reported = int(match.group(1))
    found: list[tuple[float, int]] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as fh:
                nspid = next((line.split()[1:] for line in fh if line.startswith("NSpid:")), [])
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                cmdline = fh.read()
            started = os.stat(f"/proc/{entry.name}").st_mtime
        except OSError:
            continue
        if nspid and int(nspid[-1]) == reported and os.fsencode(script) in cmdline:
            found.append((started, int(entry.name)))
    return max(found)[1] if found else reported


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


POINTS = {"a": {"x": 0, "y": 0}, "b": {"x": 3, "y": 4}}


@pytest.mark.slow  # fault test: a hung server, a timeout, a restart
@pytest.mark.anyio
async def test_mount_call_timeout_restart_and_stop(tmp_path: Path, server_script: Path) -> None:
    config = _config(server_script)
    registry = _registry(config, tmp_path)
    async with mount_mcp_servers(registry, config) as mounts:
        assert mounts.failures == {}
        assert mounts.tools["fx"] == ["fx__measure", "fx__hang"]
        measure = registry.get("fx__measure")
        hang = registry.get("fx__hang")
        assert measure is not None and hang is not None
        assert measure.tags == ("mcp", "mcp:fx")
        assert measure.concurrency_class is ConcurrencyClass.SAFE  # readOnlyHint
        assert hang.concurrency_class is ConcurrencyClass.EXCLUSIVE
        assert registry.groups["group:mcp:fx"] == ("fx__measure", "fx__hang")
        assert "group:mcp:fx" not in GROUPS  # a mount changes its own registry only
        # The schema is kept whole: $defs and $ref survive.
        schema = measure.input_schema
        assert "Point" in schema["$defs"]
        assert schema["properties"]["a"]["$ref"] == "#/$defs/Point"
        specs = {s.name: s for s in registry.specs()}
        assert specs["fx__measure"].read_only and not specs["fx__measure"].destructive
        assert specs["fx__hang"].destructive

        ok = await registry.execute("fx__measure", POINTS)
        assert ok.success, ok.output
        assert ok.output.startswith("d2=25")
        first_pid = _pid(ok.output, server_script)

        # Our registry validates through the $ref before anything leaves the process.
        bad = await registry.execute("fx__measure", {"a": {"x": 0}, "b": {"x": 1, "y": 1}})
        assert bad.error_kind is ErrorKind.INVALID_ARGUMENTS

        # The hanging tool: a typed timeout within the 3 s budget (generous bound).
        started = time.monotonic()
        hung = await registry.execute("fx__hang", {})
        elapsed = time.monotonic() - started
        assert hung.error_kind is ErrorKind.TIMEOUT, hung.output
        assert elapsed < 15
        # ... and the next call still works, on a fresh server process.
        again = await registry.execute("fx__measure", POINTS)
        assert again.success, again.output
        second_pid = _pid(again.output, server_script)
        assert second_pid != first_pid
        assert mounts.connections["fx"].starts == 2

        # A server that dies: a read-only call is retried once on a fresh process.
        os.kill(second_pid, 9)
        with anyio.fail_after(10):
            while _alive(second_pid):
                await anyio.sleep(0.05)
        revived = await registry.execute("fx__measure", POINTS)
        assert revived.success, revived.output
        third_pid = _pid(revived.output, server_script)
        assert third_pid != second_pid

        # An Exclusive call on a dead server: typed `unavailable`, then a restart.
        os.kill(third_pid, 9)
        with anyio.fail_after(10):
            while _alive(third_pid):
                await anyio.sleep(0.05)
        down = await registry.execute("fx__hang", {"seconds": 0})
        assert down.error_kind is ErrorKind.UNAVAILABLE, down.output
        up = await registry.execute("fx__hang", {"seconds": 0})
        assert up.success, up.output
        last_pid = _pid(up.output, server_script)
    # Every server is stopped on exit.
    with anyio.fail_after(10):
        while _alive(last_pid):
            await anyio.sleep(0.05)
    gone = await registry.execute("fx__measure", POINTS)
    assert gone.error_kind is ErrorKind.UNAVAILABLE


@pytest.mark.anyio
async def test_policy_applies_to_mounted_tools(tmp_path: Path, server_script: Path) -> None:
    config = _config(server_script, tool_policy={"deny": ["fx__hang"]})
    registry = _registry(config, tmp_path)
    async with mount_mcp_servers(registry, config):
        visible = {s.name for s in registry.specs()}
        assert "fx__measure" in visible
        assert "fx__hang" not in visible
        denied = await registry.execute("fx__hang", {"seconds": 0})
        assert denied.error_kind is ErrorKind.POLICY_DENIED
        # A provider policy by group: only this server's tools are visible and callable.
        registry.set_provider_policy(ToolPolicy(deny=["group:mcp:fx"]))
        assert not {s.name for s in registry.specs()} & {"fx__measure", "fx__hang"}
        refused = await registry.execute("fx__measure", POINTS)
        assert refused.error_kind is ErrorKind.POLICY_DENIED


@pytest.mark.anyio
async def test_deferred_read_only_and_broken_servers(tmp_path: Path, server_script: Path) -> None:
    from octos_tools.mcp import mounts as mounts_module

    config = Config.from_mapping(
        {
            "read_only": True,
            "mcp_servers": {
                "fx": {"command": sys.executable, "args": [str(server_script)], "defer": True},
                "broken": {
                    "command": sys.executable,
                    "args": ["-c", "import sys; sys.exit(3)"],
                    "startup_timeout_secs": 10,
                },
            },
        }
    )
    # --read-only: a readOnlyHint is the server's claim; a server outside the read-only
    # sandbox (danger-full-access) keeps no mounted tool.
    loose = Config.from_mapping(
        {
            "read_only": True,
            "mcp_servers": {
                "fx": {
                    "command": sys.executable,
                    "args": [str(server_script)],
                    "sandbox": "danger-full-access",
                }
            },
        }
    )
    unconfined = _registry(loose, tmp_path)
    async with mount_mcp_servers(unconfined, loose) as mounts:
        assert mounts.tools["fx"] == []
        assert "fx__measure" not in unconfined
    assert not mounts_module.server_is_read_only(loose.mcp_servers["fx"])
    # Under the read-only sandbox (the default) the hint counts.
    assert mounts_module.server_is_read_only(config.mcp_servers["fx"])
    registry = _registry(config, tmp_path)
    async with mount_mcp_servers(registry, config) as mounts:
        # The broken server is reported and skipped; the host keeps going.
        assert "broken" in mounts.failures
        # only readOnlyHint tools are mounted.
        assert mounts.tools["fx"] == ["fx__measure"]
        assert "fx__hang" not in registry
        # defer: the group is hidden until a call activates it.
        assert registry.is_deferred("fx__measure")
        assert "fx__measure" not in {s.name for s in registry.specs()}
        result = await registry.execute("fx__measure", POINTS)
        assert result.success, result.output
        assert "fx__measure" in {s.name for s in registry.specs()}


def test_mounted_tool_names() -> None:
    assert mounted_tool_name("files", "read") == "files__read"
    # Invalid characters are replaced and a hash keeps lossy names apart.
    a = mounted_tool_name("files", "read.file")
    b = mounted_tool_name("files", "read_file")
    c = mounted_tool_name("files", "read/file")
    assert b == "files__read_file"
    assert re.fullmatch(r"files__read_file_[0-9a-f]{8}", a)
    assert a != c
    # Long names are cut to 64 characters, unique by their hash.
    long1 = mounted_tool_name("srv", "x" * 100 + "1")
    long2 = mounted_tool_name("srv", "x" * 100 + "2")
    assert len(long1) == len(long2) == 64
    assert long1 != long2
    for name in (a, c, long1, long2):
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name)
    # A taken name is never reused: the newcomer gets another hash suffix.
    taken = {"files__read"}
    other = mounted_tool_name("files", "read", taken)
    assert other != "files__read"
    assert other.startswith("files__read_")
    assert mounted_tool_name("files", "read", taken | {other}) not in taken | {other}


@pytest.mark.anyio
async def test_mount_streamable_http_server(tmp_path: Path) -> None:
    """A ``url`` entry: our own server, served over HTTP in this process, mounted into a
    second registry (``headers`` are sent along)."""
    from octos_tools.function_tool import tool
    from octos_tools.mcp.server import OctosMcpServer

    @tool
    def shout(text: str) -> str:
        """Upper-case the text.

        Args:
            text: the text.
        """
        return text.upper()

    inner = ToolRegistry()
    inner.register(shout)
    server = OctosMcpServer(inner)
    ready: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: server.serve_http(
                "127.0.0.1", 0, token="mount-test-token-0123456789", on_ready=ready.append
            )
        )
        with anyio.fail_after(30):
            while not ready:
                await anyio.sleep(0.05)
        config = Config.from_mapping(
            {
                "mcp_servers": {
                    "web1": {
                        "url": ready[0],
                        "headers": {
                            "X-Test": "1",
                            "Authorization": "Bearer mount-test-token-0123456789",
                        },
                    }
                }
            }
        )
        outer = _registry(config, tmp_path)
        async with mount_mcp_servers(outer, config) as mounts:
            assert mounts.failures == {}
            assert mounts.tools["web1"] == ["web1__shout"]
            result = await outer.execute("web1__shout", {"text": "hi"})
            assert result.success, result.output
            assert result.output == "HI"
            assert result.structured_metadata is not None
            assert result.structured_metadata["mcp_server"] == "web1"
            bad = await outer.execute("web1__shout", {"text": 5})
            assert bad.error_kind is ErrorKind.INVALID_ARGUMENTS
        tg.cancel_scope.cancel()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("lifecycle_defer", "entry", "expect_deferred"),
    [(True, None, True), (False, None, False), (True, False, False), (False, True, True)],
)
async def test_mounted_servers_follow_lifecycle_defer_unless_their_entry_says(
    server_script: Path, lifecycle_defer: bool, entry: bool | None, expect_deferred: bool
) -> None:
    server: dict[str, Any] = {"command": sys.executable, "args": [str(server_script)]}
    if entry is not None:
        server["defer"] = entry
    config = Config.from_mapping(
        {"mcp_servers": {"fx": server}, "lifecycle": {"defer": lifecycle_defer}}
    )
    registry = ToolRegistry()
    async with mount_mcp_servers(registry, config) as mounts:
        names = mounts.tools["fx"]
        assert names
        assert all(registry.is_deferred(n) for n in names) is expect_deferred


SANDBOXED = textwrap.dedent(
    '''
    import os
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("boxed")

    @server.tool()
    def write(path: str) -> str:
        """Try to write a file."""
        try:
            with open(os.path.expanduser(path), "w") as fh:
                fh.write("x")
        except OSError as exc:
            return f"refused: {exc.strerror}"
        return "written"

    @server.tool()
    def read(path: str) -> str:
        """Try to read a file."""
        try:
            with open(os.path.expanduser(path)) as fh:
                return "read: " + fh.read()
        except OSError as exc:
            return f"refused: {exc.strerror}"

    server.run()
    '''
)


@pytest.mark.anyio
@pytest.mark.parametrize("engine", ["bubblewrap", "landlock"])
async def test_mounted_stdio_server_runs_in_its_own_sandbox(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Default ``sandbox = "read-only"``: the workspace is read-only to it, its private
    home and temp folder are writable, a credential store is unreadable."""
    from octos_tools.sandbox import engine_status

    if engine not in {s.name for s in engine_status() if s.usable}:
        pytest.skip(f"{engine} cannot run here")
    from octos_tools.sandbox import _spawn

    real_wrap = _spawn.Sandbox.wrap_server

    def forced(self: Any, *args: Any, **kw: Any) -> Any:
        import dataclasses

        box = _spawn.sandbox_for(dataclasses.replace(self.settings, engine=engine))
        return real_wrap(box, *args, **kw)

    monkeypatch.setattr(_spawn.Sandbox, "wrap_server", forced)
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("SECRET-AWS")
    monkeypatch.setenv("HOME", str(home))
    script = tmp_path / "boxed.py"
    script.write_text(SANDBOXED)
    config = Config.from_mapping(
        {"mcp_servers": {"bx": {"command": sys.executable, "args": [str(script)], "defer": False}}}
    )
    registry = _registry(config, tmp_path)
    ws = tmp_path / "ws"
    async with mount_mcp_servers(registry, config) as mounts:
        assert mounts.failures == {}
        denied = await registry.execute("bx__write", {"path": str(ws / "x.txt")})
        assert "refused" in denied.output and not (ws / "x.txt").exists()
        cached = await registry.execute("bx__write", {"path": "~/cache-file"})
        assert "written" in cached.output and not (home / "cache-file").exists()
        secret = await registry.execute("bx__read", {"path": str(home / ".aws/credentials")})
        assert "SECRET-AWS" not in secret.output
