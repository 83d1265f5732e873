"""web_fetch against loopback HTTP servers started here (no other network)."""

from __future__ import annotations

import gzip
import ipaddress
import itertools
import socket
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import anyio
import pytest

from octos_tools.builtins import web
from octos_tools.builtins.web import (
    WebFetchTool,
    decode_body,
)
from octos_tools.builtins.web._web_fetch import ERROR_BODY_CHARS
from octos_tools.config import WebConfig
from octos_tools.errors import ErrorKind, ToolError

from ._web_helpers import Route, Server, page, text_of
from .tool_helpers import call

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------------- test server


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def fetcher(**web_config: Any) -> WebFetchTool:
    return WebFetchTool(WebConfig.model_validate(web_config))


def redirect(to: str, status: int = 302) -> Route:
    return (status, {"Location": to}, b"")


@pytest.fixture
def public_alias(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make the host name ``public.test`` pass the guard and pin it to 127.0.0.1, as a public
    site would; every other host goes through the real check. Returns the checked hosts."""
    real = WebFetchTool.check_host
    checked: list[str] = []

    async def check(self: WebFetchTool, host: str, port: int) -> str:
        checked.append(host)
        if host == "public.test":
            return "127.0.0.1"
        return await real(self, host, port)

    monkeypatch.setattr(WebFetchTool, "check_host", check)
    return checked


def gz_route(data: bytes) -> Route:
    return (200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, gzip.compress(data))


# ----------------------------------------------------------------------------- SSRF matrix


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "localhost", "LOCALHOST.", "2130706433", "0177.0.0.1", "0x7f000001", "127.1"],
)
async def test_loopback_spellings_refused_without_contact(
    serve: Callable[..., Server], host: str
) -> None:
    srv = serve({"/secret": page("SECRET-A")})
    result = await call(fetcher(), {"url": srv.url("/secret", host)})
    assert not result.success
    assert result.error_kind == "network_refused"
    assert "SECRET-A" not in text_of(result)
    assert srv.requests == []


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback")
async def test_ipv6_loopback_refused(serve: Callable[..., Server]) -> None:
    srv = serve({"/secret": page("SECRET-6")}, host="::1")
    for url in (srv.url("/secret"), f"http://[::ffff:127.0.0.1]:{srv.port}/secret"):
        result = await call(fetcher(), {"url": url})
        assert result.error_kind == "network_refused", result.output
    assert srv.requests == []
    ok = await call(fetcher(allow_private_hosts=True), {"url": srv.url("/secret")})
    assert ok.success and "SECRET-6" in ok.output


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[fd12::1]/",
        "http://0.0.0.0:1/",
        "http://[::ffff:192.168.0.1]/",
    ],
)
async def test_private_targets_refused(url: str) -> None:
    result = await call(fetcher(), {"url": url})
    assert result.error_kind == "network_refused"


@pytest.mark.parametrize(
    "host",
    [
        "[::ffff:0:127.0.0.1]",
        "[::ffff:0:7f00:1]",
        "[64:ff9b::127.0.0.1]",
        "[64:ff9b:1::7f00:1]",
        "[2002:7f00:1::]",
        "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
        "[::ffff:0:0:7f00:1]",
    ],
)
async def test_ipv4_embedding_ipv6_refused_before_any_connection(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    import httpcore2

    attempts: list[str] = []
    real = httpcore2.AnyIOBackend.connect_tcp

    async def record(self: Any, host: str, port: int, **kwargs: Any) -> Any:
        attempts.append(host)
        return await real(self, host, port, **kwargs)

    monkeypatch.setattr(httpcore2.AnyIOBackend, "connect_tcp", record)
    srv = serve({"/secret": page("SECRET-T")})
    result = await call(fetcher(), {"url": f"http://{host}:{srv.port}/secret"})
    assert result.error_kind == "network_refused", result.output
    assert "IPv4" in text_of(result) or "reserved" in text_of(result) or "Teredo" in text_of(result)
    assert attempts == [] and srv.requests == []


async def test_allowed_hosts_open_only_the_listed_hosts(serve: Callable[..., Server]) -> None:
    srv = serve({"/": page("<p>DEV-SERVER</p>")})
    by_address = await call(fetcher(allowed_hosts=["127.0.0.1"]), {"url": srv.url("/")})
    assert by_address.success and "DEV-SERVER" in by_address.output
    by_network = await call(fetcher(allowed_hosts=["127.0.0.0/8"]), {"url": srv.url("/")})
    assert by_network.success
    by_name = await call(fetcher(allowed_hosts=["LocalHost"]), {"url": srv.url("/", "localhost")})
    assert by_name.success, by_name.output
    other = await call(fetcher(allowed_hosts=["10.0.0.0/8", "dev.test"]), {"url": srv.url("/")})
    assert other.error_kind == "network_refused"
    assert "169.254.169.254" in str(
        (
            await call(fetcher(allowed_hosts=["127.0.0.1"]), {"url": "http://169.254.169.254/"})
        ).structured_metadata
    )
    assert srv.hits("/") == 3


@pytest.mark.parametrize("url", ["file:///etc/passwd", "gopher://127.0.0.1/", "ftp://x/", "x"])
async def test_non_http_schemes_refused(url: str) -> None:
    result = await call(fetcher(), {"url": url})
    assert result.error_kind == "invalid_arguments"
    assert "root:x:" not in text_of(result)


async def test_url_without_scheme_says_what_a_url_looks_like() -> None:
    result = await call(fetcher(), {"url": "example.com/page"})
    assert result.error_kind == "invalid_arguments"
    assert "(none)" not in text_of(result) and "https://example.com/page" in text_of(result)


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{port}/secret",
        "http://localhost:{port}/secret",
        "http://[::1]:{port}/secret",
        "http://2130706433:{port}/secret",
        "http://0177.0.0.1:{port}/secret",
        "http://169.254.169.254/",
        "file:///etc/passwd",
    ],
)
async def test_redirect_hop_is_checked(
    serve: Callable[..., Server], public_alias: list[str], target: str
) -> None:
    srv = serve({"/secret": page("SECRET-R")})
    srv.routes["/start"] = redirect(target.format(port=srv.port))
    result = await call(fetcher(), {"url": srv.url("/start", "public.test")})
    assert not result.success
    assert result.error_kind == "network_refused", result.output
    assert "SECRET-R" not in text_of(result)
    assert srv.hits("/secret") == 0
    assert srv.hits("/start") == 1


async def test_connection_pinned_and_resolved_once(
    serve: Callable[..., Server], public_alias: list[str]
) -> None:
    srv = serve({"/a": redirect("/b"), "/b": redirect("/c", 307), "/c": page("<p>done</p>")})
    result = await call(fetcher(), {"url": srv.url("/a", "public.test")})
    assert result.success, result.output
    assert "done" in result.output
    # The name never went to DNS (it does not exist): the socket went to the pinned address,
    # while the Host header kept the name.
    assert public_alias == ["public.test"]
    assert [h for _, _, h in srv.requests] == [f"public.test:{srv.port}"] * 3
    assert "Redirected from: http://public.test" in result.output


async def test_unpinned_connection_refused_by_backend() -> None:
    import httpcore2

    from octos_tools.builtins.web._net import PinnedBackend

    backend = PinnedBackend({})
    with pytest.raises(httpcore2.ConnectError):
        await backend.connect_tcp("127.0.0.1", 80)


async def test_name_resolving_to_private_address_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = {
        "intranet.test": ["10.1.2.3"],
        "mixed.test": ["93.184.216.34", "127.0.0.1"],
        "v6.test": ["fd00::5"],
    }

    async def fake_getaddrinfo(host: str, port: int, **kw: Any) -> list[Any]:
        fam = socket.AF_INET
        return [(fam, socket.SOCK_STREAM, 6, "", (a, port)) for a in answers[host]]

    monkeypatch.setattr(anyio, "getaddrinfo", fake_getaddrinfo)
    for host in answers:
        with pytest.raises(ToolError) as info:
            await web.check_host(host, 80, allow_private=False)
        assert info.value.kind == "network_refused"
    assert await web.check_host("intranet.test", 80, allow_private=True) == "10.1.2.3"


async def test_unresolvable_host_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    async def fail(host: str, port: int, **kw: Any) -> list[Any]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(anyio, "getaddrinfo", fail)
    result = await call(fetcher(), {"url": "http://nowhere.invalid/"})
    assert result.error_kind == "unavailable"


# ------------------------------------------------------------------- fetching (opt-in)


async def test_allow_private_hosts_fetches_markdown(serve: Callable[..., Server]) -> None:
    html = (
        "<html><head><title>Doc</title><style>p{color:red}</style></head><body>"
        "<h1>Hello</h1><p>A <a href='/x'>link</a> and <b>bold</b>.</p>"
        "<script>alert('no')</script><ul><li>one</li><li>two</li></ul></body></html>"
    )
    srv = serve({"/": page(html)})
    result = await call(fetcher(allow_private_hosts=True), {"url": srv.url("/")})
    assert result.success, result.output
    head, _, content = result.output.partition("\n\n")
    assert head.splitlines()[0] == f"URL: {srv.url('/')}"
    assert "Content-Type: text/html; charset=utf-8" in head
    assert "Title: Doc" in head
    assert "Redirected from" not in head
    assert f"Length: {len(content)} chars" in head
    assert "# Hello" in content
    assert "[link](/x)" in content and "**bold**" in content
    assert "- one" in content
    assert "alert" not in content and "color:red" not in content
    meta = result.structured_metadata or {}
    assert meta["status"] == 200 and meta["charset"] == "utf-8"


async def test_xhtml_with_xml_declaration_converts_cleanly(serve: Callable[..., Server]) -> None:
    xhtml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" '
        '"http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">\n'
        '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>X page</title></head>'
        "<body><!-- a comment --><h1>Hello XHTML</h1><p>Body <b>text</b>.</p></body></html>"
    )
    srv = serve(
        {
            "/typed": page(xhtml, "application/xhtml+xml; charset=utf-8"),
            "/untyped": page(xhtml, ""),
        }
    )
    for path in ("/typed", "/untyped"):
        for mode in ("markdown", "text"):
            result = await call(
                fetcher(allow_private_hosts=True), {"url": srv.url(path), "extract_mode": mode}
            )
            assert result.success, result.output
            body = result.output.split("\n\n", 1)[1]
            assert "xml version" not in body and "DOCTYPE" not in body and "comment" not in body
            assert "Hello XHTML" in body and "Title: X page" in result.output


async def test_text_mode_and_max_chars(serve: Callable[..., Server]) -> None:
    html = "<h1>Title</h1><p>Alpha <i>beta</i></p><p>" + "x" * 500 + "</p>"
    srv = serve({"/": page(html)})
    tool = fetcher(allow_private_hosts=True)
    text = await call(tool, {"url": srv.url("/"), "extract_mode": "text"})
    assert "Title\n" in text.output and "Alpha\nbeta" in text.output
    assert "<" not in text.output.partition("\n\n")[2] and "#" not in text.output
    short = await call(tool, {"url": srv.url("/"), "max_chars": 20})
    assert "content truncated: 20 of" in short.output
    assert (short.structured_metadata or {})["truncated"] is True


async def test_redirects_followed_and_limited(serve: Callable[..., Server]) -> None:
    routes: dict[str, Any] = {f"/r{i}": redirect(f"/r{i + 1}") for i in range(12)}
    routes["/r12"] = page("end", "text/plain")
    srv = serve(routes)
    tool = fetcher(allow_private_hosts=True)
    ok = await call(tool, {"url": srv.url("/r2")})  # 10 redirects: allowed
    assert ok.success, ok.output
    assert f"Redirected from: {srv.url('/r2')}" in ok.output
    assert f"URL: {srv.url('/r12')}" in ok.output
    assert len((ok.structured_metadata or {})["redirects"]) == 11
    too_many = await call(tool, {"url": srv.url("/r1")})  # 11 redirects
    assert too_many.error_kind == "http_error"
    assert "too many redirects" in too_many.output
    assert srv.hits("/r12") == 1


async def test_non_2xx_is_http_error_with_status(serve: Callable[..., Server]) -> None:
    srv = serve({"/gone": page("gone", status=410), "/loop": (302, {}, b"")})
    result = await call(fetcher(allow_private_hosts=True), {"url": srv.url("/missing")})
    assert result.error_kind == "http_error"
    assert (result.structured_metadata or {})["status"] == 404
    assert "404" in result.output
    gone = await call(fetcher(allow_private_hosts=True), {"url": srv.url("/gone")})
    assert (gone.structured_metadata or {})["status"] == 410
    no_location = await call(fetcher(allow_private_hosts=True), {"url": srv.url("/loop")})
    assert no_location.error_kind == "http_error"


async def test_error_status_keeps_the_reason_in_the_body(serve: Callable[..., Server]) -> None:
    """A 403 block page or a 429 rate-limit text is the reason: kept, capped, typed."""
    blocked = (
        b"<html><head><title>Access denied</title><style>p{}</style></head><body>"
        b"<h1>Forbidden</h1><p>Your client was blocked by the firewall (ref 7F3A).</p>"
        b"<script>var x = 1;</script></body></html>"
    )
    srv = serve(
        {
            "/403": (403, {"Content-Type": "text/html; charset=utf-8"}, blocked),
            "/429": (
                429,
                {"Content-Type": "application/json", "Retry-After": "30"},
                b'{"error": "rate limit exceeded: 60 requests per minute"}',
            ),
            "/500": (500, {"Content-Type": "text/plain"}, b"boom " * 100_000),
            "/bin": (502, {"Content-Type": "application/octet-stream"}, b"\x00\x01" * 50),
            "/empty": (503, {"Content-Type": "text/plain"}, b""),
        }
    )
    tool = fetcher(allow_private_hosts=True)
    r403 = await call(tool, {"url": srv.url("/403")})
    assert r403.error_kind == "http_error"
    meta = r403.structured_metadata or {}
    assert meta["status"] == 403 and meta["url"] == srv.url("/403")
    assert "blocked by the firewall (ref 7F3A)" in r403.output
    assert "blocked by the firewall (ref 7F3A)" in meta["body"]
    assert "<p>" not in meta["body"] and "var x" not in meta["body"]  # HTML as text

    r429 = await call(tool, {"url": srv.url("/429")})
    meta = r429.structured_metadata or {}
    assert r429.error_kind == "http_error" and meta["status"] == 429
    assert meta["retry_after"] == "30" and "Retry-After: 30" in r429.output
    assert "rate limit exceeded: 60 requests per minute" in r429.output

    r500 = await call(tool, {"url": srv.url("/500")})  # a huge body: capped, said so
    meta = r500.structured_metadata or {}
    assert meta["status"] == 500 and meta["body"].endswith("… (body cut)")
    assert len(meta["body"]) <= ERROR_BODY_CHARS + 20 and len(r500.output) < 3 * ERROR_BODY_CHARS

    rbin = await call(tool, {"url": srv.url("/bin")})
    assert rbin.error_kind == "http_error" and "binary body, not shown" in rbin.output
    assert "body" not in (rbin.structured_metadata or {})
    rempty = await call(tool, {"url": srv.url("/empty")})
    assert rempty.error_kind == "http_error" and rempty.output.endswith(srv.url("/empty"))


async def test_large_body_cut_at_cap(serve: Callable[..., Server]) -> None:
    big = b"a" * (3 * 1024 * 1024)
    srv = serve({"/big": page(big, "text/plain"), "/gz": gz_route(b"b" * (2 * 1024 * 1024))})
    tool = fetcher(allow_private_hosts=True, max_body_bytes=65_536)
    result = await call(tool, {"url": srv.url("/big"), "max_chars": 1_000_000})
    assert result.success
    meta = result.structured_metadata or {}
    assert meta["body_bytes"] == 65_536 and meta["body_cut"] is True
    assert "Body: cut at 65536 bytes" in result.output
    assert result.output.count("a") >= 65_536
    # A compressed body is capped after decompression (no zip bomb).
    bomb = await call(tool, {"url": srv.url("/gz"), "max_chars": 1_000_000})
    assert (bomb.structured_metadata or {})["body_bytes"] == 65_536


@pytest.mark.parametrize(
    ("body", "ctype", "expected", "charset"),
    [
        ("café".encode("latin-1"), "text/plain; charset=ISO-8859-1", "café", "iso8859-1"),
        (
            '<meta charset="windows-1251"><p>Привет</p>'.encode("cp1251"),
            "text/html",
            "Привет",
            "cp1251",
        ),
        (
            '<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">'
            "<p>日本語</p>".encode("shift_jis"),
            "text/html",
            "日本語",
            "shift_jis",
        ),
        ("ünïcödé".encode("utf-16"), "text/plain", "ünïcödé", "utf-16"),
        (b"\xef\xbb\xbfBOM text", "text/plain; charset=latin-1", "BOM text", "utf-8-sig"),
        ("naïve €".encode("cp1252"), "text/plain", "naïve €", "cp1252"),
        ("utf8 ✓".encode(), "text/plain", "utf8 ✓", "utf-8"),
        ("x ✓".encode(), "text/plain; charset=bogus-codec", "x ✓", "utf-8"),
    ],
)
async def test_encodings(
    serve: Callable[..., Server], body: bytes, ctype: str, expected: str, charset: str
) -> None:
    srv = serve({"/": page(body, ctype)})
    result = await call(fetcher(allow_private_hosts=True), {"url": srv.url("/")})
    assert result.success, result.output
    assert expected in result.output
    assert (result.structured_metadata or {})["charset"] == charset


def test_decode_body_cut_utf8_sequence() -> None:
    data = "é".encode() * 10
    text, charset = decode_body(data[:-1], "text/plain", cut=True)
    assert charset == "utf-8" and text.startswith("é" * 9)


async def test_binary_and_json_content(serve: Callable[..., Server]) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    srv = serve({"/p.png": page(png, "image/png"), "/j": page('{"a": 1}', "application/json")})
    tool = fetcher(allow_private_hosts=True)
    img = await call(tool, {"url": srv.url("/p.png")})
    assert img.success and "binary content, 264 bytes" in img.output
    # the size of the body in bytes, not the length of the placeholder text
    assert "Length: 264 bytes (binary)" in img.output and " chars" not in img.output
    assert img.structured_metadata is not None
    assert img.structured_metadata["binary"] is True and img.structured_metadata["length"] is None
    assert img.structured_metadata["body_bytes"] == 264
    js = await call(tool, {"url": srv.url("/j")})
    assert js.output.endswith('{"a": 1}')


async def test_proxy_environment_ignored(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = serve({"/": page("direct", "text/plain")})
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    result = await call(fetcher(allow_private_hosts=True), {"url": srv.url("/")})
    assert result.success and "direct" in result.output


async def test_connection_refused_is_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = await call(fetcher(allow_private_hosts=True), {"url": f"http://127.0.0.1:{port}/"})
    assert result.error_kind == "unavailable"


async def test_whole_fetch_has_a_deadline(serve: Callable[..., Server]) -> None:
    import time

    def slow(handler: BaseHTTPRequestHandler) -> Route:
        time.sleep(3)
        return page("late", "text/plain")

    srv = serve({"/slow": slow})
    result = await call(
        fetcher(allow_private_hosts=True, timeout_secs=0.5), {"url": srv.url("/slow")}
    )
    assert result.error_kind == "timeout"


async def test_refusal_of_a_name_says_what_it_resolves_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def fake_getaddrinfo(host: str, port: int, **kw: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("0.0.0.0", port))]

    monkeypatch.setattr(anyio, "getaddrinfo", fake_getaddrinfo)
    with pytest.raises(ToolError) as info:
        await web.check_host("zero.test", 80, allow_private=False)
    assert info.value.message.startswith(
        "refusing to fetch from 'zero.test': it resolves to 0.0.0.0, an unspecified "
        "(this-network) address; only public addresses are allowed"
    ), info.value.message


@pytest.mark.parametrize(
    ("host", "phrase"),
    [
        ("0.0.0.0", "an unspecified (this-network) address;"),
        ("::ffff:127.0.0.1", "an IPv6 address embedding a loopback IPv4 address;"),
        ("::ffff:0.0.0.1", "an IPv6 address embedding an unspecified (this-network) IPv4 address;"),
        ("fd00::1", "a unique-local address;"),
        ("10.0.0.1", "a private address;"),
        ("2001:10::1", "an ORCHID address;"),
        ("::1:0:0:0:1", "an IETF-reserved (::/8) address;"),
        ("127.0.0.1", "a loopback address;"),
    ],
)
async def test_refusal_message_wording(host: str, phrase: str) -> None:
    with pytest.raises(ToolError) as info:
        await web.check_host(host, 80, allow_private=False)
    message = info.value.message
    assert info.value.kind is ErrorKind.NETWORK_REFUSED
    shown = ipaddress.ip_address(host)
    said = "" if str(shown) == host else f"it is {shown}, "
    assert message.startswith(f"refusing to fetch from {host!r}: {said}{phrase}"), message
    words = message.replace(";", " ").replace(",", " ").split()
    assert not any(a == b for a, b in itertools.pairwise(words)), message
