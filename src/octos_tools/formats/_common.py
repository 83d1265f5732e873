"""Helpers shared by the provider formats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..tool_types import ToolResult

EMPTY_OUTPUT = "(no output)"
"""Text sent for a result with empty output (providers reject empty tool content)."""


def field(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` for a mapping, else ``getattr(obj, key)`` (provider SDK objects)."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def result_text(result: ToolResult) -> str:
    """The text a model sees for ``result`` (failures already read ``Error [kind]: …``)."""
    return result.output if result.output else EMPTY_OUTPUT


def check_pairs(ids: Sequence[str], results: Sequence[ToolResult]) -> None:
    """Raise ``ValueError`` unless there is exactly one result per call id."""
    if len(ids) != len(results):
        raise ValueError(f"{len(ids)} tool calls but {len(results)} results: they must pair up")
