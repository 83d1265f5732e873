"""``web_fetch``: one http(s) URL through the SSRF guard (octos ``web_fetch``).

* Only ``http`` and ``https``; anything else is ``invalid_arguments``.
* On every hop (the first request and each redirect, followed by hand, at most 10) the host
  is checked by :func:`._guard.check_host`; the connection is *pinned* to the checked address
  (see :mod:`._net`), so DNS rebinding between check and connect is impossible; proxies from
  the environment are ignored.
* The body is read as a stream and cut at ``WebConfig.max_body_bytes`` (default 5 MB, after
  content decoding, so a compressed bomb is cut too); it becomes text as
  :mod:`._content` says.
* The output is headed by ``URL:``, ``Redirected from:`` (if any), ``Status:``,
  ``Content-Type:`` and ``Length:`` lines (characters of text, or for binary content, which
  is not shown, the body's size in bytes); non-2xx is ``http_error`` carrying ``status``
  and the start of the body, where a server says why (a 403's block page, a 429's rate
  limit; at most :data:`ERROR_BODY_BYTES` read, :data:`ERROR_BODY_CHARS` shown, HTML as
  text), and ``retry_after`` when the server sent ``Retry-After``.

Error kinds: ``invalid_arguments`` (bad URL or scheme), ``network_refused`` (SSRF guard),
``http_error`` (non-2xx status, a redirect without ``Location``, more than 10 redirects),
``unavailable`` (DNS failure, connection refused, network error), ``timeout``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit, urlunsplit

import anyio
from pydantic import Field

from ..._progress import heartbeat
from ...config import WebConfig
from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...typed import ToolArgs, TypedTool
from ._content import decode_body, html_to_markdown, html_to_text, is_html, is_text
from ._guard import HostAllowList, check_host, parse_ip_literal

if TYPE_CHECKING:
    import httpx2

    from ...context import ToolContext

__all__ = [
    "ERROR_BODY_BYTES",
    "ERROR_BODY_CHARS",
    "MAX_REDIRECTS",
    "WebFetchTool",
    "canonical_numeric_host",
]

#: Bytes of a 4xx/5xx body read at most, and characters of its text kept in the error.
ERROR_BODY_BYTES = 64 * 1024
ERROR_BODY_CHARS = 2_000

#: Redirects followed at most (octos ``web_fetch``).
MAX_REDIRECTS = 10
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def _truncate(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit] + f"\n\n... (content truncated: {limit} of {len(text)} chars shown)", True


class WebFetchTool(TypedTool):
    """``web_fetch {url, extract_mode="markdown"|"text", max_chars=50000}`` (octos
    ``web_fetch``).

    Args:
        config: the ``web`` section (allow_private_hosts, allowed_hosts, max_body_bytes in
            bytes, timeout_secs in seconds for the whole fetch including redirects).
    """

    name = "web_fetch"
    title = "Fetch a web page"
    description = (
        "Fetch an http(s) URL and return its content: HTML as Markdown (or plain text with "
        "extract_mode='text'), other text as is. Redirects are followed (at most 10). "
        "Private, loopback and link-local addresses are refused."
    )

    class Args(ToolArgs):
        url: str = Field(description="The http:// or https:// URL to fetch.")
        extract_mode: Literal["markdown", "text"] = Field(
            "markdown", description="How to render HTML: 'markdown' (default) or plain 'text'."
        )
        max_chars: int = Field(
            50_000,
            ge=1,
            le=1_000_000,
            description="Return at most this many characters of content.",
        )

    tags = ("web",)
    content_trust = "untrusted"
    concurrency_class = ConcurrencyClass.SAFE
    cwd_bound = False

    def __init__(self, config: WebConfig | None = None) -> None:
        self.config = config or WebConfig.model_validate({})
        self.allowed = HostAllowList(self.config.allowed_hosts)

    async def run(self, args: Args, ctx: ToolContext | None) -> ToolResult:
        url = args.url.strip()
        mode = args.extract_mode
        max_chars = args.max_chars
        try:
            with anyio.fail_after(self.config.timeout_secs):
                async with heartbeat(ctx, f"fetching {url[:80]}"):
                    return await self._fetch(url, mode, max_chars)
        except TimeoutError:
            raise ToolError(
                ErrorKind.TIMEOUT,
                f"fetching {url} took longer than {self.config.timeout_secs:g} s",
            ) from None

    async def _fetch(self, url: str, mode: str, max_chars: int) -> ToolResult:
        import httpx2

        from ._net import NETWORK_ERRORS, TIMEOUT_ERRORS, pinned_client

        pins: dict[tuple[str, int], str] = {}
        hops: list[str] = []
        current = _parse_url(url)
        async with pinned_client(pins, self.config.timeout_secs) as client:
            while True:
                await self._pin(current, pins)
                try:
                    async with client.stream("GET", current) as response:
                        status = response.status_code
                        location = response.headers.get("location")
                        if status in _REDIRECT_STATUSES and location:
                            if len(hops) >= MAX_REDIRECTS:
                                raise ToolError(
                                    ErrorKind.HTTP_ERROR,
                                    f"too many redirects (more than {MAX_REDIRECTS}) "
                                    f"starting at {url}",
                                    status=status,
                                    redirects=[*hops, str(current)],
                                )
                            hops.append(str(current))
                            current = _parse_url(_join(current, location), redirect=True)
                            continue
                        if not 200 <= status < 300:
                            raise await self._status_error(response, current)
                        body, cut = await self._read_capped(response)
                        headers = response.headers
                except TIMEOUT_ERRORS as exc:
                    raise ToolError(
                        ErrorKind.TIMEOUT, f"timed out fetching {current}: {exc}"
                    ) from None
                except NETWORK_ERRORS as exc:
                    if isinstance(exc, httpx2.InvalidURL):
                        raise ToolError(ErrorKind.INVALID_ARGUMENTS, str(exc)) from None
                    raise ToolError(
                        ErrorKind.UNAVAILABLE,
                        f"could not fetch {current}: {type(exc).__name__}: {exc}",
                    ) from None
                break
        return await self._render(url, current, hops, status, headers, body, cut, mode, max_chars)

    async def _pin(self, url: httpx2.URL, pins: dict[tuple[str, int], str]) -> None:
        host = url.raw_host.decode("ascii").lower()
        port = url.port or (443 if url.scheme == "https" else 80)
        if (host, port) in pins:
            return  # resolved and checked once per fetch: the same address is reused
        pins[(host, port)] = await self.check_host(host, port)

    async def check_host(self, host: str, port: int) -> str:
        """:func:`._guard.check_host` with this tool's configuration (the address to pin)."""
        return await check_host(
            host, port, allow_private=self.config.allow_private_hosts, allowed=self.allowed
        )

    async def _status_error(self, response: httpx2.Response, url: httpx2.URL) -> ToolError:
        """``http_error`` for a non-2xx response, with the start of its body as text (the
        server's reason) and ``Retry-After`` when given."""
        from ._net import NETWORK_ERRORS, TIMEOUT_ERRORS

        status = response.status_code
        details: JSONObject = {"status": status, "url": str(url)}
        message = f"HTTP {status} {response.reason_phrase} for {url}"
        retry = response.headers.get("retry-after")
        if retry:
            details["retry_after"] = retry[:100]
            message += f" (Retry-After: {retry[:100]})"
        try:
            cap = min(ERROR_BODY_BYTES, self.config.max_body_bytes)
            raw, cut = await self._read_capped(response, cap)
        except (*TIMEOUT_ERRORS, *NETWORK_ERRORS):
            return ToolError(ErrorKind.HTTP_ERROR, message, **details)
        content_type = response.headers.get("content-type", "")
        if raw and (is_text(content_type, raw) or is_html(content_type, raw)):
            text, _ = decode_body(raw, content_type, cut=cut)
            if is_html(content_type, raw):
                text, _ = await anyio.to_thread.run_sync(html_to_text, text)
            text = " ".join(text.split())
            if len(text) > ERROR_BODY_CHARS:
                text = text[:ERROR_BODY_CHARS] + " … (body cut)"
            if text:
                details["body"] = text
                message += f". The response body says: {text}"
        elif raw:
            message += f" ({len(raw)} bytes of binary body, not shown)"
        return ToolError(ErrorKind.HTTP_ERROR, message, **details)

    async def _read_capped(
        self, response: httpx2.Response, cap: int | None = None
    ) -> tuple[bytes, bool]:
        cap = self.config.max_body_bytes if cap is None else cap
        body = bytearray()
        async for chunk in response.aiter_bytes():
            room = cap - len(body)
            if len(chunk) > room:
                body += chunk[:room]
                return bytes(body), True
            body += chunk
        return bytes(body), False

    async def _render(
        self,
        original: str,
        final: httpx2.URL,
        hops: Sequence[str],
        status: int,
        headers: httpx2.Headers,
        body: bytes,
        cut: bool,
        mode: str,
        max_chars: int,
    ) -> ToolResult:
        content_type = headers.get("content-type", "")
        meta: JSONObject = {
            "url": original,
            "final_url": str(final),
            "redirects": [*hops, str(final)] if hops else [],
            "status": status,
            "content_type": content_type,
            "body_bytes": len(body),
            "body_cut": cut,
        }
        title: str | None = None
        binary = False
        if is_text(content_type, body) or is_html(content_type, body):
            text, charset = decode_body(body, content_type, cut=cut)
            meta["charset"] = charset
            if is_html(content_type, body):
                convert = html_to_markdown if mode == "markdown" else html_to_text
                content, title = await anyio.to_thread.run_sync(convert, text)
            else:
                content = text
        else:
            binary = True
            content = f"(binary content, {len(body)} bytes, not shown)"
        # Length of the text shown, in characters; for binary content there is no text and
        # the honest size is the body's, in bytes (not the placeholder's length).
        length = None if binary else len(content)
        content, truncated = _truncate(content, max_chars)
        meta.update(length=length, truncated=truncated, title=title, binary=binary)
        lines = [f"URL: {final}"]
        if hops:
            lines.append(f"Redirected from: {original}")
        lines.append(f"Status: {status}")
        lines.append(f"Content-Type: {content_type or '(none)'}")
        if title:
            lines.append(f"Title: {title}")
        if binary:
            lines.append(f"Length: {len(body)} bytes (binary)")
        else:
            lines.append(f"Length: {length} chars")
        if cut:
            lines.append(f"Body: cut at {self.config.max_body_bytes} bytes (size limit)")
        return ToolResult.ok("\n".join(lines) + "\n\n" + content, structured_metadata=meta)


