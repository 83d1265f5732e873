"""browser: a real headless Chromium against pages served on loopback here.

The test config allow-lists 127.0.0.1 only; 127.0.0.2 (also loopback on Linux) stands for a
private address the guard must refuse, and its server records every request it gets, so
"refused" means "never reached". Skipped only when no Chromium is installed (CI installs
Debian's ``chromium``).
"""

from __future__ import annotations

import io
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from PIL import Image

from octos_tools.builtins.browser import BrowserTool
from octos_tools.builtins.browser._chromium import find_chromium
from octos_tools.config import Config, ImageConfig, WebConfig
from octos_tools.context import ToolContext
from octos_tools.errors import ToolError
from octos_tools.profile import build_registry
from octos_tools.tool_types import ImageContent, ToolResult

pytestmark = pytest.mark.anyio

needs_chromium = pytest.mark.skipif(
    find_chromium() is None,
    reason="no Chromium on PATH (CI installs it: apt-get install -y chromium)",
)


@dataclass
class Site:
    """A loopback HTTP server with fixed routes that records the paths it was asked for."""

    host: str
    routes: dict[str, Any]
    seen: list[str] = field(default_factory=list)
    port: int = 0

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"


@pytest.fixture
def site() -> Iterator[Callable[..., Site]]:
    servers: list[ThreadingHTTPServer] = []

    def start(host: str, routes: dict[str, Any]) -> Site:
        s = Site(host, routes)

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                s.seen.append(self.path)
                route = s.routes.get(self.path.split("?")[0])
                if callable(route):
                    route = route()
                status, headers, body = route or (404, {}, b"no such page")
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass

        httpd = Server((host, 0), Handler)
        s.port = httpd.server_address[1]
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(httpd)
        return s

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def html(body: str, title: str = "Test page") -> tuple[int, dict[str, str], bytes]:
    page = f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"
    return 200, {"Content-Type": "text/html; charset=utf-8"}, page.encode()


def redirect(location: str) -> tuple[int, dict[str, str], bytes]:
    return 302, {"Location": location}, b""


def tool(**kwargs: Any) -> BrowserTool:
    web = WebConfig(allowed_hosts=["127.0.0.1"], timeout_secs=10)
    kwargs.setdefault("action_timeout", 15)
    return BrowserTool(web, ImageConfig(max_side=800), **kwargs)


async def act(t: BrowserTool, ctx: ToolContext | None = None, **args: Any) -> ToolResult:
    """Call the tool as the registry does: a raised ToolError becomes a failed result."""
    try:
        return await t.execute_with_context(ctx or ToolContext(), args)
    except ToolError as exc:
        return ToolResult.from_error(exc)


def chromium_descendants() -> list[int]:
    """Pids of Chromium processes descended from this test process."""
    me = os.getpid()
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] == "Z":
            continue  # a zombie holds no resources; its parent reaps it
        parents[int(entry.name)] = int(fields[1])
        names[int(entry.name)] = cmd
    found = []
    for pid, cmd in names.items():
        if "chrom" not in cmd.lower():
            continue
        p = pid
        while p > 1:
            p = parents.get(p, 0)
            if p == me:
                found.append(pid)
                break
    return found


async def no_chromium_left(deadline: float = 10.0) -> list[int]:
    end = time.monotonic() + deadline
    left = chromium_descendants()
    while left and time.monotonic() < end:
        await anyio.sleep(0.1)
        left = chromium_descendants()
    return left


# ----------------------------------------------------------------------------- the tests


