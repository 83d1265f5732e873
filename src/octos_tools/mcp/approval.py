"""The approval channel over MCP (docs/approvals.md): a person asked through the client.

Two protocol eras, one question (a form with one boolean, ``approve``):

* **2025 clients** that declare form-mode elicitation: the server sends
  ``elicitation/create`` in the middle of the ``tools/call`` and waits for the answer
  (:func:`approval_via_elicitation`).
* **2026-07-28 clients** (no server-to-client requests): the ``tools/call`` answers an
  ``InputRequiredResult`` carrying the same elicitation as an input request (MCP
  SEP-2322, the SDK's ``InputRequiredResult``); the client asks the person and sends the
  same ``tools/call`` again with ``inputResponses`` (:class:`InputRequiredApproval`).
  Nothing has run by then: approval is asked before a command starts, so the retry runs
  the call from the top and finds its answer.

An answer counts for the one request it was asked for: the input request's key is
``approval-`` plus :meth:`ApprovalRequest.key
<octos_tools.context.ApprovalRequest.key>` (tool, exact command, folder, mode), so an
answer sent for another command approves nothing. Accept with ``approve`` true (or no
content) approves; decline, cancel or ``approve`` false refuses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types

from ..context import ApprovalCallback, ApprovalRequest
from ..errors import ErrorKind, ToolError
from .elicitation import elicit_unless_gone

if TYPE_CHECKING:
    from mcp.server.session import ServerSession

__all__ = [
    "APPROVAL_SCHEMA",
    "InputRequiredApproval",
    "approval_via_elicitation",
    "approved",
    "input_key",
]

#: The form asked: one boolean, false by default: a client that fills in defaults cannot
#: turn an accept without a tick into a yes (the terminal prompt defaults to no too).
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Run it",
            "description": "Allow this exact command to run once",
            "default": False,
        }
    },
    "required": ["approve"],
}


def input_key(request: ApprovalRequest) -> str:
    """The key of ``request``'s input request (``approval-<16 hex digits>``)."""
    return f"approval-{request.key()}"


def approved(result: Any) -> bool:
    """Whether an ``ElicitResult`` (or its JSON form) says yes: ``accept`` with
    ``approve: true``. Fails closed: an accept without the required field (or with
    anything but ``true``) is not a yes."""
    if isinstance(result, dict):
        action, content = result.get("action"), result.get("content")
    else:
        action, content = getattr(result, "action", None), getattr(result, "content", None)
    if action != "accept":
        return False
    return isinstance(content, dict) and content.get("approve") is True


def approval_via_elicitation(
    session: ServerSession,
    related_request_id: str | int | None = None,
    *,
    gone: anyio.Event | None = None,
) -> ApprovalCallback:
    """An approval callback asking through ``elicitation/create`` on ``session`` (2025
    clients); ``related_request_id`` ties the question to the ``tools/call``; ``gone`` is set
    when the client can no longer answer.

    Raises (from the callback):
        ToolError: ``approval_required`` when the client could not ask or left first.
    """

    async def approve(request: ApprovalRequest) -> bool:
        try:
            answer = await elicit_unless_gone(
                session, request.prompt(), APPROVAL_SCHEMA, related_request_id, gone
            )
        except Exception as exc:  # noqa: BLE001 - any transport or client refusal
            raise ToolError(
                ErrorKind.APPROVAL_REQUIRED, f"the client could not ask the user ({exc})"
            ) from None
        if answer is None:
            raise ToolError(ErrorKind.APPROVAL_REQUIRED, "the client left before the user answered")
        return approved(answer)

    return approve


class InputRequiredApproval:
    """The approval channel of one 2026-07-28 ``tools/call`` round.

    Args:
        responses: the request's ``inputResponses`` (``None`` on the first round).

    Attributes:
        pending: the request asked this round and not yet answered, or ``None``; the server
            then answers :meth:`input_required` instead of the tool's result.
    """

    def __init__(self, responses: dict[str, Any] | None) -> None:
        self.responses = dict(responses or {})
        self.pending: ApprovalRequest | None = None

    async def __call__(self, request: ApprovalRequest) -> bool:
        """The answer sent for this exact request, or (first round) a note that it must be
        asked: raises ``approval_required``, and :attr:`pending` is set."""
        key = input_key(request)
        if key in self.responses:
            return approved(self.responses[key])
        self.pending = request
        raise ToolError(
            ErrorKind.APPROVAL_REQUIRED,
            "waiting for the user's answer (input required)",
        )

    def input_required(self) -> types.InputRequiredResult:
        """The ``InputRequiredResult`` asking :attr:`pending` (which must be set)."""
        assert self.pending is not None
        question = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=self.pending.prompt(), requested_schema=APPROVAL_SCHEMA
            )
        )
        return types.InputRequiredResult(input_requests={input_key(self.pending): question})
