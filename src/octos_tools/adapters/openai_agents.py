"""octos-tools in the OpenAI Agents SDK (extra ``openai-agents``).

Three pieces, each usable alone::

    from agents import Agent, ApplyPatchTool, Runner, ShellTool
    from octos_tools.adapters.openai_agents import OctosAgentTools, ShellExecutor, WorkspaceEditor

    octos = OctosAgentTools(registry_or_session)
    agent = Agent(name="coder", tools=[*octos.tools,
                                       ApplyPatchTool(editor=WorkspaceEditor(workspace)),
                                       ShellTool(executor=ShellExecutor(workspace))])
    await Runner.run(agent, "...", run_config=octos.run_config())

* :class:`OctosAgentTools`: one SDK ``FunctionTool`` per tool of the session's registry. A
  tool is *enabled* (sent to the model) exactly when the session lists it: its ``is_enabled``
  reads the session's visible specs each turn, and the session's housekeeping
  (:meth:`~octos_tools.session.ToolSession.before_model_request`: LRU tick and eviction) runs
  once per model request. ``on_invoke_tool`` hands the model's raw JSON string to
  :meth:`ToolSession.call`, the only validation (``strict_json_schema=False``: our schemas are
  used as they are and are not OpenAI-strict). A failed result is returned as text starting
  ``Error [kind]:``; the SDK has no retry convention, so the model reads it and adapts.
  Deferred tools are disabled until activated: through the registry's discovery tools
  (``tool_search`` with ``select:NAME``, ``activate_tools``), or by calling one by name,
  which the SDK reports as "tool not found";
  :meth:`OctosAgentTools.run_config` sets ``tool_not_found_behavior="return_error_to_model"``
  and a ``tool_error_formatter`` that activates the deferred tool in the session and tells
  the model to call it again (one extra turn). Without that run config the SDK ends the run
  with ``ModelBehaviorError`` on such a call, as it does for any unknown name.
* :class:`WorkspaceEditor`: an ``agents.ApplyPatchEditor`` for OpenAI's native
  ``apply_patch`` tool, applying each V4A operation with our patch engine
  (:mod:`octos_tools.builtins.patch`) through :class:`~octos_tools.workspace.Workspace`:
  paths confined to the workspace (a path leaving it, a symlink or ``.git`` is refused), each
  operation atomic, encoding, BOM, line endings and final newline of an updated file kept.
* :class:`ShellExecutor`: a ``ShellTool`` executor running each command with our command
  runtime (:mod:`octos_tools.builtins.runtime`): ``sh -c`` in the workspace, everything it
  started ended on timeout (cgroup kill, else the process-group walk), output capped (head
  and tail kept), secret-looking and loader-injection environment variables removed, and the
  octos SafePolicy deny / ask patterns applied.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ErrorKind, ToolError
from ._shared import (
    activate,
    approved_ctx,
    as_session,
    deferred_names,
    failure_text,
    import_extra,
    listed_specs,
    pending_approval,
    sub_agent_session,
)

if TYPE_CHECKING:
    from agents import FunctionTool, RunConfig
    from agents.editor import ApplyPatchOperation, ApplyPatchResult
    from agents.run_config import ToolErrorFormatterArgs
    from agents.tool import ShellCommandRequest, ShellResult
    from agents.tool_context import ToolContext as AgentsToolContext

    from ..builtins.runtime import RunningCommand
    from ..context import ApprovalRequest
    from ..registry import ToolRegistry
    from ..session import ToolSession
    from ..tool_types import ToolResult, ToolSpec
    from ..workspace import Workspace

__all__ = ["OctosAgentTools", "ShellExecutor", "WorkspaceEditor"]

import_extra("agents", "openai-agents")


class OctosAgentTools:
    """SDK function tools over an octos-tools :class:`~octos_tools.session.ToolSession`.

    Args:
        source: the session to serve, or a registry (a new session is made over it).

    Attributes:
        session: the session every call goes through.
        tools: one ``agents.FunctionTool`` per tool of the registry (as of construction or
            the last :meth:`refresh`); each is enabled only while the session lists it.
    """

    def __init__(self, source: ToolSession | ToolRegistry) -> None:
        self.session = as_session(source)
        self._owns_session = self.session is not source
        self._tick_due = True
        self._asked: dict[str, ApprovalRequest] = {}
        self.tools: list[FunctionTool] = [self._function_tool(name) for name in self._names()]

    async def aclose(self) -> None:
        """Close the session this object made over a registry (its view of the registry;
        the registry itself stays open). A session passed in is left to its owner."""
        if self._owns_session:
            await self.session.aclose()

    def for_sub_agent(self, allowed_tools: Iterable[str] = ()) -> OctosAgentTools:
        """The tools of a sub-agent, for ``Agent.as_tool`` (the SDK's agents as tools).

        It is a session over
        :func:`octos_tools.agent.spawn.child_registry` of this session's registry (its
        policies and settings kept, ``allowed_tools`` as a hard allow list, octos's own
        sub-agent tools removed) with ``spawn_depth + 1``. The new object owns that session
        (:meth:`aclose` closes it).
        """
        child = OctosAgentTools(sub_agent_session(self.session, allowed_tools))
        child._owns_session = True
        return child

    def _names(self) -> list[str]:
        return list(self.session.registry.names())

    def refresh(self) -> list[FunctionTool]:
        """Add function tools for tools registered since; returns :attr:`tools` (the same
        list object, extended in place)."""
        known = {tool.name for tool in self.tools}
        self.tools.extend(self._function_tool(n) for n in self._names() if n not in known)
        return self.tools

    def _function_tool(self, name: str) -> FunctionTool:
        from agents import FunctionTool

        tool = self.session.get(name)
        assert tool is not None
        spec = tool.spec_for(self.session.registry)

        async def invoke(ctx: AgentsToolContext[Any], raw_arguments: str) -> Any:
            self._tick_due = True
            # the SDK invokes a call that needed approval only once it was approved
            asked = self._asked.pop(ctx.tool_call_id, None)
            call_ctx = approved_ctx(self.session, [asked]) if asked is not None else None
            result = await self.session.call(
                name, raw_arguments, tool_call_id=ctx.tool_call_id, ctx=call_ctx
            )
            return _output(result)

        async def needs_approval(run_ctx: Any, params: dict[str, Any], call_id: str) -> bool:
            request = pending_approval(self.session, name, params)
            if request is None:
                return False
            self._asked[call_id] = request
            return True

        def enabled(run_context: Any, agent: Any) -> bool:
            listed = self.visible_specs().get(name)
            if listed is None:
                return False
            # descriptions may follow the session's state (a discovery tool listing the deferred)
            function_tool.description = listed.description
            return True

        function_tool = FunctionTool(
            name=name,
            description=spec.description,
            params_json_schema=dict(spec.input_schema),
            on_invoke_tool=invoke,
            strict_json_schema=False,
            is_enabled=enabled,
            # only tools that can ask (the command tools): the SDK also stops for approval
            # when it cannot parse the arguments of a tool with an approval policy
            needs_approval=needs_approval if hasattr(tool, "approval_request") else False,
        )
        return function_tool

    def visible_specs(self) -> dict[str, ToolSpec]:
        """The specs the session lists now, by name; the first read after a tool call (or
        the first ever) runs the session's before-request housekeeping."""
        request = self._tick_due
        self._tick_due = False
        return {spec.name: spec for spec in listed_specs(self.session, request=request)}

    def tool_error_formatter(self, args: ToolErrorFormatterArgs[Any]) -> str | None:
        """A ``RunConfig.tool_error_formatter``: for a call to a deferred tool (reported by the
        SDK as ``tool_not_found``) activate it in the session and tell the model to call it
        again; ``None`` (the SDK's own message) for everything else."""
        if args.kind != "tool_not_found" or args.tool_name not in deferred_names(self.session):
            return None
        activated = activate(self.session, [args.tool_name])
        self._tick_due = True
        also = [n for n in activated if n != args.tool_name]
        extra = f" (with {', '.join(also)})" if also else ""
        return (
            f"Error [unknown_tool]: tool {args.tool_name!r} was not loaded; it is loaded "
            f"now{extra}. Call it again with the same arguments."
        )

    def run_config(self, **kwargs: Any) -> RunConfig:
        """An ``agents.RunConfig`` (``kwargs`` passed on) whose unknown-tool handling
        activates deferred tools: ``tool_not_found_behavior="return_error_to_model"`` and
        :meth:`tool_error_formatter` (chained before a ``tool_error_formatter`` given in
        ``kwargs``)."""
        from agents import RunConfig

        theirs = kwargs.pop("tool_error_formatter", None)

        def formatter(args: ToolErrorFormatterArgs[Any]) -> Any:
            ours = self.tool_error_formatter(args)
            if ours is not None or theirs is None:
                return ours
            return theirs(args)

        kwargs.setdefault("tool_not_found_behavior", "return_error_to_model")
        return RunConfig(tool_error_formatter=formatter, **kwargs)


