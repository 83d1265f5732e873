"""web_search and its providers against loopback HTTP servers started here."""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from octos_tools.builtins.web import (
    BraveProvider,
    SearxngProvider,
    TavilyProvider,
    WebSearchTool,
)
from octos_tools.config import WebConfig

from ._web_helpers import Route, Server, page, text_of
from .tool_helpers import call

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------------------ web_search


def searxng_route(results: list[dict[str, str]]) -> Route:
    return page(json.dumps({"query": "q", "results": results}), "application/json")


def searcher(*providers: dict[str, Any]) -> WebSearchTool:
    return WebSearchTool(WebConfig.model_validate({"search_providers": list(providers)}))


async def test_searxng_provider(serve: Callable[..., Server]) -> None:
    hits = [
        {"title": f"Result {i}", "url": f"https://example.org/{i}", "content": "snippet " * 60}
        for i in range(8)
    ]
    srv = serve({"/search": searxng_route(hits)})
    tool = searcher({"kind": "searxng", "url": srv.url("/")})
    result = await call(tool, {"query": "octos tools", "count": 3})
    assert result.success, result.output
    assert result.output.startswith("Results for: octos tools\n\n1. Result 0\n")
    assert "   https://example.org/2\n" in result.output and "4. " not in result.output
    longest = max(len(line) for line in result.output.splitlines())
    assert longest <= 303
    meta = result.structured_metadata or {}
    assert meta["provider"] == "searxng" and len(meta["results"]) == 3
    method, path, _ = srv.requests[0]
    assert method == "GET" and "q=octos+tools" in path and "format=json" in path


async def test_chain_falls_through_failures(serve: Callable[..., Server]) -> None:
    srv = serve(
        {
            "/broken/search": page("boom", "text/plain", status=500),
            "/empty/search": searxng_route([]),
            "/brave": page(
                json.dumps({"web": {"results": [{"title": "B", "url": "https://b.example"}]}}),
                "application/json",
            ),
        }
    )
    tool = searcher(
        {"kind": "searxng", "url": srv.url("/broken")},
        {"kind": "searxng", "url": srv.url("/empty")},
        {"kind": "brave", "api_key": "brave-secret-key", "url": srv.url("/brave")},
    )
    result = await call(tool, {"query": "x"})
    assert result.success
    assert "1. B\n   https://b.example" in result.output
    meta = result.structured_metadata or {}
    assert meta["provider"] == "brave"
    assert any("HTTP 500" in e for e in meta["errors"])
    assert "brave-secret-key" not in text_of(result)


async def test_tavily_provider_posts_with_bearer(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, str] = {}

    def tavily(handler: BaseHTTPRequestHandler) -> Route:
        seen["auth"] = handler.headers.get("Authorization", "")
        return page(
            json.dumps({"results": [{"title": "T", "url": "https://t.example", "content": "c"}]}),
            "application/json",
        )

    srv = serve({"/tv": tavily})
    monkeypatch.setenv("MY_TAVILY", "tvly-123")
    tool = searcher({"kind": "tavily", "api_key_env": "MY_TAVILY", "url": srv.url("/tv")})
    result = await call(tool, {"query": "hello", "count": 2})
    assert result.success and "T\n   https://t.example\n   c" in result.output
    assert seen["auth"] == "Bearer tvly-123"
    assert json.loads(srv.bodies[0]) == {"query": "hello", "max_results": 2}


async def test_no_results_and_all_failing(serve: Callable[..., Server]) -> None:
    srv = serve({"/search": searxng_route([])})
    empty = await call(searcher({"kind": "searxng", "url": srv.url("/")}), {"query": "zzz"})
    assert empty.success and empty.output == "No results found for: zzz"
    failing = searcher({"kind": "searxng", "url": srv.url("/nope")})
    result = await call(failing, {"query": "zzz"})
    assert result.error_kind == "unavailable" and "HTTP 404" in result.output


async def test_search_not_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    result = await call(WebSearchTool(WebConfig.model_validate({})), {"query": "x"})
    assert result.error_kind == "not_configured"
    assert "search_providers" in result.output and "searxng" in result.output
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    missing_key = searcher({"kind": "brave", "api_key_env": "NO_SUCH_KEY_VAR"})
    result = await call(missing_key, {"query": "x"})
    assert result.error_kind == "not_configured" and "NO_SUCH_KEY_VAR" in result.output


def test_provider_classes_exported() -> None:
    assert SearxngProvider("http://h/").name == "searxng"
    assert BraveProvider("k").url.startswith("https://")
    assert TavilyProvider("k").url.startswith("https://")
