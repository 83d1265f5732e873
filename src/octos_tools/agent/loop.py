"""The agent loop: model request → tool calls → results → repeat (octos ``agent/loop_runner.rs``).

Each iteration does, in order: :meth:`ToolSession.before_model_request` (``tick()`` →
``auto_evict()`` → ``specs()``, so LRU evictions and deferred-tool activations shape the
next request's tool list), one model request, then — if the model asked for tools —
:meth:`ToolSession.after_tool_calls` (:func:`~octos_tools.execution.execute_batch`: Safe
calls concurrently, any Exclusive call makes the batch serial and a failure cancels the
rest), and the results go back into the transcript. The loop ends at the first answer
without tool calls, or after ``max_iterations`` model requests (octos's default: 50).

Sub-agents work out of the box: the agent puts a
:class:`~octos_tools.agent.spawn.NativeSpawnDelegate` in its session's context, so
``spawn_agent`` and its companions run child agents of this loop (``agent/spawn.py``).
Before each model request the loop hands the model what arrived meanwhile, as user
messages: input queued with :meth:`Agent.queue_input` (``send_input`` to a running child)
and one short announcement per background child that finished and that the model has not
seen finish (octos's background result sender); the tokens finished children spent are
added to :attr:`AgentResult.tool_usage`.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Literal

from ..builtins.agents import spawn_delegate_of
from ..context import ApprovalCallback, ToolContext
from ..execution import ToolCall
from ..registry import ToolRegistry
from ..session import ToolSession
from ..tasks import TaskRecord
from ..tool_types import JSONObject, TokenUsage, ToolResult
from .provider import ModelProvider
from .spawn import DEFAULT_MAX_DEPTH, NativeSpawnDelegate

__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "Agent",
    "AgentEvent",
    "AgentResult",
    "EventHook",
    "EventKind",
    "StopReason",
    "ToolCallRecord",
]

logger = logging.getLogger("octos_tools.agent")

DEFAULT_MAX_ITERATIONS = 50
"""Model requests per run before the loop stops (octos's default, ``agent/loop_runner.rs``)."""

EventKind = Literal["model_request", "model_response", "tool_start", "tool_result"]


class StopReason(str, Enum):
    """Why :meth:`Agent.run` returned."""

    COMPLETED = "completed"
    """The model answered without calling a tool."""
    MAX_ITERATIONS = "max_iterations"
    """``max_iterations`` model requests were made and the last one still called tools
    (those calls were run, so every call id has its result in the transcript)."""


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """Something the loop did, for a host to observe (log, UI, metrics).

    Attributes:
        kind: ``"model_request"`` (about to call the model; ``tools`` = names declared),
            ``"model_response"`` (the answer arrived; ``text``, ``calls``),
            ``"tool_start"`` (a call is handed to the batch; ``call``) or
            ``"tool_result"`` (its result; ``call`` and ``result``). A batch runs as a whole
            (Safe calls concurrently), so every ``tool_start`` of a turn comes before its
            ``tool_result`` events, which arrive in call order once the batch is done.
        iteration: the model request number within the run, from 1.
        call: the tool call (tool events), else ``None``.
        result: the tool result (``tool_result``), else ``None``.
        text: the model's text (``model_response``), else ``None``.
        tools: the tool names declared (``model_request``), else ``()``.
        calls: the tool calls asked for (``model_response``), else ``()``.
    """

    kind: EventKind
    iteration: int
    call: ToolCall | None = None
    result: ToolResult | None = None
    text: str | None = None
    tools: tuple[str, ...] = ()
    calls: tuple[ToolCall, ...] = ()


EventHook = Callable[[AgentEvent], Awaitable[None] | None]
"""A host callback ``(event) -> None``, sync or async. It runs inline in the loop (keep it
quick); an exception it raises propagates out of :meth:`Agent.run`."""


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One executed tool call of a run.

    Attributes:
        iteration: the model request whose answer asked for it (from 1).
        call: the call as the model sent it.
        result: its result (as the model saw it, after output capping).
    """

    iteration: int
    call: ToolCall
    result: ToolResult


@dataclass(slots=True)
class AgentResult:
    """What :meth:`Agent.run` returns.

    Attributes:
        text: the final answer's text; after a ``max_iterations`` stop, the text of the last
            answer (often ``""``).
        stop_reason: :class:`StopReason`.
        iterations: model requests made in this run (1 to ``max_iterations``).
        usage: tokens summed over this run's model requests, from the providers' usage
            fields.
        tool_usage: tokens reported by tools that call models themselves
            (``ToolResult.tokens_used``) plus the tokens of this agent's sub-agents that
            finished during the run (a background one still running at the end counts in
            the run that sees it finish), summed.
        messages: a copy of the agent's whole transcript after the run, in the provider's
            wire format (without the system prompt, which is sent apart).
        tool_results: every tool call of this run with its result, in order.
        finish_reason: the provider's finish/stop reason of the last answer (``"stop"``,
            ``"end_turn"``, ``"length"``, ``"max_tokens"``, ...), or ``None``.
    """

    text: str
    stop_reason: StopReason
    iterations: int
    usage: TokenUsage = field(default_factory=TokenUsage)
    tool_usage: TokenUsage = field(default_factory=TokenUsage)
    messages: list[JSONObject] = field(default_factory=list)
    tool_results: list[ToolCallRecord] = field(default_factory=list)
    finish_reason: str | None = None

    @property
    def total_usage(self) -> TokenUsage:
        """``usage + tool_usage``: every token the run cost."""
        return self.usage + self.tool_usage


class Agent:
    """A model with tools: runs the loop over one registry and one provider.

    The transcript (:attr:`messages`) persists across :meth:`run` calls, so consecutive
    runs are one conversation; :meth:`reset` starts over. The agent owns neither the
    registry nor the provider: the host closes both.

    Args:
        registry: the tools (e.g. from :func:`octos_tools.profile.build_registry`).
        provider: a :class:`~octos_tools.agent.ModelProvider`.
        system: the system prompt, or ``None``.
        max_iterations: model requests per run at most (default 50, octos's default).
        ctx: the base :class:`~octos_tools.context.ToolContext` of every tool call
            (workspace, session key, approval callback, ...); default: one built from the
            registry.
        on_event: an :data:`EventHook` called for every :class:`AgentEvent`.
        approve: the approval channel (``await approve(ApprovalRequest) -> bool``), asked
            before a command that needs a person's yes (docs/approvals.md); it replaces
            ``ctx.approval``. Without one such commands answer ``approval_required``.
        sub_agents: give the sub-agent tools a
            :class:`~octos_tools.agent.spawn.NativeSpawnDelegate` (default). Nothing is
            added when the registry has no ``spawn_agent``, when a host bound its own
            delegate (:func:`~octos_tools.builtins.agents.bind_spawn_delegate`) or when
            ``ctx.extras`` already holds a ``"spawn_delegate"``.
        max_depth: the deepest sub-agent level (default 1: children may not spawn).
        sub_agent_timeout: seconds a sub-agent may run before it is stopped (``timeout``),
            or ``None`` (default) for no limit of its own.

    Attributes:
        session: the :class:`~octos_tools.session.ToolSession` driving the registry.
        messages: the transcript, in the provider's wire format.
        spawn_delegate: the native delegate, or ``None`` when none was added.
        usage: model tokens of every run of this agent so far.
        tool_usage: tokens reported by tools and sub-agents over every run so far.

    Raises:
        ValueError: ``max_iterations < 1``, ``max_depth < 1``, a non-positive
            ``sub_agent_timeout``.

    Example::

        registry = build_registry(workspace="project")
        async with OpenAIChatProvider(model="gpt-4.1") as provider:
            result = await Agent(registry, provider).run("What does README.md say?")
        print(result.text)
    """

    def __init__(
        self,
        registry: ToolRegistry,
        provider: ModelProvider,
        *,
        system: str | None = None,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        ctx: ToolContext | None = None,
        on_event: EventHook | None = None,
        approve: ApprovalCallback | None = None,
        sub_agents: bool = True,
        max_depth: int = DEFAULT_MAX_DEPTH,
        sub_agent_timeout: float | None = None,
    ) -> None:
        if max_iterations < 1:
            raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
        if approve is not None:
            ctx = replace(ctx or ToolContext(), approval=approve)
        self.registry = registry
        self.provider = provider
        self.system = system
        self.max_iterations = max_iterations
        self.on_event = on_event
        self.spawn_delegate: NativeSpawnDelegate | None = None
        base = ctx if ctx is not None else ToolContext()
        if (
            sub_agents
            and "spawn_agent" in registry
            and spawn_delegate_of(registry) is None
            and "spawn_delegate" not in base.extras
        ):
            self.spawn_delegate = NativeSpawnDelegate(
                self, max_depth=max_depth, timeout=sub_agent_timeout
            )
            ctx = replace(base, extras={**base.extras, "spawn_delegate": self.spawn_delegate})
        self.session = ToolSession(registry, ctx)
        self.messages: list[JSONObject] = []
        self.usage = TokenUsage()
        self.tool_usage = TokenUsage()
        self._inputs: list[str] = []

    def queue_input(self, text: str) -> None:
        """Give the model ``text`` as a user message before its next model request (while
        a run is going on; else at the start of the next run). A run about to stop with
        queued input goes on instead. Used by ``send_input`` for a running sub-agent."""
        self._inputs.append(text)

    def _children_usage(self) -> TokenUsage:
        """The tokens of this agent's sub-agents that finished and were not counted yet."""
        used = TokenUsage()
        for rec in self.spawn_delegate.children if self.spawn_delegate is not None else ():
            if rec.terminal and not rec.metadata.get("usage_counted"):
                rec.metadata["usage_counted"] = True
                value = rec.metadata.get("usage")
                if isinstance(value, TokenUsage):
                    used = used + value
        return used

    def _deliver(self) -> None:
        """Append queued input and one announcement per sub-agent that finished unseen (a
        background one, or a ``delegate`` whose wait ran out; no ``wait_agent`` showed it
        finished) to the transcript."""
        for rec in self.spawn_delegate.children if self.spawn_delegate is not None else ():
            meta = rec.metadata
            if (
                rec.terminal
                and meta.get("mode") in ("background", "delegate")
                and not meta.get("reported")
                and not meta.get("announced")
            ):
                meta["announced"] = True
                self.messages.append(self.provider.user_message(_announcement(rec)))
        inputs, self._inputs = self._inputs, []
        for text in inputs:
            self.messages.append(self.provider.user_message(text))

    def reset(self) -> None:
        """Forget the transcript (the registry's LRU state is kept)."""
        self.messages.clear()

    async def _emit(self, event: AgentEvent) -> None:
        if self.on_event is None:
            return
        outcome = self.on_event(event)
        if inspect.isawaitable(outcome):
            await outcome

    async def run(self, user_message: str) -> AgentResult:
        """Append ``user_message`` and loop until a final answer or ``max_iterations``.

        Args:
            user_message: the user's text.

        Returns:
            An :class:`AgentResult`.

        Raises:
            ProviderError: a model request failed (:mod:`octos_tools.agent.provider_errors`). The
                transcript keeps what was appended before the failure (the user message and
                any complete tool turns), so a later :meth:`run` continues from there.
        """
        self.messages.append(self.provider.user_message(user_message))
        usage = TokenUsage()
        tool_usage = TokenUsage()
        records: list[ToolCallRecord] = []
        text = ""
        finish: str | None = None
        iteration = 0

        def add_tool_usage(used: TokenUsage) -> None:
            nonlocal tool_usage
            tool_usage = tool_usage + used
            self.tool_usage = self.tool_usage + used

        def finished(stop: StopReason) -> AgentResult:
            add_tool_usage(self._children_usage())
            return AgentResult(
                text=text,
                stop_reason=stop,
                iterations=iteration,
                usage=usage,
                tool_usage=tool_usage,
                messages=list(self.messages),
                tool_results=records,
                finish_reason=finish,
            )

        while iteration < self.max_iterations:
            iteration += 1
            add_tool_usage(self._children_usage())
            self._deliver()
            specs = self.session.before_model_request()
            await self._emit(
                AgentEvent("model_request", iteration, tools=tuple(s.name for s in specs))
            )
            turn = await self.provider.complete(self.messages, specs, system=self.system)
            usage = usage + turn.usage
            self.usage = self.usage + turn.usage
            text, finish = turn.text, turn.finish_reason
            if turn.message is not None:
                self.messages.append(turn.message)
            calls = list(turn.tool_calls)
            await self._emit(
                AgentEvent("model_response", iteration, text=turn.text, calls=tuple(calls))
            )
            if not calls:
                if self._inputs and iteration < self.max_iterations:
                    continue  # input arrived while the model answered: it reads it first
                return finished(StopReason.COMPLETED)
            for call in calls:
                await self._emit(AgentEvent("tool_start", iteration, call=call))
            results = await self.session.after_tool_calls(calls)
            self.messages.extend(self.provider.tool_result_messages(calls, results))
            for call, result in zip(calls, results, strict=True):
                records.append(ToolCallRecord(iteration, call, result))
                if result.tokens_used is not None:
                    add_tool_usage(result.tokens_used)
                await self._emit(AgentEvent("tool_result", iteration, call=call, result=result))
        logger.warning(
            "agent stopped after %d model requests with tool calls still coming", iteration
        )
        return finished(StopReason.MAX_ITERATIONS)


def _announcement(rec: TaskRecord) -> str:
    """The short message that tells the model a background sub-agent finished (octos's
    background result sender delivers one per finished child): its handle, label, status,
    and how to read the result."""
    handle = json.dumps({"ids": [rec.id]})
    return (
        f"[sub-agent finished] agent {rec.id} ({rec.metadata.get('label') or 'agent'}) "
        f"ended {rec.status.value}. Read its result with wait_agent {handle} or its log "
        f"with read_task_output."
    )
