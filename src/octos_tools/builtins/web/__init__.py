"""Web tools: ``web_fetch`` and ``web_search`` (octos's web tools; extra ``web``).

One module per job:

* :mod:`.guard`: the SSRF guard (which addresses may be reached; also used by ``browser``);
* :mod:`._net`: connections pinned to the guard's checked address (httpx2 / httpcore2);
* :mod:`.content`: charset detection and HTML / XHTML to Markdown or text;
* :mod:`.fetch`: the ``web_fetch`` tool (redirects, size cap, output);
* :mod:`.providers`: the ``web_search`` providers (SearXNG, Brave, Tavily, DuckDuckGo);
* :mod:`.search`: the ``web_search`` tool over the provider chain.

Nothing here imports httpx2, bs4 or markdownify at import time; they load on first use.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from .. import MISSING_EXTRAS
from .content import decode_body, html_to_markdown, html_to_text
from .fetch import MAX_REDIRECTS, WebFetchTool
from .guard import HostAllowList, blocked_reason, check_host, parse_ip_literal
from .providers import (
    BraveProvider,
    DuckDuckGoProvider,
    SearchHit,
    SearchProvider,
    SearxngProvider,
    TavilyProvider,
    build_providers,
)
from .search import WebSearchTool

if TYPE_CHECKING:
    from ...config import Config
    from ...registry import ToolRegistry
    from ...workspace import Workspace

__all__ = [
    "MAX_REDIRECTS",
    "BraveProvider",
    "DuckDuckGoProvider",
    "HostAllowList",
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
