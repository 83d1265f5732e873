"""The command tools: ``shell``, ``exec_command``, ``write_stdin`` and the ``bash`` alias.

Each command runs as ``sh -c CMD`` in the workspace (or a ``workdir`` inside it) with
``stdin`` closed (sessions get a pipe or a pseudo-terminal), the environment of
:mod:`.environment`, ended as :mod:`.command` says, its text built by :mod:`.capture` and
:mod:`.results`, confined by the tool's sandbox (:mod:`octos_tools.sandbox`: the mode of
``[sandbox]``, ``--sandbox`` or ``read_only``; ``workspace-write`` by default). A command
the sandbox blocks is not a tool error: its output and exit code come back with one line
naming the rule (:func:`octos_tools.sandbox.blocked_note`). The :mod:`.safe_policy` is a
guard rail against slips on top of it.
"""

from __future__ import annotations

import math
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from ...config import ShellConfig
from ...context import ApprovalRequest, ToolContext
from ...errors import ErrorKind, ToolError
from ...sandbox import SandboxSettings
from ...tool import ConcurrencyClass, JSONObject, ToolResult
from ...typed import ToolArgs, TypedTool
from .._base import WorkspaceTool
from .capture import MIN_OUTPUT_BYTES, OutputCapture
from .command import run_to_completion
from .environment import command_env
from .results import completion_result
from .safe_policy import check_command
from .sessions import SessionManager, session_result

if TYPE_CHECKING:
    from ...workspace import Workspace

__all__ = [
    "BYTES_PER_TOKEN",
    "EXEC_DEFAULT_YIELD_MS",
    "MAX_TIMEOUT_SECS",
    "MAX_YIELD_MS",
    "MIN_TIMEOUT_SECS",
    "WRITE_STDIN_DEFAULT_YIELD_MS",
    "BashTool",
    "ExecCommandTool",
    "ShellTool",
    "WriteStdinTool",
]

#: Timeout clamp in seconds (octos: default 120, clamp [1, 600]).
MIN_TIMEOUT_SECS = 1.0
MAX_TIMEOUT_SECS = 600.0
#: Default waits of session mode, in milliseconds (Codex unified exec).
EXEC_DEFAULT_YIELD_MS = 1000
WRITE_STDIN_DEFAULT_YIELD_MS = 250
MAX_YIELD_MS = 300_000
#: ``max_output_tokens`` is converted to bytes at this rate (about 4 bytes per token).
BYTES_PER_TOKEN = 4
#: Room kept under ``config.shell.max_output_bytes`` for the result's own lines.
_HEADER_ROOM = 200


def clamp_timeout(value: float | None, default: float) -> float:
    """A timeout in seconds clamped to [``MIN_TIMEOUT_SECS``, ``MAX_TIMEOUT_SECS``];
    ``default`` when ``value`` is ``None`` or NaN."""
    if value is None or math.isnan(value):
        return default
    return min(MAX_TIMEOUT_SECS, max(MIN_TIMEOUT_SECS, float(value)))


def _check_text(value: str, what: str) -> None:
    if "\x00" in value:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS, f"{what} contains a NUL byte (\\x00), which is not allowed"
        )


def _output_limit(max_output_tokens: int | None, config_cap: int) -> int:
    if max_output_tokens is None:
        return config_cap
    return max(MIN_OUTPUT_BYTES, min(config_cap, max_output_tokens * BYTES_PER_TOKEN))


