"""The egress proxy of ``[sandbox] allowed_hosts``: the only way out of a sandboxed command.

One per process, started the first time a sandboxed command with ``allowed_hosts`` runs
(:func:`egress_proxy`), on an event loop of its own in a daemon thread (commands are
wrapped from synchronous code, from any event loop), closed by :func:`close_egress_proxy`
(registered with :mod:`atexit`).

It speaks the two forms a client's ``HTTP_PROXY`` / ``HTTPS_PROXY`` produce (RFC 9110
section 9.3.6 and 7.1):

* ``CONNECT host:port`` (HTTPS, or any TCP tunnel to a listed port): checked, then
  ``200 Connection Established`` and the bytes are relayed both ways;
* ``GET http://host[:port]/path`` (absolute URI, plain HTTP): checked, the request line
  rewritten to origin form, ``Proxy-*`` headers dropped, ``Connection: close`` set, then
  relayed; ``Host`` is the URI's. ``https://`` in an absolute URI is refused (a client
  uses CONNECT for it).

The check, in order: ``host:port`` must match an ``allowed_hosts`` entry
(:mod:`._egress`); then the host is resolved *once* by web_fetch's SSRF guard
(:func:`octos_tools.builtins.web.check_host`): every address must be public unless
the address itself is listed; the connection goes to the address the guard approved (no
second lookup, so DNS rebinding cannot redirect it). Anything else is answered
``403 Forbidden`` with a one-line reason (``400`` for a malformed request, ``502`` when
the host does not resolve or refuses the connection, ``504`` on a connect timeout).

Where requests come from:

* bubblewrap: each command has a network namespace of its own (loopback only). The
  listening socket is created *inside* it (:mod:`._bridge`: by the forked child before
  ``bwrap`` starts, or by a one-shot bridge) and handed to this proxy over a socket pair
  (``SCM_RIGHTS``) before the command runs; the proxy
  accepts on it (a socket keeps the namespace it was made in) and stops when the sandbox
  ends: bwrap keeps a copy of the pair's other end open until then (``--sync-fd``: it
  closes every other inherited descriptor in its own processes);
* Landlock: a TCP listener on ``127.0.0.1`` of the host, one per allow-list; Landlock lets
  the command connect to that port only (:mod:`._landlock`).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import logging
import socket
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
import anyio.abc
from anyio.from_thread import BlockingPortal

from ._egress import HostRules

__all__ = ["EgressProxy", "close_egress_proxy", "egress_proxy"]

_log = logging.getLogger("octos_tools.sandbox.egress")

#: Longest request head (request line and headers) the proxy reads, in bytes.
MAX_HEAD_BYTES = 64 * 1024
#: Seconds a client has to send its request head.
HEAD_TIMEOUT_SECS = 30.0
#: Seconds to connect to the upstream host.
CONNECT_TIMEOUT_SECS = 10.0
#: Connections relayed at once, over every command.
MAX_CONNECTIONS = 256
#: Connections relayed at once for one listener (one bubblewrap sandbox; under Landlock,
#: every command with the same allow-list): one command cannot take every slot.
MAX_CONNECTIONS_PER_LISTENER = 64
_HOP_HEADERS = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate"}
)
_T = TypeVar("_T")


class _Reply(Exception):
    """A refusal: the status line and a one-line reason for the client."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


_PHRASES = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway", 504: "Gateway Timeout"}


async def _read_head(stream: anyio.abc.ByteStream) -> tuple[bytes, bytes]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        if len(buf) > MAX_HEAD_BYTES:
            raise _Reply(400, f"request head longer than {MAX_HEAD_BYTES} bytes")
        buf += await stream.receive(65536)
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


def _parse_head(head: bytes) -> tuple[str, str, str, list[tuple[str, str]]]:
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError:
        raise _Reply(400, "the request head is not ASCII") from None
    if "\r" in text.replace("\r\n", "") or "\n" in text.replace("\r\n", ""):
        # a bare CR or LF: some upstream servers end a header there, so "X: a\rHost: b"
        # would name another virtual host on the checked address (RFC 9112 section 2.2)
        raise _Reply(400, "a bare CR or LF in the request head")
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _Reply(400, f"not an HTTP/1.x request line: {lines[0][:100]!r}")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise _Reply(400, f"malformed header line {line[:100]!r}")
        headers.append((name, value.strip()))
    return parts[0], parts[1], parts[2], headers


