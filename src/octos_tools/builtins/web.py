"""Web tools: ``web_fetch`` and ``web_search`` (reference §1.7; extra ``web``).

``web_fetch`` fetches one http(s) URL through an SSRF guard:

* Only ``http`` and ``https``; anything else is ``invalid_arguments``.
* On every hop (the first request and each redirect, followed by hand, at most 10) the host is
  resolved *once*; every address it resolves to must be public, or the call fails with
  ``network_refused`` before any connection is made. Refused: loopback, private (RFC 1918),
  shared (100.64/10), link-local (incl. 169.254.169.254 metadata), unspecified, multicast,
  broadcast, reserved and documentation ranges, IPv6 unique-local, site-local and link-local,
  and IPv6 addresses embedding a refused IPv4 one (IPv4-mapped, IPv4-compatible, NAT64,
  6to4, Teredo). Numeric spellings (``2130706433``, ``0x7f000001``, ``0177.0.0.1``,
  ``127.1``) are read as the IPv4 address a C resolver would make of them. ``localhost`` and
  ``*.localhost`` are refused by name.
* The connection is *pinned* to the checked address (see :mod:`._web_net`), so DNS
  rebinding between check and connect is impossible; proxies from the environment are
  ignored.
* ``WebConfig.allow_private_hosts`` (off by default) lifts the address check, for tests and
  intranets; scheme, redirect and size rules still apply.
* The body is read as a stream and cut at ``WebConfig.max_body_bytes`` (default 5 MB, after
  content decoding, so a compressed bomb is cut too). The charset comes from a BOM, the
  ``Content-Type`` header, or the document's ``<meta>`` / XML declaration, else UTF-8, else
  windows-1252.
* HTML becomes Markdown with *markdownify* over *BeautifulSoup* (``html.parser``), or plain
  text. Why markdownify: it converts the whole document deterministically (headings, links,
  lists, tables, code) with no heuristics that drop content, is pure Python over bs4 and
  needs no lxml; readability-lxml and trafilatura extract a "main article" with heuristics
  and pull in lxml, which suits reading news, not fetching API docs or listings.
* The output is headed by ``URL:``, ``Redirected from:`` (if any), ``Status:``,
  ``Content-Type:`` and ``Length:`` lines (characters of text, or for binary content, which
  is not shown, the body's size in bytes); non-2xx is ``http_error`` carrying ``status``.

Error kinds: ``invalid_arguments`` (bad URL or scheme), ``network_refused`` (SSRF guard),
``http_error`` (non-2xx status, a redirect without ``Location``, more than 10 redirects),
``unavailable`` (DNS failure, connection refused, network error), ``timeout``.

``web_search`` runs a chain of providers from ``WebConfig.search_providers`` (SearXNG by URL;
Brave and Tavily by API key; DuckDuckGo through the ``ddgs`` package if it is installed); the
first provider that returns results wins. With no provider configured it fails with
``not_configured`` and says how to configure one. Provider endpoints are set by the operator,
not the model, so they are not subject to the SSRF guard (a SearXNG on the intranet is usual).
"""

from __future__ import annotations

import codecs
import importlib.util
import ipaddress
import json
import os
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import anyio

from ..config import WebConfig, WebSearchProviderConfig
from ..errors import ErrorKind, ToolError
from ..tool import ConcurrencyClass, JSONObject, Tool, ToolResult
from . import MISSING_EXTRAS

if TYPE_CHECKING:
    import httpx2

    from ..config import Config
    from ..context import ToolContext
    from ..registry import ToolRegistry
    from ..workspace import Workspace

__all__ = [
    "MAX_REDIRECTS",
    "BraveProvider",
    "DuckDuckGoProvider",
    "SearchHit",
    "SearchProvider",
    "SearxngProvider",
    "TavilyProvider",
    "WebFetchTool",
    "WebSearchTool",
    "blocked_reason",
    "build_providers",
    "check_host",
    "decode_body",
    "html_to_markdown",
    "html_to_text",
    "parse_ip_literal",
    "register",
]

#: Redirects followed at most (reference §1.7).
MAX_REDIRECTS = 10
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# ----------------------------------------------------------------------------- SSRF guard

_V4_BLOCKED: tuple[tuple[ipaddress.IPv4Network, str], ...] = tuple(
    (ipaddress.IPv4Network(net), why)
    for net, why in (
        ("0.0.0.0/8", "unspecified / this-network"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared (carrier-grade NAT)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignment"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "6to4 relay"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved / broadcast"),
    )
)

