"""The running browsers of one ``browser`` tool: one per session, started on first use,
closed when idle, on demand, or all at once.

The idle watcher is an asyncio task per browser (Playwright's async API runs on asyncio
only); it closes a browser that has had no action for ``idle_timeout`` seconds and is not in
the middle of one.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Hashable

import anyio

from ...config import WebConfig
from ...errors import ErrorKind, ToolError
from ._chromium import BrowserSession, find_chromium

__all__ = ["INSTALL_HINT", "BrowserPool", "first_line"]

#: What the model (and the operator) is told when no browser can be started.
INSTALL_HINT = (
    "install Chromium (Debian/Ubuntu: apt-get install -y chromium) and Playwright "
    "(pip install 'octos-tools[browser]'); no browser is downloaded at run time"
)


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (Playwright adds a call log below it)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class BrowserPool:
    """Browsers by session key.

    Args:
        web: the ``web`` section (the guard's settings, handed to each session).
        executable_path: the Chromium executable; default: found on ``PATH``.
        launch_timeout: seconds Chromium may take to start.
        idle_timeout: seconds without an action after which a browser closes.
    """

    def __init__(
        self,
        web: WebConfig,
        *,
        executable_path: str | None,
        launch_timeout: float,
        idle_timeout: float,
    ) -> None:
        self.web = web
        self.executable_path = executable_path
        self.launch_timeout = launch_timeout
        self.idle_timeout = idle_timeout
        self._sessions: dict[Hashable, BrowserSession] = {}
        self._watchers: dict[Hashable, asyncio.Task[None]] = {}
        self._start_lock = anyio.Lock()

    @property
    def open_sessions(self) -> int:
        """How many browsers are running."""
        return len(self._sessions)

    def executable(self) -> str:
        """The Chromium to start.

        Raises:
            ToolError: ``unavailable`` (with the install command) without Playwright or
                Chromium.
        """
        if importlib.util.find_spec("playwright") is None:
            raise ToolError(
                ErrorKind.UNAVAILABLE, f"browser: Playwright is missing; {INSTALL_HINT}"
            )
        exe = self.executable_path or find_chromium()
        if exe is None:
            raise ToolError(ErrorKind.UNAVAILABLE, f"browser: no Chromium found; {INSTALL_HINT}")
        return exe

    async def get(self, key: Hashable) -> BrowserSession:
        """The running browser of ``key``, started if it has none.

        Raises:
            ToolError: ``unavailable`` when Chromium is missing or does not start.
        """
        async with self._start_lock:
            session = self._sessions.get(key)
            if session is not None and not session.closed:
                return session
            session = BrowserSession(self.executable(), self.web)
            try:
                await session.start(timeout=self.launch_timeout)
            except Exception as exc:  # noqa: BLE001 - any launch failure is "unavailable"
                raise ToolError(
                    ErrorKind.UNAVAILABLE,
                    f"browser: Chromium did not start ({first_line(exc)}); {INSTALL_HINT}",
                ) from None
            self._sessions[key] = session
            self._watchers[key] = asyncio.get_running_loop().create_task(self._watch(key))
            return session

    async def _watch(self, key: Hashable) -> None:
        while True:
            session = self._sessions.get(key)
            if session is None or session.closed:
                return
            remaining = session.last_used + self.idle_timeout - time.monotonic()
            if remaining <= 0 and not session.lock.locked():
                await self.close(key, watcher=False)
                return
            await asyncio.sleep(max(remaining, 0.05))

    async def close(self, key: Hashable, *, watcher: bool = True) -> bool:
        """Close the browser of ``key``; ``False`` if it had none."""
        session = self._sessions.pop(key, None)
        task = self._watchers.pop(key, None)
        if watcher and task is not None:
            task.cancel()
        if session is None:
            return False
        await session.aclose()
        return True

    async def aclose(self) -> None:
        """Close every browser."""
        for key in list(self._sessions):
            await self.close(key)
