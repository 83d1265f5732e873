"""octos-tools as a pydantic-ai toolset: :class:`OctosToolset` (extra ``pydantic-ai``).

::

    from pydantic_ai import Agent
    from octos_tools.adapters.pydantic_ai import OctosToolset

    agent = Agent("openai:gpt-5", toolsets=[OctosToolset(registry_or_session)])

What the toolset guarantees (pydantic-ai's toolset API: ``pydantic_ai.toolsets.AbstractToolset``
``for_run_step`` / ``get_tools`` / ``call_tool``):

* **The session's view, each step.** At every run step the session's housekeeping runs
  (:meth:`~octos_tools.session.ToolSession.before_model_request`: LRU tick and eviction) and
  the model is offered exactly the session's visible specs: policies, deferral, activation
  and the context filter hold. Our JSON schemas are passed as they are
  (``ToolDefinition.parameters_json_schema``, ``strict=False`` so that no provider rewrites
  them for its strict mode).
* **One call path, one validation.** pydantic-ai's own argument validation is replaced by a
  pass-through validator: arguments reach :meth:`ToolSession.call` as the model sent them
  (the raw JSON string when it is not a JSON object) and are validated there, once.
* **Failures the model can act on.** ``invalid_arguments``, ``invalid_json`` and
  ``args_too_large`` raise ``ModelRetry`` with our message (pydantic-ai's convention for
  "fix the arguments and call again"; it counts against the tool's ``max_retries``). Every
  other failed result is returned as tool-return text starting ``Error [kind]:`` (e.g.
  ``policy_denied``), so the model reads it and adapts.
* **Deferred tools.** pydantic-ai refuses a call to a name it was not offered before any
  toolset sees it (``Unknown tool name``). So a deferred tool becomes callable in two ways:
  through the registry's discovery tools (``tool_search`` with ``select:NAME``, or
  ``activate_tools``), or by calling it by name: the toolset then finds that call in the
  model's last response at the next step, activates the tool in the session (as a call through
  :meth:`ToolSession.call` would) and lists it, so the model's next attempt succeeds. The
  direct call therefore costs one extra model turn. pydantic-ai's own ``defer_loading`` /
  tool-search machinery is not used: deferral stays ours, in the session.
* **Approvals.** A call that needs a person's yes (a SafePolicy ask rule, an
  escalation; docs/approvals.md) raises pydantic-ai's ``ApprovalRequired`` (unless the
  session's context has an approval channel of its own): the run ends with
  ``DeferredToolRequests`` (``output_type=[str, DeferredToolRequests]``), the prompt in
  ``metadata[call_id]["octos_approval"]``; the host resumes with
  ``DeferredToolResults(approvals={call_id: True | ToolDenied()})`` and that exact call runs.
* Exclusive tools are marked ``sequential=True`` so pydantic-ai runs them alone; the
  session's own concurrency rule applies too.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from ._shared import (
    RETRY_KINDS,
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
    from pydantic_ai import RunContext
    from pydantic_ai.toolsets import ToolsetTool

    from ..context import ApprovalRequest
    from ..registry import ToolRegistry
    from ..session import ToolSession
    from ..tool_types import ToolResult

__all__ = ["OctosToolset"]

import_extra("pydantic_ai", "pydantic-ai")

from pydantic_ai.toolsets import AbstractToolset  # noqa: E402

RAW_ARGUMENTS_KEY = "__octos_raw_arguments__"
"""Key under which the pass-through validator hands over arguments that are not a JSON object
(invalid JSON, an array...), so that our call path reports them."""


class _PassThroughValidator:
    """A pydantic-ai ``args_validator`` that does not validate: it parses a JSON object and
    otherwise keeps the raw text, so the only validation is the session's."""

    def validate_json(
        self,
        input: str | bytes | bytearray,
        *,
        allow_partial: bool | Literal["off", "on", "trailing-strings"] = False,
        **kwargs: Any,
    ) -> Any:
        raw = input.decode("utf-8", "replace") if isinstance(input, bytes | bytearray) else input
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return {RAW_ARGUMENTS_KEY: raw}
        return parsed if isinstance(parsed, dict) else {RAW_ARGUMENTS_KEY: raw}

    def validate_python(
        self,
        input: Any,
        *,
        allow_partial: bool | Literal["off", "on", "trailing-strings"] = False,
        **kwargs: Any,
    ) -> Any:
        if input is None:
            return {}
        if isinstance(input, dict):
            return input
        return {RAW_ARGUMENTS_KEY: json.dumps(input, default=str)}


