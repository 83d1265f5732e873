"""The HTTP/1.x rules of the egress proxy (:mod:`._proxy`): one request head read, checked and
parsed, and the headers it forwards each way.

A head is parsed by h11 (a dependency of the ``mcp`` SDK, through uvicorn and httpcore2: the
parser httpx uses), which enforces RFC 9112's grammar: token header names, no whitespace
before the colon, no control characters, one ``Host`` (required in HTTP/1.1), conflicting
``Content-Length`` values refused, chunked decoding. Before h11 sees a head,
:func:`check_head` refuses what h11 accepts but a proxy must not pass on (RFC 9112):

* ``Transfer-Encoding`` with ``Content-Length`` (section 6.3: request smuggling; a server
  "MUST close the connection after responding"): ``400``;
* a ``Transfer-Encoding`` whose final coding is not ``chunked`` (section 6.3: the length
  "cannot be determined reliably"): ``400``; chunked after another coding: ``501``;
* obsolete line folding (section 5.2) and whitespace before the first header line
  (section 2.2): ``400``;
* a bare CR (section 2.2): ``400``. A bare LF ends a line, as section 2.2 allows a recipient
  (so does h11): every request is forwarded re-serialised with CRLF, so no upstream ever
  sees a line ending it could read otherwise;
* more than :data:`MAX_HEADERS` header lines or a head over :data:`MAX_HEAD_BYTES`: ``431``
  (RFC 6585 section 5), at once: the head is never waited for past its size.

Limits are Envoy's defaults (100 headers, 60 KiB of headers); Go's ``net/http`` allows 1 MiB.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import anyio.abc
import h11

if TYPE_CHECKING:
    from h11._headers import Headers

from ._egress import split_authority

__all__ = [
    "HOP_HEADERS",
    "MAX_HEADERS",
    "MAX_HEAD_BYTES",
    "Refusal",
    "check_head",
    "end_to_end",
    "origin_request",
    "parse_request",
    "read_head",
]

#: Longest request head (request line and headers) the proxy reads, in bytes.
MAX_HEAD_BYTES = 64 * 1024
#: Most header lines in one request head.
MAX_HEADERS = 100
#: Hop-by-hop headers, never forwarded (RFC 9110 section 7.6.1; Go's httputil.ReverseProxy
#: list, less the framing headers: h11 re-frames the body from them), plus every header
#: the ``Connection`` header names.
HOP_HEADERS = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"proxy-authorization",
        b"proxy-authenticate",
        b"te",
        b"upgrade",
    }
)
_FRAMING = frozenset({b"content-length", b"transfer-encoding"})
#: Where a head ends: h11's own rule (an empty line, CRLF or bare LF).
_HEAD_END = re.compile(rb"\n\r?\n")
_PHRASES = {
    400: "Bad Request",
    403: "Forbidden",
    431: "Request Header Fields Too Large",
    501: "Not Implemented",
    502: "Bad Gateway",
    504: "Gateway Timeout",
}


class Refusal(Exception):
    """A request the proxy answers itself: the status and a one-line reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason

    def response(self) -> bytes:
        """The whole response: status line, ``Connection: close``, the reason as the body."""
        body = f"octos-tools egress proxy: {self.reason}\n".encode()
        head = (
            f"HTTP/1.1 {self.status} {_PHRASES.get(self.status, 'Error')}\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        return head.encode() + body


async def read_head(stream: anyio.abc.ByteStream) -> tuple[bytes, bytes]:
    """Read a request head: ``(head with its ending empty line, the bytes after it)``.

    Raises:
        Refusal: ``431`` once more than :data:`MAX_HEAD_BYTES` arrived without an end.
        anyio.EndOfStream: the client closed first.
    """
    buf = b""
    while True:
        chunk = await stream.receive(65536)
        start = max(0, len(buf) - 2)  # an end split across two reads
        buf += chunk
        end = _HEAD_END.search(buf, start)
        if end is not None and end.end() <= MAX_HEAD_BYTES:
            return buf[: end.end()], buf[end.end() :]
        if len(buf) > MAX_HEAD_BYTES:
            raise Refusal(431, f"request head larger than {MAX_HEAD_BYTES} bytes")


def check_head(head: bytes) -> None:
    """Refuse what h11 would accept but the proxy must not pass on (the module docstring).

    Args:
        head: a request head as :func:`read_head` returns it.

    Raises:
        Refusal: ``400``, ``431`` or ``501`` with the rule broken.
    """
    lines = head.split(b"\n")[:-2]  # less the empty line that ends the head
    if any(b"\r" in line[:-1] for line in lines):
        raise Refusal(400, "a bare CR in the request head (RFC 9112 section 2.2)")
    if len(lines) - 1 > MAX_HEADERS:
        raise Refusal(431, f"more than {MAX_HEADERS} header lines")
    codings: list[bytes] = []
    chunked_framing = length = False
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):
            raise Refusal(400, "obsolete line folding in the request head (RFC 9112 section 5.2)")
        name, _, value = line.partition(b":")
        name = name.lower()
        if name == b"transfer-encoding":
            chunked_framing = True
            codings += [c.strip().lower() for c in value.split(b",") if c.strip()]
        elif name == b"content-length":
            length = True
    if not chunked_framing:
        return
    if length:
        raise Refusal(
            400,
            "Transfer-Encoding and Content-Length together (RFC 9112 section 6.3: a way to "
            "smuggle a request)",
        )
    if not codings or codings[-1] != b"chunked":
        raise Refusal(400, "chunked is not the final transfer coding (RFC 9112 section 6.3)")
    if len(codings) > 1:
        raise Refusal(501, "only Transfer-Encoding: chunked is supported")


