"""octos-tools as LangChain tools (extra ``langchain``: ``langchain-core`` only).

::

    from octos_tools.adapters.langchain import OctosLangChainTools

    octos = OctosLangChainTools(registry_or_session)
    while True:
        model_with_tools = chat_model.bind_tools(octos.tools())   # the session's view, now
        reply = await model_with_tools.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls and not reply.invalid_tool_calls:
            break
        messages.extend(await octos.arun_tool_calls(reply))        # ToolMessages

* :meth:`OctosLangChainTools.tools` returns one structured ``BaseTool`` (:class:`OctosTool`)
  per spec the session lists, with our JSON schema as ``args_schema`` (a dict, so LangChain
  does not validate it: the session does, once). Call it before each model request: it runs
  the session's housekeeping (LRU tick and eviction) and follows activation and deferral.
* Each tool is async (``_arun``): the call goes through
  :meth:`~octos_tools.session.ToolSession.call` with the tool-call id. A successful result is
  ``(output, ToolResult)`` (``response_format="content_and_artifact"``: the model sees the
  text (with images and audio as LangChain content blocks), the host keeps our result as the
  ``ToolMessage.artifact``); a failed one raises
  ``ToolException`` with ``Error [kind]: message``, which the tool's
  ``handle_tool_error=True`` turns into a ``ToolMessage`` with ``status="error"`` the model
  reads. LangChain has no retry signal of its own; the model retries from the text.
* Deferred tools are not in :meth:`tools`; :meth:`OctosLangChainTools.arun_tool_calls` and
  :meth:`OctosLangChainTools.get` accept *any* name, so a deferred tool called by name runs
  (the session activates it, as under MCP) and is listed from the next request on; an unknown
  or policy-hidden name gets our ``unknown_tool`` / ``policy_denied`` text.
* **Approvals** (docs/approvals.md): :meth:`OctosLangChainTools.approval_requests` gives the
  calls that need a person's yes in the shape of LangChain's human-in-the-loop interrupt
  (``HumanInTheLoopMiddleware``, which needs LangGraph); the decisions go back into
  :meth:`OctosLangChainTools.arun_tool_calls`, and each approves that exact call only.
* Arguments the chat model could not parse (``AIMessage.invalid_tool_calls``) are passed to
  the session as the raw string, so the model sees our ``invalid_json`` message.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ._shared import (
    approved_ctx,
    as_session,
    failure_text,
    import_extra,
    listed_specs,
    pending_approval,
    sub_agent_session,
)

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.runnables import RunnableConfig

    from ..context import ApprovalRequest
    from ..registry import ToolRegistry
    from ..session import ToolSession
    from ..tool_types import ToolResult, ToolSpec

__all__ = ["OctosLangChainTools", "OctosTool"]

import_extra("langchain_core", "langchain")

from langchain_core.tools import BaseTool, ToolException  # noqa: E402
from pydantic import ConfigDict  # noqa: E402

_TOOL_CALL_ID: contextvars.ContextVar[str] = contextvars.ContextVar(
    "octos_langchain_tool_call_id", default=""
)
_APPROVED: contextvars.ContextVar[tuple[ApprovalRequest, ...]] = contextvars.ContextVar(
    "octos_langchain_approved", default=()
)


class OctosTool(BaseTool):
    """One octos-tools tool as a structured, async LangChain tool.

    Build them with :class:`OctosLangChainTools` rather than directly.

    Attributes:
        session: the :class:`~octos_tools.session.ToolSession` calls go through.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    session: Any
    handle_tool_error: bool = True
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """As ``BaseTool.ainvoke``; a ``ToolCall`` input's id is passed to the session."""
        call_id = input.get("id") if isinstance(input, dict) else None
        token = _TOOL_CALL_ID.set(str(call_id or ""))
        try:
            return await super().ainvoke(input, config, **kwargs)
        finally:
            _TOOL_CALL_ID.reset(token)

    async def _arun(self, **kwargs: Any) -> tuple[str | list[Any], ToolResult]:
        approved = _APPROVED.get()
        ctx = approved_ctx(self.session, approved) if approved else None
        result = await self.session.call(
            self.name, kwargs, tool_call_id=_TOOL_CALL_ID.get(), ctx=ctx
        )
        return _content(result), result

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"octos-tools tool {self.name!r} is async only: use ainvoke / arun"
        )


def _content(result: ToolResult) -> str | list[Any]:
    """The output text; with images or audio, LangChain content blocks (text first)."""
    if not result.success:
        raise ToolException(failure_text(result))
    if not result.content:
        return result.output
    import base64

    from ..tool_types import AudioContent, ImageContent

    blocks: list[Any] = [{"type": "text", "text": result.output}] if result.output else []
    for block in result.content:
        if isinstance(block, ImageContent | AudioContent):
            blocks.append(
                {
                    "type": "image" if isinstance(block, ImageContent) else "audio",
                    "base64": base64.b64encode(block.data).decode("ascii"),
                    "mime_type": block.mime_type,
                }
            )
        else:
            text = f"[resource {block.uri}]" + (f"\n{block.text}" if block.text else "")
            blocks.append({"type": "text", "text": text})
    return blocks


