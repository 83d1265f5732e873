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
    their answer (see the module docstring).

    Args:
        app: the SDK's streamable-HTTP app.
        max_body_bytes: bodies over this size are not inspected (the SDK refuses them).
    """

    def __init__(self, app: Any, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        state = {"size": 0, "body_done": False, "answered": False, "gone": False}
        body_done = anyio.Event()

        async def tee() -> Any:
            message = await receive()
            kind = message.get("type")
            if kind == "http.request":
                piece = message.get("body", b"")
                state["size"] += len(piece)
                if state["size"] <= self.max_body_bytes:
                    chunks.append(piece)
                if not message.get("more_body"):
                    body_done.set()
            elif kind == "http.disconnect":
                state["gone"] = True
            return message

        async def tracked_send(message: Any) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body"):
                state["answered"] = True
            await send(message)

        async def watch(scope_: anyio.CancelScope) -> None:
            await body_done.wait()
            while not state["gone"]:
                message = await receive()  # uvicorn wakes every waiter on a disconnect
                if message.get("type") == "http.disconnect":
                    state["gone"] = True

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch, tg.cancel_scope)
            await self.app(scope, tee, tracked_send)
            tg.cancel_scope.cancel()
        if state["gone"] and not state["answered"]:
            ids = _call_ids(b"".join(chunks)) if state["size"] <= self.max_body_bytes else []
            for rid in ids:
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
