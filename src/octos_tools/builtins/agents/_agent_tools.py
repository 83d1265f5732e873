"""Sub-agent tools (Codex's agent tools as octos registers them, over the task supervisor); the
family's rules are in :mod:`octos_tools.builtins.agents`.

``spawn_agent``, ``send_input``, ``resume_agent``, ``wait_agent`` and ``close_agent`` manage
child agents as tasks of the registry's :class:`~octos_tools.tasks.TaskSupervisor`. Running an
agent is a delegate's job: :class:`~octos_tools.agent.Agent` puts its native one (a child
agent loop over a snapshot of the registry, ``octos_tools.agent.spawn``) in its session's
``ToolContext.extras["spawn_delegate"]``; any other host implements :class:`SpawnDelegate`
and binds it with :func:`bind_spawn_delegate` (it wins over the context's);
:func:`has_spawn_delegate` says whether a registry (and a context) has one.

Each call acts on the task supervisor of the registry running it (``ctx.registry``), the
one ``read_task_output`` reads: the tools are shared by a registry and the registries
derived from it (``rebind_cwd``, ``snapshot_excluding``), their agents are not.

* ``send_input`` delivers the message live when the delegate implements
  :class:`SupportsLiveInput` and the agent is running (``delivery: "live"``); otherwise it
  records it on the task (``delivery: "recorded"``) and ``resume_agent`` hands recorded inputs
  to the next run.
* ``wait_agent {ids, timeout_ms}`` waits until every agent is finished or the time is up and
  reports each status and ``timed_out`` (success either way, as in octos).
* ``close_agent`` cancels a running agent.
* A sync ``spawn_agent`` or a ``delegate`` whose agent failed, was cancelled or ran out of
  time answers a typed failure (``process_failed`` or the agent's own kind, ``cancelled``,
  ``timeout``) with the tail of the agent's output log; ``wait_agent`` reports the same
  ``error_kind`` and ``output_tail`` per agent.
* ``delegate {role, task, timeout_ms}`` is Codex's alias of ``spawn_agent`` as octos
  registers it: it starts an agent through the same runner with the role's tool budget,
  waits for it, and answers with its result. A policy denying ``spawn_agent`` denies
  ``delegate`` too (the registry's alias table).

Every tool declares its arguments once (:class:`~octos_tools.typed.ToolArgs`); the Codex
aliases of the agent id (``agent_id``, ``target``, ``targets``) and of ``message``
(``task``) are accepted but not advertised in the schemas.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from ...config import Config
from ...context import ToolContext
from ...errors import ErrorKind, ToolError
from ...policy import group_members
from ...tasks import TaskRecord, TaskStatus, TaskSupervisor
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...typed import ToolArgs, TypedTool
from .. import FAMILY_TOOLS

if TYPE_CHECKING:
    from ...registry import ToolRegistry
    from ...workspace import Workspace


#: Deepest ``ctx.spawn_depth`` that may still spawn a child is ``MAX_SPAWN_DEPTH - 1``
#: (octos ``spawn``: refuses at depth >= 4).
MAX_SPAWN_DEPTH = 4
#: ``wait_agent`` timeout default and maximum, in milliseconds (octos's values).
WAIT_DEFAULT_MS = 30_000
WAIT_MAX_MS = 3_600_000
#: Characters of an agent's final output shown by ``wait_agent``.
OUTPUT_PREVIEW_CHARS = 4000
#: Characters of a failed agent's output log shown with its failure.
OUTPUT_TAIL_CHARS = 2000
#: The sub-agent tools (removed together from a child registry at its depth limit).
SUB_AGENT_TOOLS = FAMILY_TOOLS["agents"]


@dataclass(frozen=True)
class SpawnRequest:
    """What the model asked a child agent to do.

    Attributes:
        task: the instructions (``task``, else ``message``, plus rendered ``items``).
        label: a short name for listings.
        role: a role name given by the model (free text; the host decides what it means).
        agent_type / model / reasoning_effort: Codex hints, passed through.
        allowed_tools: tool names the child may use (empty: the host's default).
        fork_context: the child should start from the parent's conversation.
        depth: the child's nesting depth (parent's ``spawn_depth + 1``).
        session_key: the parent's session.
        inputs: messages recorded by ``send_input`` for a resumed run.
        args: the raw ``spawn_agent`` arguments.
        history: the parent's conversation a ``fork_context`` child starts from, in the
            provider's wire format (filled by a delegate's :meth:`SupportsPrepare.prepare`;
            empty otherwise).
    """

    task: str
    label: str
    role: str | None = None
    agent_type: str | None = None
    model: str | None = None
    reasoning_effort: str | None = None
    allowed_tools: tuple[str, ...] = ()
    fork_context: bool = False
    depth: int = 1
    session_key: str | None = None
    inputs: tuple[str, ...] = ()
    args: JSONObject = field(default_factory=dict)
    history: tuple[JSONObject, ...] = ()


class SpawnDelegate(Protocol):
    """Runs child agents for the sub-agent tools; implemented by the host.

    ``run`` is awaited inside a supervisor task: returning a result completes the agent
    (``success=False`` marks it failed), raising fails it, cancellation cancels it.
    ``record.id`` is the agent id; ``record.append_output(text)`` may stream progress into
    the task log (what ``read_task_output`` reads). A ``max_depth`` attribute (int), when
    present, is the delegate's own nesting limit: a call at that ``ctx.spawn_depth`` or
    deeper may not spawn.
    """

    async def run(self, request: SpawnRequest, record: TaskRecord) -> ToolResult:
        """Run the child agent on ``request.task`` to the end and return its final result."""
        ...


@runtime_checkable
class SupportsPrepare(Protocol):
    """A delegate that checks (and may complete) a request before its agent starts, so a
    refusal reaches the model as the spawning call's typed failure, not as a failed task."""

    async def prepare(self, request: SpawnRequest, ctx: ToolContext) -> SpawnRequest:
        """The request to start (``request`` itself or a copy with more filled in).

        Raises:
            ToolError: the request cannot run (e.g. ``invalid_arguments`` for a model the
                provider does not serve).
        """
        ...