class OctosLangChainTools:
    """LangChain tools over an octos-tools :class:`~octos_tools.session.ToolSession`.

    Args:
        source: the session to serve, or a registry (a new session is made over it).

    Attributes:
        session: the session every call goes through.
    """

    def __init__(self, source: ToolSession | ToolRegistry) -> None:
        self.session = as_session(source)
        self._owns_session = self.session is not source
        self._cache: dict[tuple[str, str, int], OctosTool] = {}

    async def aclose(self) -> None:
        """Close the session this object made over a registry (its view of the registry;
        the registry itself stays open). A session passed in is left to its owner."""
        if self._owns_session:
            await self.session.aclose()

    def for_sub_agent(self, allowed_tools: Iterable[str] = ()) -> OctosLangChainTools:
        """The tools of a sub-agent that a LangChain tool of yours runs (LangChain has no
        delegation primitive of its own: a sub-agent is a tool that invokes another agent).

        It is a session over
        :func:`octos_tools.agent.spawn.child_registry` of this session's registry (its
        policies and settings kept, ``allowed_tools`` as a hard allow list, octos's own
        sub-agent tools removed) with ``spawn_depth + 1``. The new object owns that session
        (:meth:`aclose` closes it).
        """
        child = OctosLangChainTools(sub_agent_session(self.session, allowed_tools))
        child._owns_session = True
        return child

    def tools(self, *, request: bool = True) -> list[OctosTool]:
        """The tools the session lists now, in its order.

        Args:
            request: ``True`` (default) when the list is for a model request: the session's
                before-request housekeeping runs first; ``False`` for a pure read.
        """
        return [self._tool(spec) for spec in listed_specs(self.session, request=request)]

    def get(self, name: str) -> OctosTool:
        """A tool for ``name`` whether listed or not (a deferred tool activates when it
        runs; an unknown or denied name answers with our error text)."""
        for spec in listed_specs(self.session, request=False):
            if spec.name == name:
                return self._tool(spec)
        tool = self.session.get(name)
        if tool is not None:
            return self._tool(tool.spec_for(self.session.registry))
        return OctosTool(
            name=name,
            description="",
            args_schema={"type": "object", "properties": {}},
            session=self.session,
        )

    def _tool(self, spec: ToolSpec) -> OctosTool:
        key = (spec.name, spec.description, id(spec.input_schema))
        tool = self._cache.get(key)
        if tool is None:
            tool = OctosTool(
                name=spec.name,
                description=spec.description,
                args_schema=dict(spec.input_schema),
                session=self.session,
            )
            self._cache = {k: v for k, v in self._cache.items() if k[0] != spec.name}
            self._cache[key] = tool
        return tool

    def approval_requests(self, message: AIMessage) -> dict[str, Any] | None:
        """The calls of ``message`` that need a person's yes, as the payload of LangChain's
        human-in-the-loop interrupt (``HumanInTheLoopMiddleware``'s ``HITLRequest``:
        ``{"action_requests": [{"name", "args", "description"}], "review_configs":
        [{"action_name", "allowed_decisions": ["approve", "reject"]}]}``), or ``None``.

        With LangGraph: ``decisions = interrupt(request)["decisions"]``, then
        :meth:`arun_tool_calls` with those ``decisions`` (one per action request, in order).
        """
        actions: list[dict[str, Any]] = []
        for call in message.tool_calls:
            request = pending_approval(self.session, call["name"], call.get("args"))
            if request is not None:
                actions.append(
                    {
                        "name": call["name"],
                        "args": call.get("args"),
                        "description": request.prompt(),
                    }
                )
        if not actions:
            return None
        reviews = [
            {"action_name": a["name"], "allowed_decisions": ["approve", "reject"]} for a in actions
        ]
        return {"action_requests": actions, "review_configs": reviews}

    async def arun_tool_calls(
        self, message: AIMessage, decisions: Sequence[Mapping[str, Any]] | None = None
    ) -> list[ToolMessage]:
        """Run every tool call of ``message`` (parsed and unparsable ones) through the
        session and return one ``ToolMessage`` per call, in order (parsed calls first).

        Calls run one after another: the session serialises Exclusive tools anyway, and
        the order stays the model's.

        Args:
            message: the model's message.
            decisions: the person's answers to :meth:`approval_requests`, in its order
                (``{"type": "approve"}`` or ``{"type": "reject", "message": ...}``, the
                human-in-the-loop middleware's decisions). A call needing approval with no
                decision asks the session's own channel, else answers
                ``approval_required``; a rejected one answers ``approval_denied``; neither
                runs anything.
        """
        from langchain_core.messages import ToolMessage

        answers = list(decisions or [])
        out: list[ToolMessage] = []
        for call in message.tool_calls:
            request = pending_approval(self.session, call["name"], call.get("args"))
            approved: tuple[ApprovalRequest, ...] = ()
            if request is not None and answers:
                decision = answers.pop(0)
                if decision.get("type") != "approve":
                    note = str(decision.get("message") or "the user did not approve this")
                    text = f"Error [approval_denied]: {note}; do not retry it as it is"
                    out.append(
                        ToolMessage(
                            content=text,
                            tool_call_id=call.get("id") or "",
                            name=call["name"],
                            status="error",
                        )
                    )
                    continue
                approved = (request,)
            token = _APPROVED.set(approved)
            try:
                out.append(await self.get(call["name"]).ainvoke({**call, "type": "tool_call"}))
            finally:
                _APPROVED.reset(token)
        out.extend(await self._invalid(message.invalid_tool_calls))
        return out

    async def _invalid(self, calls: Sequence[Any]) -> list[ToolMessage]:
        from langchain_core.messages import ToolMessage

        out: list[ToolMessage] = []
        for call in calls:
            name = str(call.get("name") or "")
            call_id = str(call.get("id") or "")
            result = await self.session.call(name, call.get("args") or "", tool_call_id=call_id)
            text = failure_text(result) if not result.success else result.output
            out.append(
                ToolMessage(
                    content=text,
                    tool_call_id=call_id,
                    name=name,
                    status="success" if result.success else "error",
                    artifact=result,
                )
            )
        return out