def _join(base: httpx2.URL, location: str) -> str:
    import httpx2

    try:
        return str(base.join(canonical_numeric_host(location)))
    except (httpx2.InvalidURL, TypeError, ValueError) as exc:
        raise ToolError(
            ErrorKind.HTTP_ERROR, f"invalid redirect target {location!r} from {base}: {exc}"
        ) from None


def canonical_numeric_host(url: str) -> str:
    """Rewrite a legacy numeric IPv4 host (``0177.0.0.1``, ``2130706433``) as a dotted quad,
    as the WHATWG URL parser does, so the URL parses and is checked as that address."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return url
    if not host or ":" in host:
        return url
    ip = parse_ip_literal(host)
    if ip is None or str(ip) == host:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    port = hostport[len(host) :] if hostport.lower().startswith(host) else ""
    netloc = (userinfo + "@" if userinfo else "") + str(ip) + port
    return urlunsplit(parts._replace(netloc=netloc))


def _parse_url(url: str, *, redirect: bool = False) -> httpx2.URL:
    import httpx2

    where = "redirect target" if redirect else "url"
    try:
        parsed = httpx2.URL(canonical_numeric_host(url))
    except (httpx2.InvalidURL, TypeError, ValueError) as exc:
        kind = ErrorKind.HTTP_ERROR if redirect else ErrorKind.INVALID_ARGUMENTS
        raise ToolError(kind, f"invalid {where} {url!r}: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        kind = ErrorKind.NETWORK_REFUSED if redirect else ErrorKind.INVALID_ARGUMENTS
        problem = (
            f"not {parsed.scheme}"
            if parsed.scheme
            else "it is not an absolute URL (e.g. https://example.com/page)"
        )
        raise ToolError(kind, f"{where} must use http:// or https://, {problem}: {url!r}", url=url)
    if not parsed.raw_host:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, f"{where} {url!r} has no host")
    return parsed
