"""A client that disconnects mid-call cancels the call (streamable HTTP).

The SDK v2 keeps running a request whose HTTP connection is gone: its answer has nowhere to
go, and a command it started runs on (CVE-class resource abuse: one client can pile up work
that outlives it). :class:`CancelOnDisconnect` wraps the SDK's app: when the connection of a
POST that carried ``tools/call`` requests drops before their answer was sent, it sends the
SDK the ``notifications/cancelled`` a well-behaved client would have sent (MCP
specification, *Utilities → Cancellation*), on the same MCP session. The SDK cancels the
handler; a running command is killed with everything it started, as on a timeout. A command
that already became a session (``yield_time_ms``) is not the request any more and runs on
until its session ends.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio

from .request_body import SCOPE_KEY, PostBody

__all__ = ["CancelOnDisconnect"]

logger = logging.getLogger("octos_tools.mcp.http")


def _call_ids(body: bytes) -> list[str | int]:
    if b"tools/call" not in body:
        return []
    try:
        message = json.loads(body)
    except ValueError:
        return []
    messages = message if isinstance(message, list) else [message]
    return [
        m["id"]
        for m in messages
        if isinstance(m, dict)
        and m.get("method") == "tools/call"
        and isinstance(m.get("id"), str | int)
        and not isinstance(m.get("id"), bool)
    ]


class CancelOnDisconnect:
    """ASGI wrapper: cancel the ``tools/call`` requests of a POST whose client left before
    their answer (see the module docstring). Inside :class:`~.request_body.KeepBody`, whose
    :class:`~.request_body.PostBody` it reads.

    Args:
        app: the SDK's streamable-HTTP app.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body: PostBody | None = scope.get(SCOPE_KEY)
        if body is None:
            await self.app(scope, receive, send)
            return
        answered = [False]

        async def tracked_send(message: Any) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body"):
                answered[0] = True
            await send(message)

        async def watch() -> None:
            await body.complete.wait()
            while not body.gone:
                message = await body.receive()  # uvicorn wakes every waiter on a disconnect
                if message.get("type") == "http.disconnect":
                    body.gone = True

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await self.app(scope, receive, tracked_send)
            tg.cancel_scope.cancel()
        if body.gone and not answered[0]:
            for rid in _call_ids(body.bytes()):
                await self._cancel(scope, rid)

    async def _cancel(self, scope: Any, rid: str | int) -> None:
        """Hand the SDK ``notifications/cancelled`` for ``rid`` on the request's session."""
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": rid, "reason": "the client disconnected"},
            }
        ).encode()
        headers = [(k, v) for k, v in scope.get("headers", []) if k not in (b"content-length",)] + [
            (b"content-length", str(len(body)).encode())
        ]
        scope = {k: v for k, v in scope.items() if k != SCOPE_KEY}
        sent = [False]

        async def receive() -> Any:
            if sent[0]:
                await anyio.sleep_forever()
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def discard(_message: Any) -> None:
            return None

        logger.info("client left during tools/call %r: cancelling it", rid)
        with anyio.move_on_after(5), anyio.CancelScope(shield=True):
            await self.app({**scope, "headers": headers}, receive, discard)
