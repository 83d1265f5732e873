"""The agent loop's native spawn delegate: sub-agents that run the same loop on the same provider.

:class:`~octos_tools.agent.Agent` puts one :class:`NativeSpawnDelegate` in its session's
context (``ToolContext.extras["spawn_delegate"]``), so ``spawn_agent``, ``delegate``,
``send_input``, ``resume_agent``, ``wait_agent`` and ``close_agent`` work without host code.
What a child gets follows octos's native ``spawn`` (``crates/octos-agent/src/tools/spawn.rs``):

* a snapshot of the parent's registry (:meth:`ToolRegistry.snapshot_excluding`: the same
  tool objects, the parent's hard and provider policies, groups, context filter and every
  other setting of the registry; a task supervisor of its own), spawn-only markers cleared
  (the child *is* the background), ``allowed_tools`` applied as a hard allow list (and
  activated, if deferred), and the sub-agent tools removed at depth ``max_depth`` (default
  1, Codex's ``agents.max_depth``): calling them there is ``policy_denied``;
* the parent's base context (approval and user-input callbacks, permissions, workspace and
  whatever else a host put on it) with ``spawn_depth`` = parent's + 1, its own ``state``;
* the same provider, or a copy of it sending the ``model`` the model asked for when the
  endpoint serves that model (``GET /v1/models``); another model is refused with the list;
* the parent's system prompt and iteration limit; with ``fork_context`` the parent's
  conversation up to the spawning turn.

The child's progress streams into its task log (what ``read_task_output`` reads): its
texts, ``→ tool {args}`` and ``← tool: ok | error kind: message`` lines. Its final text is
the task's result; a failure (a provider error, ``timeout`` after ``timeout`` seconds,
no final answer within the iteration limit) is a typed failure with the tail of that log.
``send_input`` reaches a running child before its next model request; ``resume_agent``
continues a finished child's conversation with the messages sent to it since. The tokens a
child spent (its own and its children's) are kept on its task (``metadata["usage"]``) and
added to the parent's :attr:`AgentResult.tool_usage` by the run that sees it finish.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio

from ..builtins.agents import SUB_AGENT_TOOLS, SpawnRequest
from ..context import ToolContext
from ..errors import ErrorKind, ToolError
from ..policy import ToolPolicy
from ..registry import ToolRegistry
from ..tasks import TaskRecord
from ..tool_types import JSONObject, TokenUsage, ToolResult
from .provider import ModelProvider
from .provider_errors import (
    ProviderConnectionError,
    ProviderError,
    ProviderStatusError,
    ProviderTimeoutError,
)

if TYPE_CHECKING:
    from .loop import Agent, AgentEvent

__all__ = ["DEFAULT_MAX_DEPTH", "NativeSpawnDelegate", "child_registry", "sub_agent_context"]

DEFAULT_MAX_DEPTH = 1
"""Deepest level of sub-agents (Codex's ``agents.max_depth`` default: the root agent is
depth 0, its children depth 1 may not spawn)."""

_TAIL_CHARS = 2000
_ARGS_PREVIEW = 300


def _preview(value: Any, limit: int = _ARGS_PREVIEW) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _provider_failure_kind(exc: ProviderError) -> ErrorKind:
    if isinstance(exc, ProviderTimeoutError):
        return ErrorKind.TIMEOUT
    if isinstance(exc, ProviderStatusError):
        return ErrorKind.HTTP_ERROR
    if isinstance(exc, ProviderConnectionError):
        return ErrorKind.UNAVAILABLE
    return ErrorKind.PROCESS_FAILED


class NativeSpawnDelegate:
    """Runs sub-agents of one :class:`~octos_tools.agent.Agent` as child agents of the same
    class, provider and registry snapshot (see the module docstring).

    Args:
        parent: the spawning agent.
        max_depth: the deepest sub-agent level (>= 1; default :data:`DEFAULT_MAX_DEPTH`);
            a child at this depth has no sub-agent tools.
        timeout: seconds a child may run before it is stopped with ``timeout``, or ``None``
            for no limit of its own (the tools' timeouts still apply).

    Attributes:
        children: the tasks of the sub-agents this delegate started, oldest first.

    Raises:
        ValueError: ``max_depth < 1`` or a non-positive ``timeout``.
    """

    def __init__(
        self, parent: Agent, *, max_depth: int = DEFAULT_MAX_DEPTH, timeout: float | None = None
    ) -> None:
        if max_depth < 1:
            raise ValueError(f"max_depth must be >= 1, got {max_depth}")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive seconds, got {timeout}")
        self.parent = parent
        self.max_depth = max_depth
        self.timeout = timeout
        self.children: list[TaskRecord] = []
        self._running: dict[str, Agent] = {}
        self._transcripts: dict[str, list[JSONObject]] = {}
        self._requests: dict[str, SpawnRequest] = {}

    # ------------------------------------------------------------------ before the start

    async def served_models(self) -> list[str]:
        """The models the parent's provider serves (its ``list_models()`` when it has one,
        else just its ``model``).

        Raises:
            ProviderError: listing them failed.
        """
        provider = self.parent.provider
        lister = getattr(provider, "list_models", None)
        if lister is None:
            return [provider.model]
        models = list(await lister())
        return models if provider.model in models else [provider.model, *models]

    async def prepare(self, request: SpawnRequest, ctx: ToolContext) -> SpawnRequest:
        """Check ``request`` before its agent starts; add the parent's conversation when it
        asks for ``fork_context``.

        Raises:
            ToolError: ``invalid_arguments`` for a ``model`` the provider does not serve
                (naming the ones it does) or ``allowed_tools`` naming tools this registry
                does not have.
        """
        provider = self.parent.provider
        if request.model and request.model != provider.model:
            try:
                served = await self.served_models()
            except ProviderError as exc:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"cannot check model {request.model!r}: listing the provider's models "
                    f"failed ({exc}); omit 'model' to use {provider.model!r}",
                    field="model",
                ) from None
            if request.model not in served:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"model {request.model!r} is not served by this provider "
                    f"({provider.name}); it serves: {', '.join(served)}",
                    field="model",
                )
            if not callable(getattr(provider, "with_model", None)):
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"this provider ({provider.name}) runs only {provider.model!r}",
                    field="model",
                )
        missing = _unavailable(self.parent.registry, request.allowed_tools)
        if missing and "allowed_tools" not in request.args:
            # a role's budget (delegate) names tools a host may not have: keep the rest
            kept = tuple(n for n in request.allowed_tools if n not in missing)
            if not kept:
                raise ToolError(
                    ErrorKind.NOT_CONFIGURED,
                    f"none of the tools of role {request.role!r} is available on this host",
                )
            request, missing = replace(request, allowed_tools=kept), []
        if missing:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"required tool(s) not available on this host: {', '.join(missing)}",
                field="allowed_tools",
            )
        if request.fork_context:
            return replace(request, history=tuple(_forked(self.parent.messages)))
        return request

    # ------------------------------------------------------------------ running

    async def run(self, request: SpawnRequest, record: TaskRecord) -> ToolResult:
        """Run the child agent to its final answer (see the module docstring).

        Returns:
            ``ok(final text)`` with ``tokens_used``, or a typed failure with the tail of the
            task log.
        """
        self.children.append(record)
        previous = record.metadata.get("resumed_from")
        history = self._transcripts.get(previous) if isinstance(previous, str) else None
        prior = self._requests.get(previous) if isinstance(previous, str) else None
        self._requests[record.id] = request
        child = self._child(request, record)
        if history is not None:  # resume: the same conversation, with the new messages
            child.messages.extend(history)
            new_inputs = request.inputs[len(prior.inputs) if prior is not None else 0 :]
            prompt = "\n\n".join(new_inputs) or "Continue."
        else:
            child.messages.extend(request.history)
            prompt = request.task
            if request.inputs:
                prompt += "\n\nMessages sent to you since:\n" + "\n".join(
                    f"- {m}" for m in request.inputs
                )
        self._running[record.id] = child
        record.append_output(f"[sub-agent depth {request.depth}] {_preview(prompt)}\n")
        limit: AbstractContextManager[Any] = (
            anyio.fail_after(self.timeout) if self.timeout is not None else nullcontext()
        )
        try:
            try:
                with limit:
                    result = await child.run(prompt)
            except TimeoutError:
                return self._failed(record, ErrorKind.TIMEOUT, f"stopped after {self.timeout:g} s")
            except ProviderError as exc:
                return self._failed(record, _provider_failure_kind(exc), str(exc))
            except anyio.get_cancelled_exc_class():
                record.append_output("[cancelled]\n")
                raise
            except Exception as exc:  # noqa: BLE001 - reported as the child's failure
                return self._failed(
                    record, ErrorKind.PROCESS_FAILED, f"{type(exc).__name__}: {exc}"
                )
        finally:
            self._running.pop(record.id, None)
            self._transcripts[record.id] = list(child.messages)
            record.metadata["usage"] = child.usage + child.tool_usage
            with anyio.CancelScope(shield=True):
                await child.session.aclose()
                await child.registry.supervisor.aclose()
        usage: TokenUsage = record.metadata["usage"]
        if result.stop_reason.value != "completed":
            return self._failed(
                record,
                ErrorKind.PROCESS_FAILED,
                f"no final answer after {result.iterations} model requests",
            )
        record.append_output(f"[completed] {result.iterations} model requests\n")
        return ToolResult.ok(result.text, tokens_used=usage)

    def _failed(self, record: TaskRecord, kind: ErrorKind, why: str) -> ToolResult:
        record.append_output(f"[failed] {kind.value}: {why}\n")
        tail = record.output_tail(_TAIL_CHARS)
        return ToolResult.failure(
            kind,
            f"sub-agent failed: {why}",
            output=f"Error [{kind.value}]: sub-agent failed: {why}\n--- last output ---\n{tail}",
            metadata={"output_tail": tail},
        )

    def _child(self, request: SpawnRequest, record: TaskRecord) -> Agent:
        from .loop import Agent

        parent = self.parent
        registry = child_registry(
            parent.registry,
            allowed_tools=request.allowed_tools,
            sub_agents=request.depth < self.max_depth,
        )
        ctx = sub_agent_context(parent.session.ctx)
        provider: ModelProvider = parent.provider
        if request.model and request.model != provider.model:
            provider = provider.with_model(request.model)  # type: ignore[attr-defined]

        def stream(event: AgentEvent) -> None:
            record.append_output(_event_line(event))

        child = Agent(
            registry,
            provider,
            system=parent.system,
            max_iterations=parent.max_iterations,
            ctx=ctx,
            on_event=stream,
            max_depth=self.max_depth,
            sub_agent_timeout=self.timeout,
        )
        if request.allowed_tools:
            child.session.activate(request.allowed_tools)
        return child

    # ------------------------------------------------------------------ live input

    async def deliver_input(self, record: TaskRecord, message: str, interrupt: bool) -> bool:
        """Queue ``message`` for the running child of ``record``: it reads it before its next
        model request (or before it would stop). ``interrupt`` is accepted; the current
        model request and tool batch are not cut short. ``False`` if it is not running."""
        child = self._running.get(record.id)
        if child is None:
            return False
        child.queue_input(message)
        return True


def _unavailable(registry: ToolRegistry, entries: Sequence[str]) -> list[str]:
    """The ``allowed_tools`` entries that name nothing in ``registry`` (a tool, a group
    with a registered member, or a ``*`` pattern)."""
    missing: list[str] = []
    for entry in entries:
        if "*" in entry or entry in registry:
            continue
        members = registry.groups.get(entry, ()) if entry.startswith("group:") else ()
        if any(m in registry for m in members):
            continue
        missing.append(entry)
    return missing


def child_registry(
    parent: ToolRegistry, *, allowed_tools: Sequence[str] = (), sub_agents: bool = False
) -> ToolRegistry:
    """The registry of a sub-agent of ``parent`` (octos's native ``spawn``): a snapshot
    (the same tool objects, policies, groups and settings; its own task supervisor), spawn-
    only markers cleared, ``allowed_tools`` (names, groups or ``*`` patterns; empty: all)
    applied as a hard allow list, and the sub-agent tools removed unless ``sub_agents``
    (calling them is then ``policy_denied``). Used by :class:`NativeSpawnDelegate` and by
    the framework adapters' ``for_sub_agent``.

    Do not ``aclose()`` it while ``parent`` is in use (the tools are shared); close its
    ``supervisor`` instead.
    """
    registry = parent.snapshot_excluding(())
    registry.clear_spawn_only()
    if allowed_tools:
        registry.apply_policy(ToolPolicy(allow=allowed_tools), source="allowed_tools")
    if not sub_agents:
        registry.apply_policy(ToolPolicy(deny=SUB_AGENT_TOOLS), source="sub-agent depth limit")
    return registry


def sub_agent_context(parent: ToolContext) -> ToolContext:
    """The base context of a sub-agent of a session whose base context is ``parent``: a copy
    (approval and user-input callbacks, permissions, workspace, session key and any field a
    host or another module added) with ``spawn_depth + 1``, a ``state`` and ``extras`` of its
    own (no ``spawn_delegate``: the child's own agent puts its own), no registry or session.
    """
    extras = {k: v for k, v in parent.extras.items() if k != "spawn_delegate"}
    return replace(
        parent,
        tool_call_id="",
        spawn_depth=parent.spawn_depth + 1,
        state={},
        extras=extras,
        registry=None,
        session=None,
    )


def _forked(messages: Sequence[JSONObject]) -> list[JSONObject]:
    """The parent's transcript without its last assistant turn (the one whose tool call is
    spawning the child: its results are not in the transcript yet)."""
    out = list(messages)
    while out and out[-1].get("role") == "assistant":
        out.pop()
    return out


def _event_line(event: AgentEvent) -> str:
    if event.kind == "model_response":
        return f"{event.text}\n" if event.text else ""
    if event.kind == "tool_start" and event.call is not None:
        return f"→ {event.call.name} {_preview(event.call.arguments)}\n"
    if event.kind == "tool_result" and event.call is not None and event.result is not None:
        result = event.result
        if result.success:
            return f"← {event.call.name}: ok\n"
        err = result.error or {}
        return f"← {event.call.name}: error {err.get('kind')}: {_preview(err.get('message'))}\n"
    return ""
