"""The ``browser`` tool: a headless Chromium driven by actions (octos ``browser``).

Actions (octos's set): ``navigate {url}``, ``get_text {selector?}``, ``get_html
{selector?}``, ``click {selector}``, ``type {selector, text}``, ``screenshot``,
``evaluate {expression}``, ``find_elements {selector}``, ``get_links``, ``close``.

* Every request of the page goes through the SSRF guard of ``web_fetch`` (see
  :mod:`._routing`); ``web.allow_private_hosts`` / ``web.allowed_hosts`` open private hosts.
* One browser per session (``ctx.session``, else ``ctx.session_key``), never shared; it is
  started by the first action, closed by ``close``, after ``idle_timeout`` seconds without
  an action, when its ``ToolSession`` ends (:meth:`BrowserTool.session_closed`), or by
  :meth:`BrowserTool.aclose` (the registry's ``aclose``).
* Each action is bounded by ``action_timeout`` seconds; text and HTML are capped at
  ``max_chars`` characters; ``screenshot`` returns the image (``ImageContent``) fitted to
  the ``image`` section's limits.
* Without Chromium (or Playwright) the tool stays registered and answers ``unavailable``
  with the install command.

Errors: ``invalid_arguments`` (a missing field, a bad selector or URL), ``network_refused``
(the guard refused the page or a redirect hop), ``no_match`` (a selector matching nothing),
``timeout`` (a page that never loads, an action over its time), ``process_failed`` (the
page's script threw), ``unavailable`` (no Chromium, a page that cannot be fetched).
"""

from __future__ import annotations

import json
import time
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import Field

from ...config import ImageConfig, WebConfig
from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, ImageContent, ToolResult
from ...typed import ToolArgs, TypedTool
from ._chromium import BrowserSession
from ._pool import INSTALL_HINT, BrowserPool, first_line
from ._routing import Blocked

if TYPE_CHECKING:
    from ...context import ToolContext

__all__ = ["INSTALL_HINT", "BrowserTool"]

_MAX_ELEMENTS = 50
_MAX_LINKS = 200
_NEEDS_SELECTOR = frozenset({"click", "type", "find_elements"})

_ELEMENTS_JS = """(els, max) => els.slice(0, max).map(e => ({
  tag: e.tagName.toLowerCase(),
  id: e.id || null,
  cls: (typeof e.className === 'string' && e.className) ? e.className : null,
  name: e.getAttribute('name'),
  type: e.getAttribute('type'),
  href: e.getAttribute('href'),
  text: (e.innerText || e.value || '').replace(/\\s+/g, ' ').trim().slice(0, 120),
}))"""
_LINKS_JS = """(els, max) => els.slice(0, max).map(a => ({
  text: (a.innerText || a.title || '').replace(/\\s+/g, ' ').trim().slice(0, 120),
  href: a.href,
}))"""


def _cap(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit] + f"\n\n... (truncated: {limit} of {len(text)} characters shown)", True


