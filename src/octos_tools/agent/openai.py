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
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import formats
from ..execution import ToolCall
from ..tool_types import JSONObject, TokenUsage, ToolResult, ToolSpec
from ._http_client import HTTPProvider, int_or_zero, resolve_endpoint
from .provider import ModelTurn

if TYPE_CHECKING:
    import httpx2

__all__ = ["DEFAULT_OPENAI_BASE_URL", "OpenAIChatProvider"]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
"""The official API root (the OpenAI SDK's default; ``OPENAI_BASE_URL`` overrides it)."""

_RESERVED = frozenset({"model", "messages", "tools"})


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
        max_retries: retries after 429/5xx (default 2; see ``agent/_http_client.py``).
        retry_base_delay: first back-off in seconds without ``Retry-After`` (default 0.5).
        max_retry_delay: longest honoured wait in seconds (default 30).
        client: an ``httpx2.AsyncClient`` to reuse (the caller closes it).

    Raises:
        ValueError: no model; no API key for the official endpoint; ``extra_body`` sets
            ``model``, ``messages`` or ``tools``.

    Source: OpenAI Chat Completions API (function tools); the behaviour of compatible
    servers follows it.
    """

    completion_path = "/chat/completions"
    models_path = "/models"

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
        url, key = resolve_endpoint(
            base_url,
            api_key,
            default_url=DEFAULT_OPENAI_BASE_URL,
            url_env="OPENAI_BASE_URL",
            key_env="OPENAI_API_KEY",
            missing_key="no OpenAI API key: pass api_key=... or set OPENAI_API_KEY (a key is "
            "optional only for a custom base_url such as a local vLLM or Ollama server)",
        )
        auth = {"authorization": f"Bearer {key}"} if key else {}
        super().__init__(
            name="openai",
            model=model,
            base_url=url,
            headers={**dict(headers or {}), **auth},
            extra_body=extra_body,
            reserved=_RESERVED,
            timeout=timeout,
            connect_timeout=connect_timeout,
            max_retries=max_retries,
            retry_base_delay=retry_base_delay,
            max_retry_delay=max_retry_delay,
            client=client,
        )

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
            raise self.malformed("the answer has no choices[0]", data)
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise self.malformed("choices[0] has no message object", data)
        try:
            calls = formats.openai.parse_tool_calls(message)
        except ValueError as exc:
            raise self.malformed(f"malformed tool call: {exc}", data) from exc
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
                int_or_zero(usage.get("prompt_tokens")),
                int_or_zero(usage.get("completion_tokens")),
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
