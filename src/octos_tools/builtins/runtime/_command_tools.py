"""The command tools: ``shell``, ``exec_command``, ``write_stdin`` and the ``bash`` alias.

Each command runs as ``sh -c CMD`` in the workspace (or a ``workdir`` inside it) with
``stdin`` closed (sessions get a pipe or a pseudo-terminal), the environment of
:mod:`._environment`, ended as :mod:`._command` says, its text built by :mod:`._capture` and
:mod:`._completion`, confined by the tool's sandbox (:mod:`octos_tools.sandbox`: the mode of
``[sandbox]``, ``--sandbox`` or ``read_only``; ``workspace-write`` by default). A command
the sandbox blocks is not a tool error: its output and exit code come back with one line
naming the rule (:func:`octos_tools.sandbox.blocked_note`). The :mod:`._safe_policy` is a
guard rail against slips on top of it; what needs a person's yes (an ask rule,
``sandbox_permissions = "require_escalated"``) goes through
:func:`octos_tools.approval.require_approval` before anything starts, and an approved
escalation runs in :data:`._escalation.ESCALATED_MODE` (:meth:`_CommandTool.sandbox_for_call`).

``exec_command`` yields like Codex's unified exec: after ``yield_time_ms`` (default
10 000 ms) a command still running becomes a session (its id comes back, the call ends and
its lock is released) that ``write_stdin`` polls.
"""

from __future__ import annotations

import math
import stat
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from ..._progress import heartbeat
from ...approval import require_approval
from ...config import ShellConfig
from ...context import ApprovalRequest, ToolContext
from ...errors import ErrorKind, ToolError
from ...sandbox import SandboxMode, SandboxSettings
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult, ToolSpec
from ...typed import ToolArgs, TypedTool
from .._base import WorkspaceTool
from ._capture import MIN_OUTPUT_BYTES, OutputCapture
from ._command import run_to_completion
from ._completion import completion_result
from ._environment import command_env
from ._escalation import ESCALATED_MODE, sandbox_mode_for
from ._exec_sessions import SessionManager, session_result
from ._safe_policy import check_command

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
#: Default waits, in milliseconds (Codex unified exec: exec_command 10 s, write_stdin 250 ms).
EXEC_DEFAULT_YIELD_MS = 10_000
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
    return max(MIN_OUTPUT_BYTES, min(config_cap, max(1, max_output_tokens) * BYTES_PER_TOKEN))


