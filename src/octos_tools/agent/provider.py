"""The model-provider protocol the agent loop talks to, and one model turn.

A provider owns a *wire format*: the transcript the agent keeps is a list of messages in
that provider's own shape (Chat Completions messages, or Anthropic Messages), so nothing
is lost in translation and a transcript can be sent back as is. The provider turns
:class:`~octos_tools.tool_types.ToolSpec` lists into its ``tools`` array, parses tool calls into
:class:`~octos_tools.execution.ToolCall` objects and builds the messages that carry
:class:`~octos_tools.tool_types.ToolResult` objects back (both through :mod:`octos_tools.formats`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..execution import ToolCall
from ..tool_types import JSONObject, TokenUsage, ToolResult, ToolSpec

__all__ = ["ModelProvider", "ModelTurn"]


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One model answer, parsed.

    Attributes:
        message: the assistant message to append to the transcript, in the provider's wire
            format; ``None`` when the answer is empty (no text, no tool call): providers
            reject an empty assistant message in a later request, so none is kept.
        text: the answer's text parts joined (``""`` when there are none).
        tool_calls: the tool calls, in the model's order (``[]`` for a final answer).
        usage: tokens this request consumed, from the response's usage fields (0 when the
            server sends none).
        finish_reason: the provider's own stop/finish reason (``"stop"``, ``"tool_calls"``,
            ``"length"``, ``"end_turn"``, ``"tool_use"``, ``"max_tokens"``, ...), or ``None``.
        raw: the whole decoded response body.
    """

    message: JSONObject | None
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)
    finish_reason: str | None = None
    raw: JSONObject = field(default_factory=dict)


@runtime_checkable
class ModelProvider(Protocol):
    """What the agent loop needs from a model provider.

    Implementations: :class:`~octos_tools.agent.OpenAIChatProvider`,
    :class:`~octos_tools.agent.AnthropicProvider`; a test or a host may supply its own.

    Attributes:
        name: short provider name for messages and logs (``"openai"``, ``"anthropic"``).
        model: the model id sent with each request.
    """

    name: str
    model: str

    def user_message(self, text: str) -> JSONObject:
        """The transcript message carrying the user's ``text``."""
        ...

    def tool_result_messages(
        self, calls: Sequence[ToolCall], results: Sequence[ToolResult]
    ) -> list[JSONObject]:
        """The transcript messages answering ``calls`` with ``results`` (one result per
        call, same order). Raises ``ValueError`` if the counts differ."""
        ...

    async def complete(
        self,
        messages: Sequence[JSONObject],
        tools: Sequence[ToolSpec],
        *,
        system: str | None = None,
    ) -> ModelTurn:
        """Send one request and parse the answer.

        Args:
            messages: the transcript so far, in this provider's wire format.
            tools: the tool specs to declare (may be empty: then no ``tools`` key is sent).
            system: the system prompt, or ``None``.

        Raises:
            ProviderError: any failure (see :mod:`octos_tools.agent.provider_errors`).
        """
        ...

    async def aclose(self) -> None:
        """Release the HTTP client (if the provider created it)."""
        ...
