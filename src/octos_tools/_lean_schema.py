"""Lean wire schemas for typed tools: optional fields shown as their plain type.

pydantic renders ``x: int | None = None`` as ``{"anyOf": [{"type": "integer"}, {"type":
"null"}], "default": null}``. On the wire ``null`` and absence mean the same thing (see
:mod:`octos_tools.typed`), so the model needs only ``{"type": "integer"}``: fewer tokens,
same rule. :func:`lean_schema` rewrites a generated schema that way and inlines ``$defs``
(some MCP hosts do not resolve ``$ref``).
"""

from __future__ import annotations

from typing import Any

from .tool_types import JSONObject

__all__ = ["lean_schema"]


def lean_schema(schema: JSONObject) -> JSONObject:
    """``schema`` with ``anyOf [X, null]`` collapsed to ``X``, ``anyOf`` of plain types
    written as a ``type`` list, defaults that go without saying (``null``, ``false``,
    ``""``) dropped, ``additionalProperties: true`` (JSON Schema's default) dropped and local
    ``#/$defs/NAME`` references inlined. Returns a new object."""
    defs: dict[str, Any] = dict(schema.get("$defs", {}))

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            # a model's docstring is for programmers: not sent to the model
            target = {
                k: v
                for k, v in walk(defs[ref.removeprefix("#/$defs/")]).items()
                if k != "description"
            }
            extra = {k: walk(v) for k, v in node.items() if k != "$ref"}
            return {**target, **extra}
        out = {k: walk(v) for k, v in node.items() if k != "$defs"}
        any_of = out.get("anyOf")
        if isinstance(any_of, list):
            kept = [s for s in any_of if s != {"type": "null"}]
            if len(kept) == 1 and len(kept) < len(any_of):
                del out["anyOf"]
                out = {**kept[0], **out}
        any_of = out.get("anyOf")
        if isinstance(any_of, list) and all(
            isinstance(s, dict) and set(s) == {"type"} and isinstance(s["type"], str)
            for s in any_of
        ):
            del out["anyOf"]
            out = {"type": [s["type"] for s in any_of], **out}
        if "default" in out and out["default"] in (None, False, ""):
            del out["default"]
        if out.get("additionalProperties") is True:  # JSON Schema's default: any keys
            del out["additionalProperties"]
        return out

    result = walk(schema)
    assert isinstance(result, dict)
    return result
