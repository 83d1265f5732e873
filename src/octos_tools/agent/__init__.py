"""The agent loop and model providers.

* :class:`Agent` runs the loop over a :class:`~octos_tools.registry.ToolRegistry`
  (octos ``agent/loop_runner.rs`` placement: tick → evict → specs → model → tool batch).
* :class:`OpenAIChatProvider` (OpenAI-compatible ``/v1/chat/completions``: OpenAI, vLLM,
  Ollama, ...) and :class:`AnthropicProvider` (``/v1/messages``) speak HTTP through
  ``httpx2`` (the ``web`` extra); any object following :class:`ModelProvider` works too.
* Provider failures raise :class:`ProviderError` subclasses (tree in
  :mod:`octos_tools.agent.provider_errors`).

See ``docs/agent.md``.
"""

from __future__ import annotations

from ._http_client import parse_retry_after
from .anthropic import AnthropicProvider
from .loop import (
    DEFAULT_MAX_ITERATIONS,
    Agent,
    AgentEvent,
    AgentResult,
    EventHook,
    EventKind,
    StopReason,
    ToolCallRecord,
)
from .openai import OpenAIChatProvider
from .provider import ModelProvider, ModelTurn
from .provider_errors import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderResponseError,
    ProviderStatusError,
    ProviderTimeoutError,
)

__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "Agent",
    "AgentEvent",
    "AgentResult",
    "AnthropicProvider",
    "EventHook",
    "EventKind",
    "ModelProvider",
    "ModelTurn",
    "OpenAIChatProvider",
    "ProviderAuthError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderResponseError",
    "ProviderStatusError",
    "ProviderTimeoutError",
    "StopReason",
    "ToolCallRecord",
    "parse_retry_after",
]