def parse_request(head: bytes, rest: bytes) -> tuple[h11.Connection, h11.Request]:
    """Parse a checked head with h11: the client-side connection (holding ``rest``, the
    bytes that followed the head) and the request.

    Raises:
        Refusal: ``400`` (or h11's status hint) with h11's reason.
    """
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
    conn.receive_data(head)
    try:
        event = conn.next_event()
    except h11.RemoteProtocolError as exc:
        raise Refusal(exc.error_status_hint, f"malformed request head: {exc}") from None
    if not isinstance(event, h11.Request):  # a complete head always makes a request
        raise Refusal(400, "malformed request head")
    if rest:  # (h11 reads b"" as the end of the stream)
        conn.receive_data(rest)
    return conn, event


def _authority(host: str, port: int, default: int) -> bytes:
    shown = f"[{host}]" if ":" in host else host
    return (shown if port == default else f"{shown}:{port}").encode("ascii")


def origin_request(request: h11.Request) -> tuple[str, int, h11.Request]:
    """The host and port of an absolute-URI request and the request to send upstream:
    origin form (RFC 9112 section 3.2.1), ``Host`` from the URI (section 3.2.2: a
    client cannot name another virtual host on the checked address), hop-by-hop headers
    dropped, ``Connection: close``.

    Raises:
        Refusal: ``400``: not an absolute ``http://`` URI, a fragment, a bad authority.
    """
    target = request.target.decode("ascii")  # h11 allows visible ASCII only
    scheme, sep, rest = target.partition("://")
    if not sep or scheme.lower() != "http":
        why = "use CONNECT for https" if scheme.lower() == "https" else "use http://"
        raise Refusal(400, f"a proxy request needs an absolute http:// URI ({why})")
    if "#" in rest:
        raise Refusal(400, "a fragment in the request target")
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    path = rest[cut:]
    try:
        host, port = split_authority(rest[:cut], 80)
    except ValueError as exc:
        raise Refusal(400, str(exc)) from None
    headers = [(b"Host", _authority(host, port, 80))]
    headers += end_to_end(request.headers, drop=(b"host",))
    headers.append((b"Connection", b"close"))
    forward = h11.Request(
        method=request.method,
        target=(path if path.startswith("/") else "/" + path).encode("ascii"),
        headers=headers,
    )
    return host, port, forward


def end_to_end(headers: Headers, drop: tuple[bytes, ...] = ()) -> list[tuple[bytes, bytes]]:
    """The headers to forward, as written: less :data:`HOP_HEADERS`, ``drop`` and those the
    ``Connection`` header names (the framing headers stay: h11 frames the body by them)."""
    items = headers.raw_items()  # (a plain list: iterating Headers itself is slow)
    named = {
        token.strip().lower()
        for name, value in items
        if name.lower() == b"connection"
        for token in value.split(b",")
    }
    skip = (HOP_HEADERS | named | set(drop)) - _FRAMING
    return [(name, value) for name, value in items if name.lower() not in skip]
