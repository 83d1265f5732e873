"""The discovery tools' argument base: optional fields advertised by their own type."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ...typed import ToolArgs

__all__ = ["LeanArgs"]


def _lean_schema(schema: dict[str, Any]) -> None:
    """``anyOf [X, null]`` becomes ``X`` and ``default: null`` goes (null is still
    accepted: for an optional field it means absent); ``additionalProperties: true`` (the
    default) goes too."""
    for prop in schema.get("properties", {}).values():
        options = prop.get("anyOf")
        if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
            (kept,) = (o for o in options if o != {"type": "null"})
            del prop["anyOf"]
            prop.update(kept)
        if "default" in prop and prop["default"] is None:
            del prop["default"]
        if prop.get("additionalProperties") is True:  # the default: any keys
            del prop["additionalProperties"]


class LeanArgs(ToolArgs):
    """Base of the discovery tools' argument models."""

    model_config = ConfigDict(json_schema_extra=_lean_schema)