_V6_BLOCKED: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.IPv6Network(net), why)
    for net, why in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("100::/64", "discard-only"),
        ("2001::/32", "Teredo"),
        ("2001:db8::/32", "documentation"),
        ("2001:10::/28", "ORCHID"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_V4_COMPAT = ipaddress.IPv6Network("::/96")


def blocked_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` may not be fetched by default, or ``None`` when it is a public address.

    Args:
        ip: an IPv4 or IPv6 address (a scope id is ignored).

    Returns:
        A short label (``"loopback"``, ``"private"``, ``"link-local"``, …) or ``None``.

    Source: reference §1.7 (octos's list), extended with the IANA special-purpose registries.
    """
    if isinstance(ip, ipaddress.IPv6Address):
        embedded: ipaddress.IPv4Address | None = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and any(ip in net for net in _NAT64):
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is None and ip in _V4_COMPAT and int(ip) > 1:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            inner = blocked_reason(embedded)
            return f"IPv6 embedding a {inner} IPv4 address" if inner else None
        for net6, why in _V6_BLOCKED:
            if ip in net6:
                return why
    else:
        for net4, why in _V4_BLOCKED:
            if ip in net4:
                return why
    if ip.is_multicast:
        return "multicast"
    if not ip.is_global:
        return "not globally routable"
    return None


_NUMERIC_HOST = re.compile(r"^[0-9a-fx.]+$", re.IGNORECASE)


def parse_ip_literal(host: str) -> IPAddress | None:
    """The IP address a host string denotes literally, or ``None`` for a name.

    Accepts dotted quads, IPv6 (with or without brackets) and the legacy numeric spellings a C
    resolver (``inet_aton``) accepts: one to four parts, each decimal, octal (leading ``0``)
    or hex (``0x``), e.g. ``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``.
    """
    h = host.strip("[]")
    try:
        return ipaddress.ip_address(h)
    except ValueError:
        pass
    if not _NUMERIC_HOST.match(h) or not any(c.isdigit() for c in h):
        return None
    parts = h.split(".")
    if len(parts) > 4 or any(p == "" for p in parts):
        return None
    values: list[int] = []
    for part in parts:
        try:
            if part.lower().startswith("0x"):
                values.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part.startswith("0"):
                values.append(int(part, 8))
            else:
                values.append(int(part, 10))
        except ValueError:
            return None
    # inet_aton: the last part fills all remaining bytes.
    limits = [0xFF] * (len(parts) - 1) + [0xFFFFFFFF >> (8 * (len(parts) - 1))]
    if any(v > lim for v, lim in zip(values, limits, strict=True)):
        return None
    number = 0
    for v in values[:-1]:
        number = (number << 8) | v
    number = (number << (8 * (5 - len(parts)))) | values[-1]
    return ipaddress.IPv4Address(number)


async def check_host(host: str, port: int, *, allow_private: bool) -> str:
    """Resolve ``host`` once, check every address, and return the one to connect to.

    Args:
        host: the URL's host (ASCII; IDNA already applied; IPv6 without brackets).
        port: the TCP port (used for the lookup only).
        allow_private: skip the address check (``WebConfig.allow_private_hosts``).

    Returns:
        The IP address, as a string, the connection must be pinned to.

    Raises:
        ToolError: ``network_refused`` if any address is refused (or the name is
            ``localhost``); ``unavailable`` if the name does not resolve.
    """
    name = host.lower().rstrip(".")
    literal = parse_ip_literal(name)
    addresses: list[IPAddress]
    if literal is not None:
        addresses = [literal]
    else:
        if not allow_private and (name == "localhost" or name.endswith(".localhost")):
            raise ToolError(
                ErrorKind.NETWORK_REFUSED,
                f"refusing to fetch from {host!r}: it names this machine (loopback); "
                "set web.allow_private_hosts in the configuration to allow local hosts",
                host=host,
            )
        try:
            infos = await anyio.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError, OSError) as exc:
            raise ToolError(
                ErrorKind.UNAVAILABLE, f"cannot resolve host {host!r}: {exc}", host=host
            ) from None
        addresses = []
        for info in infos:
            raw = str(info[4][0]).split("%", 1)[0]
            ip = ipaddress.ip_address(raw)
            if ip not in addresses:
                addresses.append(ip)
        if not addresses:
            raise ToolError(ErrorKind.UNAVAILABLE, f"host {host!r} has no address", host=host)
    if not allow_private:
        for ip in addresses:
            reason = blocked_reason(ip)
            if reason is not None:
                shown = "" if literal is not None and str(ip) == name else f" resolves to {ip},"
                raise ToolError(
                    ErrorKind.NETWORK_REFUSED,
                    f"refusing to fetch from {host!r}:{shown} a {reason} address; only public "
                    "addresses are allowed (set web.allow_private_hosts in the configuration "
                    "to allow private ones)",
                    host=host,
                    address=str(ip),
                    reason=reason,
                )
    return str(addresses[0])


# ---------------------------------------------------------------------- decoding, HTML

_CHARSET_RE = re.compile(rb"""charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]+)""", re.IGNORECASE)
_META_RE = re.compile(rb"<meta\b[^>]*>", re.IGNORECASE)
_XML_DECL_RE = re.compile(rb"""^<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9_.\-]+)["']""")
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _codec(name: str | bytes | None) -> str | None:
    if not name:
        return None
    label = name.decode("ascii", "replace") if isinstance(name, bytes) else name
    try:
        return codecs.lookup(label.strip()).name
    except LookupError:
        return None


def decode_body(body: bytes, content_type: str, *, cut: bool = False) -> tuple[str, str]:
    """Decode a response body to text.

    Order: a byte-order mark; the ``charset`` of ``content_type``; for HTML/XML the
    document's ``<meta charset>`` / ``<meta http-equiv content="…charset=">`` / XML
    declaration in the first 4 KiB; then UTF-8; then windows-1252 (the web's default).
    Undecodable bytes become U+FFFD. A label naming an unknown codec is ignored.

    Args:
        body: the raw (content-decoded) bytes.
        content_type: the ``Content-Type`` header value (``""`` if absent).
        cut: the body was cut at the size cap, so a truncated UTF-8 sequence at the very end
            does not disqualify UTF-8.

    Returns:
        ``(text, codec name used)``.
    """
    for bom, name in _BOMS:
        if body.startswith(bom):
            return body.decode(name, errors="replace"), name
    charset = None
    m = _CHARSET_RE.search(content_type.encode("latin-1", "replace"))
    if m:
        charset = _codec(m.group(1))
    if charset is None:
        head = body[:4096]
        x = _XML_DECL_RE.match(head)
        if x:
            charset = _codec(x.group(1))
        for meta in _META_RE.findall(head):
            if charset is not None:
                break
            mm = _CHARSET_RE.search(meta)
            if mm:
                charset = _codec(mm.group(1))
        if charset is not None and charset.startswith("utf-16"):
            charset = "utf-8"  # a byte-level meta cannot really say UTF-16 (HTML spec)
    if charset is not None:
        return body.decode(charset, errors="replace"), charset
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        if cut and exc.start >= len(body) - 3:
            return body.decode("utf-8", errors="replace"), "utf-8"
    return body.decode("cp1252", errors="replace"), "cp1252"


_DROP_TAGS = ("script", "style", "noscript", "template", "iframe", "svg", "canvas", "object")


def _soup(html: str) -> tuple[Any, str | None]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag is not None else None
    for tag in soup.find_all([*_DROP_TAGS, "head"]):
        tag.decompose()
    return soup, title or None


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.splitlines()]
    out = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", out).strip()


def html_to_markdown(html: str) -> tuple[str, str | None]:
    """HTML to Markdown with markdownify (ATX headings, ``-`` bullets); scripts, styles and
    the ``<head>`` dropped. Returns ``(markdown, title or None)``."""
    from markdownify import MarkdownConverter

    soup, title = _soup(html)
    md = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    return _tidy(str(md)), title


def html_to_text(html: str) -> tuple[str, str | None]:
    """HTML to plain text (one block per line, blank runs collapsed). Returns
    ``(text, title or None)``."""
    soup, title = _soup(html)
    text = soup.get_text("\n")
    lines = [" ".join(line.split()) for line in str(text).splitlines()]
    return _tidy("\n".join(lines)), title


def _is_html(content_type: str, body: bytes) -> bool:
    ct = content_type.split(";", 1)[0].strip().lower()
    if ct in ("text/html", "application/xhtml+xml"):
        return True
    if ct:
        return False
    head = body[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


def _is_text(content_type: str, body: bytes) -> bool:
    ct = content_type.split(";", 1)[0].strip().lower()
    if ct.startswith("text/"):
        return True
    if any(k in ct for k in ("json", "xml", "javascript", "ecmascript", "yaml", "csv", "toml")):
        return True
    if not ct or ct == "application/octet-stream":
        return b"\x00" not in body[:8192]
    return False


# ------------------------------------------------------------------------------ web_fetch


def _truncate(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit] + f"\n\n... (content truncated: {limit} of {len(text)} chars shown)", True


class WebFetchTool(Tool):
    """``web_fetch {url, extract_mode="markdown"|"text", max_chars=50000}`` (reference §1.7).

    Args:
        config: the ``web`` section (allow_private_hosts, max_body_bytes in bytes,
            timeout_secs in seconds for the whole fetch including redirects).
    """

    name = "web_fetch"
    title = "Fetch a web page"
    description = (
        "Fetch an http(s) URL and return its content: HTML as Markdown (or plain text with "
        "extract_mode='text'), other text as is. Redirects are followed (at most 10). "
        "Private, loopback and link-local addresses are refused."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "The http:// or https:// URL to fetch."},
            "extract_mode": {
                "type": "string",
                "enum": ["markdown", "text"],
                "default": "markdown",
                "description": "How to render HTML: 'markdown' (default) or plain 'text'.",
            },
            "max_chars": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1_000_000,
                "default": 50_000,
                "description": "Return at most this many characters of content.",
            },
        },
        "required": ["url"],
        "additionalProperties": False,
    }
    tags = ("web",)
    concurrency_class = ConcurrencyClass.SAFE
    cwd_bound = False

    def __init__(self, config: WebConfig | None = None) -> None:
        self.config = config or WebConfig.model_validate({})

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        return await self.execute(args)

    async def execute(self, args: JSONObject) -> ToolResult:
        url = str(args["url"]).strip()
        mode = str(args.get("extract_mode", "markdown"))
        max_chars = int(args.get("max_chars", 50_000))
        try:
            with anyio.fail_after(self.config.timeout_secs):
                return await self._fetch(url, mode, max_chars)
        except TimeoutError:
            raise ToolError(
                ErrorKind.TIMEOUT,
                f"fetching {url} took longer than {self.config.timeout_secs:g} s",
            ) from None

    async def _fetch(self, url: str, mode: str, max_chars: int) -> ToolResult:
        import httpx2

        from ._web_net import NETWORK_ERRORS, TIMEOUT_ERRORS, pinned_client

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
                            raise ToolError(
                                ErrorKind.HTTP_ERROR,
                                f"HTTP {status} {response.reason_phrase} for {current}",
                                status=status,
                                url=str(current),
                            )
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
        pins[(host, port)] = await check_host(
            host, port, allow_private=self.config.allow_private_hosts
        )

    async def _read_capped(self, response: httpx2.Response) -> tuple[bytes, bool]:
        cap = self.config.max_body_bytes
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
        if _is_text(content_type, body) or _is_html(content_type, body):
            text, charset = decode_body(body, content_type, cut=cut)
            meta["charset"] = charset
            if _is_html(content_type, body):
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
        return str(base.join(_canonical_numeric_host(location)))
    except (httpx2.InvalidURL, TypeError, ValueError) as exc:
        raise ToolError(
            ErrorKind.HTTP_ERROR, f"invalid redirect target {location!r} from {base}: {exc}"
        ) from None


def _canonical_numeric_host(url: str) -> str:
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
        parsed = httpx2.URL(_canonical_numeric_host(url))
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


# ----------------------------------------------------------------------------- web_search


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result.

    Attributes:
        title: the page title.
        url: the page address.
        snippet: a short extract (at most 300 characters in the output).
    """

    title: str
    url: str
    snippet: str = ""


class SearchProvider:
    """A ``web_search`` back end. Subclasses set :attr:`name` and implement :meth:`search`.

    Raise ``ToolError`` (any kind) or ``httpx2`` errors for a failure; the chain records
    it and tries the next provider.
    """

    name: str = ""

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        """At most ``count`` hits for ``query``."""
        raise NotImplementedError


def _check_status(provider: str, response: httpx2.Response) -> dict[str, Any]:
    if response.status_code != 200:
        raise ToolError(ErrorKind.HTTP_ERROR, f"{provider}: HTTP {response.status_code}")
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ToolError(ErrorKind.HTTP_ERROR, f"{provider}: response is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ToolError(ErrorKind.HTTP_ERROR, f"{provider}: response is not a JSON object")
    return data


def _hits(items: Any, title: str, url: str, snippet: str, count: int) -> list[SearchHit]:
    out: list[SearchHit] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get(url):
            out.append(
                SearchHit(
                    str(item.get(title) or item[url]), str(item[url]), str(item.get(snippet) or "")
                )
            )
        if len(out) >= count:
            break
    return out


class SearxngProvider(SearchProvider):
    """A SearXNG instance's JSON API: ``GET {url}/search?q=…&format=json`` (the instance must
    enable the ``json`` format)."""

    name = "searxng"

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        base = self.url if self.url.endswith("/search") else self.url + "/search"
        r = await client.get(base, params={"q": query, "format": "json"})
        data = _check_status(self.name, r)
        return _hits(data.get("results"), "title", "url", "content", count)


class BraveProvider(SearchProvider):
    """Brave Search API: ``GET …/res/v1/web/search`` with ``X-Subscription-Token``."""

    name = "brave"
    default_url = "https://api.search.brave.com/res/v1/web/search"

    def __init__(self, api_key: str, url: str | None = None) -> None:
        self.api_key = api_key
        self.url = url or self.default_url

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        r = await client.get(
            self.url,
            params={"q": query, "count": count},
            headers={"X-Subscription-Token": self.api_key, "Accept": "application/json"},
        )
        data = _check_status(self.name, r)
        web = data.get("web")
        items = web.get("results") if isinstance(web, dict) else None
        return _hits(items, "title", "url", "description", count)


class TavilyProvider(SearchProvider):
    """Tavily: ``POST …/search`` with a bearer key and ``{"query", "max_results"}``."""

    name = "tavily"
    default_url = "https://api.tavily.com/search"

    def __init__(self, api_key: str, url: str | None = None) -> None:
        self.api_key = api_key
        self.url = url or self.default_url

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        r = await client.post(
            self.url,
            json={"query": query, "max_results": count},
            headers={"Authorization": f"Bearer {self.api_key}"},
        )
        data = _check_status(self.name, r)
        return _hits(data.get("results"), "title", "url", "content", count)


class DuckDuckGoProvider(SearchProvider):
    """DuckDuckGo through the ``ddgs`` package (not a dependency: install it to use this)."""

    name = "duckduckgo"

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        try:
            from ddgs import DDGS  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            raise ToolError(
                ErrorKind.NOT_CONFIGURED,
                "duckduckgo: the 'ddgs' package is not installed (pip install ddgs)",
            ) from None

        def run() -> list[dict[str, Any]]:
            return list(DDGS().text(query, max_results=count))

        rows = await anyio.to_thread.run_sync(run)
        return _hits(rows, "title", "href", "body", count)


def build_providers(
    configs: Sequence[WebSearchProviderConfig],
) -> tuple[list[SearchProvider], list[str]]:
    """Turn the configured chain into providers.

    Returns:
        ``(providers, problems)``: a provider missing its URL or key is left out and
        described in ``problems`` (keys are never echoed).
    """
    providers: list[SearchProvider] = []
    problems: list[str] = []
    for i, c in enumerate(configs):
        where = f"web.search_providers[{i}] ({c.kind})"
        key = c.api_key or (os.environ.get(c.api_key_env) if c.api_key_env else None)
        if c.kind == "searxng":
            if not c.url:
                problems.append(f"{where}: needs 'url'")
            else:
                providers.append(SearxngProvider(c.url))
        elif c.kind in ("brave", "tavily"):
            if not key:
                env = f" (environment variable {c.api_key_env} is empty)" if c.api_key_env else ""
                problems.append(f"{where}: needs 'api_key' or 'api_key_env'{env}")
            elif c.kind == "brave":
                providers.append(BraveProvider(key, c.url))
            else:
                providers.append(TavilyProvider(key, c.url))
        else:
            providers.append(DuckDuckGoProvider())
    return providers, problems


_HOW_TO_CONFIGURE = (
    "web_search has no search provider configured. Add one to the configuration file, e.g. "
    '{"web": {"search_providers": [{"kind": "searxng", "url": "http://searx.example:8080"}]}} '
    'or {"kind": "brave", "api_key_env": "BRAVE_API_KEY"} or '
    '{"kind": "tavily", "api_key_env": "TAVILY_API_KEY"}.'
)


class WebSearchTool(Tool):
    """``web_search {query, count=5}`` over the configured provider chain (reference §1.7).

    The first provider returning at least one hit wins; a provider failing or returning
    nothing passes to the next. If every provider failed the call fails (``unavailable``,
    naming each provider's error); if some answered with no hits the output is
    ``No results found for: <query>``.

    Args:
        config: the ``web`` section (search_providers, timeout_secs).
        providers: explicit providers (tests, embedding hosts); overrides the config chain.
    """

    name = "web_search"
    title = "Search the web"
    description = (
        "Search the web. Returns up to `count` results (title, URL, snippet) from the first "
        "configured search provider that has results."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "description": "The search query."},
            "count": {
                "type": "integer",
                "minimum": 1,
                "maximum": 10,
                "default": 5,
                "description": "Number of results, 1 to 10 (default 5).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    tags = ("web",)
    concurrency_class = ConcurrencyClass.SAFE
    cwd_bound = False

    def __init__(
        self, config: WebConfig | None = None, providers: Sequence[SearchProvider] | None = None
    ) -> None:
        self.config = config or WebConfig.model_validate({})
        self._providers = list(providers) if providers is not None else None

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        return await self.execute(args)

    async def execute(self, args: JSONObject) -> ToolResult:
        import httpx2

        from ._web_net import NETWORK_ERRORS

        query = str(args["query"]).strip()
        count = int(args.get("count", 5))
        if not query:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "query must not be empty")
        if self._providers is not None:
            providers, problems = self._providers, list[str]()
        else:
            providers, problems = build_providers(self.config.search_providers)
        if not providers:
            detail = ("; " + "; ".join(problems)) if problems else ""
            raise ToolError(ErrorKind.NOT_CONFIGURED, _HOW_TO_CONFIGURE + detail)
        errors = list(problems)
        answered = False
        timeout = httpx2.Timeout(
            self.config.timeout_secs, connect=min(10.0, self.config.timeout_secs)
        )
        async with httpx2.AsyncClient(timeout=timeout, follow_redirects=True) as client:
            for provider in providers:
                try:
                    with anyio.fail_after(self.config.timeout_secs):
                        hits = await provider.search(client, query, count)
                except ToolError as exc:
                    errors.append(exc.message)
                    continue
                except TimeoutError:
                    errors.append(f"{provider.name}: timed out")
                    continue
                except NETWORK_ERRORS as exc:
                    errors.append(f"{provider.name}: {type(exc).__name__}: {exc}")
                    continue
                answered = True
                if hits:
                    return _search_result(query, provider.name, hits[:count], errors)
        if not answered:
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                "every search provider failed: " + "; ".join(errors),
                errors=errors,
            )
        return ToolResult.ok(
            f"No results found for: {query}",
            structured_metadata={"provider": None, "results": [], "errors": errors},
        )


def _search_result(
    query: str, provider: str, hits: Sequence[SearchHit], errors: list[str]
) -> ToolResult:
    parts = [f"Results for: {query}\n"]
    for i, hit in enumerate(hits, 1):
        snippet = " ".join(hit.snippet.split())
        if len(snippet) > 300:
            snippet = snippet[:297] + "..."
        parts.append(f"{i}. {hit.title}\n   {hit.url}\n   {snippet}\n")
    meta: JSONObject = {
        "provider": provider,
        "results": [{"title": h.title, "url": h.url, "snippet": h.snippet} for h in hits],
        "errors": errors,
    }
    return ToolResult.ok("\n".join(parts).rstrip() + "\n", structured_metadata=meta)


# ------------------------------------------------------------------------------- register


def _installed(*modules: str) -> bool:
    """Whether every module can be imported, found without importing it (keeps start-up
    fast: the extras load on first use)."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):
        return False


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``web_search`` and ``web_fetch`` (octos order), or record them in
    ``MISSING_EXTRAS`` as needing the ``web`` extra when httpx2, markdownify or bs4 is
    missing."""
    if not _installed("httpx2", "httpcore2", "bs4", "markdownify"):
        MISSING_EXTRAS["web_search"] = "web"
        MISSING_EXTRAS["web_fetch"] = "web"
        return
    registry.register(WebSearchTool(config.web))
    registry.register(WebFetchTool(config.web))
