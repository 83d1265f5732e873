"""Anthropic Messages format.

An assistant message's ``content`` holds ``{"type": "tool_use", "id", "name", "input": {…}}``
blocks; the answers go back in one user message whose content is
``{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": bool}`` blocks, in
the same order (Anthropic requires every ``tool_use`` to be answered in the next message).

A result carrying images (``ToolResult.content``: :class:`~octos_tools.tool_types.ImageContent`)
gets a list as ``content``: a ``text`` block, then one ``{"type": "image", "source":
{"type": "base64", "media_type", "data"}}`` block per image (Anthropic Messages API,
"tool_result" content: https://docs.anthropic.com/en/docs/build-with-claude/tool-use).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..tool_types import ImageContent, JSONObject, ToolCall, ToolResult, ToolSpec
from ._common import check_pairs, field, result_text

__all__ = [
    "parse_tool_uses",
    "spec_to_anthropic",
    "tool_result_block",
    "tool_results_message",
    "tools_to_anthropic",
]


def spec_to_anthropic(spec: ToolSpec) -> JSONObject:
    """One Messages API ``tools`` entry: ``{"name", "description", "input_schema"}``
    (Anthropic docs, "Tool use: specifying client tools")."""
    return {
        "name": spec.name,
        "description": spec.description,
        "input_schema": spec.input_schema,
    }


def tools_to_anthropic(specs: Iterable[ToolSpec]) -> list[JSONObject]:
    """The ``tools`` array of a Messages request (:func:`spec_to_anthropic` each)."""
    return [spec_to_anthropic(spec) for spec in specs]


def parse_tool_uses(message: Any) -> list[ToolCall]:
    """The ``tool_use`` blocks of an assistant message as
    :class:`~octos_tools.execution.ToolCall` objects, in order.

    Args:
        message: the message (dict or SDK object with ``content``) or its content list.
            Text and thinking blocks are skipped.

    Returns:
        The calls; ``arguments`` is the ``input`` object as sent (the registry sizes and
        validates it). ``[]`` when there are none.

    Raises:
        ValueError: a ``tool_use`` block without an id or a name.
    """
    if isinstance(message, Sequence) and not isinstance(message, str | bytes):
        blocks: Any = message
    else:
        blocks = field(message, "content") or []
        if isinstance(blocks, str):
            return []
    calls: list[ToolCall] = []
    for block in blocks:
        if field(block, "type") != "tool_use":
            continue
        call_id = field(block, "id")
        name = field(block, "name")
        if not isinstance(call_id, str) or not call_id:
            raise ValueError("a tool_use block needs a non-empty string id")
        if not isinstance(name, str):
            raise ValueError(f"tool_use block {call_id!r} has no name")
        calls.append(ToolCall(id=call_id, name=name, arguments=field(block, "input")))
    return calls


def _image_block(image: ImageContent) -> JSONObject:
    import base64

    return {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": image.mime_type,
            "data": base64.b64encode(image.data).decode("ascii"),
        },
    }


def tool_result_block(call_id: str, result: ToolResult) -> JSONObject:
    """The ``tool_result`` block answering ``call_id``; ``is_error`` mirrors
    ``not result.success``. ``content`` is the text, or ``[text block, image blocks…]``
    when the result carries images."""
    images = [block for block in result.content if isinstance(block, ImageContent)]
    content: str | list[JSONObject] = result_text(result)
    if images:
        content = [{"type": "text", "text": content}, *(_image_block(i) for i in images)]
    return {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": content,
        "is_error": not result.success,
    }


def tool_results_message(calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> JSONObject:
    """The user message answering every call of a turn, blocks in call order.

    Raises:
        ValueError: if the counts differ.
    """
    check_pairs([c.id for c in calls], results)
    return {
        "role": "user",
        "content": [tool_result_block(c.id, r) for c, r in zip(calls, results, strict=True)],
    }
