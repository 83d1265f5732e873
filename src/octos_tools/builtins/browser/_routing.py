"""Every request a browser page makes, fetched by us through the SSRF guard of ``web_fetch``.

Chromium never reaches the network itself: the page's context routes every request
(``BrowserContext.route("**/*")``) to :meth:`GuardedFetcher.handle`, which

* refuses anything but ``http`` / ``https`` (``data:``, ``blob:`` and ``about:`` never reach
  the network and are not routed), and every WebSocket (:meth:`GuardedFetcher.refuse_websocket`);
* checks the host with :func:`~octos_tools.builtins.web.check_host` (resolved once per
  host and port, every address public unless allow-listed) and refuses with
  ``blockedbyclient``, recording why;
* fetches it with the pinned client of ``web_fetch`` (:mod:`..web._net`: the connection goes
  to the checked address, proxies of the environment ignored), body capped at
  ``WebConfig.max_body_bytes``, and fulfils the route with the answer.

Redirects: Chromium follows a redirect answered through ``route.fulfill`` *without* routing
the next request again (checked with Playwright 1.65 and Chromium 156), so a 3xx is never
handed to Chromium. A redirect of a sub-resource is followed here, hop by hop through the
guard (at most 10). A redirect of a navigation is answered with a stub page and recorded in
:attr:`GuardedFetcher.redirects`; the ``navigate`` action then navigates to the target (a
new, routed request), and a navigation started by the page (a click) gets a stub that
replaces the location, again a new routed request.

As defence in depth the browser is started with a dead proxy (``--proxy-server`` on a closed
loopback port with no bypass) and a host resolver that resolves nothing, so a request that
escaped routing (a WebSocket, a preconnect) fails instead of reaching the network.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...config import WebConfig
from ...errors import ToolError
from ..web import MAX_REDIRECTS, HostAllowList, canonical_numeric_host, check_host

if TYPE_CHECKING:
    import httpx2
    from playwright.async_api import Request, Route, WebSocketRoute

__all__ = ["Blocked", "GuardedFetcher"]

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
#: Request headers not forwarded (hop-by-hop, or set by the client itself).
_DROP_REQUEST = frozenset(
    {"host", "connection", "content-length", "keep-alive", "transfer-encoding", "upgrade"}
)
#: Response headers not handed back (the body is already decoded and re-framed).
_DROP_RESPONSE = frozenset(
    {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"}
)


@dataclass(frozen=True, slots=True)
class Blocked:
    """A request the guard refused.

    Attributes:
        url: the URL asked for.
        reason: the guard's message (kind ``network_refused``, or ``invalid_arguments`` for
            a scheme other than http/https).
        kind: the error kind's wire string.
        navigation: the request was a navigation (answered with a stub page that says so,
            so that the page never shows Chromium's error page and stays usable).
    """

    url: str
    reason: str
    kind: str
    navigation: bool = False


@dataclass
class GuardedFetcher:
    """The route handler of one browser session (see the module docstring).

    Args:
        config: the ``web`` section (allow_private_hosts, allowed_hosts, max_body_bytes,
            timeout_secs per request).

    Attributes:
        blocked: requests refused, in order (the tool reports them).
        failed: ``url -> message`` for requests that could not be fetched.
        redirects: ``url -> target`` for navigations answered with a redirect.
        driving: set by the ``navigate`` action while it drives a navigation (its redirects
            are followed by the action, not by a stub script).
    """

    config: WebConfig
    blocked: list[Blocked] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    driving: bool = False
    _pins: dict[tuple[str, int], str] = field(default_factory=dict)
    _client: httpx2.AsyncClient | None = None
    _allowed: HostAllowList = field(init=False)

    def __post_init__(self) -> None:
        self._allowed = HostAllowList(self.config.allowed_hosts)

    async def aclose(self) -> None:
        """Close the pinned HTTP client."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    def _http(self) -> httpx2.AsyncClient:
        from ..web._net import pinned_client

        if self._client is None:
            self._client = pinned_client(self._pins, self.config.timeout_secs)
        return self._client

    async def _check(self, url: httpx2.URL) -> None:
        host = url.raw_host.decode("ascii").lower()
        port = url.port or (443 if url.scheme == "https" else 80)
        if (host, port) not in self._pins:
            self._pins[(host, port)] = await check_host(
                host, port, allow_private=self.config.allow_private_hosts, allowed=self._allowed
            )

    async def handle(self, route: Route, request: Request) -> None:
        """Fetch ``request`` through the guard and fulfil or abort ``route``."""
        import httpx2

        from ..web._net import NETWORK_ERRORS, TIMEOUT_ERRORS

        url = request.url
        navigation = request.is_navigation_request()
        try:
            current = httpx2.URL(canonical_numeric_host(url))
        except (httpx2.InvalidURL, TypeError, ValueError) as exc:
            await self._refuse(route, Blocked(url, f"invalid URL: {exc}", "invalid_arguments"))
            return
        if current.scheme not in ("http", "https") or not current.raw_host:
            reason = f"only http:// and https:// may be loaded, not {current.scheme or url}:"
            await self._refuse(route, Blocked(url, reason, "invalid_arguments", navigation))
            return
        headers = {
            k: v for k, v in (await request.all_headers()).items() if k.lower() not in _DROP_REQUEST
        }
        method = request.method
        body = request.post_data_buffer
        try:
            for _hop in range(MAX_REDIRECTS + 1):
                try:
                    await self._check(current)
                except ToolError as exc:
                    entry = Blocked(str(current), exc.message, exc.kind.value, navigation)
                    await self._refuse(route, entry)
                    return
                request_ = self._http().build_request(
                    method, current, headers=headers, content=body
                )
                response = await self._http().send(request_, stream=True)
                try:
                    status = response.status_code
                    location = response.headers.get("location")
                    if not (status in _REDIRECT_STATUSES and location):
                        data = await self._read_capped(response)
                        out = {
                            k: v
                            for k, v in response.headers.items()
                            if k.lower() not in _DROP_RESPONSE
                        }
                finally:
                    await response.aclose()
                if status in _REDIRECT_STATUSES and location:
                    target = str(current.join(canonical_numeric_host(location)))
                    if navigation:
                        await self._redirect_stub(route, str(current), target)
                        return
                    current = httpx2.URL(target)
                    if status == 303 or (status in (301, 302) and method == "POST"):
                        method, body = "GET", None
                    continue
                await route.fulfill(status=status, headers=out, body=data)
                return
            self.failed[url] = f"too many redirects (more than {MAX_REDIRECTS})"
            await route.abort("failed")
        except TIMEOUT_ERRORS as exc:
            self.failed[url] = f"timed out: {exc}"
            await route.abort("timedout")
        except NETWORK_ERRORS as exc:
            self.failed[url] = f"{type(exc).__name__}: {exc}"
            await route.abort("connectionfailed")

    async def refuse_websocket(self, ws: WebSocketRoute) -> None:
        """Refuse a WebSocket (``BrowserContext.route_web_socket``): it would connect from
        outside the pinned client, so none is opened; the page sees it close (code 1008)."""
        reason = "WebSockets are not opened by the browser tool"
        self.blocked.append(Blocked(ws.url, reason, "network_refused"))
        await ws.close(code=1008, reason=reason)

    async def _refuse(self, route: Route, entry: Blocked) -> None:
        self.blocked.append(entry)
        if not entry.navigation:
            await route.abort("blockedbyclient")
            return
        page = (
            "<!doctype html><title>Blocked</title>"
            f"<p>Blocked by octos-tools: {html.escape(entry.url)}: {html.escape(entry.reason)}</p>"
        )
        await route.fulfill(status=403, content_type="text/html; charset=utf-8", body=page)

    async def _read_capped(self, response: httpx2.Response) -> bytes:
        cap = self.config.max_body_bytes
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk[: cap - len(body)]
            if len(body) >= cap:
                break
        return bytes(body)

    async def _redirect_stub(self, route: Route, url: str, target: str) -> None:
        self.redirects[url] = target
        script = "" if self.driving else f"<script>location.replace({json.dumps(target)})</script>"
        page = (
            "<!doctype html><title>Redirect</title>"
            f"<p>Redirecting to {html.escape(target)}</p>{script}"
        )
        await route.fulfill(status=200, content_type="text/html; charset=utf-8", body=page)


def launch_args() -> list[str]:
    """Chromium flags: no background traffic, and no way to the network but our routes."""
    return [
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-sync",
        "--no-first-run",
        "--no-default-browser-check",
        "--metrics-recording-only",
        "--disable-dev-shm-usage",
    ]
