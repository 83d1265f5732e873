"""``web_search`` providers: SearXNG by URL, Brave and Tavily by API key, DuckDuckGo through
the ``ddgs`` package if it is installed.

Provider endpoints are set by the operator, not the model, so they are not subject to the
SSRF guard (a SearXNG on the intranet is usual).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ...config import WebSearchProviderConfig
from ...errors import ErrorKind, ToolError

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "BraveProvider",
    "DuckDuckGoProvider",
    "SearchHit",
    "SearchProvider",
    "SearxngProvider",
    "TavilyProvider",
    "build_providers",
]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result.

    Attributes:
        title: the page title.
        url: the page address.
        snippet: a short extract (at most 300 characters in the output).
    """

    title: str
    url: str
    snippet: str = ""


class SearchProvider:
    """A ``web_search`` back end. Subclasses set :attr:`name` and implement :meth:`search`.

    Raise ``ToolError`` (any kind) or ``httpx2`` errors for a failure; the chain records
    it and tries the next provider.
    """

    name: str = ""

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        """At most ``count`` hits for ``query``."""
        raise NotImplementedError


def _check_status(provider: str, response: httpx2.Response) -> dict[str, Any]:
    if response.status_code != 200:
        raise ToolError(ErrorKind.HTTP_ERROR, f"{provider}: HTTP {response.status_code}")
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ToolError(ErrorKind.HTTP_ERROR, f"{provider}: response is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ToolError(ErrorKind.HTTP_ERROR, f"{provider}: response is not a JSON object")
    return data


def _hits(items: Any, title: str, url: str, snippet: str, count: int) -> list[SearchHit]:
    out: list[SearchHit] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get(url):
            out.append(
                SearchHit(
                    str(item.get(title) or item[url]), str(item[url]), str(item.get(snippet) or "")
                )
            )
        if len(out) >= count:
            break
    return out


class SearxngProvider(SearchProvider):
    """A SearXNG instance's JSON API: ``GET {url}/search?q=…&format=json`` (the instance must
    enable the ``json`` format)."""

    name = "searxng"

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        base = self.url if self.url.endswith("/search") else self.url + "/search"
        r = await client.get(base, params={"q": query, "format": "json"})
        data = _check_status(self.name, r)
        return _hits(data.get("results"), "title", "url", "content", count)


class BraveProvider(SearchProvider):
    """Brave Search API: ``GET …/res/v1/web/search`` with ``X-Subscription-Token``."""

    name = "brave"
    default_url = "https://api.search.brave.com/res/v1/web/search"

    def __init__(self, api_key: str, url: str | None = None) -> None:
        self.api_key = api_key
        self.url = url or self.default_url

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        r = await client.get(
            self.url,
            params={"q": query, "count": count},
            headers={"X-Subscription-Token": self.api_key, "Accept": "application/json"},
        )
        data = _check_status(self.name, r)
        web = data.get("web")
        items = web.get("results") if isinstance(web, dict) else None
        return _hits(items, "title", "url", "description", count)


class TavilyProvider(SearchProvider):
    """Tavily: ``POST …/search`` with a bearer key and ``{"query", "max_results"}``."""

    name = "tavily"
    default_url = "https://api.tavily.com/search"

    def __init__(self, api_key: str, url: str | None = None) -> None:
        self.api_key = api_key
        self.url = url or self.default_url

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        r = await client.post(
            self.url,
            json={"query": query, "max_results": count},
            headers={"Authorization": f"Bearer {self.api_key}"},
        )
        data = _check_status(self.name, r)
        return _hits(data.get("results"), "title", "url", "content", count)


class DuckDuckGoProvider(SearchProvider):
    """DuckDuckGo through the ``ddgs`` package (not a dependency: install it to use this)."""

    name = "duckduckgo"

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        try:
            from ddgs import DDGS  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            raise ToolError(
                ErrorKind.NOT_CONFIGURED,
                "duckduckgo: the 'ddgs' package is not installed (pip install ddgs)",
            ) from None

        def run() -> list[dict[str, Any]]:
            return list(DDGS().text(query, max_results=count))

        rows = await anyio.to_thread.run_sync(run)
        return _hits(rows, "title", "href", "body", count)


def build_providers(
    configs: Sequence[WebSearchProviderConfig],
) -> tuple[list[SearchProvider], list[str]]:
    """Turn the configured chain into providers.

    Returns:
        ``(providers, problems)``: a provider missing its URL or key is left out and
        described in ``problems`` (keys are never echoed).
    """
    providers: list[SearchProvider] = []
    problems: list[str] = []
    for i, c in enumerate(configs):
        where = f"web.search_providers[{i}] ({c.kind})"
        key = c.api_key or (os.environ.get(c.api_key_env) if c.api_key_env else None)
        if c.kind == "searxng":
            if not c.url:
                problems.append(f"{where}: needs 'url'")
            else:
                providers.append(SearxngProvider(c.url))
        elif c.kind in ("brave", "tavily"):
            if not key:
                env = f" (environment variable {c.api_key_env} is empty)" if c.api_key_env else ""
                problems.append(f"{where}: needs 'api_key' or 'api_key_env'{env}")
            elif c.kind == "brave":
                providers.append(BraveProvider(key, c.url))
            else:
                providers.append(TavilyProvider(key, c.url))
        else:
            providers.append(DuckDuckGoProvider())
    return providers, problems