class _CommandTool(WorkspaceTool):
    """Common parts of the cwd-bound command tools (workspace, policy, running).

    Args:
        workspace: the workspace commands run in (``None``: the call's).
        config: the ``shell`` section of the config.
        sessions: the session table shared by the command tools (default: a private one).
    """

    tags = ("runtime", "code")
    concurrency_class = ConcurrencyClass.EXCLUSIVE

    def __init__(
        self,
        workspace: Workspace | None,
        config: ShellConfig,
        sessions: SessionManager | None = None,
        sandbox: SandboxSettings | None = None,
    ) -> None:
        super().__init__(workspace)
        self.config = config
        self.sessions = (
            sessions
            if sessions is not None
            else SessionManager(config.max_sessions, config.max_sessions_per_client)
        )
        self.sandbox = sandbox

    def sandbox_for_call(self, ctx: ToolContext | None) -> SandboxSettings | None:
        """The sandbox a call's command runs in: ``ctx.sandbox`` when the host set one for
        the call (an approved escalation runs ``danger-full-access``), else the tool's."""
        override = getattr(ctx, "sandbox", None)
        return override if isinstance(override, SandboxSettings) else self.sandbox

    def _cwd(self, ctx: ToolContext | None, workdir: str | None) -> Path:
        ws = self.workspace_for(ctx)
        if workdir is None or not workdir.strip():
            return Path(ws.root)
        _check_text(workdir, "workdir")
        rel = ws.relpath(workdir)
        if not ws.is_dir(workdir):
            if ws.exists(rel):
                if stat.S_ISLNK(ws.stat(rel).st_mode):
                    raise ToolError(
                        ErrorKind.SYMLINK_REFUSED,
                        f"workdir {workdir!r} is a symbolic link; links are not followed: give "
                        "the real folder's path",
                    )
                raise ToolError(ErrorKind.NOT_A_DIRECTORY, f"workdir {workdir!r} is not a folder")
            raise ToolError(ErrorKind.NOT_FOUND, f"workdir {workdir!r} does not exist")
        return Path(ws.root) / rel if rel != "." else Path(ws.root)

    def _command(self, cmd: str | None, alias: str | None) -> str:
        command = cmd if cmd is not None else alias
        if command is None or not command.strip():
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, f"{self.name} needs a non-empty 'cmd' string"
            )
        _check_text(command, "cmd")
        return command

    async def _check_policy(self, ctx: ToolContext | None, command: str) -> None:
        if not self.config.safe_policy:
            return
        verdict, pattern = check_command(command)
        if verdict == "deny":
            raise ToolError(
                ErrorKind.POLICY_DENIED,
                f"command refused by the shell safety policy (it matches {pattern!r}); "
                "this pattern is never run",
                command=command,
                pattern=pattern,
            )
        if verdict == "ask":
            approval = ctx.approval if ctx is not None else None
            if approval is None:
                raise ToolError(
                    ErrorKind.APPROVAL_REQUIRED,
                    f"command needs a person's approval (it matches {pattern!r}) and no "
                    "approval channel is attached; run a safer command or ask the user",
                    command=command,
                    pattern=pattern,
                )
            request = ApprovalRequest(
                tool=self.name, action=command, reason=f"matches the ask pattern {pattern!r}"
            )
            if not await approval(request):
                raise ToolError(
                    ErrorKind.POLICY_DENIED,
                    "the user did not approve this command",
                    command=command,
                    pattern=pattern,
                )

    async def _run(
        self,
        command: str,
        cwd: Path,
        timeout: float,
        limit: int,
        extra_meta: JSONObject | None = None,
        ctx: ToolContext | None = None,
    ) -> ToolResult:
        """Run ``command`` to completion (or its timeout) and build the result."""
        capture = OutputCapture(limit)
        started = time.monotonic()
        proc, exited = await run_to_completion(
            command,
            cwd=cwd,
            env=command_env(),
            capture=capture,
            timeout=timeout,
            sandbox=self.sandbox_for_call(ctx),
            workspace=Path(self.workspace_for(ctx).root),
        )
        if exited:
            self.sessions.keep_leftovers(proc)
        return completion_result(
            proc, exited, timeout, time.monotonic() - started, limit, extra_meta
        )

    async def aclose(self) -> None:
        await self.sessions.aclose()

    async def session_closed(self, session: object) -> None:
        """A host session ended: close the exec sessions it started."""
        await self.sessions.close_owned_by(session)


def _owner(ctx: ToolContext | None) -> object | None:
    """The host session of a call (``ToolContext.session``), if the host has one."""
    return getattr(ctx, "session", None)


class ShellTool(_CommandTool):
    """``shell {command, timeout_secs=120}``: run a command to completion (octos
    ``crates/octos-agent/src/tools/shell.rs``)."""

    name = "shell"
    title = "Run a shell command"
    description = (
        "Run a shell command (sh -c) in the workspace; returns exit code and combined "
        "output (long output keeps its start and end). Timeout 120 s by default (1-600)."
    )

    class Args(ToolArgs):
        command: str = Field(description="The command line, run by sh -c.")
        timeout_secs: int | None = None

    async def run(self, args: ShellTool.Args, ctx: ToolContext | None) -> ToolResult:
        _check_text(args.command, "command")
        if not args.command.strip():
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "command is empty")
        timeout = clamp_timeout(args.timeout_secs, self.config.default_timeout_secs)
        cwd = self._cwd(ctx, None)
        await self._check_policy(ctx, args.command)
        limit = self.config.max_output_bytes - _HEADER_ROOM
        return await self._run(args.command, cwd, timeout, limit, ctx=ctx)


