"""``LeanArgs``: tool arguments whose optional fields are advertised by their own type.

Pydantic shows ``x: str | None = None`` as ``{"anyOf": [{"type": "string"}, {"type":
"null"}], "default": null}``; a model reads the same from ``{"type": "string"}`` in fewer
tokens, and ``null`` is still accepted (it means absent: :mod:`octos_tools.typed`).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ..typed import ToolArgs

__all__ = ["LeanArgs", "lean_properties"]


def lean_properties(schema: dict[str, Any]) -> None:
    """In place, for every top-level property of ``schema``: ``anyOf [X, null]`` becomes
    ``X``, ``default: null`` goes, and array items ``{"type": "object",
    "additionalProperties": true}`` become ``{"type": "object"}`` (the same meaning)."""
    for prop in schema.get("properties", {}).values():
        options = prop.get("anyOf")
        if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
            (kept,) = (o for o in options if o != {"type": "null"})
            del prop["anyOf"]
            prop.update(kept)
        if "default" in prop and prop["default"] is None:
            del prop["default"]
        items = prop.get("items")
        if isinstance(items, dict) and items.get("additionalProperties") is True:
            del items["additionalProperties"]  # an object of anything says as much


class LeanArgs(ToolArgs):
    """Base of argument models whose optional fields are advertised leanly."""

    model_config = ConfigDict(json_schema_extra=lean_properties)
