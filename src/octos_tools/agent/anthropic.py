"""Anthropic Messages provider (``POST {base_url}/v1/messages``).

Wire shapes (Anthropic Messages API, version header ``anthropic-version: 2023-06-01``):

* request: ``{"model", "max_tokens", "system"?, "messages", "tools": [{"name",
  "description", "input_schema"}]}`` with headers ``x-api-key`` and ``anthropic-version``;
* answer: ``{"content": [{"type": "text", "text"} | {"type": "tool_use", "id", "name",
  "input"} | ...], "stop_reason", "usage": {"input_tokens", "output_tokens",
  "cache_creation_input_tokens"?, "cache_read_input_tokens"?}}``;
* results: one user message whose content is ``{"type": "tool_result", "tool_use_id",
  "content", "is_error"}`` blocks, in call order.

The assistant's content blocks are kept verbatim in the transcript (thinking blocks carry
signatures the API checks when they come back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import formats
from ..execution import ToolCall
from ..tool_types import JSONObject, TokenUsage, ToolResult, ToolSpec
from ._http_client import HTTPProvider, int_or_zero, resolve_endpoint
from .provider import ModelTurn

if TYPE_CHECKING:
    import httpx2

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_ANTHROPIC_BASE_URL", "AnthropicProvider"]

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
"""The official API root, *without* ``/v1`` (the Anthropic SDK's convention;
``ANTHROPIC_BASE_URL`` overrides it)."""

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header value (the current stable Messages API version)."""

_RESERVED = frozenset({"model", "messages", "tools", "system"})


class AnthropicProvider(HTTPProvider):
    """A model behind the Anthropic Messages API.

    Args:
        base_url: the API root *without* ``/v1`` (as in the Anthropic SDK). Default:
            ``ANTHROPIC_BASE_URL``, else ``https://api.anthropic.com``.
        api_key: sent as ``x-api-key``. Default: ``ANTHROPIC_API_KEY``. Required for the
            official endpoint; optional for a custom ``base_url`` (a proxy or a test server).
        model: the model id (required), e.g. ``"claude-sonnet-4-5"``.
        max_tokens: the answer's token budget per request (the API requires one; default
            4096).
        anthropic_version: the ``anthropic-version`` header (default ``2023-06-01``).
        extra_body: extra request fields, e.g. ``{"temperature": 0, "tool_choice": {...}}``.
        headers: extra HTTP headers (e.g. ``anthropic-beta``).
        timeout, connect_timeout, max_retries, retry_base_delay, max_retry_delay, client:
            as for :class:`~octos_tools.agent.OpenAIChatProvider`.

    Raises:
        ValueError: no model; no API key for the official endpoint; ``max_tokens < 1``;
            ``extra_body`` sets ``model``, ``messages``, ``tools`` or ``system``.

    Source: Anthropic Messages API (tool use).
    """

    completion_path = "/v1/messages"
    models_path = "/v1/models"

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        *,
        max_tokens: int = 4096,
        anthropic_version: str = ANTHROPIC_VERSION,
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 300.0,
        connect_timeout: float = 10.0,
        max_retries: int = 2,
        retry_base_delay: float = 0.5,
        max_retry_delay: float = 30.0,
        client: httpx2.AsyncClient | None = None,
    ) -> None:
        if not model:
            raise ValueError("AnthropicProvider needs a model id, e.g. model='claude-sonnet-4-5'")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        url, key = resolve_endpoint(
            base_url,
            api_key,
            default_url=DEFAULT_ANTHROPIC_BASE_URL,
            url_env="ANTHROPIC_BASE_URL",
            key_env="ANTHROPIC_API_KEY",
            missing_key="no Anthropic API key: pass api_key=... or set ANTHROPIC_API_KEY",
        )
        auth = {"x-api-key": key} if key else {}
        super().__init__(
            name="anthropic",
            model=model,
            base_url=url,
            headers={"anthropic-version": anthropic_version, **dict(headers or {}), **auth},
            extra_body=extra_body,
            reserved=_RESERVED,
            timeout=timeout,
            connect_timeout=connect_timeout,
            max_retries=max_retries,
            retry_base_delay=retry_base_delay,
            max_retry_delay=max_retry_delay,
            client=client,
        )
        self.max_tokens = max_tokens

    def tool_result_messages(
        self, calls: Sequence[ToolCall], results: Sequence[ToolResult]
    ) -> list[JSONObject]:
        """One user message of ``tool_result`` blocks with ``is_error`` set for failures
        (:func:`octos_tools.formats.anthropic.tool_results_message`)."""
        return [formats.anthropic.tool_results_message(calls, results)]

    def request_body(
        self, messages: Sequence[JSONObject], tools: Sequence[ToolSpec], system: str | None
    ) -> JSONObject:
        """The JSON body of one request (``system`` and ``tools`` only when given)."""
        body: JSONObject = {"max_tokens": self.max_tokens, **self.extra_body}
        body["model"] = self.model
        if system:
            body["system"] = system
        body["messages"] = list(messages)
        if tools:
            body["tools"] = formats.anthropic.tools_to_anthropic(tools)
        return body

    def parse_response(self, data: JSONObject) -> ModelTurn:
        """Parse a decoded Messages answer.

        ``usage`` input tokens include the cache write and cache read tokens (Anthropic
        reports those apart from ``input_tokens``).

        Raises:
            ProviderResponseError: no ``content`` list, or a malformed ``tool_use`` block.
        """
        content = data.get("content")
        if not isinstance(content, list):
            raise self.malformed("the answer has no content list", data)
        try:
            calls = formats.anthropic.parse_tool_uses(content)
        except ValueError as exc:
            raise self.malformed(f"malformed tool_use block: {exc}", data) from exc
        text = "".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        input_tokens = (
            int_or_zero(usage.get("input_tokens"))
            + int_or_zero(usage.get("cache_creation_input_tokens"))
            + int_or_zero(usage.get("cache_read_input_tokens"))
        )
        stop = data.get("stop_reason")
        return ModelTurn(
            message={"role": "assistant", "content": content} if content else None,
            text=text,
            tool_calls=calls,
            usage=TokenUsage(input_tokens, int_or_zero(usage.get("output_tokens"))),
            finish_reason=stop if isinstance(stop, str) else None,
            raw=data,
        )