@runtime_checkable
class SupportsLiveInput(Protocol):
    """A delegate that can hand a message to a running agent."""

    async def deliver_input(self, record: TaskRecord, message: str, interrupt: bool) -> bool:
        """Deliver ``message`` now; ``False`` if the agent cannot take it."""
        ...


class AgentHub:
    """State shared by the five tools: the supervisor, the delegate, the spawn requests.

    Args:
        supervisor: the registry's task supervisor.
        delegate: the host's :class:`SpawnDelegate`, or ``None`` until bound.
    """

    def __init__(self, supervisor: TaskSupervisor, delegate: SpawnDelegate | None = None) -> None:
        self.supervisor = supervisor
        self.delegate = delegate
        self.requests: dict[str, SpawnRequest] = {}

    def supervisor_for(self, ctx: ToolContext) -> TaskSupervisor:
        """The task supervisor of the registry running the call (``ctx.registry``), the one
        ``read_task_output`` reads; the home registry's without one."""
        registry = ctx.registry
        return registry.supervisor if registry is not None else self.supervisor

    def delegate_for(self, ctx: ToolContext) -> SpawnDelegate | None:
        """The bound delegate, else ``ctx.extras["spawn_delegate"]``."""
        if self.delegate is not None:
            return self.delegate
        extra = ctx.extras.get("spawn_delegate")
        return extra if extra is not None and hasattr(extra, "run") else None

    def runner_for(self, ctx: ToolContext, missing: str) -> SpawnDelegate:
        """The delegate a new sub-agent of this call runs on.

        Args:
            ctx: the call's context (its ``spawn_depth`` and extras).
            missing: the message when no delegate is attached.

        Raises:
            ToolError: ``policy_denied`` at the nesting limit (:data:`MAX_SPAWN_DEPTH`);
                ``not_configured`` (``missing``) when no delegate is attached.
        """
        delegate = self.delegate_for(ctx)
        limit = MAX_SPAWN_DEPTH
        own = getattr(delegate, "max_depth", None)
        if isinstance(own, int) and not isinstance(own, bool):
            limit = min(limit, own)
        if ctx.spawn_depth >= limit:
            raise ToolError(
                ErrorKind.POLICY_DENIED,
                f"sub-agent nesting limit reached (depth {ctx.spawn_depth}, limit "
                f"{limit}); do the work yourself",
            )
        if delegate is None:
            raise ToolError(ErrorKind.NOT_CONFIGURED, missing)
        return delegate

    def record(self, ctx: ToolContext, agent_id: str) -> TaskRecord:
        """The task of ``agent_id`` in the call's supervisor.

        Raises:
            ToolError: ``not_found`` for an id the supervisor does not know.
        """
        supervisor = self.supervisor_for(ctx)
        rec = supervisor.get(agent_id) if agent_id in self.requests else None
        if rec is None:
            mine = [i for i in self.requests if supervisor.get(i) is not None]
            known = ", ".join(mine[-5:]) or "none"
            raise ToolError(
                ErrorKind.NOT_FOUND, f"unknown agent {agent_id!r} (recent agents: {known})"
            )
        return rec

    async def prepare(
        self, ctx: ToolContext, delegate: SpawnDelegate, request: SpawnRequest
    ) -> SpawnRequest:
        """``request`` as the delegate's :meth:`SupportsPrepare.prepare` completes it (as is
        for a delegate without one).

        Raises:
            ToolError: the delegate refused the request.
        """
        if isinstance(delegate, SupportsPrepare):
            return await delegate.prepare(request, ctx)
        return request

    def start(
        self, ctx: ToolContext, delegate: SpawnDelegate, request: SpawnRequest, tool: str
    ) -> TaskRecord:
        """Start ``request`` as a task of the call's supervisor and remember it."""

        async def run(record: TaskRecord) -> ToolResult:
            return await delegate.run(request, record)

        rec = self.supervisor_for(ctx).spawn(
            run,
            tool_name=tool,
            tool_call_id=ctx.tool_call_id,
            session_key=ctx.session_key,
            args=dict(request.args),
            metadata={"label": request.label, "role": request.role, "depth": request.depth},
        )
        self.requests[rec.id] = request
        return rec


