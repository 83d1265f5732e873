"""OpenAI formats: Chat Completions and the Responses API.

Chat Completions: an assistant message carries ``tool_calls`` =
``[{"id", "type": "function", "function": {"name", "arguments": "<JSON string>"}}]``; each
answer is a message ``{"role": "tool", "tool_call_id": id, "content": text}``.

Responses API: output items ``{"type": "function_call", "call_id", "name", "arguments"}``;
answers are input items ``{"type": "function_call_output", "call_id", "output": text}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..tool import JSONObject, ToolCall, ToolResult, ToolSpec
from ._common import check_pairs, field, result_text

__all__ = [
    "function_call_output",
    "function_call_outputs",
    "parse_tool_calls",
    "spec_to_openai",
    "spec_to_responses",
    "tool_message",
    "tool_messages",
    "tools_to_openai",
]


def spec_to_openai(spec: ToolSpec) -> JSONObject:
    """One Chat Completions ``tools`` entry: ``{"type": "function", "function": {"name",
    "description", "parameters"}}`` (OpenAI API reference, "Chat Completions: tools").
    The Responses API takes the same function fields flat; use :func:`spec_to_responses`."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.input_schema,
        },
    }


def spec_to_responses(spec: ToolSpec) -> JSONObject:
    """One Responses API ``tools`` entry: ``{"type": "function", "name", "description",
    "parameters"}`` (OpenAI API reference, "Responses: function tools")."""
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.input_schema,
    }


def tools_to_openai(specs: Iterable[ToolSpec]) -> list[JSONObject]:
    """The ``tools`` array of a Chat Completions request (:func:`spec_to_openai` each)."""
    return [spec_to_openai(spec) for spec in specs]


def _one(item: Any) -> ToolCall:
    kind = field(item, "type")
    if kind == "function_call":  # Responses API output item
        call_id = field(item, "call_id") or field(item, "id")
        name = field(item, "name")
        arguments = field(item, "arguments")
    else:
        call_id = field(item, "id")
        function = field(item, "function")
        if function is None:
            raise ValueError(f"tool call {call_id!r} has no 'function' member")
        name = field(function, "name")
        arguments = field(function, "arguments")
    if not isinstance(call_id, str) or not call_id:
        raise ValueError("a tool call needs a non-empty string id")
    if not isinstance(name, str):
        raise ValueError(f"tool call {call_id!r} has no function name")
    return ToolCall(id=call_id, name=name, arguments=arguments)


def parse_tool_calls(message: Any) -> list[ToolCall]:
    """The :class:`~octos_tools.execution.ToolCall` list of a model turn, in order.

    Args:
        message: a Chat Completions assistant message (a dict or SDK object with
            ``tool_calls``), a list of its ``tool_calls``, or a list of Responses API
            output items (only ``type == "function_call"`` items are taken).

    Returns:
        The calls; ``arguments`` is the raw JSON string as the model sent it (invalid JSON
        is left for the registry to report as ``invalid_json``). ``[]`` when there are none.

    Raises:
        ValueError: a call without an id or a function name.
    """
    items: Any
    if isinstance(message, Sequence) and not isinstance(message, str | bytes):
        items = [i for i in message if field(i, "type") in (None, "function", "function_call")]
    else:
        items = field(message, "tool_calls") or []
    return [_one(item) for item in items]


def tool_message(call_id: str, result: ToolResult) -> JSONObject:
    """The ``role: "tool"`` message answering call ``call_id``."""
    return {"role": "tool", "tool_call_id": call_id, "content": result_text(result)}


def tool_messages(calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> list[JSONObject]:
    """One ``role: "tool"`` message per call, in call order.

    Raises:
        ValueError: if the counts differ.
    """
    check_pairs([c.id for c in calls], results)
    return [tool_message(c.id, r) for c, r in zip(calls, results, strict=True)]


def function_call_output(call_id: str, result: ToolResult) -> JSONObject:
    """The Responses API ``function_call_output`` input item answering ``call_id``."""
    return {"type": "function_call_output", "call_id": call_id, "output": result_text(result)}


def function_call_outputs(
    calls: Sequence[ToolCall], results: Sequence[ToolResult]
) -> list[JSONObject]:
    """One ``function_call_output`` item per call, in call order.

    Raises:
        ValueError: if the counts differ.
    """
    check_pairs([c.id for c in calls], results)
    return [function_call_output(c.id, r) for c, r in zip(calls, results, strict=True)]
