"""Small test tools shared by the core tests, and the runners of sandboxed commands shared by
the sandbox, command-tool and agent tests (:func:`run_sandboxed`, :func:`command_tools`)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from octos_tools.builtins.runtime import ExecCommandTool, SessionManager, WriteStdinTool
from octos_tools.config import ShellConfig
from octos_tools.errors import ErrorKind, ToolError
from octos_tools.sandbox import SandboxSettings, wrap_command
from octos_tools.tool_types import ConcurrencyClass, JSONObject, Tool, ToolResult
from octos_tools.workspace import Workspace


class EchoTool(Tool):
    """Echoes its ``text`` argument; records every call in ``log``."""

    def __init__(
        self,
        name: str = "echo",
        *,
        tags: tuple[str, ...] = (),
        exclusive: bool = False,
        delay: float = 0.0,
        fail: bool = False,
        log: list[str] | None = None,
        description: str | None = None,
    ) -> None:
        self.name = name
        self.description = description or f"Echo the given text ({name})."
        self.tags = tags
        self.concurrency_class = ConcurrencyClass.EXCLUSIVE if exclusive else ConcurrencyClass.SAFE
        self.input_schema = {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "additionalProperties": False,
        }
        self.delay = delay
        self.fail = fail
        self.log = log if log is not None else []

    async def execute(self, args: JSONObject) -> ToolResult:
        self.log.append(f"start:{self.name}")
        if self.delay:
            await anyio.sleep(self.delay)
        self.log.append(f"end:{self.name}")
        if self.fail:
            raise ToolError(ErrorKind.NOT_FOUND, f"{self.name} failed on purpose")
        return ToolResult.ok(str(args.get("text", self.name)))


def tools(*names: str, **kwargs: Any) -> list[EchoTool]:
    return [EchoTool(n, **kwargs) for n in names]


def run_sandboxed(
    argv: Sequence[str],
    settings: SandboxSettings,
    cwd: Path,
    *,
    workspace: Path | None = None,
    timeout: float = 30,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in ``cwd`` wrapped for ``settings`` (``wrap_command``: the argv, the
    environment, the descriptors to pass and the preexec hook of the spawn, as
    ``exec_command`` uses them), with ``PATH=/usr/bin:/bin``; the spawn's resources are
    released after. ``workspace`` defaults to ``cwd``. Output is captured as text."""
    spawn = wrap_command(list(argv), cwd, {"PATH": "/usr/bin:/bin"}, settings, workspace or cwd)
    try:
        return subprocess.run(
            spawn.argv,
            cwd=cwd,
            env=spawn.env,
            pass_fds=spawn.pass_fds,
            preexec_fn=spawn.preexec,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    finally:
        spawn.close()


@dataclass
class CommandTools:
    """``exec_command`` and ``write_stdin`` over one session table (:func:`command_tools`)."""

    sessions: SessionManager
    exec_command: ExecCommandTool
    write_stdin: WriteStdinTool

    async def start(self, cmd: str, yield_time_ms: int) -> str:
        """Start ``cmd`` as a session (it must still run after ``yield_time_ms``); its id."""
        started = await self.exec_command.run(
            self.exec_command.Args(cmd=cmd, yield_time_ms=yield_time_ms), None
        )
        meta = started.structured_metadata
        assert meta is not None and "session_id" in meta, started.output
        return str(meta["session_id"])

    async def type(self, session_id: str, chars: str, yield_time_ms: int) -> str:
        """Type ``chars`` into the session; what it printed within ``yield_time_ms``."""
        polled = await self.write_stdin.run(
            self.write_stdin.Args(session_id=session_id, chars=chars, yield_time_ms=yield_time_ms),
            None,
        )
        return polled.output


@contextlib.asynccontextmanager
async def command_tools(
    workspace: Workspace | Path,
    sandbox: SandboxSettings | None = None,
    config: ShellConfig | None = None,
    *,
    max_sessions: int | None = None,
) -> AsyncIterator[CommandTools]:
    """``exec_command`` and ``write_stdin`` over ``workspace`` (under ``sandbox`` when
    given), sharing a table of ``max_sessions`` sessions (default: the manager's), closed
    (every session killed) on exit."""
    ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    cfg = config or ShellConfig()
    sessions = SessionManager(max_sessions) if max_sessions else SessionManager()
    tools = CommandTools(
        sessions,
        ExecCommandTool(ws, cfg, sessions, sandbox),
        WriteStdinTool(sessions, cfg),
    )
    try:
        yield tools
    finally:
        await sessions.aclose()
