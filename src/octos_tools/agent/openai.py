"""OpenAI-compatible Chat Completions provider (``POST {base_url}/chat/completions``).

Works with OpenAI and with servers that speak the same wire format (vLLM, Ollama,
llama.cpp's server, LM Studio, LiteLLM, ...): point ``base_url`` at their ``/v1`` root.

Wire shapes (OpenAI Chat Completions API):

* request: ``{"model", "messages": [{"role": "system"}, ...], "tools": [{"type":
  "function", "function": {"name", "description", "parameters"}}]}`` (``tools`` omitted
  when empty, since OpenAI refuses an empty array);
* answer: ``choices[0].message`` with ``content`` and ``tool_calls`` =
  ``[{"id", "type": "function", "function": {"name", "arguments": "<JSON string>"}}]``,
  ``choices[0].finish_reason``, ``usage.prompt_tokens`` / ``usage.completion_tokens``;
* results: one ``{"role": "tool", "tool_call_id", "content"}`` message per call.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import formats
from ..execution import ToolCall
from ..tool import JSONObject, TokenUsage, ToolResult, ToolSpec
from ._http import HTTPProvider
from .errors import ProviderResponseError
from .provider import ModelTurn

if TYPE_CHECKING:
    import httpx2

__all__ = ["DEFAULT_OPENAI_BASE_URL", "OpenAIChatProvider"]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
"""The official API root (the OpenAI SDK's default; ``OPENAI_BASE_URL`` overrides it)."""

_RESERVED = frozenset({"model", "messages", "tools"})


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text_of(content: Any) -> str:
    """Chat ``content`` is a string, ``null``, or (some servers) a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    return ""


class OpenAIChatProvider(HTTPProvider):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        base_url: the API root *including* ``/v1`` (as in the OpenAI SDK), e.g.
            ``http://127.0.0.1:8000/v1`` for vLLM or ``http://127.0.0.1:11434/v1`` for
            Ollama. Default: ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``.
        api_key: sent as ``Authorization: Bearer <key>``. Default: ``OPENAI_API_KEY``. May
            be absent for a custom ``base_url`` (local servers often need none); then no
            ``Authorization`` header is sent.
        model: the model id (required), e.g. ``"gpt-4.1"`` or ``"qwen2.5:7b"``.
        extra_body: extra request fields merged into every body, e.g.
            ``{"temperature": 0, "max_tokens": 1024, "parallel_tool_calls": True}``.
        headers: extra HTTP headers (e.g. ``OpenAI-Organization``).
        timeout: seconds to wait for an answer (default 300).
        connect_timeout: seconds to connect (default 10).
        max_retries: retries after 429/5xx (default 2; see ``agent/_http.py``).
        retry_base_delay: first back-off in seconds without ``Retry-After`` (default 0.5).
        max_retry_delay: longest honoured wait in seconds (default 30).
        client: an ``httpx2.AsyncClient`` to reuse (the caller closes it).

    Raises:
        ValueError: no model; no API key for the official endpoint; ``extra_body`` sets
            ``model``, ``messages`` or ``tools``.

    Source: OpenAI Chat Completions API (function tools); the behaviour of compatible
    servers follows it.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        *,
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
            raise ValueError("OpenAIChatProvider needs a model id, e.g. model='gpt-4.1'")
        url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key and url.rstrip("/") == DEFAULT_OPENAI_BASE_URL:
            raise ValueError(
                "no OpenAI API key: pass api_key=... or set OPENAI_API_KEY (a key is optional "
                "only for a custom base_url such as a local vLLM or Ollama server)"
            )
        reserved = _RESERVED.intersection(extra_body or {})
        if reserved:
            raise ValueError(f"extra_body must not set {sorted(reserved)}: the agent sets them")
        all_headers = {"content-type": "application/json", **dict(headers or {})}
        if key:
            all_headers["authorization"] = f"Bearer {key}"
        super().__init__(
            name="openai",
            base_url=url,
            headers=all_headers,
            timeout=timeout,
            connect_timeout=connect_timeout,
            max_retries=max_retries,
            retry_base_delay=retry_base_delay,
            max_retry_delay=max_retry_delay,
            client=client,
        )
        self.model = model
        self.extra_body = dict(extra_body or {})

    def user_message(self, text: str) -> JSONObject:
        """``{"role": "user", "content": text}``."""
        return {"role": "user", "content": text}

    def tool_result_messages(
        self, calls: Sequence[ToolCall], results: Sequence[ToolResult]
    ) -> list[JSONObject]:
        """One ``role: "tool"`` message per call (:func:`octos_tools.formats.openai.tool_messages`);
        a failed result's content reads ``Error [kind]: message``."""
        return formats.openai.tool_messages(calls, results)

    def request_body(
        self, messages: Sequence[JSONObject], tools: Sequence[ToolSpec], system: str | None
    ) -> JSONObject:
        """The JSON body of one request (the system prompt goes first as a ``system``
        message; ``tools`` is omitted when empty)."""
        body: JSONObject = dict(self.extra_body)
        body["model"] = self.model
        prefix: list[JSONObject] = [{"role": "system", "content": system}] if system else []
        body["messages"] = [*prefix, *messages]
        if tools:
            body["tools"] = formats.openai.tools_to_openai(tools)
        return body

    async def complete(
        self,
        messages: Sequence[JSONObject],
        tools: Sequence[ToolSpec],
        *,
        system: str | None = None,
    ) -> ModelTurn:
        """POST one Chat Completions request and parse ``choices[0]``.

        Raises:
            ProviderError: HTTP, timeout or shape failures (see :mod:`.errors`).
        """
        data = await self.post_json("/chat/completions", self.request_body(messages, tools, system))
        return self.parse_response(data)

    def parse_response(self, data: JSONObject) -> ModelTurn:
        """Parse a decoded Chat Completions answer.

        The assistant message kept for the transcript holds ``content`` and the non-empty
        ``tool_calls`` only (each with its ``arguments`` as a JSON string), so it can be
        sent back to any compatible server.

        Raises:
            ProviderResponseError: no ``choices[0].message``, or a malformed tool call.
        """
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ProviderResponseError(
                self.name, "the answer has no choices[0]", body=json.dumps(data)[:4000]
            )
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise ProviderResponseError(
                self.name, "choices[0] has no message object", body=json.dumps(data)[:4000]
            )
        try:
            calls = formats.openai.parse_tool_calls(message)
        except ValueError as exc:
            raise ProviderResponseError(
                self.name, f"malformed tool call: {exc}", body=json.dumps(data)[:4000]
            ) from exc
        content = message.get("content")
        text = _text_of(content)
        kept: JSONObject | None = None
        if calls or text:
            kept = {"role": "assistant", "content": content}
            if calls:
                kept["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": _arguments_text(c.arguments)},
                    }
                    for c in calls
                ]
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        finish = choice.get("finish_reason")
        return ModelTurn(
            message=kept,
            text=text,
            tool_calls=calls,
            usage=TokenUsage(
                _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))
            ),
            finish_reason=finish if isinstance(finish, str) else None,
            raw=data,
        )


def _arguments_text(arguments: str | bytes | Mapping[str, Any] | None) -> str:
    """Tool-call arguments as the JSON string the wire format wants (some servers send an
    object; it is echoed back as compact JSON)."""
    if isinstance(arguments, str):
        return arguments
    if isinstance(arguments, bytes):
        return arguments.decode("utf-8", errors="replace")
    if arguments is None:
        return "{}"
    return json.dumps(dict(arguments), ensure_ascii=False, separators=(",", ":"))