def _hub_of(registry: ToolRegistry) -> AgentHub | None:
    hub = getattr(registry.get("spawn_agent"), "hub", None)
    return hub if isinstance(hub, AgentHub) else None


def bind_spawn_delegate(registry: ToolRegistry, delegate: SpawnDelegate | None) -> bool:
    """Attach ``delegate`` to the sub-agent tools of ``registry`` (and of the registries
    derived from it, which share the tools); ``None`` detaches it. The tools are listed
    while a delegate is bound here or in a session's ``ctx.extras["spawn_delegate"]``
    (:meth:`~octos_tools.tool_types.Tool.unavailable_reason`).

    Returns:
        ``True`` when the tools were found (``spawn_agent`` is registered).
    """
    hub = _hub_of(registry)
    if hub is None:
        return False
    hub.delegate = delegate
    registry.refresh_availability()
    return True


def spawn_delegate_of(registry: ToolRegistry) -> SpawnDelegate | None:
    """The delegate bound to ``registry``'s sub-agent tools with :func:`bind_spawn_delegate`,
    or ``None`` (also when ``spawn_agent`` is not registered)."""
    hub = _hub_of(registry)
    return hub.delegate if hub is not None else None


def has_spawn_delegate(registry: ToolRegistry, ctx: ToolContext | None = None) -> bool:
    """Whether ``spawn_agent`` of ``registry`` can start an agent for a call with ``ctx``:
    the tool is registered and a delegate is bound to the registry or is in
    ``ctx.extras["spawn_delegate"]`` (an :class:`~octos_tools.agent.Agent` session's).
    Without ``ctx`` only the bound delegate counts (an MCP server has no model to run a
    child on unless the host binds one)."""
    hub = _hub_of(registry)
    if hub is None:
        return False
    return hub.delegate_for(ctx if ctx is not None else ToolContext()) is not None


def failure_kind(rec: TaskRecord) -> ErrorKind:
    """The error kind of a finished agent that did not complete: ``cancelled`` when it was
    closed, its result's own kind (``timeout``, ...) when it gave one, else
    ``process_failed``."""
    if rec.status is TaskStatus.CANCELLED:
        return ErrorKind.CANCELLED
    kind = rec.result.error_kind if rec.result is not None else None
    return kind if kind is not None else ErrorKind.PROCESS_FAILED