class _CommandTool(WorkspaceTool):
    """Common parts of the cwd-bound command tools (workspace, policy, running).

    Args:
        workspace: the workspace commands run in (``None``: the call's).
        config: the ``shell`` section of the config.
        sessions: the session table shared by the command tools (default: a private one).
        approval_policy: ``"on-request"`` or ``"never"`` (the config's ``approval_policy``).
    """

    tags = ("runtime", "code")
    concurrency_class = ConcurrencyClass.EXCLUSIVE

    def __init__(
        self,
        workspace: Workspace | None,
        config: ShellConfig,
        sessions: SessionManager | None = None,
        sandbox: SandboxSettings | None = None,
        approval_policy: str = "on-request",
    ) -> None:
        super().__init__(workspace)
        self.config = config
        self.sessions = (
            sessions
            if sessions is not None
            else SessionManager(config.max_sessions, config.max_sessions_per_client)
        )
        self.sandbox = sandbox
        self.approval_policy = approval_policy

    def sandbox_for_call(
        self, ctx: ToolContext | None, mode: str | None = None
    ) -> SandboxSettings | None:
        """The sandbox a call's command runs in: the tool's; ``mode`` is
        :meth:`_check_policy`'s answer, and an approved escalation
        (:data:`._escalation.ESCALATED_MODE`) runs that one command in ``danger-full-access``.
        ``ctx`` is the call's context (kept for hosts that subclass this per call)."""
        del ctx
        box = self.sandbox
        if mode == ESCALATED_MODE and box is not None and box.confined:
            return replace(box, mode=SandboxMode.DANGER_FULL_ACCESS, reason="approved escalation")
        return box

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

    def _approval_request(
        self,
        command: str,
        cwd: Path,
        *,
        escalate: bool = False,
        justification: str | None = None,
    ) -> ApprovalRequest | None:
        """What ``command`` needs a person to approve, or ``None``.

        Raises:
            ToolError: ``policy_denied`` when a SafePolicy deny rule matches.
        """
        verdict, pattern = check_command(command) if self.config.safe_policy else ("allow", None)
        if verdict == "deny":
            raise ToolError(
                ErrorKind.POLICY_DENIED,
                f"command refused by the shell safety policy (it matches {pattern!r}); "
                "this rule is never run, approved or not",
                command=command,
                pattern=pattern,
            )
        if verdict != "ask" and not escalate:
            return None
        reasons = []
        if escalate:
            reasons.append("it asks to run outside the sandbox: require_escalated")
        if verdict == "ask":
            reasons.append(f"it matches the safety rule {pattern!r}")
        return ApprovalRequest(
            tool=self.name,
            action=command,
            reason="; ".join(reasons),
            kind="escalation" if escalate else "ask_pattern",
            justification=justification,
            cwd=str(cwd),
            sandbox_mode=ESCALATED_MODE if escalate else None,
        )

    async def _check_policy(
        self,
        ctx: ToolContext | None,
        command: str,
        cwd: Path,
        *,
        escalate: bool = False,
        justification: str | None = None,
    ) -> str | None:
        """Apply the SafePolicy and ask for what needs a person's yes; return the sandbox
        mode the command runs in (:func:`._escalation.sandbox_mode_for`).

        One approval covers both an ask rule and an escalation of the same command.

        Raises:
            ToolError: ``policy_denied`` (a deny rule), ``approval_required`` (nobody to
                ask, or ``approval_policy = "never"``), ``approval_denied`` (a no).
        """
        request = self._approval_request(
            command, cwd, escalate=escalate, justification=justification
        )
        if request is not None:
            await require_approval(ctx, request, policy=self.approval_policy)
        return sandbox_mode_for(ctx, escalated=escalate)

    def approval_request(
        self, arguments: Mapping[str, Any], ctx: ToolContext | None = None
    ) -> ApprovalRequest | None:
        """What a call with ``arguments`` would ask a person to approve, without running
        anything (``None``: nothing; hosts whose framework approves before the call use it,
        see :func:`octos_tools.approval.approval_for_call`).

        Raises:
            ToolError / pydantic.ValidationError: the arguments are refused (the call will
                say so itself).
        """
        args = self.Args.model_validate(dict(arguments))
        cmd = getattr(args, "cmd", None)
        text = cmd if cmd is not None else getattr(args, "command", None)
        if not isinstance(text, str) or not text.strip():
            return None
        workdir = getattr(args, "workdir", None)
        escalate = getattr(args, "sandbox_permissions", "use_default") == "require_escalated"
        return self._approval_request(
            text,
            self._cwd(ctx, workdir),
            escalate=escalate,
            justification=getattr(args, "justification", None),
        )

    async def _run(
        self,
        command: str,
        cwd: Path,
        timeout: float,
        limit: int,
        extra_meta: JSONObject | None = None,
        ctx: ToolContext | None = None,
        sandbox_mode: str | None = None,
    ) -> ToolResult:
        """Run ``command`` to completion (or its timeout) and build the result;
        ``sandbox_mode`` is :meth:`_check_policy`'s answer (``None``: the configured mode).
        While it runs, a progress heartbeat goes to ``ctx``'s reporter
        (:mod:`octos_tools._progress`)."""
        capture = OutputCapture(limit)
        started = time.monotonic()
        async with heartbeat(ctx, f"running: {command[:80]}", total=timeout):
            proc, exited = await run_to_completion(
                command,
                cwd=cwd,
                env=command_env(),
                capture=capture,
                timeout=timeout,
                sandbox=self.sandbox_for_call(ctx, sandbox_mode),
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
        timeout_secs: int | None = Field(None, description="Seconds before it is killed.")

    async def run(self, args: ShellTool.Args, ctx: ToolContext | None) -> ToolResult:
        _check_text(args.command, "command")
        if not args.command.strip():
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "command is empty")
        timeout = clamp_timeout(args.timeout_secs, self.config.default_timeout_secs)
        cwd = self._cwd(ctx, None)
        mode = await self._check_policy(ctx, args.command, cwd)
        limit = self.config.max_output_bytes - _HEADER_ROOM
        return await self._run(args.command, cwd, timeout, limit, ctx=ctx, sandbox_mode=mode)