def _output(result: ToolResult) -> Any:
    """What the SDK sends back: text, or text plus ``ToolOutputImage`` for images."""
    if not result.success:
        return failure_text(result)
    if not result.content:
        return result.output
    from agents import ToolOutputImage, ToolOutputText

    from ..tool_types import ImageContent

    items: list[Any] = [ToolOutputText(text=result.output)] if result.output else []
    for block in result.content:
        if isinstance(block, ImageContent):
            data = base64.b64encode(block.data).decode("ascii")
            items.append(ToolOutputImage(image_url=f"data:{block.mime_type};base64,{data}"))
        else:
            uri = getattr(block, "uri", None) or block.mime_type
            text = getattr(block, "text", None)
            items.append(ToolOutputText(text=f"[{uri}]" + (f"\n{text}" if text else "")))
    return items


# ------------------------------------------------------------------ native apply_patch


def _workspace_of(source: Workspace | ToolSession | ToolRegistry | str | os.PathLike[str]) -> Any:
    from ..registry import ToolRegistry
    from ..session import ToolSession
    from ..workspace import Workspace

    if isinstance(source, Workspace):
        return source
    if isinstance(source, ToolSession):
        source = source.registry
    if isinstance(source, ToolRegistry):
        if source.workspace is None:
            raise ValueError("the registry has no workspace")
        return source.workspace
    return Workspace(Path(source))


