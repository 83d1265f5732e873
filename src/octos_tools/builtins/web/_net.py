"""Pinned HTTP connections for ``web_fetch`` (needs the ``web`` extra: httpx2).

Imported only when a web tool runs, so ``octos_tools.builtins.web`` imports without the extra.

How rebinding is made impossible: the SSRF guard (:mod:`._guard`) resolves a host *once* and
checks every address; the address it approved is recorded as a *pin* for ``(host, port)``.
The client below uses an httpcore2 connection pool whose network backend opens TCP
connections only to pinned addresses: it never resolves a name itself, and a ``(host, port)``
without a pin is refused. The URL keeps its host name, so the ``Host`` header, TLS SNI and
certificate verification are those of the name, while the socket goes to the checked IP.
The client ignores proxy environment variables (``trust_env=False``): a proxy would make
the checked address meaningless.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterable

import httpcore2
import httpx2

__all__ = ["PinnedBackend", "PinnedTransport", "pinned_client"]


class PinnedBackend(httpcore2.AsyncNetworkBackend):
    """An httpcore2 network backend that connects only to pinned addresses.

    Args:
        pins: ``(lower-case ASCII host, port) -> IP address string``, filled by the caller
            after its SSRF check; read at connection time, so pins added between redirect
            hops are seen.
    """

    def __init__(self, pins: dict[tuple[str, int], str]) -> None:
        self._pins = pins
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        ip = self._pins.get((host.lower(), port))
        if ip is None:
            raise httpcore2.ConnectError(f"no checked address for {host}:{port}")
        return await self._inner.connect_tcp(
            ip, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("unix sockets are not allowed")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _ResponseStream(httpx2.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self._stream:
            yield part

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


class PinnedTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport over an httpcore2 pool using :class:`PinnedBackend` (HTTP/1.1)."""

    def __init__(self, pins: dict[tuple[str, int], str], ssl_context: ssl.SSLContext) -> None:
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=ssl_context,
            network_backend=PinnedBackend(pins),
            http1=True,
            http2=False,
            retries=0,
            max_connections=4,
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        core_request = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,  # type: ignore[arg-type]
            extensions=request.extensions,
        )
        response = await self._pool.handle_async_request(core_request)
        assert isinstance(response.stream, AsyncIterable)
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    return httpx2.create_ssl_context(trust_env=False)


def pinned_client(pins: dict[tuple[str, int], str], timeout_secs: float) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` whose connections go only to ``pins``.

    Args:
        pins: see :class:`PinnedBackend`.
        timeout_secs: read/write/pool timeout in seconds; connecting gets at most 10 s.

    Redirects are not followed (the caller follows them hop by hop) and proxy variables of
    the environment are ignored.
    """
    return httpx2.AsyncClient(
        transport=PinnedTransport(pins, _ssl_context()),
        follow_redirects=False,
        trust_env=False,
        timeout=httpx2.Timeout(timeout_secs, connect=min(10.0, timeout_secs)),
        headers={
            "User-Agent": "octos-tools-web_fetch/0.1",
            "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.8",
        },
    )


#: Exceptions meaning "the network or the peer failed" (both packages' trees).
NETWORK_ERRORS: tuple[type[Exception], ...] = (
    httpx2.HTTPError,
    httpcore2.NetworkError,
    httpcore2.ProtocolError,
    httpcore2.UnsupportedProtocol,
)
TIMEOUT_ERRORS: tuple[type[Exception], ...] = (httpx2.TimeoutException, httpcore2.TimeoutException)