class ExecCommandTool(_CommandTool):
    """``exec_command`` (Codex unified exec): run a command; still running after
    ``yield_time_ms`` (default 10 000 ms, Codex's), it becomes a session.

    The call waits ``yield_time_ms`` (less if the command ends) and returns the exit code
    and output, or, when the command still runs, the output so far with a ``session_id``:
    the call ends there (its lock is released, other calls proceed) and ``write_stdin``
    polls or types into the session. ``tty`` runs it on a pseudo-terminal.
    ``max_output_tokens`` caps the returned text at about 4 bytes per token.
    ``sandbox_permissions = "require_escalated"`` (with a ``justification`` question)
    asks a person, through the approval channel, to run this one command outside the
    sandbox (Codex's parameters). Accepted but not advertised: ``command`` (alias of
    ``cmd``), Codex's ``shell`` and ``login``.
    """

    name = "exec_command"
    title = "Run a command (sessions)"
    description = (
        "Run a shell command in the workspace: exit code and output, or after yield_time_ms "
        "a session_id for write_stdin."
    )

    class Args(ToolArgs):
        model_config = {"json_schema_extra": {"required": ["cmd"]}}  # noqa: RUF012

        cmd: str | None = Field(None, description="Run by sh -c.")
        workdir: str | None = Field(None, description="Folder to run in.")
        timeout_secs: int | None = Field(None, description="Kill after (120, max 600).")
        yield_time_ms: int | None = Field(
            None, description="Wait before becoming a session (10000)."
        )
        max_output_tokens: int | None = Field(None, description="Output cap.")
        tty: bool = Field(False, description="Use a pty.")
        sandbox_permissions: Literal["use_default", "require_escalated"] | None = Field(
            None, description="require_escalated: ask user to run unsandboxed."
        )
        justification: str | None = Field(None, description="Why, for require_escalated.")
        command: SkipJsonSchema[str | None] = None
        shell: SkipJsonSchema[str | None] = None
        login: SkipJsonSchema[bool | None] = None

    async def run(self, args: ExecCommandTool.Args, ctx: ToolContext | None) -> ToolResult:
        command = self._command(args.cmd, args.command)
        cwd = self._cwd(ctx, args.workdir)
        timeout = clamp_timeout(args.timeout_secs, self.config.default_timeout_secs)
        cap = self.config.max_output_bytes - _HEADER_ROOM
        limit = _output_limit(args.max_output_tokens, cap)
        if args.justification is not None:
            _check_text(args.justification, "justification")
        mode = await self._check_policy(
            ctx,
            command,
            cwd,
            escalate=args.sandbox_permissions == "require_escalated",
            justification=args.justification,
        )
        wait_ms = EXEC_DEFAULT_YIELD_MS if args.yield_time_ms is None else args.yield_time_ms
        session = await self.sessions.start(
            command,
            cwd=cwd,
            timeout=timeout,
            tty=args.tty,
            buffer_bytes=self.config.max_output_bytes,
            owner=_owner(ctx),
            sandbox=self.sandbox_for_call(ctx, mode),
            workspace=Path(self.workspace_for(ctx).root),
        )
        session.escalated = mode == ESCALATED_MODE
        yield_secs = max(0, min(wait_ms, MAX_YIELD_MS)) / 1000
        # progress heartbeats while the call waits (the default call waits 10 s)
        async with heartbeat(ctx, f"running: {command[:80]}", total=timeout):
            with session.in_use():
                try:
                    if not args.tty and args.yield_time_ms is None:
                        # the plain call: an end within the yield reads as a finished command
                        if await session.wait_exit(yield_secs):
                            self.sessions.forget(session.id)
                            return completion_result(
                                session.proc,
                                session.proc.killed_by != "timeout",
                                timeout,
                                time.monotonic() - session.created,
                                limit,
                                {
                                    "codex_tool": self.name,
                                    **({"sandbox_mode": mode} if mode else {}),
                                },
                            )
                        yield_secs = 0
                    text, running, code = await session.poll(yield_secs, limit)
                except BaseException:
                    await self.sessions.close(session.id)
                    raise
        return session_result(session, text, running, code, self.sessions, self.name)


