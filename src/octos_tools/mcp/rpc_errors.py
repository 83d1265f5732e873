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
* JSON, but not Unicode text (a lone surrogate escape): ``-32700`` with the id;
* no ``method`` and no ``result`` / ``error``: ``-32600`` with the id;
* ``params`` not an object: ``-32602`` with the id;
* any other bad envelope: ``-32600`` with the id (``null`` when the id itself is bad);
* a malformed notification or response: no answer (JSON-RPC 2.0 §4.1).
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

__all__ = ["RecoverIds", "envelope_error"]


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


class RecoverIds:
    """ASGI wrapper of the SDK's streamable-HTTP app: a ``400`` JSON-RPC error with
    ``id: null`` that answers a POST whose id can be read is rewritten by
    :func:`envelope_error` (the id and the right code). The request body is kept as it
    passes to the SDK (no second read, no extra parse unless the SDK refused it).

    Args:
        app: the ASGI app.
        max_body_bytes: a body over this size is not kept (the SDK refuses it with ``413``).
    """

    def __init__(self, app: Any, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        kept = [0]
        held: list[Any] = []

        async def tee() -> Any:
            message = await receive()
            if message.get("type") == "http.request" and kept[0] <= self.max_body_bytes:
                body = message.get("body", b"")
                kept[0] += len(body)
                chunks.append(body)
            return message

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 400:
                held.append(message)
                return
            if held and message["type"] == "http.response.body":
                held.append(message)
                if message.get("more_body"):
                    return
                await self._rewrite(held, b"".join(chunks), send)
                held.clear()
                return
            await send(message)

        await self.app(scope, tee, watch)

    async def _rewrite(self, held: list[Any], request: bytes, send: Any) -> None:
        start, *bodies = held
        answer = b"".join(m.get("body", b"") for m in bodies)
        replaced = None
        try:
            sent = json.loads(answer)
        except ValueError:
            sent = None
        if isinstance(sent, dict) and sent.get("id") is None and "error" in sent:
            code = sent["error"].get("code") if isinstance(sent["error"], dict) else None
            mine = envelope_error(request, undecodable=code == -32700)
            if mine is not None and mine.id is not None:
                replaced = mine.model_dump_json(by_alias=True, exclude_none=True).encode()
        if replaced is None:
            for message in held:
                await send(message)
            return
        headers = [
            (k, str(len(replaced)).encode() if k.lower() == b"content-length" else v)
            for k, v in start.get("headers", [])
        ]
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": replaced})
