"""``browser``: a headless Chromium driven by actions (octos ``browser``; extra ``browser``).

* :mod:`.tool`: the tool and its actions;
* :mod:`._pool`: the running browsers, one per session (start, idle close);
* :mod:`._session`: one Chromium per session (start, close, sandbox);
* :mod:`._routing`: every request of the page fetched through the SSRF guard of
  ``web_fetch``.

Playwright is imported only when the tool runs. The tool is registered even when Playwright
or Chromium is missing: it then answers ``unavailable`` with the install command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .tool import INSTALL_HINT, BrowserTool

if TYPE_CHECKING:
    from ...config import Config
    from ...registry import ToolRegistry
    from ...workspace import Workspace

__all__ = ["INSTALL_HINT", "BrowserTool", "register"]


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``browser`` (group web, deferred by default with the web group)."""
    registry.register(BrowserTool(config.web, config.image))
