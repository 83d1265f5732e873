"""``request_user_input`` over MCP elicitation (MCP specification, *Client features →
Elicitation*, 2025-06-18 and later).

A client that declares the ``elicitation`` capability (form mode) in its ``initialize``
request can be asked questions: the server sends ``elicitation/create`` with a message and a
flat JSON Schema, the client shows a form, the person answers, accepts, declines or
cancels. :func:`user_input_via_elicitation` turns that into the
:data:`~octos_tools.context.UserInputCallback` that ``request_user_input`` calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from ..context import UserInputCallback
from ..errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from mcp.server.session import ServerSession

__all__ = [
    "elicit_unless_gone",
    "elicitation_form",
    "supports_elicitation",
    "user_input_via_elicitation",
]


def supports_elicitation(capabilities: Any) -> bool:
    """Whether MCP ``ClientCapabilities`` declare form-mode elicitation (an empty
    ``elicitation: {}`` object, as 2025-06-18 clients send it, means form mode)."""
    elicitation = getattr(capabilities, "elicitation", None)
    if elicitation is None:
        return False
    form = getattr(elicitation, "form", None)
    url = getattr(elicitation, "url", None)
    return form is not None or url is None


def _key(question: dict[str, Any], index: int) -> str:
    raw = str(question.get("id") or f"q{index + 1}")
    cleaned = "".join(c if c.isalnum() or c in "_-." else "_" for c in raw)
    return cleaned or f"q{index + 1}"


def elicitation_form(request: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, str]]:
    """The elicitation message, requested schema and ``{property: question}`` for the
    validated arguments of ``request_user_input``.

    A plain ``prompt`` becomes one string field ``answer``; each of ``questions`` one field
    (an ``enum`` of the option labels when options are given, a string otherwise; the MCP
    form schema allows only flat primitive properties, so a multi-select question is asked
    as text).
    """
    questions = request.get("questions") or []
    prompt = request.get("prompt")
    if not questions:
        text = str(prompt or "")
        schema = {
            "type": "object",
            "properties": {"answer": {"type": "string", "title": "Answer"}},
            "required": ["answer"],
        }
        return text, schema, {"answer": text}
    props: dict[str, Any] = {}
    asked: dict[str, str] = {}
    for index, question in enumerate(questions):
        key = _key(question, index)
        while key in props:
            key = f"{key}_{index + 1}"
        text = str(question.get("question", ""))
        prop: dict[str, Any] = {"type": "string", "title": str(question.get("header") or text)}
        prop["description"] = text
        options = question.get("options") or []
        labels = [str(o.get("label")) for o in options if isinstance(o, dict)]
        if labels and not question.get("multi_select"):
            prop["enum"] = labels
        props[key] = prop
        asked[key] = text
    message = str(prompt) if prompt else "\n".join(asked.values())
    return message, {"type": "object", "properties": props, "required": list(props)}, asked


def user_input_via_elicitation(
    session: ServerSession,
    related_request_id: str | int | None = None,
    *,
    gone: anyio.Event | None = None,
) -> UserInputCallback:
    """A :data:`~octos_tools.context.UserInputCallback` asking through ``session`` (the
    ``tools/call`` request's ``ServerSession``; ``related_request_id`` is that request's id, so
    that over streamable HTTP the question rides the call's own response stream). ``gone``
    is set when the client can no longer answer (stdin closed): a pending question then
    fails as ``unavailable`` instead of waiting forever.

    The callback answers ``{"action": "accept", "answers": {...}}`` when the person
    submitted the form (a single ``prompt`` gives the answer text itself), and raises a
    :class:`~octos_tools.errors.ToolError` of kind ``cancelled`` when they declined or
    dismissed it, ``unavailable`` when the client could not be asked.
    """

    async def ask(request: dict[str, Any]) -> Any:
        message, schema, asked = elicitation_form(request)
        try:
            answer = await elicit_unless_gone(session, message, schema, related_request_id, gone)
        except Exception as exc:  # noqa: BLE001 - any transport or client refusal
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                f"the client could not ask the user ({_describe(exc)}); "
                "continue with your best judgement or state the question in your reply",
            ) from None
        if answer is None:
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                "the client left before the user answered; continue with your best judgement",
            )
        result = answer
        if result.action != "accept":
            raise ToolError(
                ErrorKind.CANCELLED,
                f"the user chose {result.action!r} instead of answering; do not ask again "
                "the same way",
                action=result.action,
            )
        content = dict(result.content or {})
        if not request.get("questions"):
            return content.get("answer", "")
        return {"action": "accept", "answers": {asked.get(k, k): v for k, v in content.items()}}

    return ask


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    return f"{type(exc).__name__}: {exc}"


async def elicit_unless_gone(
    session: ServerSession,
    message: str,
    schema: dict[str, Any],
    related_request_id: str | int | None,
    gone: anyio.Event | None,
) -> Any:
    """Send one ``elicitation/create`` form request on ``session`` and wait for its answer,
    unless ``gone`` is set first (the client can no longer answer).

    Returns:
        The client's ``ElicitResult``, or ``None`` when ``gone`` was set before it came.

    Raises:
        Exception: whatever the transport or the client's refusal raised.
    """
    answers: list[Any] = []
    async with anyio.create_task_group() as tg:

        async def elicit() -> None:
            answers.append(await session.elicit_form(message, schema, related_request_id))  # type: ignore[arg-type]
            tg.cancel_scope.cancel()

        async def watch() -> None:
            if gone is not None:
                await gone.wait()
                tg.cancel_scope.cancel()

        tg.start_soon(elicit)
        tg.start_soon(watch)
    return answers[0] if answers else None
