"""One headless Chromium per tool session, driven through Playwright's async API.

A :class:`BrowserSession` owns a Playwright driver, one Chromium process (the system's,
through ``executable_path``: nothing is downloaded), one browser context whose every request
goes through :class:`~._routing.GuardedFetcher`, and one page. :meth:`BrowserSession.aclose`
closes them in order; it is shielded from cancellation so that a cancelled call cannot leave
Chromium running.

Sandbox: Chromium's sandbox needs user namespaces that root does not get, so when the
process runs as root (euid 0) Chromium is started with ``--no-sandbox`` (Playwright's
``chromium_sandbox=False``); otherwise the sandbox stays on. docs/browser.md explains why
the browser is better run as an unprivileged user.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

import anyio

from ... import trusted_programs
from ...config import WebConfig
from ._routing import GuardedFetcher, launch_args

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page, Playwright

__all__ = ["CHROMIUM_NAMES", "BrowserSession", "find_chromium"]

#: Executable names tried, in order, on ``PATH``.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """The path of a Chromium (or Chrome) executable on ``PATH``, or ``None``."""
    for name in CHROMIUM_NAMES:
        found = trusted_programs.which(name)
        if found:
            return found
    return None


class BrowserSession:
    """A running browser of one tool session.

    Args:
        executable: the Chromium executable.
        config: the ``web`` section (the guard's settings, body cap, request timeout).

    Attributes:
        fetcher: the route handler (blocked and failed requests are read from it).
        page: the page actions work on.
        lock: serialises the actions of this session.
        last_used: ``time.monotonic()`` of the last action's end.
    """

    def __init__(self, executable: str, config: WebConfig) -> None:
        self.executable = executable
        self.fetcher = GuardedFetcher(config)
        self.lock = anyio.Lock()
        self.last_used = time.monotonic()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._context: BrowserContext | None = None
        self._page: Page | None = None
        self.closed = False

    @property
    def page(self) -> Page:
        """The page (after :meth:`start`)."""
        if self._page is None:
            raise RuntimeError("the browser session is not started")
        return self._page

    async def start(self, timeout: float) -> None:
        """Start the driver, Chromium, the routed context and the page.

        Args:
            timeout: seconds Chromium may take to start.

        Raises:
            playwright.async_api.Error: Chromium did not start (everything started so far
                is closed again).
        """
        from playwright.async_api import async_playwright

        try:
            self._playwright = await async_playwright().start()
            self._browser = await self._playwright.chromium.launch(
                executable_path=self.executable,
                headless=True,
                args=launch_args(),
                chromium_sandbox=os.geteuid() != 0,
                timeout=timeout * 1000,
                handle_sigint=False,
                handle_sigterm=False,
                handle_sighup=False,
            )
            self._context = await self._browser.new_context(
                service_workers="block", accept_downloads=False
            )
            await self._context.route("**/*", self.fetcher.handle)
            await self._context.route_web_socket("**", self.fetcher.refuse_websocket)
            self._page = await self._context.new_page()
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """Close the page, the context, Chromium and the driver (idempotent; shielded
        from cancellation, each step bounded to 10 s)."""
        if self.closed:
            return
        self.closed = True
        with anyio.CancelScope(shield=True):
            steps: list[Any] = [self._context, self._browser]
            for obj in steps:
                if obj is None:
                    continue
                with anyio.move_on_after(10):
                    try:
                        await obj.close()
                    except Exception:  # noqa: BLE001 - already gone is fine
                        pass
            if self._playwright is not None:
                with anyio.move_on_after(10):
                    try:
                        await self._playwright.stop()
                    except Exception:  # noqa: BLE001
                        pass
            await self.fetcher.aclose()
            self._page = self._context = self._browser = self._playwright = None