def _sandbox_of(source: object) -> Any:
    """The commands' sandbox of a registry or session (its ``exec_command``'s), else the
    default one (``workspace-write``)."""
    from ..registry import ToolRegistry
    from ..sandbox import SandboxSettings
    from ..session import ToolSession

    if isinstance(source, ToolSession):
        source = source.registry
    if isinstance(source, ToolRegistry):
        found = getattr(source.get("exec_command"), "sandbox", None)
        if isinstance(found, SandboxSettings):
            return found
    return SandboxSettings()


class WorkspaceEditor:
    """An ``agents.ApplyPatchEditor`` backed by the workspace and our patch engine.

    Each operation of the model's ``apply_patch`` call becomes one Codex patch section
    (``*** Add File`` / ``*** Update File`` [``*** Move to``] / ``*** Delete File``; OpenAI's
    V4A diff is that section's body), parsed by :func:`octos_tools.builtins.patch.parse_patch`,
    planned in memory by :func:`~octos_tools.builtins.patch.plan_patch` and written with
    :meth:`Workspace.apply_changes` (atomic: on any failure nothing changes).

    The SDK calls the editor once per operation, so atomicity is per operation: when the
    second operation of a call fails, the first one stays applied (the protocol has no
    transaction across operations).

    Args:
        workspace: a :class:`~octos_tools.workspace.Workspace`, a session or registry (its
            workspace), or a folder path.

    Returns (each method):
        ``agents.ApplyPatchResult`` with ``status="completed"`` and a summary, or
        ``status="failed"`` and ``Error [kind]: message`` (``path_outside_workspace``,
        ``not_found``, ``patch_conflict``, ``invalid_patch``, ...). Never raises for a bad
        operation.
    """

    def __init__(
        self, workspace: Workspace | ToolSession | ToolRegistry | str | os.PathLike[str]
    ) -> None:
        self.workspace = _workspace_of(workspace)

    def create_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        """Create (or overwrite) ``operation.path`` from a diff of ``+`` lines."""
        body = _body(operation.diff)
        return self._apply(f"*** Add File: {operation.path}\n{body}", f"Created {operation.path}")

    def update_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        """Apply the V4A hunks of ``operation.diff`` to ``operation.path`` (and move it to
        ``operation.move_to`` when given)."""
        head = f"*** Update File: {operation.path}\n"
        if operation.move_to:
            head += f"*** Move to: {operation.move_to}\n"
        done = f"Updated {operation.path}" + (
            f" and moved it to {operation.move_to}" if operation.move_to else ""
        )
        return self._apply(head + _body(operation.diff), done)

    def delete_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        """Delete the regular file ``operation.path``."""
        return self._apply(f"*** Delete File: {operation.path}\n", f"Deleted {operation.path}")

    def _apply(self, section: str, done: str) -> ApplyPatchResult:
        from agents.editor import ApplyPatchResult

        from ..builtins.patch import parse_patch, plan_patch

        try:
            ops = parse_patch(f"*** Begin Patch\n{section}*** End Patch\n")
            changes, _planned = plan_patch(self.workspace, ops)
            if changes:
                self.workspace.apply_changes(changes)
        except ToolError as exc:
            return ApplyPatchResult(status="failed", output=f"Error [{exc.kind.value}]: {exc}")
        return ApplyPatchResult(status="completed", output=done)