class WriteStdinTool(TypedTool):
    """``write_stdin`` (Codex unified exec): send characters to a session, read its new
    output.

    What it types is asked about like a command (docs/approvals.md): each complete line
    goes through the SafePolicy (a deny rule refuses, an ask rule asks a person: ``rm -rf``
    typed into a shell is the same slip as the command), and any input into a session that
    runs outside the sandbox (an approved ``require_escalated``) is asked again, since the
    approval covered the command that started it, not what is typed into it later.

    Args:
        sessions: the session table shared with ``exec_command``.
        config: the ``shell`` section of the config.
        approval_policy: ``"on-request"`` or ``"never"`` (the config's ``approval_policy``).
    """

    name = "write_stdin"
    title = "Write to a running command"
    description = (
        "Type into an exec_command session ('' polls); returns new output, and the exit "
        "code once ended."
    )
    tags = ("runtime", "code")
    concurrency_class = ConcurrencyClass.SAFE

    class Args(ToolArgs):
        session_id: str | int = Field(description="From exec_command.")
        chars: str = Field("", description="Text to send ('\\n' = Enter).")
        yield_time_ms: int | None = Field(None, description="Wait for output (250).")
        max_output_tokens: int | None = Field(None, description="Output cap.")

    def __init__(
        self, sessions: SessionManager, config: ShellConfig, approval_policy: str = "on-request"
    ) -> None:
        self.sessions = sessions
        self.config = config
        self.approval_policy = approval_policy

    def _input_request(self, session: Any, chars: str) -> ApprovalRequest | None:
        """What typing ``chars`` into ``session`` needs a person to approve, or ``None``.

        Raises:
            ToolError: ``policy_denied`` when a typed line matches a SafePolicy deny rule.
        """
        if not chars:
            return None
        reasons: list[str] = []
        if session.escalated:
            reasons.append(
                "the session runs outside the sandbox (an approved require_escalated "
                "command): what is typed into it is asked each time"
            )
        if self.config.safe_policy:
            pieces = (session.typed_tail + chars).replace("\r", "\n").split("\n")
            for line in pieces[:-1]:  # complete lines only
                verdict, pattern = check_command(line)
                if verdict == "deny":
                    raise ToolError(
                        ErrorKind.POLICY_DENIED,
                        f"typed line refused by the shell safety policy (it matches "
                        f"{pattern!r}); this rule is never run, approved or not",
                        pattern=pattern,
                    )
                if verdict == "ask":
                    reasons.append(f"a typed line matches the safety rule {pattern!r}")
        if not reasons:
            return None
        return ApprovalRequest(
            tool=self.name,
            action=f"type into session {session.id} ({session.command}): {chars}",
            reason="; ".join(dict.fromkeys(reasons)),
            kind="escalation" if session.escalated else "ask_pattern",
            sandbox_mode=ESCALATED_MODE if session.escalated else None,
        )

    def approval_request(
        self, arguments: Mapping[str, Any], ctx: ToolContext | None = None
    ) -> ApprovalRequest | None:
        """What a call with ``arguments`` would ask a person (``None``: nothing), without
        typing anything (see :func:`octos_tools.approval.approval_for_call`).

        Raises:
            ToolError / pydantic.ValidationError: the call will be refused anyway.
        """
        args = self.Args.model_validate(dict(arguments))
        raw_id = args.session_id
        session_id = f"exec-{raw_id}" if isinstance(raw_id, int) else raw_id
        return self._input_request(self.sessions.get(session_id, _owner(ctx)), args.chars)

    def spec(self) -> ToolSpec:
        """Safe to run beside other calls (a poll must not wait behind a long one), but
        not read-only: the characters it sends can be any command (``readOnlyHint`` false,
        ``destructiveHint`` true; ``--read-only`` removes it)."""
        return replace(super().spec(), read_only=False, destructive=True)

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
        request = self._input_request(session, args.chars) if session.proc.running else None
        if request is not None:
            await require_approval(ctx, request, policy=self.approval_policy)
        with session.in_use():
            if args.chars and session.proc.running:
                await session.proc.write(args.chars.encode("utf-8"))
                tail = (session.typed_tail + args.chars).replace("\r", "\n")
                session.typed_tail = tail.rsplit("\n", 1)[-1][-4096:]
            text, running, code = await session.poll(
                max(0, min(wait_ms, MAX_YIELD_MS)) / 1000, limit
            )
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
        mode = await self._check_policy(ctx, command, cwd)
        return await self._run(
            command,
            cwd,
            timeout,
            limit,
            {"codex_tool": "bash", "octos_tool": "exec_command"},
            ctx=ctx,
            sandbox_mode=mode,
        )