_VALIDATOR = _PassThroughValidator()


class OctosToolset(AbstractToolset[Any]):
    """A pydantic-ai toolset over an octos-tools :class:`~octos_tools.session.ToolSession`.

    Args:
        source: the session to serve, or a registry (a new session is made over it).
        max_retries: how many ``ModelRetry`` (bad arguments) in a row pydantic-ai allows per
            tool before it ends the run (its ``ToolsetTool.max_retries``); default 3.
        id: the toolset id pydantic-ai uses (durable execution); default ``"octos-tools"``.
        raise_tool_failed: when ``True``, failures other than the retry kinds raise
            pydantic-ai's ``ToolFailed`` instead of returning the text: the call is recorded
            with ``outcome="failed"`` (hosts and evals see it) and the model sees
            ``{"error": "Error [kind]: ..."}``. Default ``False``: plain tool-return text.

    Attributes:
        session: the session every call goes through.

    Raises:
        ImportError: at import of this module when pydantic-ai is not installed.
    """

    def __init__(
        self,
        source: ToolSession | ToolRegistry,
        *,
        max_retries: int = 3,
        id: str | None = "octos-tools",
        raise_tool_failed: bool = False,
    ) -> None:
        self.session = as_session(source)
        self._owns_session = self.session is not source
        self.max_retries = max_retries
        self.raise_tool_failed = raise_tool_failed
        self._id = id
        self._step: int | None = None

    async def aclose(self) -> None:
        """Close the session this object made over a registry (its view of the registry;
        the registry itself stays open). A session passed in is left to its owner."""
        if self._owns_session:
            await self.session.aclose()

    def for_sub_agent(self, allowed_tools: Iterable[str] = ()) -> OctosToolset:
        """The toolset of a delegate agent (pydantic-ai's agent delegation: a tool of the
        parent calls ``await delegate.run(..., usage=ctx.usage)``, so the delegate's tokens
        count in the parent's run).

        It is a toolset over a session of
        :func:`octos_tools.agent.spawn.child_registry` of this session's registry (its
        policies and settings kept, ``allowed_tools`` as a hard allow list, octos's own
        sub-agent tools removed) with ``spawn_depth + 1``, the same ``max_retries`` and
        ``raise_tool_failed``, and the id ``"<id>-sub-agent"``. The new toolset owns that
        session (:meth:`aclose` closes it).
        """
        child = OctosToolset(
            sub_agent_session(self.session, allowed_tools),
            max_retries=self.max_retries,
            id=f"{self._id}-sub-agent" if self._id else None,
            raise_tool_failed=self.raise_tool_failed,
        )
        child._owns_session = True
        return child

    @property
    def id(self) -> str | None:
        """The toolset id given to the constructor."""
        return self._id

    async def for_run(self, ctx: RunContext[Any]) -> AbstractToolset[Any]:
        """A copy per agent run (its own step counter), over the same session."""
        run = copy.copy(self)
        run._step = None
        return run

    async def for_run_step(self, ctx: RunContext[Any]) -> AbstractToolset[Any]:
        """Once per run step, before the model request: activate deferred tools the model
        called by name in its last response, then run the session's housekeeping."""
        if ctx.run_step != self._step:
            self._step = ctx.run_step
            self._activate_called_deferred(ctx)
            listed_specs(self.session, request=True)
        return self

    def _activate_called_deferred(self, ctx: RunContext[Any]) -> None:
        from pydantic_ai.messages import ModelResponse, ToolCallPart

        deferred = set(deferred_names(self.session))
        if not deferred:
            return
        for message in reversed(ctx.messages):
            if isinstance(message, ModelResponse):
                called = [
                    part.tool_name
                    for part in message.parts
                    if isinstance(part, ToolCallPart) and part.tool_name in deferred
                ]
                activate(self.session, called)
                return

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The session's visible tools as pydantic-ai tools (our schemas, as they are)."""
        from pydantic_ai.tools import ToolDefinition
        from pydantic_ai.toolsets import ToolsetTool

        specs = listed_specs(self.session, request=False)
        tools: dict[str, ToolsetTool[Any]] = {}
        for spec in specs:
            tool_def = ToolDefinition(
                name=spec.name,
                parameters_json_schema=dict(spec.input_schema),
                description=spec.description,
                strict=False,
                sequential=spec.destructive,
                metadata={"octos_tags": list(spec.tags), "read_only": spec.read_only},
            )
            tools[spec.name] = ToolsetTool(
                toolset=self,
                tool_def=tool_def,
                max_retries=self.max_retries,
                args_validator=_VALIDATOR,
            )
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Run the call through :meth:`ToolSession.call`.

        Returns:
            The output text, or a list of the text and pydantic-ai ``BinaryContent`` when the
            result carries images or audio.

        Raises:
            ModelRetry: for ``invalid_arguments``, ``invalid_json`` and ``args_too_large``.
            ToolFailed: for other failures, with ``raise_tool_failed=True``.
        """
        from pydantic_ai.exceptions import ModelRetry

        arguments: str | Mapping[str, Any] = tool_args
        if set(tool_args) == {RAW_ARGUMENTS_KEY}:
            arguments = str(tool_args[RAW_ARGUMENTS_KEY])
        call_ctx = None
        request = pending_approval(self.session, name, arguments)
        if request is not None:
            if not ctx.tool_call_approved:
                from pydantic_ai.exceptions import ApprovalRequired

                raise ApprovalRequired(metadata=_approval_metadata(request))
            call_ctx = approved_ctx(self.session, [request])  # the host approved this call
        result = await self.session.call(
            name, arguments, tool_call_id=ctx.tool_call_id or "", ctx=call_ctx
        )
        if not result.success:
            if result.error_kind in RETRY_KINDS:
                raise ModelRetry(failure_text(result))
            if self.raise_tool_failed:
                from pydantic_ai.exceptions import ToolFailed

                raise ToolFailed(failure_text(result))
            return failure_text(result)
        return _return_value(result)


def _approval_metadata(request: ApprovalRequest) -> dict[str, Any]:
    """What ``DeferredToolRequests.metadata[call_id]`` carries for the host's prompt."""
    return {
        "octos_approval": {
            "tool": request.tool,
            "action": request.action,
            "reason": request.reason,
            "kind": request.kind,
            "justification": request.justification,
            "cwd": request.cwd,
            "prompt": request.prompt(),
        }
    }


def _return_value(result: ToolResult) -> Any:
    """The output text, plus images and audio as ``BinaryContent`` (resources as text)."""
    if not result.content:
        return result.output
    from pydantic_ai.messages import BinaryContent

    from ..tool_types import AudioContent, ImageContent

    parts: list[Any] = [result.output] if result.output else []
    for block in result.content:
        if isinstance(block, ImageContent | AudioContent):
            parts.append(BinaryContent(data=block.data, media_type=block.mime_type))
        elif block.text is not None:
            parts.append(f"[resource {block.uri}]\n{block.text}")
        elif block.blob is not None:
            encoded = base64.b64encode(block.blob).decode("ascii")
            parts.append(f"[resource {block.uri} ({block.mime_type}), base64]\n{encoded}")
        else:
            parts.append(f"[resource {block.uri}]")
    return parts
