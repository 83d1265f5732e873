"""Web tools: ``web_fetch`` and ``web_search`` (octos's web tools; extra ``web``).

Rules: every address is checked by the SSRF guard before a connection is made and the
connection is pinned to the checked address; httpx2, bs4 and markdownify load on first use,
never at import time; without the extra both tools are recorded in ``MISSING_EXTRAS``.

* :mod:`._guard`: the SSRF guard (also ``browser``'s);
* :mod:`._net`: connections pinned to the guard's checked address (httpx2 / httpcore2; it
  loads httpx2, so it is not imported here: ``browser`` imports it inside its functions);
* :mod:`._content`: charset detection and HTML / XHTML to Markdown or text;
* :mod:`._web_fetch`: the ``web_fetch`` tool (redirects, size cap, output);
* :mod:`._search_providers`: the ``web_search`` providers (SearXNG, Brave, Tavily, DuckDuckGo);
* :mod:`._web_search`: the ``web_search`` tool over the provider chain.

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from .. import MISSING_EXTRAS
from ._content import decode_body, html_to_markdown, html_to_text
from ._guard import HostAllowList, blocked_reason, check_host, parse_ip_literal
from ._search_providers import (
    BraveProvider,
    DuckDuckGoProvider,
    SearchHit,
    SearchProvider,
    SearxngProvider,
    TavilyProvider,
    build_providers,
)
from ._web_fetch import MAX_REDIRECTS, WebFetchTool, canonical_numeric_host
from ._web_search import WebSearchTool

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
    "canonical_numeric_host",
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
