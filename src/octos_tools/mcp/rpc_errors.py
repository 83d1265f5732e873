"""The JSON-RPC error that answers a message the SDK could not decode, with the request's
id whenever it can be read (JSON-RPC 2.0 §5: a client matches an answer by its id; one with
``id: null`` leaves it waiting forever).

Used by both transports: :mod:`~octos_tools.mcp.stdio` for a line, and
:class:`RecoverIds` (an ASGI wrapper of the SDK's streamable-HTTP app) for a POST body. The
SDK v2 answers both cases with ``id: null`` (``mcp.server.streamable_http`` turns any
validation error into ``-32602`` / ``-32700`` with no id); this layer reads the envelope with
the standard library's JSON decoder, which accepts what pydantic's refuses (a lone
surrogate escape such as ``"\\ud800"``), and recovers the id:

* not JSON: ``-32700``, id ``null`` (nothing to read);
* a batch (a JSON array): ``-32600``, id ``null``: ``[]`` is an "empty batch" (JSON-RPC 2.0
  §6), any other is refused whole (MCP 2025-06-18 removed JSON-RPC batching; the SDK v2
  answers both ``-32602`` with a pydantic dump);
* an ``id`` that is not a string or an integer (``null``, an object, an array, a float, a
  boolean; the MCP specification: the id MUST NOT be null): ``-32600`` with id ``null``
  (JSON-RPC 2.0 §5.1), where the SDK would take such a request for a notification, act on
  it (a ``notifications/cancelled`` cancels the call it names) and answer nothing
  (:func:`invalid_id_error`): such a message never reaches the SDK;
* JSON, but not Unicode text (a lone surrogate escape): ``-32700`` with the id;
* no ``method`` and no ``result`` / ``error``: ``-32600`` with the id;
* ``params`` not an object: ``-32602`` with the id;
* any other bad envelope: ``-32600`` with the id (``null`` when the id itself is bad);
* a malformed notification or response: no answer (JSON-RPC 2.0 §4.1).
"""

from __future__ import annotations

import json
import re
from typing import Any

import mcp_types as types

from .request_body import SCOPE_KEY, PostBody

__all__ = ["RecoverIds", "envelope_error", "invalid_id_error"]


def _error(rid: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message)
    )


def _usable_id(value: Any) -> str | int | None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return value


def envelope_error(raw: str | bytes, *, undecodable: bool) -> types.JSONRPCError | None:
    """The error answering the message ``raw`` that failed the SDK's decoding, or ``None``
    when no answer is due (a notification or a response).

    Args:
        raw: the message text (a stdio line or an HTTP body).
        undecodable: the SDK's decoder refused the text itself (``json_invalid``), not only
            the envelope's shape.
    """
    try:
        envelope = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return _error(None, -32700, "Parse error: the message is not valid JSON")
    if isinstance(envelope, list):
        if not envelope:
            return _error(None, -32600, "Invalid request: empty batch")
        return _error(
            None,
            -32600,
            "Invalid request: batches are not supported (MCP removed JSON-RPC batching in "
            "2025-06-18); send one message per request",
        )
    if not isinstance(envelope, dict):
        return _error(None, -32600, "Invalid request: not a JSON-RPC 2.0 message object")
    rid = _usable_id(envelope.get("id"))
    if undecodable:
        if "id" not in envelope:
            return None
        return _error(
            rid,
            -32700,
            "Parse error: the message is not Unicode text (a lone surrogate escape such as "
            "\\ud800); send each character as itself or as a valid surrogate pair",
        )
    if "method" not in envelope:
        if "result" in envelope or "error" in envelope:
            return None
        return _error(rid, -32600, "Invalid request: no method")
    if "id" not in envelope:
        return None
    if rid is None:
        return _error(None, -32600, "Invalid request: id must be a string or an integer")
    if (
        envelope.get("jsonrpc") == "2.0"
        and isinstance(envelope.get("method"), str)
        and "params" in envelope
        and not isinstance(envelope["params"], dict)
    ):
        return _error(rid, -32602, "Invalid params: params must be an object")
    return _error(rid, -32600, "Invalid request: not a valid JSON-RPC 2.0 request")


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a number with a fraction"
    return "an array" if isinstance(value, list) else "an object"


# "id": followed by a string or an integer: a member of that name that cannot be invalid
_PLAIN_ID = re.compile(r'"id"\s*:\s*(?:"|-?\d+\s*[,}\]])', re.ASCII)
_PLAIN_ID_BYTES = re.compile(_PLAIN_ID.pattern.encode())  # bytes patterns are ASCII