def _status(rec: TaskRecord) -> JSONObject:
    """The agent's status as the model sees it; a terminal one is marked ``reported`` in
    its metadata (the agent loop does not announce an agent its model has seen finish)."""
    out: JSONObject = {
        "agent_id": rec.id,
        "status": rec.status.value,
        "terminal": rec.terminal,
        "label": rec.metadata.get("label"),
    }
    if rec.terminal:
        rec.metadata["reported"] = True
    if rec.error:
        out["error"] = rec.error
    if rec.terminal and rec.status is not TaskStatus.COMPLETED:
        out["error_kind"] = failure_kind(rec).value
        out["output_tail"] = rec.output_tail(OUTPUT_TAIL_CHARS)
    if rec.result is not None:
        text = rec.result.output
        if len(text) > OUTPUT_PREVIEW_CHARS:
            omitted = len(text) - OUTPUT_PREVIEW_CHARS
            text = text[:OUTPUT_PREVIEW_CHARS] + f"\n[... {omitted} characters omitted ...]"
        out["output"] = text
    if rec.output_files:
        out["output_files"] = list(rec.output_files)
    return out


def _json(obj: JSONObject) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _target(args: JSONObject, tool: str) -> str:
    for key in ("id", "agent_id", "target"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    targets = args.get("targets")
    if isinstance(targets, list) and targets and isinstance(targets[0], str):
        return targets[0]
    raise ToolError(ErrorKind.INVALID_ARGUMENTS, f"{tool} needs the agent 'id'")


def _render_items(items: Sequence[Any]) -> str:
    lines = []
    for item in items:
        if not isinstance(item, dict):
            lines.append(str(item))
            continue
        kind = item.get("type", "item")
        value = next(
            (item[k] for k in ("text", "name", "path", "image_url") if k in item), json.dumps(item)
        )
        lines.append(f"[{kind}] {value}")
    return "\n".join(lines)


def _agent_failure(tool: str, rec: TaskRecord, why: str, out: JSONObject) -> ToolResult:
    """The typed failure of a call whose agent did not complete: its kind
    (:func:`failure_kind`), a message naming the agent, and the status (with its output
    tail) as the text the model reads."""
    kind = failure_kind(rec)
    detail = f": {rec.error}" if rec.error else ""
    return ToolResult.failure(
        kind,
        f"{tool}: the agent {rec.id} {why}{detail}",
        output=_json(out),
        metadata={"codex_tool": tool, **out},
    )


class _IdArgs(ToolArgs):
    """The agent id, with Codex's aliases accepted but not advertised."""

    id: str | None = Field(None, description="The agent id from spawn_agent.")
    agent_id: SkipJsonSchema[str | None] = None
    target: SkipJsonSchema[str | None] = None
    targets: SkipJsonSchema[list[str] | None] = None


class _AgentTool(TypedTool):
    tags: tuple[str, ...] = ("code",)
    concurrency_class = ConcurrencyClass.SAFE

    def __init__(self, hub: AgentHub) -> None:
        self.hub = hub

    def unavailable_reason(self, ctx: ToolContext | None = None) -> str | None:
        """Unlisted until a spawn delegate is bound (:func:`bind_spawn_delegate`, or a
        session's ``ctx.extras["spawn_delegate"]``, as the agent loop gives): without one no
        sub-agent can run (over MCP there is none)."""
        if self.hub.delegate is not None or (
            ctx is not None and self.hub.delegate_for(ctx) is not None
        ):
            return None
        return "no spawn delegate is bound (the host runs no sub-agents)"

    async def run(self, args: Any, ctx: ToolContext | None) -> ToolResult:
        return await self.act(ctx or ToolContext(), args.model_dump(exclude_none=True))

    async def act(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        """Run with the validated arguments as a dict (absent fields left out)."""
        raise NotImplementedError

    def _agent(self, ctx: ToolContext, args: JSONObject) -> TaskRecord:
        """The task of the agent named by ``args`` (``id`` or an alias).

        Raises:
            ToolError: ``invalid_arguments`` without an id, ``not_found`` for an unknown one.
        """
        return self.hub.record(ctx, _target(args, self.name))

    def _reply(self, out: JSONObject) -> ToolResult:
        """``out`` as compact JSON text and as metadata (with ``codex_tool``)."""
        return ToolResult.ok(_json(out), structured_metadata={"codex_tool": self.name, **out})


class SpawnAgentTool(_AgentTool):
    """``spawn_agent`` (Codex; tags gateway, code; Exclusive): start a child agent.

    ``mode: "sync"`` waits for it and returns its final output; the default ``background``
    returns the ``agent_id`` at once.
    """

    name = "spawn_agent"
    title = "Start a sub-agent"
    description = (
        "Start a sub-agent on a task. Returns its agent id at once (mode 'background', the "
        "default); use wait_agent to get its result, send_input to message it, close_agent "
        "to stop it."
    )

    class Args(ToolArgs):
        message: str | None = Field(None, description="The task for the agent.")
        task: SkipJsonSchema[str | None] = None
        items: list[dict[str, Any]] | None = Field(None, description="Inputs for the task.")
        agent_type: str | None = Field(None, description="Kind of agent.")
        label: str | None = Field(None, description="A name for it.")
        role: str | None = Field(None, description="Its role.")
        model: str | None = Field(None, description="Model to run.")
        reasoning_effort: str | None = Field(None, description="low, medium or high.")
        fork_context: bool | None = Field(None, description="Start from this conversation.")
        mode: Literal["background", "sync"] | None = Field(
            None, description="background returns at once; sync waits."
        )
        allowed_tools: list[str] | None = Field(None, description="Tools it may use.")

    tags = ("gateway", "code")
    concurrency_class = ConcurrencyClass.EXCLUSIVE

    async def act(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        delegate = self.hub.runner_for(
            ctx, "no sub-agent runner is attached to this session; do the task yourself"
        )
        text = str(args.get("task") or args.get("message") or "").strip()
        items = args.get("items") or []
        if items:
            text = (text + "\n\nItems:\n" if text else "") + _render_items(items)
        if not text:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "spawn_agent needs a 'message' (task)")
        agent_type = args.get("agent_type")
        request = SpawnRequest(
            task=text,
            label=str(args.get("label") or f"codex-{agent_type or 'agent'}"),
            role=(str(args["role"]).strip() or None) if args.get("role") else None,
            agent_type=agent_type,
            model=args.get("model"),
            reasoning_effort=args.get("reasoning_effort"),
            allowed_tools=tuple(args.get("allowed_tools") or ()),
            fork_context=bool(args.get("fork_context", False)),
            depth=ctx.spawn_depth + 1,
            session_key=ctx.session_key,
            args=dict(args),
        )
        request = await self.hub.prepare(ctx, delegate, request)
        rec = self.hub.start(ctx, delegate, request, self.name)
        rec.metadata["mode"] = "sync" if args.get("mode") == "sync" else "background"
        if args.get("mode") != "sync":
            return self._reply(_status(rec))
        supervisor = self.hub.supervisor_for(ctx)
        try:
            await supervisor.wait([rec.id], None)
        except BaseException:
            supervisor.cancel(rec.id)  # the call was cancelled or timed out: so is its agent
            raise
        out = _status(rec)
        if rec.status is TaskStatus.COMPLETED:
            return self._reply(out)
        return _agent_failure(self.name, rec, f"ended {rec.status.value}", out)


class SendInputTool(_AgentTool):
    """``send_input {id, message, interrupt?}`` (Codex): message a child agent."""

    name = "send_input"
    title = "Message a sub-agent"
    description = (
        "Send a message to a sub-agent. Delivered at once when the runtime supports it, "
        "otherwise recorded and given to the agent when it is resumed."
    )

    class Args(_IdArgs):
        message: str | None = Field(None, description="What to tell it.")
        items: list[dict[str, Any]] | None = Field(None, description="Inputs to pass on.")
        interrupt: bool | None = Field(None, description="Stop its current turn first.")

    async def act(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        rec = self._agent(ctx, args)
        message = str(args.get("message") or "")
        if args.get("items"):
            message = (message + "\n" if message else "") + _render_items(args["items"])
        if not message.strip():
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "send_input needs a 'message'")
        delegate = self.hub.delegate_for(ctx)
        delivered = False
        if not rec.terminal and isinstance(delegate, SupportsLiveInput):
            delivered = await delegate.deliver_input(rec, message, bool(args.get("interrupt")))
        delivery = "live" if delivered else "recorded"
        rec.inputs.append({"message": message, "at": time.time(), "delivered": delivered})
        out: JSONObject = {
            "agent_id": rec.id,
            "status": rec.status.value,
            "delivered": delivered,
            "delivery": delivery,
            "recorded": True,
        }
        if not delivered:
            out["message"] = (
                "recorded on the agent's task; it reaches the agent when it is resumed"
                if rec.terminal or delegate is None or not isinstance(delegate, SupportsLiveInput)
                else "the agent did not take the message now; it is recorded"
            )
        return self._reply(out)


class ResumeAgentTool(_AgentTool):
    """``resume_agent {id}`` (Codex): run a finished agent again with its recorded inputs."""

    name = "resume_agent"
    title = "Resume a sub-agent"
    description = (
        "Resume a finished sub-agent: it runs again on its task plus the messages sent to it "
        "with send_input since. A running agent is left alone."
    )

    class Args(_IdArgs):
        pass

    async def act(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        rec = self._agent(ctx, args)
        if not rec.terminal:
            out: JSONObject = {
                "agent_id": rec.id,
                "status": rec.status.value,
                "message": "the agent is still running",
            }
            return self._reply(out)
        delegate = self.hub.delegate_for(ctx)
        if delegate is None:
            raise ToolError(ErrorKind.NOT_CONFIGURED, "no sub-agent runner is attached")
        request = self.hub.requests[rec.id]
        new_meta = {"mode": rec.metadata.get("mode", "background")}
        pending = tuple(str(i["message"]) for i in rec.inputs if not i.get("delivered"))
        new_request = replace(request, inputs=request.inputs + pending)
        new = self.hub.start(ctx, delegate, new_request, "spawn_agent")
        new.metadata.update(new_meta, resumed_from=rec.id)
        out = {"agent_id": rec.id, "resumed_agent_id": new.id, "status": new.status.value}
        return self._reply(out)


class WaitAgentTool(_AgentTool):
    """``wait_agent {ids, timeout_ms=30000}`` (Codex): wait for agents to finish."""

    name = "wait_agent"
    title = "Wait for sub-agents"
    description = (
        "Wait until the given sub-agents finish or timeout_ms passes (default 30000, max "
        "3600000); returns each agent's status and output, and whether the wait timed out."
    )

    class Args(_IdArgs):
        ids: list[str] | None = Field(None, description="Agent ids.")
        timeout_ms: int | None = Field(None, ge=0, description="Most ms to wait.")

    timeout = WAIT_MAX_MS / 1000 + 60

    async def act(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        ids: list[str] = []
        for key in ("ids", "targets"):
            ids.extend(str(x) for x in args.get(key) or [])
        for key in ("id", "agent_id", "target"):
            if args.get(key):
                ids.append(str(args[key]))
        ids = list(dict.fromkeys(ids))
        timeout_ms = min(WAIT_MAX_MS, int(args.get("timeout_ms", WAIT_DEFAULT_MS)))
        known = [i for i in ids if i in self.hub.requests]
        supervisor = self.hub.supervisor_for(ctx)
        records, timed_out = await supervisor.wait(known, timeout_ms / 1000)
        agents = [
            _status(records[i])
            if i in records
            else {"agent_id": i, "status": "unknown", "terminal": True}
            for i in ids
        ]
        out: JSONObject = {"agents": agents, "timed_out": timed_out}
        return self._reply(out)


class CloseAgentTool(_AgentTool):
    """``close_agent {id}`` (Codex): cancel a running agent."""

    name = "close_agent"
    title = "Stop a sub-agent"
    description = "Stop a sub-agent (cancel it if it is still running)."

    class Args(_IdArgs):
        pass

    async def act(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        rec = self._agent(ctx, args)
        supervisor = self.hub.supervisor_for(ctx)
        if not rec.terminal and supervisor.cancel(rec.id):
            await supervisor.wait([rec.id], 5.0)
        if rec.terminal:
            rec.metadata["reported"] = True  # the model sees it ended: nothing to announce
        out: JSONObject = {"agent_id": rec.id, "status": rec.status.value, "closed": True}
        return self._reply(out)


#: The tool budget of the research roles (``reviewer`` and ``explorer``).
_RESEARCH_TOOLS = (
    "read_file",
    "group:search",
    "web_search",
    "web_fetch",
    "recall_memory",
    "synthesize_research",
)
#: octos's role templates for ``delegate``: the tool budget each role's agent gets
#: (``group:`` entries are expanded to tool names before the agent starts).
DELEGATE_ROLES: dict[str, tuple[str, ...]] = {
    "reviewer": _RESEARCH_TOOLS,
    "implementer": ("group:fs", "group:search", "group:runtime", "group:sessions", "group:memory"),
    "test_worker": ("read_file", "group:search", "group:runtime", "recall_memory"),
    "explorer": _RESEARCH_TOOLS,
}
DELEGATE_DEFAULT_MS = 300_000


def _expand(entries: Sequence[str]) -> tuple[str, ...]:
    names: list[str] = []
    for entry in entries:
        names.extend(group_members(entry) if entry.startswith("group:") else (entry,))
    return tuple(dict.fromkeys(names))


class DelegateTool(_AgentTool):
    """``delegate {role, task, timeout_ms=300000}`` (Codex alias of ``spawn_agent`` as octos
    registers it; Exclusive): run an agent of a known role to the end and return its result.

    It uses ``spawn_agent``'s runner (the same :class:`AgentHub`). The result is a failure
    unless the agent completed: ``timeout`` when ``timeout_ms`` passed (the agent keeps
    running; ``wait_agent`` or ``close_agent`` it by its id), ``process_failed`` when it
    failed or was cancelled.
    """

    name = "delegate"
    title = "Delegate a task to a sub-agent"
    description = "Give a task to a sub-agent with a role and wait for its result."
    tags = ("gateway", "code")
    concurrency_class = ConcurrencyClass.EXCLUSIVE
    timeout = WAIT_MAX_MS / 1000 + 60

    class Args(ToolArgs):
        role: Literal["reviewer", "implementer", "test_worker", "explorer"] = Field(
            description="The agent's role (its tool budget)."
        )
        task: str = Field(description="What the agent should do.")
        timeout_ms: int = Field(
            DELEGATE_DEFAULT_MS, ge=1000, le=WAIT_MAX_MS, description="Wait at most (ms)."
        )

    async def act(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        role, task = str(args["role"]), str(args["task"]).strip()
        if role not in DELEGATE_ROLES:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"delegate: unknown role {role!r}; canonical roles: {sorted(DELEGATE_ROLES)}",
                field="role",
            )
        if not task:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "delegate requires `task`", field="task")
        delegate = self.hub.runner_for(
            ctx,
            "delegate requires the session runtime to register a spawn_agent delegate; "
            "do the task yourself",
        )
        request = SpawnRequest(
            task=task,
            label=f"delegate-{role}",
            role=role,
            allowed_tools=_expand(DELEGATE_ROLES[role]),
            depth=ctx.spawn_depth + 1,
            session_key=ctx.session_key,
            args=dict(args),
        )
        request = await self.hub.prepare(ctx, delegate, request)
        rec = self.hub.start(ctx, delegate, request, "spawn_agent")
        rec.metadata["mode"] = "delegate"
        timeout_ms = int(args.get("timeout_ms", DELEGATE_DEFAULT_MS))
        supervisor = self.hub.supervisor_for(ctx)
        records, timed_out = await supervisor.wait([rec.id], timeout_ms / 1000)
        rec = records.get(rec.id, rec)
        out: JSONObject = {
            "agent_id": rec.id,
            "role": role,
            "status": rec.status.value,
            "result": _status(rec).get("output"),
            "artifacts": list(rec.output_files),
            "error": rec.error,
            "terminal": rec.terminal,
            "timed_out": timed_out,
        }
        meta: JSONObject = {
            "codex_tool": self.name,
            "role": role,
            "agent_id": rec.id,
            "artifacts": list(rec.output_files),
            "terminal": rec.terminal,
        }
        if rec.status is TaskStatus.COMPLETED:
            return ToolResult.ok(_json(out), structured_metadata={**meta, **out})
        out["output_tail"] = rec.output_tail(OUTPUT_TAIL_CHARS)
        if not rec.terminal:
            kind, why = ErrorKind.TIMEOUT, f"still running after {timeout_ms} ms"
        else:
            kind, why = failure_kind(rec), f"ended {rec.status.value}: {rec.error or ''}"
        out["error_kind"] = kind.value
        return ToolResult.failure(
            kind,
            f"delegate: the {role} agent {rec.id} {why}".rstrip(": "),
            output=_json(out),
            metadata={**meta, **out},
        )


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register the sub-agent tools (octos's ``spawn_agent``, ``delegate``, ``send_input``,
    ``resume_agent``, ``wait_agent``, ``close_agent``) over ``registry.supervisor``; bind a
    runner later with :func:`bind_spawn_delegate`."""
    hub = AgentHub(registry.supervisor)
    for cls in (
        SpawnAgentTool,
        DelegateTool,
        SendInputTool,
        ResumeAgentTool,
        WaitAgentTool,
        CloseAgentTool,
    ):
        registry.register(cls(hub))
