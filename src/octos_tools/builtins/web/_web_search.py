"""``web_search``: the configured provider chain (octos ``web_search``).

The first provider that returns results wins. With no provider configured the call fails
with ``not_configured`` and says how to configure one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio
from pydantic import Field

from ...config import WebConfig
from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...typed import ToolArgs, TypedTool
from ._search_providers import SearchHit, SearchProvider, build_providers

if TYPE_CHECKING:
    from ...context import ToolContext

__all__ = ["WebSearchTool"]

_HOW_TO_CONFIGURE = (
    "web_search has no search provider configured. Add one to the configuration file, e.g. "
    '{"web": {"search_providers": [{"kind": "searxng", "url": "http://searx.example:8080"}]}} '
    'or {"kind": "brave", "api_key_env": "BRAVE_API_KEY"} or '
    '{"kind": "tavily", "api_key_env": "TAVILY_API_KEY"}.'
)


class WebSearchTool(TypedTool):
    """``web_search {query, count=5}`` over the configured provider chain (octos ``web_search``).

    The first provider returning at least one hit wins; a provider failing or returning
    nothing passes to the next. If every provider failed the call fails (``unavailable``,
    naming each provider's error); if some answered with no hits the output is
    ``No results found for: <query>``.

    Args:
        config: the ``web`` section (search_providers, timeout_secs).
        providers: explicit providers (tests, embedding hosts); overrides the config chain.
    """

    name = "web_search"
    title = "Search the web"
    description = (
        "Search the web. Returns up to `count` results (title, URL, snippet) from the first "
        "configured search provider that has results."
    )

    class Args(ToolArgs):
        query: str = Field(min_length=1, description="The search query.")
        count: int = Field(5, ge=1, le=10, description="Number of results, 1 to 10 (default 5).")

    tags = ("web",)
    concurrency_class = ConcurrencyClass.SAFE
    cwd_bound = False
    content_trust = "untrusted"

    def __init__(
        self, config: WebConfig | None = None, providers: Sequence[SearchProvider] | None = None
    ) -> None:
        self.config = config or WebConfig.model_validate({})
        self._providers = list(providers) if providers is not None else None

    def unavailable_reason(self, ctx: ToolContext | None = None) -> str | None:
        """Unlisted while no search provider is configured (``web.search_providers``, or
        each entry lacks its URL or key)."""
        if self._providers is not None:
            return None if self._providers else "no search provider given"
        providers, problems = build_providers(self.config.search_providers)
        if providers:
            return None
        detail = f" ({'; '.join(problems)})" if problems else ""
        return f"no search provider is configured: set web.search_providers{detail}"

    async def run(self, args: Args, ctx: ToolContext | None) -> ToolResult:
        import httpx2

        from ._net import NETWORK_ERRORS

        query = args.query.strip()
        count = args.count
        if not query:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "query must not be empty")
        if self._providers is not None:
            providers, problems = self._providers, list[str]()
        else:
            providers, problems = build_providers(self.config.search_providers)
        if not providers:
            detail = ("; " + "; ".join(problems)) if problems else ""
            raise ToolError(ErrorKind.NOT_CONFIGURED, _HOW_TO_CONFIGURE + detail)
        errors = list(problems)
        answered = False
        timeout = httpx2.Timeout(
            self.config.timeout_secs, connect=min(10.0, self.config.timeout_secs)
        )
        async with httpx2.AsyncClient(timeout=timeout, follow_redirects=True) as client:
            for provider in providers:
                try:
                    with anyio.fail_after(self.config.timeout_secs):
                        hits = await provider.search(client, query, count)
                except ToolError as exc:
                    errors.append(exc.message)
                    continue
                except TimeoutError:
                    errors.append(f"{provider.name}: timed out")
                    continue
                except NETWORK_ERRORS as exc:
                    errors.append(f"{provider.name}: {type(exc).__name__}: {exc}")
                    continue
                answered = True
                if hits:
                    return _search_result(query, provider.name, hits[:count], errors)
        if not answered:
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                "every search provider failed: " + "; ".join(errors),
                errors=errors,
            )
        return ToolResult.ok(
            f"No results found for: {query}",
            structured_metadata={"provider": None, "results": [], "errors": errors},
        )


def _search_result(
    query: str, provider: str, hits: Sequence[SearchHit], errors: list[str]
) -> ToolResult:
    parts = [f"Results for: {query}\n"]
    for i, hit in enumerate(hits, 1):
        snippet = " ".join(hit.snippet.split())
        if len(snippet) > 300:
            snippet = snippet[:297] + "..."
        parts.append(f"{i}. {hit.title}\n   {hit.url}\n   {snippet}\n")
    meta: JSONObject = {
        "provider": provider,
        "results": [{"title": h.title, "url": h.url, "snippet": h.snippet} for h in hits],
        "errors": errors,
    }
    return ToolResult.ok("\n".join(parts).rstrip() + "\n", structured_metadata=meta)