@needs_chromium
@pytest.mark.slow
async def test_navigate_click_type_read_and_screenshot(site: Callable[..., Site]) -> None:
    private = site("127.0.0.2", {"/pixel.png": html("PRIVATE"), "/api": html("PRIVATE-API")})
    app = site(
        "127.0.0.1",
        {
            "/": html(
                "<h1>Hello browser</h1>"
                "<input id='name'><button id='go' onclick=\"document.getElementById('out')"
                ".innerText = 'Hi ' + document.getElementById('name').value\">Go</button>"
                "<div id='out'></div>"
                f"<img src='{private.url('/pixel.png')}'>"
                "<a href='/about'>About us</a><a href='https://example.com/x'>Out</a>"
            ),
            "/about": html("<p>About page</p>", "About"),
        },
    )
    t = tool()
    try:
        nav = await act(t, action="navigate", url=app.url("/"))
        assert nav.success, nav.output
        assert "Title: Test page" in nav.output and "Status: 200" in nav.output
        # the sub-resource on a private address was refused, and never reached its server
        assert "Blocked requests (1)" in nav.output and "/pixel.png" in nav.output
        assert private.seen == []

        typed = await act(t, action="type", selector="#name", text="Ada")
        assert typed.success, typed.output
        clicked = await act(t, action="click", selector="#go")
        assert clicked.success, clicked.output
        out = await act(t, action="get_text", selector="#out")
        assert out.output == "Hi Ada"
        body = await act(t, action="get_text")
        assert "Hello browser" in body.output
        page_html = await act(t, action="get_html", selector="h1")
        assert page_html.output == "<h1>Hello browser</h1>"

        found = await act(t, action="find_elements", selector="button, input")
        assert found.success and '<button id="go">' in found.output and "2 element" in found.output
        links = await act(t, action="get_links")
        assert app.url("/about") in links.output and "About us" in links.output

        value = await act(t, action="evaluate", expression="document.title + ' ' + (6 * 7)")
        assert value.output == "Test page 42"

        shot = await act(t, action="screenshot")
        assert shot.success, shot.output
        [image] = shot.content
        assert isinstance(image, ImageContent) and image.mime_type in ("image/png", "image/jpeg")
        width, height = Image.open(io.BytesIO(image.data)).size
        assert max(width, height) <= 800  # fitted to the image config

        # bad input: each a typed error naming what happened
        missing = await act(t, action="click", selector="#nope")
        assert missing.error_kind is not None and missing.error_kind.value == "no_match"
        assert "#nope" in missing.output
        thrown = await act(t, action="evaluate", expression="(() => { throw new Error('boom') })()")
        assert thrown.error_kind is not None and thrown.error_kind.value == "process_failed"
        assert "boom" in thrown.output
        bad = await act(t, action="get_text", selector="!!! not css")
        assert bad.error_kind is not None and bad.error_kind.value == "invalid_arguments"
        no_url = await act(t, action="navigate")
        assert no_url.error_kind is not None and "`url`" in no_url.output

        # a fetch() by the page's own script goes through the guard too
        xhr = await act(
            t,
            action="evaluate",
            expression=f"fetch({private.url('/api')!r}).then(r => 'got', e => 'refused')",
        )
        assert xhr.output.startswith("refused") and "Blocked requests" in xhr.output
        assert private.seen == []

        # a WebSocket (even to an allowed host) is never opened: it would bypass the guard
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        ws_port = listener.getsockname()[1]
        ws = await act(
            t,
            action="evaluate",
            expression=(
                f"new Promise(r => {{ const w = new WebSocket('ws://127.0.0.1:{ws_port}/');"
                " w.onopen = () => r('open'); w.onclose = () => r('closed'); })"
            ),
        )
        assert ws.output.startswith("closed") and "WebSockets are not opened" in ws.output
        with pytest.raises(BlockingIOError):
            listener.accept()
        listener.close()

        # clicking a link navigates through the guard as well
        about = await act(t, action="click", selector="a[href='/about']")
        assert about.success and app.url("/about") in about.output
    finally:
        await t.aclose()
    assert await no_chromium_left() == []


@needs_chromium
@pytest.mark.slow
async def test_redirects_are_checked_hop_by_hop(site: Callable[..., Site]) -> None:
    private = site("127.0.0.2", {"/secret": html("SECRET")})
    app = site(
        "127.0.0.1",
        {
            "/": html("<p>home</p>", "Home"),
            "/hop": redirect("/"),
            "/leak": redirect(private.url("/secret")),
            "/leak2": redirect("/leak"),
            "/img": html("<img src='/imgleak'><p>img page</p>"),
            "/imgleak": redirect(private.url("/secret")),
        },
    )
    t = tool()
    try:
        ok = await act(t, action="navigate", url=app.url("/hop"))
        assert ok.success, ok.output
        assert f"URL: {app.url('/')}" in ok.output and "Redirected from" in ok.output

        refused = await act(t, action="navigate", url=app.url("/leak2"))
        assert refused.error_kind is not None and refused.error_kind.value == "network_refused"
        assert "127.0.0.2" in refused.output and "redirected from" in refused.output

        direct = await act(t, action="navigate", url=private.url("/secret"))
        assert direct.error_kind is not None and direct.error_kind.value == "network_refused"

        # a sub-resource redirected to a private address is refused as well
        img = await act(t, action="navigate", url=app.url("/img"))
        assert img.success and "Blocked requests (1)" in img.output
        assert private.url("/secret") in img.output

        scheme = await act(t, action="navigate", url="file:///etc/passwd")
        assert scheme.error_kind is not None and scheme.error_kind.value == "invalid_arguments"
        assert private.seen == []
    finally:
        await t.aclose()