def _body(diff: str | None) -> str:
    text = diff or ""
    return text if not text or text.endswith("\n") else text + "\n"


# ------------------------------------------------------------------ native shell


class ShellExecutor:
    """An ``agents.ShellTool`` executor running commands with our command runtime.

    Each command of the call runs as ``sh -c`` in the workspace root with
    :func:`octos_tools.builtins.runtime.command_env` (secrets and loader-injection variables
    removed, pagers and prompts off), in its own process group (and cgroup where cgroup v2 is
    writable), ended as a whole at its timeout; stdout and stderr are captured together (the
    order a terminal shows, control sequences cleaned) into ``stdout``. Commands run one
    after another; after a timeout the remaining ones are not started. Processes a command
    left running in the background are ended by :meth:`aclose`. Every command runs in the
    command sandbox (docs/sandbox.md), as ``exec_command`` does: a registry's or session's
    own (its ``exec_command``'s ``[sandbox]``), else the default ``workspace-write``; where
    no engine can enforce it the command answers ``sandbox_unavailable`` and does not run.

    Args:
        workspace: a :class:`~octos_tools.workspace.Workspace`, a session or registry (its
            workspace and its commands' sandbox), or a folder path.
        default_timeout: seconds per command when the call gives no ``timeout_ms``
            (clamped to 1–600 like ``shell``).
        max_output_bytes: output kept per command (head 70 %, tail 30 %), also capped by
            the call's ``max_output_length``.
        safe_policy: apply the octos SafePolicy: a *deny* pattern refuses the command, an
            *ask* pattern needs ``approve``.
        approve: ``async (command) -> bool`` asked for *ask* commands; ``None`` refuses them.
        sandbox: the :class:`~octos_tools.sandbox.SandboxSettings` to run in, overriding
            the registry's (``SandboxSettings(mode=SandboxMode.DANGER_FULL_ACCESS)``: none).

    Returns (``__call__``):
        ``agents.ShellResult`` with one ``ShellCommandOutput`` per command started or refused:
        ``outcome.type == "exit"`` with the exit code (negative: killed by that signal),
        ``"timeout"`` when the command was killed at its timeout; a refused command has
        ``exit_code=None`` and ``Error [policy_denied|approval_required]: ...`` in stderr.
    """

    def __init__(
        self,
        workspace: Workspace | ToolSession | ToolRegistry | str | os.PathLike[str],
        *,
        default_timeout: float = 120.0,
        max_output_bytes: int = 50_000,
        safe_policy: bool = True,
        approve: Callable[[str], Awaitable[bool]] | None = None,
        sandbox: Any = None,
    ) -> None:
        from ..sandbox import SandboxSettings

        self.workspace = _workspace_of(workspace)
        if sandbox is None:
            sandbox = _sandbox_of(workspace)
        if not isinstance(sandbox, SandboxSettings):
            raise TypeError("sandbox must be a SandboxSettings (or None: the registry's)")
        self.sandbox = sandbox
        self.default_timeout = default_timeout
        self.max_output_bytes = max_output_bytes
        self.safe_policy = safe_policy
        self.approve = approve
        self._leftovers: list[RunningCommand] = []

    async def __call__(self, request: ShellCommandRequest) -> ShellResult:
        """Run ``request.data.action.commands`` in order."""
        from agents.tool import ShellCallOutcome, ShellCommandOutput, ShellResult

        action = request.data.action
        timeout = self.default_timeout
        if action.timeout_ms is not None:
            timeout = action.timeout_ms / 1000.0
        timeout = min(600.0, max(1.0, timeout))
        limit = self.max_output_bytes
        if action.max_output_length is not None:
            limit = min(limit, max(1, action.max_output_length))
        outputs: list[ShellCommandOutput] = []
        for command in action.commands:
            refusal = await self._refusal(command)
            if refusal is not None:
                outputs.append(
                    ShellCommandOutput(
                        stderr=refusal,
                        outcome=ShellCallOutcome(type="exit", exit_code=None),
                        command=command,
                    )
                )
                continue
            text, code, timed_out, elapsed = await self._run(command, timeout, limit)
            outputs.append(
                ShellCommandOutput(
                    stdout=text,
                    outcome=ShellCallOutcome(
                        type="timeout" if timed_out else "exit", exit_code=code
                    ),
                    command=command,
                    provider_data={"duration_secs": round(elapsed, 3)},
                )
            )
            if timed_out:
                break
        return ShellResult(output=outputs, max_output_length=action.max_output_length)

    async def _refusal(self, command: str) -> str | None:
        from ..builtins.runtime import check_command

        if not command.strip():
            return f"Error [{ErrorKind.INVALID_ARGUMENTS.value}]: the command is empty"
        if "\x00" in command:
            return f"Error [{ErrorKind.INVALID_ARGUMENTS.value}]: the command contains a NUL byte"
        if not self.safe_policy:
            return None
        verdict, pattern = check_command(command)
        if verdict == "deny":
            return (
                f"Error [{ErrorKind.POLICY_DENIED.value}]: command refused by the shell safety "
                f"policy (it matches {pattern!r}); this pattern is never run"
            )
        if verdict == "ask":
            if self.approve is None:
                return (
                    f"Error [{ErrorKind.APPROVAL_REQUIRED.value}]: command needs a person's "
                    f"approval (it matches {pattern!r}) and no approval callback is attached"
                )
            if not await self.approve(command):
                return (
                    f"Error [{ErrorKind.APPROVAL_DENIED.value}]: the user did not approve this "
                    "command"
                )
        return None

    async def _run(
        self, command: str, timeout: float, limit: int
    ) -> tuple[str, int | None, bool, float]:
        from ..builtins.runtime import OutputCapture, command_env, run_to_completion

        capture = OutputCapture(limit)
        started = time.monotonic()
        try:
            proc, exited = await run_to_completion(
                command,
                cwd=Path(self.workspace.root),
                env=command_env(),
                capture=capture,
                timeout=timeout,
                sandbox=self.sandbox,
                workspace=Path(self.workspace.root),
            )
        except ToolError as exc:
            return f"Error [{exc.kind.value}]: {exc.message}", None, False, 0.0
        if exited and proc.release():
            self._leftovers.append(proc)  # background children still running: aclose()
        return capture.render(limit), proc.returncode, not exited, time.monotonic() - started

    async def aclose(self) -> None:
        """End what the commands left running in the background (``cmd &``: the runtime
        keeps such processes in the command's cgroup); call when the agent is done."""
        leftovers, self._leftovers = self._leftovers, []
        for proc in leftovers:
            await proc.reap_leftovers()