def _host_port(authority: str, default: int | None) -> tuple[str, int]:
    try:
        url = urlsplit("//" + authority)
        host, port = url.hostname, url.port
    except ValueError:
        raise _Reply(400, f"bad host or port in {authority[:100]!r}") from None
    if not host or url.path or url.query or url.username is not None:
        raise _Reply(400, f"bad authority {authority[:100]!r}")
    if port is None:
        if default is None:
            raise _Reply(400, "CONNECT needs host:port")
        port = default
    return host, port


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
        self._queued: collections.deque[tuple[socket.socket, HostRules]] = collections.deque()
        self._wake_r, self._wake_w = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._thread.start()
        self._ready.wait()
        if self._portal is None:
            raise RuntimeError("the egress proxy's event loop did not start")

    def _main(self) -> None:
        async def body() -> None:
            self._limiter = anyio.CapacityLimiter(MAX_CONNECTIONS)
            async with BlockingPortal() as portal, anyio.create_task_group() as tg:
                tg.start_soon(self._take_queued, tg)
                self._portal = portal
                self._ready.set()
                await portal.sleep_until_stopped()
                tg.cancel_scope.cancel()

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

    def queue(self, channel: socket.socket, rules: HostRules) -> int:
        """Like :meth:`attach`, without waking the event loop: ``channel`` waits in a queue
        until a byte is written to the returned descriptor (the wake-up end, open for the
        proxy's life; write to it with ``os.write`` and ignore ``BlockingIOError``: a full
        buffer means a wake-up is pending). The child that sends the listener writes it
        (:mod:`._netns`), while the server waits for that child's ``exec``: the loop's
        thread is woken when the caller holds no GIL, instead of a round trip to it (4-6 ms
        per command at load 15)."""
        if self._portal is None:
            raise RuntimeError("the egress proxy is closed")
        self._queued.append((channel, rules))
        return self._wake_w.fileno()

    async def _take_queued(self, tg: anyio.abc.TaskGroup) -> None:
        while True:
            await anyio.wait_readable(self._wake_r)
            with contextlib.suppress(BlockingIOError):
                while self._wake_r.recv(4096):
                    pass
            while self._queued:
                channel, rules = self._queued.popleft()
                tg.start_soon(self._serve_channel, channel, rules)

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
                upstream = await self._open(client, rules)
            except _Reply as reply:
                _log.info("egress refused: %s", reply.reason)
                await _send_reply(client, reply)
                return
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError, TimeoutError):
                return
            async with upstream, anyio.create_task_group() as tg:
                tg.start_soon(_pipe, client, upstream)
                tg.start_soon(_pipe, upstream, client)

    async def _open(
        self, client: anyio.abc.SocketStream, rules: HostRules
    ) -> anyio.abc.SocketStream:
        with anyio.fail_after(HEAD_TIMEOUT_SECS):
            head, rest = await _read_head(client)
        method, target, version, headers = _parse_head(head)
        if method == "CONNECT":
            host, port = _host_port(target, None)
            upstream = await _connect(host, port, rules)
            await client.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            if rest:
                await upstream.send(rest)
            return upstream
        url = urlsplit(target)
        if url.scheme.lower() != "http":
            why = "use CONNECT for https" if url.scheme.lower() == "https" else "use http://"
            raise _Reply(400, f"a proxy request needs an absolute http:// URI ({why})")
        host, port = _host_port(url.netloc.rpartition("@")[2], 80)
        upstream = await _connect(host, port, rules)
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        out = [f"{method} {path} {version}"]
        # the Host of an absolute-form request is its URI's (RFC 9112 section 3.2.2): a
        # client cannot name another virtual host on the checked address
        out.append(f"Host: {url.netloc.rpartition('@')[2]}")
        out += [f"{k}: {v}" for k, v in headers if k.lower() not in _HOP_HEADERS | {"host"}]
        out.append("Connection: close")
        await upstream.send(("\r\n".join(out) + "\r\n\r\n").encode("ascii") + rest)
        return upstream

    # ---------------------------------------------------------------- shutdown

    def close(self) -> None:
        """Stop every listener and relay and end the thread (idempotent)."""
        portal, self._portal = self._portal, None
        if portal is not None:
            with contextlib.suppress(Exception):
                portal.call(portal.stop, True)
            self._thread.join(timeout=5)
            while self._queued:
                self._queued.popleft()[0].close()
            self._wake_r.close()
            self._wake_w.close()


async def _connect(host: str, port: int, rules: HostRules) -> anyio.abc.SocketStream:
    """Check ``host:port`` against ``rules`` and the SSRF guard, then connect to the
    address the guard approved."""
    from ..builtins.web import HostAllowList, check_host
    from ..errors import ErrorKind, ToolError

    if not host.isascii():
        raise _Reply(400, f"host {host!r} is not ASCII (send its IDNA form)")
    if not rules.allows(host, port):
        raise _Reply(403, f"{host}:{port} is not in [sandbox] allowed_hosts")
    try:
        address = await check_host(
            host, port, allow_private=False, allowed=HostAllowList(rules.addresses(port))
        )
    except ToolError as exc:
        if exc.kind is not ErrorKind.NETWORK_REFUSED:
            raise _Reply(502, f"cannot resolve {host}") from None
        seen_ip, why = exc.details.get("address"), exc.details.get("reason")
        if seen_ip is None:  # refused by name (localhost, *.localhost)
            raise _Reply(
                403,
                f"{host} names this machine (loopback): refused; list its address "
                "(127.0.0.1 or ::1) in [sandbox] allowed_hosts to open it",
            ) from None
        seen = f"is {seen_ip}" if seen_ip == host else f"resolves to {seen_ip}"
        raise _Reply(
            403,
            f"{host} {seen}, a {why} address: refused unless that address is listed in "
            "[sandbox] allowed_hosts",
        ) from None
    try:
        with anyio.fail_after(CONNECT_TIMEOUT_SECS):
            return await anyio.connect_tcp(address, port)
    except TimeoutError:
        raise _Reply(504, f"connecting to {host}:{port} timed out") from None
    except OSError as exc:
        raise _Reply(502, f"cannot connect to {host}:{port}: {exc.strerror or exc}") from None


async def _send_reply(client: anyio.abc.SocketStream, reply: _Reply) -> None:
    body = f"octos-tools egress proxy: {reply.reason}\n".encode()
    head = (
        f"HTTP/1.1 {reply.status} {_PHRASES.get(reply.status, 'Error')}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with contextlib.suppress(Exception):
        await client.send(head + body)


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