@needs_chromium
@pytest.mark.slow
async def test_page_that_never_loads_times_out_and_leaves_no_chromium(
    site: Callable[..., Site],
) -> None:
    release = threading.Event()

    def hang() -> tuple[int, dict[str, str], bytes]:
        release.wait(30)
        return html("late")

    app = site("127.0.0.1", {"/slow": hang, "/": html("<p>fine</p>")})
    t = tool(action_timeout=3)
    try:
        start = time.monotonic()
        slow = await act(t, action="navigate", url=app.url("/slow"))
        assert slow.error_kind is not None and slow.error_kind.value == "timeout", slow.output
        assert time.monotonic() - start < 10
        # the session is still usable after a timeout
        fine = await act(t, action="navigate", url=app.url("/"))
        assert fine.success, fine.output
        assert chromium_descendants() != []
        closed = await act(t, action="close")
        assert closed.output == "Browser closed."
        assert t.open_sessions == 0
        assert await no_chromium_left() == []
    finally:
        release.set()
        await t.aclose()


@needs_chromium
@pytest.mark.slow
async def test_one_browser_per_session_and_idle_close(site: Callable[..., Site]) -> None:
    app = site("127.0.0.1", {"/": html("<input id='x'>")})
    t = tool(idle_timeout=8.0)
    a, b = ToolContext(session_key="a"), ToolContext(session_key="b")
    try:
        assert (await act(t, a, action="navigate", url=app.url("/"))).success
        assert (await act(t, b, action="navigate", url=app.url("/"))).success
        assert t.open_sessions == 2
        await act(t, a, action="type", selector="#x", text="only in a")
        seen_a = await act(t, a, action="evaluate", expression="document.querySelector('#x').value")
        seen_b = await act(t, b, action="evaluate", expression="document.querySelector('#x').value")
        assert (seen_a.output, seen_b.output) == ("only in a", "")
        end = time.monotonic() + 30
        while t.open_sessions and time.monotonic() < end:
            await anyio.sleep(0.2)
        assert t.open_sessions == 0  # both closed after 8 s without an action
        assert await no_chromium_left() == []
    finally:
        await t.aclose()


@needs_chromium
@pytest.mark.slow
async def test_browser_closes_when_its_tool_session_ends(
    site: Callable[..., Site], tmp_path: Path
) -> None:
    from octos_tools.session import ToolSession

    app = site("127.0.0.1", {"/": html("<p>session page</p>")})
    config = Config.model_validate(
        {"web": {"allowed_hosts": ["127.0.0.1"]}, "tool_policy": {}, "deferred_groups": []}
    )
    registry = build_registry(workspace=tmp_path, config=config)
    browser = registry.get("browser")
    assert isinstance(browser, BrowserTool)
    one, two = ToolSession(registry), ToolSession(registry)
    try:
        first = await one.call("browser", {"action": "navigate", "url": app.url("/")})
        assert first.success, first.output
        second = await two.call("browser", {"action": "navigate", "url": app.url("/")})
        assert second.success, second.output
        assert browser.open_sessions == 2  # one browser per session, never shared
        await one.aclose()
        assert browser.open_sessions == 1
        still = await two.call("browser", {"action": "get_text"})
        assert "session page" in still.output
        await two.aclose()
        assert browser.open_sessions == 0
        assert await no_chromium_left() == []
    finally:
        await registry.aclose()


async def test_without_chromium_the_tool_answers_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from octos_tools import trusted_programs

    monkeypatch.setattr(trusted_programs, "which", lambda name: None)
    t = BrowserTool()
    result = await act(t, action="navigate", url="https://example.com/")
    assert result.error_kind is not None and result.error_kind.value == "unavailable"
    assert "apt-get install -y chromium" in result.output
    assert t.open_sessions == 0


async def test_registered_in_the_web_group_and_deferred(tmp_path: Path) -> None:
    registry = build_registry(workspace=tmp_path, config=Config())
    assert "browser" in registry.names()
    assert registry.is_deferred("browser")
    spec = registry.get("browser").spec()  # type: ignore[union-attr]
    assert spec.input_schema["required"] == ["action"]
    assert "screenshot" in spec.input_schema["properties"]["action"]["enum"]
    await registry.aclose()
