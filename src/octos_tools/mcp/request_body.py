"""The one reader of a POST body on its way to the SDK (streamable HTTP).

Two layers need the body the SDK reads: :class:`~octos_tools.mcp.rpc_errors.RecoverIds`
(an error reply gets the request's id) and
:class:`~octos_tools.mcp.disconnect.CancelOnDisconnect` (a client that left cancels its
``tools/call``). :class:`KeepBody` wraps the ASGI ``receive`` once, keeps the body as it
passes (no second read, no parse) and notes a disconnect; the layers inside find the
:class:`PostBody` under ``scope[SCOPE_KEY]``. A layer that must see the whole body before the
SDK does (:class:`~octos_tools.mcp.rpc_errors.RecoverIds`: a request with an invalid id never
reaches the SDK) calls :meth:`PostBody.read_ahead`; the SDK then reads the same messages.
"""

from __future__ import annotations

from typing import Any

import anyio

__all__ = ["SCOPE_KEY", "KeepBody", "PostBody"]

SCOPE_KEY = "octos_tools.post_body"
"""Where :class:`KeepBody` puts the :class:`PostBody` of a POST in the ASGI scope."""


class PostBody:
    """The body of one POST as the SDK reads it.

    Attributes:
        size: bytes received so far.
        complete: set when the last body chunk arrived.
        gone: the client disconnected.
        receive: the request's original ASGI ``receive`` (to wait for a disconnect once the
            body is read).
    """

    def __init__(self, receive: Any, max_bytes: int) -> None:
        self.receive = receive
        self.max_bytes = max_bytes
        self.size = 0
        self.complete = anyio.Event()
        self.gone = False
        self._chunks: list[bytes] = []
        self._ahead: list[Any] = []

    @property
    def kept(self) -> bool:
        """Whether the whole body is kept (it is not once over ``max_bytes``)."""
        return self.size <= self.max_bytes

    def bytes(self) -> bytes:
        """The body received so far (``b""`` when it went over ``max_bytes``)."""
        if not self.kept:
            return b""
        if len(self._chunks) > 1:
            self._chunks[:] = [b"".join(self._chunks)]
        return self._chunks[0] if self._chunks else b""

    async def read_ahead(self) -> None:
        """Read the body now, before the app asks for it: :attr:`complete` is set when it
        returns, unless the body went over ``max_bytes`` (the rest is left to the app, which
        refuses it) or the client disconnected. :meth:`tee` hands the app what was read,
        then reads on."""
        while not self.complete.is_set() and self.kept and not self.gone:
            self._ahead.append(self._note(await self.receive()))

    async def tee(self) -> Any:
        """The ``receive`` handed to the app: each message passes through, noted."""
        if self._ahead:
            return self._ahead.pop(0)
        return self._note(await self.receive())

    def _note(self, message: Any) -> Any:
        kind = message.get("type")
        if kind == "http.request":
            piece = message.get("body", b"")
            self.size += len(piece)
            if self.size <= self.max_bytes:
                self._chunks.append(piece)
            else:
                self._chunks.clear()
            if not message.get("more_body"):
                self.complete.set()
        elif kind == "http.disconnect":
            self.gone = True
        return message


class KeepBody:
    """ASGI wrapper: every POST's body is kept as it passes (see the module docstring).

    Args:
        app: the ASGI app (the layers that read :class:`PostBody`, then the SDK).
        max_body_bytes: bodies over this size are not kept (the SDK refuses them).
    """

    def __init__(self, app: Any, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body = PostBody(receive, self.max_body_bytes)
        await self.app({**scope, SCOPE_KEY: body}, body.tee, send)