def _may_hold_invalid_id(raw: str | bytes) -> bool:
    """Whether some ``"id"`` of ``raw`` is not followed by a string or an integer (a quote
    cannot stand unescaped inside a JSON string, so every ``"id"`` is a member name or a
    whole string value)."""
    if isinstance(raw, bytes):
        marker: Any = b'"id"'
        plain: Any = _PLAIN_ID_BYTES
    else:
        marker, plain = '"id"', _PLAIN_ID
    at = raw.find(marker)
    while at != -1:
        if plain.match(raw, at) is None:
            return True
        at = raw.find(marker, at + 4)
    return False


def invalid_id_error(raw: str | bytes) -> types.JSONRPCError | None:
    """The ``-32600`` error (id ``null``) answering ``raw`` when it is a request whose ``id``
    is not a string or an integer (the SDK would take it for a notification); ``None`` for
    any other message (a valid request, a real notification: no ``id`` member, a response).

    Cheap for the common case: only a message with an ``"id"`` member that is not a string
    or an integer is parsed.
    """
    if not _may_hold_invalid_id(raw):
        return None
    try:
        envelope = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(envelope, dict) or "id" not in envelope or "method" not in envelope:
        return None
    if _usable_id(envelope["id"]) is not None:
        return None
    return _error(
        None,
        -32600,
        f"Invalid request: id must be a string or an integer (got {_json_kind(envelope['id'])})",
    )


class RecoverIds:
    """ASGI wrapper of the SDK's streamable-HTTP app, inside
    :class:`~octos_tools.mcp.request_body.KeepBody` (it reads the kept body; no parse unless
    the SDK refused the request):

    * a request whose id is invalid is answered the ``400`` of :func:`invalid_id_error` and
      never reaches the SDK (the body is read ahead, :meth:`PostBody.read_ahead
      <octos_tools.mcp.request_body.PostBody.read_ahead>`, then handed to the SDK as sent);
    * a ``400`` JSON-RPC error with ``id: null`` gets the request's id when it can be read;
      the SDK's own validation dumps (``-32602``, ``-32700``) are replaced by
      :func:`envelope_error`'s code and message, its other errors (a missing session id, a
      bad protocol version header) keep theirs.

    Args:
        app: the ASGI app.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body: PostBody | None = scope.get(SCOPE_KEY)
        if body is None:
            await self.app(scope, receive, send)
            return
        await body.read_ahead()
        if body.complete.is_set() and body.kept:
            bad = invalid_id_error(body.bytes())
            if bad is not None:
                await _send_json({"type": "http.response.start"}, _dump(bad), send, status=400)
                return
        held: list[Any] = []

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 400:
                held.append(message)
                return
            if held and message["type"] == "http.response.body":
                held.append(message)
                if message.get("more_body"):
                    return
                await self._rewrite(held, body.bytes(), send)
                held.clear()
                return
            await send(message)

        await self.app(scope, receive, watch)

    async def _rewrite(self, held: list[Any], request: bytes, send: Any) -> None:
        start, *bodies = held
        answer = b"".join(m.get("body", b"") for m in bodies)
        replaced = None
        try:
            sent = json.loads(answer)
        except ValueError:
            sent = None
        if (
            isinstance(sent, dict)
            and sent.get("id") is None
            and isinstance(sent.get("error"), dict)
        ):
            code = sent["error"].get("code")
            mine = envelope_error(request, undecodable=code == -32700)
            if mine is not None and code in (-32602, -32700):
                replaced = _dump(mine)
            elif mine is not None and mine.id is not None:
                replaced = json.dumps({**sent, "id": mine.id}).encode()
        if replaced is None:
            for message in held:
                await send(message)
            return
        await _send_json(start, replaced, send)


def _dump(error: types.JSONRPCError) -> bytes:
    return error.model_dump_json(by_alias=True, exclude_unset=True).encode()


async def _send_json(start: Any, body: bytes, send: Any, *, status: int | None = None) -> None:
    """Send ``body`` as a JSON response with the headers of the SDK's ``start`` message."""
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    if not any(k.lower() == b"content-type" for k, _v in headers):
        headers.append((b"content-type", b"application/json"))
    headers.append((b"content-length", str(len(body)).encode()))
    message = {**start, "headers": headers}
    if status is not None:
        message["status"] = status
    await send(message)
    await send({"type": "http.response.body", "body": body})