class BrowserTool(TypedTool):
    """``browser {action, url?, selector?, text?, expression?}`` (octos ``browser``; group
    web, deferred by default; see the module docstring).

    Args:
        web: the ``web`` section (guard settings, body cap, per-request timeout).
        image: the ``image`` section (screenshot size and byte budget).
        executable_path: the Chromium executable; default: ``chromium`` (or Chrome) on
            ``PATH``.
        action_timeout: seconds per action (default ``web.timeout_secs``).
        idle_timeout: seconds without an action after which a session's browser closes
            (default 300, octos's).
        max_chars: cap of text and HTML outputs, in characters (default 50,000, octos's).
    """

    name = "browser"
    title = "Drive a headless browser"
    description = (
        "Headless Chromium. Actions: navigate(url), get_text/get_html(selector?), "
        "click(selector), type(selector,text), screenshot, evaluate(expression), "
        "find_elements(selector), get_links, close. Private addresses are refused."
    )
    tags = ("web", "interactive")
    concurrency_class = ConcurrencyClass.SAFE
    content_trust = "untrusted"

    class Args(ToolArgs):
        action: Literal[
            "navigate",
            "get_text",
            "get_html",
            "click",
            "type",
            "screenshot",
            "evaluate",
            "find_elements",
            "get_links",
            "close",
        ] = Field(description="What to do on the page.")
        url: str | None = Field(None, description="navigate: http(s) URL.")
        selector: str | None = Field(None, description="CSS selector.")
        text: str | None = Field(None, description="type: text to enter.")
        expression: str | None = Field(None, description="evaluate: JavaScript expression.")

    def __init__(
        self,
        web: WebConfig | None = None,
        image: ImageConfig | None = None,
        *,
        executable_path: str | None = None,
        action_timeout: float | None = None,
        idle_timeout: float = 300.0,
        max_chars: int = 50_000,
    ) -> None:
        self.web = web or WebConfig.model_validate({})
        self.image = image or ImageConfig.model_validate({})
        self.action_timeout = action_timeout or self.web.timeout_secs
        self.max_chars = max_chars
        self.timeout = self.action_timeout + 30  # the registry's bound, beyond ours
        self.pool = BrowserPool(
            self.web,
            executable_path=executable_path,
            launch_timeout=max(self.action_timeout, 30.0),
            idle_timeout=idle_timeout,
        )

    def unavailable_reason(self, ctx: ToolContext | None = None) -> str | None:
        """Unlisted without Playwright or a Chromium on ``PATH`` (nothing is downloaded)."""
        try:
            self.pool.executable()
        except ToolError as exc:
            return exc.message
        return None

    # ------------------------------------------------------------------ sessions

    @staticmethod
    def session_key(ctx: ToolContext | None) -> Hashable:
        """Which browser a call uses: its ``ctx.session`` object, else its
        ``ctx.session_key``, else one default browser."""
        if ctx is None:
            return ("default",)
        session = getattr(ctx, "session", None)
        if session is not None:
            return ("session", id(session))
        if ctx.session_key is not None:
            return ("key", ctx.session_key)
        return ("default",)

    @property
    def open_sessions(self) -> int:
        """How many browsers are running."""
        return self.pool.open_sessions

    async def close_session(self, key: Hashable) -> bool:
        """Close the browser of session ``key`` (see :meth:`session_key`); ``False`` if it
        had none."""
        return await self.pool.close(key)

    async def session_closed(self, session: object) -> None:
        """Close the browser of a :class:`~octos_tools.session.ToolSession` that ended (the
        session's ``aclose`` calls this hook on every tool that has it)."""
        await self.pool.close(("session", id(session)))

    async def aclose(self) -> None:
        """Close every session's browser (the registry calls this on ``aclose``)."""
        await self.pool.aclose()

    # ------------------------------------------------------------------- actions

    async def run(self, args: Args, ctx: ToolContext | None) -> ToolResult:
        key = self.session_key(ctx)
        if args.action == "close":
            closed = await self.close_session(key)
            return ToolResult.ok("Browser closed." if closed else "No browser was open.")
        self._check_args(args)
        session = await self.pool.get(key)
        async with session.lock:
            start = len(session.fetcher.blocked)
            try:
                with anyio.fail_after(self.action_timeout):
                    result = await self._act(session, args)
            except TimeoutError:
                raise ToolError(
                    ErrorKind.TIMEOUT,
                    f"browser {args.action} took longer than {self.action_timeout:g} s",
                ) from None
            finally:
                session.last_used = time.monotonic()
            blocked = session.fetcher.blocked[start:]
        if blocked:
            result = self._with_blocked(result, blocked)
        return result

    def _check_args(self, args: Args) -> None:
        missing = None
        if args.action == "navigate" and not (args.url or "").strip():
            missing = "url"
        elif args.action in _NEEDS_SELECTOR and not (args.selector or "").strip():
            missing = "selector"
        elif args.action == "type" and args.text is None:
            missing = "text"
        elif args.action == "evaluate" and not (args.expression or "").strip():
            missing = "expression"
        if missing is not None:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"browser {args.action} requires `{missing}`",
                field=missing,
            )

    def _ms(self) -> float:
        """Playwright's own timeout: a little under ours, so it reports first."""
        return max(100.0, self.action_timeout * 1000 - 250)

    async def _act(self, session: BrowserSession, args: Args) -> ToolResult:
        from playwright.async_api import Error as PlaywrightError

        try:
            if args.action == "navigate":
                return await self._navigate(session, (args.url or "").strip())
            if args.action == "screenshot":
                return await self._screenshot(session)
            if args.action == "evaluate":
                return await self._evaluate(session, args.expression or "")
            if args.action == "get_links":
                return await self._links(session)
            return await self._element_action(session, args)
        except PlaywrightError as exc:
            message = first_line(exc)
            if "Timeout" in type(exc).__name__ or "Timeout" in message:
                raise ToolError(ErrorKind.TIMEOUT, f"browser {args.action}: {message}") from None
            if "selector" in message.lower() or "Unexpected token" in message:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"browser {args.action}: invalid selector {args.selector!r}: {message}",
                ) from None
            raise ToolError(ErrorKind.UNAVAILABLE, f"browser {args.action}: {message}") from None

    async def _navigate(self, session: BrowserSession, url: str) -> ToolResult:
        from playwright.async_api import Error as PlaywrightError

        if not url.lower().startswith(("http://", "https://")):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"browser navigate: url must use http:// or https:// (e.g. https://example.com),"
                f" got {url!r}",
            )
        fetcher = session.fetcher
        page = session.page
        hops: list[str] = []
        current = url
        fetcher.driving = True
        try:
            while True:
                before = len(fetcher.blocked)
                try:
                    response = await page.goto(current, wait_until="load", timeout=self._ms())
                except PlaywrightError as exc:
                    self._navigation_error(
                        fetcher.blocked[before:], fetcher.failed, current, hops, exc
                    )
                    raise
                refused = [b for b in fetcher.blocked[before:] if b.navigation]
                if refused:
                    via = f" (redirected from {hops[0]})" if hops else ""
                    raise ToolError(
                        ErrorKind(refused[0].kind),
                        f"browser navigate: {refused[0].url}{via} refused: {refused[0].reason}",
                        url=refused[0].url,
                        redirects=hops,
                    )
                target = fetcher.redirects.pop(page.url, None) or fetcher.redirects.pop(
                    current, None
                )
                if target is None:
                    break
                if len(hops) >= 10:
                    raise ToolError(
                        ErrorKind.HTTP_ERROR, f"too many redirects (more than 10) starting at {url}"
                    )
                hops.append(current)
                current = target
        finally:
            fetcher.driving = False
        status = response.status if response is not None else None
        title = await page.title()
        lines = [f"URL: {page.url}"]
        if hops:
            lines.append(f"Redirected from: {url}")
        lines.append(f"Status: {status}")
        lines.append(f"Title: {title}")
        meta: dict[str, Any] = {
            "url": url,
            "final_url": page.url,
            "status": status,
            "title": title,
            "redirects": [*hops, page.url] if hops else [],
        }
        return ToolResult.ok("\n".join(lines), structured_metadata=meta)

    @staticmethod
    def _navigation_error(
        blocked: list[Blocked],
        failed: dict[str, str],
        current: str,
        hops: list[str],
        exc: BaseException,
    ) -> None:
        """Raise the typed error a failed ``goto`` of ``current`` stands for, if known."""
        via = f" (redirected from {hops[0]})" if hops else ""
        if blocked:
            entry = blocked[0]
            raise ToolError(
                ErrorKind(entry.kind),
                f"browser navigate: {entry.url}{via} refused: {entry.reason}",
                url=entry.url,
                redirects=hops,
            )
        reason = failed.pop(current, None)
        if reason is not None:
            raise ToolError(
                ErrorKind.UNAVAILABLE, f"browser navigate: could not load {current}{via}: {reason}"
            )
        message = first_line(exc)
        if "Timeout" in message:
            raise ToolError(
                ErrorKind.TIMEOUT,
                f"browser navigate: {current}{via} never finished loading: {message}",
            )

    async def _locator(self, session: BrowserSession, selector: str) -> Any:
        locator = session.page.locator(selector)
        if await locator.count() == 0:
            raise ToolError(
                ErrorKind.NO_MATCH,
                f"no element matches selector {selector!r} on {session.page.url}",
                selector=selector,
            )
        return locator

    async def _element_action(self, session: BrowserSession, args: Args) -> ToolResult:
        page = session.page
        selector = (args.selector or "").strip()
        if args.action in ("get_text", "get_html"):
            if selector:
                first = (await self._locator(session, selector)).first
                if args.action == "get_text":
                    text = await first.inner_text(timeout=self._ms())
                else:
                    text = await first.evaluate("e => e.outerHTML")
            elif args.action == "get_text":
                text = await page.inner_text("body", timeout=self._ms())
            else:
                text = await page.content()
            shown, cut = _cap(str(text), self.max_chars)
            return ToolResult.ok(
                shown or "(empty)",
                structured_metadata={"url": page.url, "chars": len(text), "truncated": cut},
            )
        if args.action == "find_elements":
            found = await page.locator(selector).evaluate_all(_ELEMENTS_JS, _MAX_ELEMENTS)
            total = await page.locator(selector).count()
            if not found:
                return ToolResult.ok(
                    f"No elements match {selector!r}.", structured_metadata={"elements": []}
                )
            lines = [
                f"{total} element(s) match {selector!r}"
                + (f" (first {_MAX_ELEMENTS} shown)" if total > _MAX_ELEMENTS else "")
                + ":"
            ]
            for i, e in enumerate(found, 1):
                attrs = " ".join(
                    f"{k}={json.dumps(e[k])}" for k in ("id", "cls", "name", "type", "href") if e[k]
                )
                lines.append(
                    f"{i}. <{e['tag']}{' ' + attrs if attrs else ''}> {e['text']}".rstrip()
                )
            return ToolResult.ok("\n".join(lines), structured_metadata={"elements": found})
        locator = (await self._locator(session, selector)).first
        if args.action == "click":
            await locator.click(timeout=self._ms())
            await page.wait_for_load_state("load", timeout=self._ms())
            return ToolResult.ok(
                f"Clicked {selector!r}. URL: {page.url}", structured_metadata={"url": page.url}
            )
        text = args.text or ""
        await locator.fill(text, timeout=self._ms())
        return ToolResult.ok(
            f"Typed {len(text)} characters into {selector!r}.",
            structured_metadata={"url": page.url},
        )

    async def _screenshot(self, session: BrowserSession) -> ToolResult:
        from ..image import fit_image

        png = await session.page.screenshot(type="png", timeout=self._ms())
        fitted = await anyio.to_thread.run_sync(
            lambda: fit_image(
                png, "png", max_side=self.image.max_side, max_bytes=self.image.max_bytes
            )
        )
        url = session.page.url
        text = f"Screenshot of {url} ({fitted.width}x{fitted.height})"
        if fitted.reencoded:
            text += f", shown as {fitted.shown_width}x{fitted.shown_height}"
        meta = {
            "url": url,
            "width": fitted.width,
            "height": fitted.height,
            "mime_type": fitted.mime_type,
            "bytes": len(fitted.data),
        }
        return ToolResult.ok(
            text,
            structured_metadata=meta,
            content=[ImageContent(data=fitted.data, mime_type=fitted.mime_type)],
        )

    async def _evaluate(self, session: BrowserSession, expression: str) -> ToolResult:
        from playwright.async_api import Error as PlaywrightError

        try:
            value = await session.page.evaluate(expression)
        except PlaywrightError as exc:
            if "Timeout" in type(exc).__name__:
                raise
            raise ToolError(
                ErrorKind.PROCESS_FAILED,
                f"browser evaluate: the script threw: {first_line(exc)}",
            ) from None
        text = (
            value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        )
        shown, cut = _cap(text, self.max_chars)
        return ToolResult.ok(shown, structured_metadata={"truncated": cut})

    async def _links(self, session: BrowserSession) -> ToolResult:
        page = session.page
        links = await page.locator("a[href]").evaluate_all(_LINKS_JS, _MAX_LINKS)
        if not links:
            return ToolResult.ok(f"No links on {page.url}.", structured_metadata={"links": []})
        lines = [f"{len(links)} link(s) on {page.url}:"]
        lines.extend(
            f"{i}. {x['text'] or '(no text)'} -> {x['href']}" for i, x in enumerate(links, 1)
        )
        shown, _ = _cap("\n".join(lines), self.max_chars)
        return ToolResult.ok(shown, structured_metadata={"links": links})

    @staticmethod
    def _with_blocked(result: ToolResult, blocked: list[Blocked]) -> ToolResult:
        lines = [f"Blocked requests ({len(blocked)}):"]
        lines.extend(f"- {b.url}: {b.reason}" for b in blocked[:20])
        result.output = result.output + "\n\n" + "\n".join(lines)
        meta = dict(result.structured_metadata or {})
        meta["blocked"] = [{"url": b.url, "reason": b.reason} for b in blocked]
        result.structured_metadata = meta
        return result
