"""``browser``: a headless Chromium driven by actions (octos ``browser``; extra ``browser``).

Rules: every request of the page (navigation, redirects, sub-resources, fetch/XHR) goes
through the SSRF guard of :mod:`octos_tools.builtins.web`; one browser per session, never
shared; Playwright is imported only when the tool runs, and without Playwright or Chromium
the tool stays registered and answers ``unavailable`` with the install command.

* :mod:`._browser_tool`: the tool and its actions;
* :mod:`._pool`: the running browsers, one per session (start, idle close);
* :mod:`._chromium`: one Chromium (find, start, close, sandbox);
* :mod:`._routing`: every request of the page fetched through the guard.

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._browser_tool import INSTALL_HINT, BrowserTool

if TYPE_CHECKING:
    from ...config import Config
    from ...registry import ToolRegistry
    from ...workspace import Workspace

__all__ = ["INSTALL_HINT", "BrowserTool", "register"]


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``browser`` (group web, deferred by default with the web group)."""
    registry.register(BrowserTool(config.web, config.image))