class ExecCommandTool(_CommandTool):
    """``exec_command`` (Codex unified exec): run to completion, or as a session.

    Session mode starts when ``tty`` is true or ``yield_time_ms`` is given: the call waits
    ``yield_time_ms`` (default 1000 ms; less if the command ends) and returns the output so
    far with a ``session_id`` for ``write_stdin``. ``max_output_tokens`` caps the returned
    text at about 4 bytes per token. Accepted but not advertised: ``command`` (alias of
    ``cmd``), Codex's ``shell``, ``login`` and ``justification``.
    """

    name = "exec_command"
    title = "Run a command (sessions)"
    description = (
        "Run a shell command in the workspace (timeout 120 s, max 600); returns exit code "
        "and output. yield_time_ms or tty gives a session_id for write_stdin."
    )

    class Args(ToolArgs):
        model_config = {"json_schema_extra": {"required": ["cmd"]}}  # noqa: RUF012

        cmd: str | None = None
        workdir: str | None = None
        timeout_secs: int | None = None
        yield_time_ms: int | None = Field(None, ge=0)
        max_output_tokens: int | None = Field(None, ge=1)
        tty: bool = False
        command: SkipJsonSchema[str | None] = None
        shell: SkipJsonSchema[str | None] = None
        login: SkipJsonSchema[bool | None] = None
        justification: SkipJsonSchema[str | None] = None

    async def run(self, args: ExecCommandTool.Args, ctx: ToolContext | None) -> ToolResult:
        command = self._command(args.cmd, args.command)
        cwd = self._cwd(ctx, args.workdir)
        timeout = clamp_timeout(args.timeout_secs, self.config.default_timeout_secs)
        cap = self.config.max_output_bytes - _HEADER_ROOM
        limit = _output_limit(args.max_output_tokens, cap)
        await self._check_policy(ctx, command)
        if not args.tty and args.yield_time_ms is None:
            return await self._run(command, cwd, timeout, limit, {"codex_tool": self.name}, ctx)
        wait_ms = EXEC_DEFAULT_YIELD_MS if args.yield_time_ms is None else args.yield_time_ms
        session = await self.sessions.start(
            command,
            cwd=cwd,
            timeout=timeout,
            tty=args.tty,
            buffer_bytes=self.config.max_output_bytes,
            owner=_owner(ctx),
            sandbox=self.sandbox_for_call(ctx),
            workspace=Path(self.workspace_for(ctx).root),
        )
        with session.in_use():
            try:
                text, running, code = await session.poll(min(wait_ms, MAX_YIELD_MS) / 1000, limit)
            except BaseException:
                await self.sessions.close(session.id)
                raise
        return session_result(session, text, running, code, self.sessions, self.name)


class WriteStdinTool(TypedTool):
    """``write_stdin`` (Codex unified exec): send characters to a session, read its new
    output.

    Args:
        sessions: the session table shared with ``exec_command``.
        config: the ``shell`` section of the config.
    """

    name = "write_stdin"
    title = "Write to a running command"
    description = (
        "Write to an exec_command session's stdin ('' just polls); returns output since the "
        "last read."
    )
    tags = ("runtime", "code")
    concurrency_class = ConcurrencyClass.SAFE

    class Args(ToolArgs):
        session_id: str | int
        chars: str = ""
        yield_time_ms: int | None = Field(None, ge=0, description="Default 250.")
        max_output_tokens: int | None = Field(None, ge=1)

    def __init__(self, sessions: SessionManager, config: ShellConfig) -> None:
        self.sessions = sessions
        self.config = config

    async def run(self, args: WriteStdinTool.Args, ctx: ToolContext | None) -> ToolResult:
        raw_id = args.session_id
        session_id = f"exec-{raw_id}" if isinstance(raw_id, int) else raw_id
        session = self.sessions.get(session_id, _owner(ctx))
        if session.busy:
            raise ToolError(
                ErrorKind.UNAVAILABLE, f"session {session_id} is being used by another call"
            )
        cap = self.config.max_output_bytes - _HEADER_ROOM
        limit = _output_limit(args.max_output_tokens, cap)
        wait_ms = WRITE_STDIN_DEFAULT_YIELD_MS if args.yield_time_ms is None else args.yield_time_ms
        with session.in_use():
            if args.chars and session.proc.running:
                await session.proc.write(args.chars.encode("utf-8"))
            text, running, code = await session.poll(min(wait_ms, MAX_YIELD_MS) / 1000, limit)
        return session_result(session, text, running, code, self.sessions, self.name)

    async def aclose(self) -> None:
        await self.sessions.aclose()

    async def session_closed(self, session: object) -> None:
        """A host session ended: close the exec sessions it started."""
        await self.sessions.close_owned_by(session)


class BashTool(_CommandTool):
    """``bash`` (Codex alias): ``{cmd, timeout_ms?, workdir?}`` run to completion."""

    name = "bash"
    title = "Run a bash-style command"
    description = (
        "Run a command (sh -c) in the workspace to completion and return its exit code and "
        "output. timeout_ms defaults to 120000 (1000-600000)."
    )

    class Args(ToolArgs):
        cmd: str | None = Field(None, description="The command line.")
        timeout_ms: int | None = Field(None, description="Timeout in milliseconds.")
        workdir: str | None = Field(None, description="Working folder in the workspace.")
        command: SkipJsonSchema[str | None] = None

    async def run(self, args: BashTool.Args, ctx: ToolContext | None) -> ToolResult:
        command = self._command(args.cmd, args.command)
        cwd = self._cwd(ctx, args.workdir)
        timeout = clamp_timeout(
            None if args.timeout_ms is None else math.ceil(args.timeout_ms / 1000),
            self.config.default_timeout_secs,
        )
        limit = self.config.max_output_bytes - _HEADER_ROOM
        await self._check_policy(ctx, command)
        return await self._run(
            command,
            cwd,
            timeout,
            limit,
            {"codex_tool": "bash", "octos_tool": "exec_command"},
            ctx,
        )
