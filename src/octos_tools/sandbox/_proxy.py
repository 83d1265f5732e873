"""The egress proxy of ``[sandbox] allowed_hosts``: the only way out of a sandboxed command.

One per process, started the first time a sandboxed command with ``allowed_hosts`` runs
(:func:`egress_proxy`), on an event loop of its own in a daemon thread (commands are
wrapped from synchronous code, from any event loop), closed by :func:`close_egress_proxy`
(registered with :mod:`atexit`).

It speaks the two forms a client's ``HTTP_PROXY`` / ``HTTPS_PROXY`` produce (RFC 9110
section 9.3.6 and 7.1), one request per client connection:

* ``CONNECT host:port`` (HTTPS, or any TCP tunnel to a listed port): checked, then
  ``200 Connection Established`` and the bytes are relayed both ways (what the client
  sent after the head, such as its TLS hello, included: it is the tunnel's);
* ``GET http://host[:port]/path`` (absolute URI, plain HTTP): checked, then sent in origin
  form with the URI's ``Host``, hop-by-hop headers dropped and ``Connection: close``; the
  body is framed again by h11, the response gets ``Connection: close`` and its body is
  relayed as is when it has a ``Content-Length`` (framed again by h11 otherwise), and the
  connection ends with it. Bytes after the request are
  never read: a pipelined second request would otherwise reach the first one's upstream
  unchecked; the client sends it again on a new connection (RFC 9112 section 9.6), where
  it is checked on its own. ``https://`` in an absolute URI is refused (CONNECT is for it).

The head's rules (sizes, framing, h11's grammar) are :mod:`._proxy_http`'s. The check, in
order: the authority is canonicalised once (:func:`._egress.split_authority`: case, a
trailing dot, percent-encoding, numeric IPv4 spellings, IPv4-mapped IPv6; userinfo and
IPv6 zone ids refused); ``host:port`` must match an ``allowed_hosts`` entry
(:mod:`._egress`); then the host is resolved *once* by web_fetch's SSRF guard
(:func:`octos_tools.builtins.web.check_host`): every address must be public unless
the address itself is listed; the connection goes to the address the guard approved (no
second lookup, so DNS rebinding cannot redirect it). Anything else is answered
``403 Forbidden`` with a one-line reason (``400`` for a malformed request, ``431`` for a
head too large, ``501`` for a transfer coding other than chunked, ``502`` when the host
does not resolve, refuses the connection or answers malformed, ``504`` on a connect
timeout). Every answer closes the connection after a short linger (so that the close
does not reset the answer away).

Where requests come from:

* bubblewrap: each command has a network namespace of its own (loopback only). A one-shot
  bridge (:mod:`._bridge`) creates the listening socket *inside* it and hands it to this
  proxy over a socket pair (``SCM_RIGHTS``) before it ``exec``\\ s the command; the proxy
  accepts on it (a socket keeps the namespace it was made in) and stops when the sandbox
  ends: bwrap keeps a copy of the pair's other end open until then (``--sync-fd``: it
  closes every other inherited descriptor in its own processes);
* Landlock: a TCP listener on ``127.0.0.1`` of the host, one per allow-list; Landlock lets
  the command connect to that port only (:mod:`._landlock`).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import socket
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import anyio
import anyio.abc
import h11
from anyio.from_thread import BlockingPortal

from ._egress import HostRules, split_authority
from ._proxy_http import Refusal, check_head, end_to_end, origin_request, parse_request, read_head

__all__ = ["EgressProxy", "close_egress_proxy", "egress_proxy"]

_log = logging.getLogger("octos_tools.sandbox.egress")

#: Seconds a client has to send its request head.
HEAD_TIMEOUT_SECS = 30.0
#: Seconds to connect to the upstream host.
CONNECT_TIMEOUT_SECS = 10.0
#: Connections relayed at once, over every command.
MAX_CONNECTIONS = 256
#: Connections relayed at once for one listener (one bubblewrap sandbox; under Landlock,
#: every command with the same allow-list): one command cannot take every slot.
MAX_CONNECTIONS_PER_LISTENER = 64
#: After the answer, how long and how much of what the client still sends is read and
#: dropped before the connection closes (a close with unread bytes resets the connection,
#: and the reset can destroy the answer before the client reads it: RFC 9112 section 9.6).
LINGER_SECS = 1.0
LINGER_BYTES = 1 << 20
_T = TypeVar("_T")
_FRAMING = (b"content-length", b"transfer-encoding")
_RELAY_ERRORS = (
    h11.ProtocolError,
    anyio.EndOfStream,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    OSError,
)


class EgressProxy:
    """The process's egress proxy: an event loop in a daemon thread, its listeners and
    relays. Use :func:`egress_proxy`; every method may be called from any thread."""

    def __init__(self) -> None:
        self._portal: BlockingPortal | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="octos-egress-proxy", daemon=True)
        self._tcp_ports: dict[HostRules, int] = {}
        self._lock = threading.Lock()
        self._limiter: anyio.CapacityLimiter | None = None
        self._thread.start()
        self._ready.wait()
        if self._portal is None:
            raise RuntimeError("the egress proxy's event loop did not start")

    def _main(self) -> None:
        async def body() -> None:
            self._limiter = anyio.CapacityLimiter(MAX_CONNECTIONS)
            async with BlockingPortal() as portal:
                self._portal = portal
                self._ready.set()
                await portal.sleep_until_stopped()

        try:
            anyio.run(body)
        finally:
            self._ready.set()

    def _submit(self, fn: Callable[..., Awaitable[_T]], *args: Any) -> Future[_T]:
        portal = self._portal
        if portal is None:
            raise RuntimeError("the egress proxy is closed")
        return portal.start_task_soon(fn, *args)

    # ---------------------------------------------------------------- listeners

    def attach(self, channel: socket.socket, rules: HostRules) -> None:
        """Serve the listening socket a bridge will send over ``channel`` (an ``AF_UNIX``
        stream socket, owned from now on), applying ``rules``, until ``channel`` reaches
        end of file (the sandbox ended)."""
        self._submit(self._serve_channel, channel, rules)

    def tcp_port(self, rules: HostRules) -> int:
        """The port of the host loopback listener (``127.0.0.1``) applying ``rules``,
        created on first use (the Landlock engine)."""
        with self._lock:
            port = self._tcp_ports.get(rules)
            if port is None:
                sock = socket.create_server(("127.0.0.1", 0), backlog=512)
                port = int(sock.getsockname()[1])
                try:
                    self._submit(self._serve_socket, sock, rules)
                except BaseException:
                    sock.close()
                    raise
                self._tcp_ports[rules] = port
            return port

    async def _serve_socket(self, sock: socket.socket, rules: HostRules) -> None:
        await self._serve(await anyio.abc.SocketListener.from_socket(sock), rules)

    async def _serve_channel(self, channel: socket.socket, rules: HostRules) -> None:
        with contextlib.suppress(Exception):
            stream = await anyio.abc.UNIXSocketStream.from_socket(channel)
            async with stream:
                try:
                    _msg, fds = await stream.receive_fds(1, 1)
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    return  # the bridge did not start: nothing to serve
                if not fds:
                    return
                sock = socket.socket(fileno=fds[0])
                if sock.type != socket.SOCK_STREAM or sock.family not in (
                    socket.AF_INET,
                    socket.AF_INET6,
                ):
                    sock.close()
                    return
                listener = await anyio.abc.SocketListener.from_socket(sock)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._serve, listener, rules)
                    with contextlib.suppress(Exception):
                        while await stream.receive():
                            pass  # nothing more is sent; wait for the end of the sandbox
                    tg.cancel_scope.cancel()

    async def _serve(self, listener: anyio.abc.SocketListener, rules: HostRules) -> None:
        mine = anyio.CapacityLimiter(MAX_CONNECTIONS_PER_LISTENER)
        async with listener, anyio.create_task_group() as tg:
            while True:
                try:
                    client = await listener.accept()
                except (anyio.ClosedResourceError, OSError):
                    return
                tg.start_soon(self._handle, client, rules, mine)

    # ---------------------------------------------------------------- one request

    async def _handle(
        self, client: anyio.abc.SocketStream, rules: HostRules, mine: anyio.CapacityLimiter
    ) -> None:
        assert self._limiter is not None
        async with client, mine, self._limiter:
            try:
                await _exchange(client, rules)
            except Refusal as refusal:
                _log.info("egress refused: %s", refusal.reason)
                with contextlib.suppress(Exception):
                    await client.send(refusal.response())
            except (
                anyio.EndOfStream,
                anyio.BrokenResourceError,
                anyio.ClosedResourceError,
                OSError,
                TimeoutError,
                h11.ProtocolError,
            ):
                pass
            except Exception:  # noqa: BLE001 - a bug must not end the other connections
                _log.warning("egress proxy: a connection failed", exc_info=True)
            await _linger(client)

    # ---------------------------------------------------------------- shutdown

    def close(self) -> None:
        """Stop every listener and relay and end the thread (idempotent)."""
        portal, self._portal = self._portal, None
        if portal is not None:
            with contextlib.suppress(Exception):
                portal.call(portal.stop, True)
            self._thread.join(timeout=5)


async def _exchange(client: anyio.abc.SocketStream, rules: HostRules) -> None:
    """Serve one client connection: one request, checked, then its tunnel or its response.

    A connection carries one request only. Bytes after a CONNECT head are the tunnel's
    (to the checked host); bytes after an absolute-URI request are never read: a second
    request on the connection would reach the first one's upstream unchecked. The
    response says ``Connection: close`` and the client sends its next request on a new
    connection, checked on its own (RFC 9112 section 9.6).
    """
    with anyio.fail_after(HEAD_TIMEOUT_SECS):
        head, rest = await read_head(client)
    check_head(head)
    conn, request = parse_request(head, rest)
    if request.method == b"CONNECT":
        await _tunnel(client, conn, request, rules)
        return
    host, port, forward = origin_request(request)
    upstream = await _connect(host, port, rules)
    async with upstream:
        await _forward(client, conn, upstream, forward)


async def _tunnel(
    client: anyio.abc.SocketStream, conn: h11.Connection, request: h11.Request, rules: HostRules
) -> None:
    if any(n.lower() in _FRAMING for n, _ in request.headers.raw_items()):
        raise Refusal(400, "a CONNECT request has no content (RFC 9110 section 9.3.6)")
    try:
        host, port = split_authority(request.target.decode("ascii"), None)
    except ValueError as exc:
        raise Refusal(400, str(exc)) from None
    if not isinstance(conn.next_event(), h11.EndOfMessage) or conn.next_event() is not h11.PAUSED:
        raise Refusal(400, "malformed CONNECT request")  # not reached: no content, h11 waits
    upstream = await _connect(host, port, rules)
    async with upstream:
        await client.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        early = conn.trailing_data[0]  # what the client sent past the head (a TLS hello)
        if early:
            await upstream.send(bytes(early))
        async with anyio.create_task_group() as tg:
            tg.start_soon(_pipe, client, upstream)
            tg.start_soon(_pipe, upstream, client)


async def _forward(
    client: anyio.abc.SocketStream,
    conn: h11.Connection,
    upstream: anyio.abc.SocketStream,
    request: h11.Request,
) -> None:
    """Send ``request`` and the client's body upstream, and the response back, framed
    again by h11 (so each side sees only the framing h11 wrote or checked); end with the
    response."""
    up = h11.Connection(h11.CLIENT)
    await upstream.send(up.send(request) or b"")
    body_failed: list[Exception] = []  # raised after the task group, not in a group
    response_failed: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(_request_body, client, conn, upstream, up, body_failed, tg.cancel_scope)
        try:
            await _response(upstream, up, client, conn, request.method)
        except _RELAY_ERRORS as exc:
            response_failed = exc
        tg.cancel_scope.cancel()
    failed = body_failed[0] if body_failed else response_failed
    if failed is None:
        return
    if isinstance(failed, h11.RemoteProtocolError) and conn.our_state is h11.SEND_RESPONSE:
        # nothing sent to the client yet: say why
        if body_failed:
            raise Refusal(400, f"malformed request body: {failed}") from None
        raise Refusal(502, f"the upstream's response is malformed: {failed}") from None
    raise failed


async def _request_body(
    client: anyio.abc.SocketStream,
    conn: h11.Connection,
    upstream: anyio.abc.SocketStream,
    up: h11.Connection,
    failed: list[Exception],
    scope: anyio.CancelScope,
) -> None:
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    conn.receive_data(await client.receive(65536))
                except anyio.EndOfStream:
                    conn.receive_data(b"")
            elif isinstance(event, (h11.Data, h11.EndOfMessage)):
                await upstream.send(up.send(event) or b"")
                if isinstance(event, h11.EndOfMessage):
                    return  # what follows on the connection is never read
            else:
                return
    except _RELAY_ERRORS as exc:  # a malformed body, a client gone: the exchange ends
        failed.append(exc)
        scope.cancel()


async def _response(
    upstream: anyio.abc.SocketStream,
    up: h11.Connection,
    client: anyio.abc.SocketStream,
    conn: h11.Connection,
    method: bytes,
) -> None:
    trailers = conn.their_http_version == b"1.1"  # no trailers to an HTTP/1.0 client
    while True:
        event = up.next_event()
        if event is h11.NEED_DATA:
            try:
                up.receive_data(await upstream.receive(65536))
            except anyio.EndOfStream:
                up.receive_data(b"")
            continue
        out: h11.Event
        if isinstance(event, h11.InformationalResponse):
            headers = end_to_end(event.headers)
            out = h11.InformationalResponse(
                status_code=event.status_code, headers=headers, reason=event.reason
            )
        elif isinstance(event, h11.Response):
            headers = [*end_to_end(event.headers), (b"Connection", b"close")]
            out = h11.Response(status_code=event.status_code, headers=headers, reason=event.reason)
            length = _content_length(event, method)
            if length is not None:  # framed the same on both sides: relay the bytes as they are
                await client.send(conn.send(out) or b"")
                await _relay_body(bytes(up.trailing_data[0]), length, upstream, client)
                return
        elif isinstance(event, h11.Data):
            out = event
        elif isinstance(event, h11.EndOfMessage):
            await client.send(conn.send(event if trailers else h11.EndOfMessage()) or b"")
            return
        else:  # ConnectionClosed before a response: h11 raised already; PAUSED: none here
            return
        await client.send(conn.send(out) or b"")


def _content_length(response: h11.Response, method: bytes) -> int | None:
    """The body length of a ``Content-Length`` response (h11 checked the header: one
    value, no ``Transfer-Encoding``); ``None`` for another framing or no body."""
    if method == b"HEAD" or response.status_code in (204, 304):
        return None
    values = [v for name, v in response.headers.raw_items() if name.lower() in _FRAMING]
    if len(values) != 1 or not values[0].isdigit():
        return None
    return int(values[0])


async def _relay_body(
    buffered: bytes, length: int, upstream: anyio.abc.SocketStream, client: anyio.abc.SocketStream
) -> None:
    """Relay a ``Content-Length`` body of ``length`` bytes, starting with what h11 had
    already read past the head; what the upstream sends beyond it is dropped. Raises
    :class:`anyio.EndOfStream` if the upstream ends it early (the client sees it short)."""
    chunk = buffered
    while True:
        if chunk:
            await client.send(chunk[:length])
            length -= min(len(chunk), length)
        if not length:
            return
        chunk = await upstream.receive(65536)


async def _linger(client: anyio.abc.SocketStream) -> None:
    """Half-close, then read and drop what the client still sends (:data:`LINGER_SECS`,
    :data:`LINGER_BYTES`), so that closing does not reset the answer away."""
    with contextlib.suppress(Exception):
        await client.send_eof()
        with anyio.move_on_after(LINGER_SECS):
            dropped = 0
            while dropped < LINGER_BYTES:
                dropped += len(await client.receive(65536))


async def _connect(host: str, port: int, rules: HostRules) -> anyio.abc.SocketStream:
    """Check ``host:port`` (``host`` canonical: :func:`._egress.canonical_host`) against
    ``rules`` and the SSRF guard, then connect to the address the guard approved."""
    from ..builtins.web import HostAllowList, check_host
    from ..errors import ErrorKind, ToolError

    if not rules.allows(host, port):
        raise Refusal(403, f"{host}:{port} is not in [sandbox] allowed_hosts")
    try:
        address = await check_host(
            host, port, allow_private=False, allowed=HostAllowList(rules.addresses(port))
        )
    except ToolError as exc:
        if exc.kind is not ErrorKind.NETWORK_REFUSED:
            raise Refusal(502, f"cannot resolve {host}") from None
        seen_ip, why = exc.details.get("address"), exc.details.get("reason")
        if seen_ip is None:  # refused by name (localhost, *.localhost)
            raise Refusal(
                403,
                f"{host} names this machine (loopback): refused; list its address "
                "(127.0.0.1 or ::1) in [sandbox] allowed_hosts to open it",
            ) from None
        seen = f"is {seen_ip}" if seen_ip == host else f"resolves to {seen_ip}"
        raise Refusal(
            403,
            f"{host} {seen}, a {why} address: refused unless that address is listed in "
            "[sandbox] allowed_hosts",
        ) from None
    try:
        with anyio.fail_after(CONNECT_TIMEOUT_SECS):
            return await anyio.connect_tcp(address, port)
    except TimeoutError:
        raise Refusal(504, f"connecting to {host}:{port} timed out") from None
    except OSError as exc:
        raise Refusal(502, f"cannot connect to {host}:{port}: {exc.strerror or exc}") from None


async def _pipe(src: anyio.abc.SocketStream, dst: anyio.abc.SocketStream) -> None:
    try:
        async for chunk in src:
            await dst.send(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            await dst.send_eof()


_proxy: EgressProxy | None = None
_proxy_lock = threading.Lock()


def egress_proxy() -> EgressProxy:
    """The process's :class:`EgressProxy`, started on first use."""
    global _proxy
    with _proxy_lock:
        if _proxy is None:
            _proxy = EgressProxy()
            atexit.register(close_egress_proxy)
        return _proxy


def close_egress_proxy() -> None:
    """Close the process's proxy if it runs (a later :func:`egress_proxy` starts a new one)."""
    global _proxy
    with _proxy_lock:
        proxy, _proxy = _proxy, None
    if proxy is not None:
        proxy.close()
