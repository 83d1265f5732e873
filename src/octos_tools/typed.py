"""Typed tools: arguments declared once as a pydantic model (:class:`ToolArgs`), the wire
schema generated from it, each call validated once (:class:`TypedTool`).

A built-in tool declares::

    class ReadFile(WorkspaceTool):           # or TypedTool for tools without a workspace
        name = "read_file"
        description = "Read a text file ..."

        class Args(ToolArgs):
            path: str = Field(description="File path, relative to the workspace.")
            start_line: int = Field(1, ge=1, description="First line (1-based).")

        async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
            ...

Prefer ``int = 1`` to ``int | None = None`` for an optional field: ``null`` is read as
absent anyway, and the schema the model reads stays lean (no ``anyOf`` with ``null``).

Argument rules (the field's way, as OpenAI's strict mode and Codex read them; the same
rules as JSON-schema tools, :func:`octos_tools.arguments.validate_arguments`):

* nothing is coerced: ``"false"`` is not ``false``, ``"5"`` is not ``5``;
* an integer field accepts an integral number sent as ``2.0`` or ``1e2`` (models do this);
* ``null`` for a field that is not required and does not admit null means the field is
  absent (its default applies);
* a JSON-encoded string where the field wants an array or object is decoded once;
* unknown fields are refused (``extra="forbid"``).

Validation runs in pydantic's JSON mode (strict): the raw JSON text of a call is validated
straight into the model (``model_validate_json``), and arguments that arrive parsed are
validated the same way, so an enum, a ``Path`` or a tuple field reads a JSON value
exactly as it would from the wire. The leniencies above are applied only when strict
validation fails (the common call pays nothing for them). Validation errors become
:class:`~octos_tools.errors.ArgumentError` (``invalid_arguments``) with a message listing
up to five problems, missing required fields first, saying what was sent (``got null``,
``got a string``, ...).

The rules themselves live in :mod:`octos_tools.arguments`, the one module that parses,
relaxes and validates arguments for typed and JSON-schema tools alike;
:func:`validate_json_arguments` / :func:`validate_arguments_of` (or
:meth:`TypedTool.parse_args`) apply them and are re-exported here.
``Args.model_validate`` alone is plain strict pydantic.
"""

from __future__ import annotations

import typing
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from ._lean_schema import lean_schema
from .arguments import format_validation_error, validate_arguments_of, validate_json_arguments
from .context import ToolContext, current_context
from .tool_types import JSONObject, Tool, ToolResult

__all__ = [
    "ToolArgs",
    "TypedTool",
    "format_validation_error",
    "json_schema_of",
    "typed_model",
    "validate_arguments_of",
    "validate_json_arguments",
]


class ToolArgs(BaseModel):
    """Base class of a typed tool's arguments (see the module docstring for the rules).

    Subclasses declare fields with type hints and ``Field(description=...)``; the
    description is what the model reads, so keep it short and exact.
    """

    # defer_build: a model's validator is built on its first call, not at import: a one-shot
    # ``octos-tools call`` imports every built-in family but validates one tool's arguments.
    model_config = ConfigDict(strict=True, extra="forbid", frozen=False, defer_build=True)


def json_schema_of(model: type[BaseModel]) -> JSONObject:
    """The wire input schema of an arguments model: pydantic's JSON Schema without titles,
    made lean (:func:`~octos_tools._lean_schema.lean_schema`: optional fields shown as their
    plain type, since ``null`` means absent; ``$defs`` inlined), ``type: object``,
    ``additionalProperties: false``.
    """
    schema = model.model_json_schema()

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: strip(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    schema = lean_schema(typing.cast(JSONObject, strip(schema)))
    schema["type"] = "object"
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema


class _SchemaOfArgs:
    """``input_schema`` of a typed tool class: generated from its ``Args`` on first read,
    then stored on the class (replacing this descriptor)."""

    def __get__(self, obj: object, owner: type[TypedTool]) -> JSONObject:
        schema = json_schema_of(owner.Args)
        if owner.__dict__.get("input_schema") is self:
            owner.input_schema = schema
        return schema


class TypedTool(Tool):
    """A tool whose arguments are a :class:`ToolArgs` model (class attribute ``Args``).

    The input schema is generated from ``Args`` once per class; the registry validates the
    raw arguments into an ``Args`` instance and calls :meth:`run`. Subclasses implement
    :meth:`run` (not ``execute``).
    """

    Args: ClassVar[type[ToolArgs]] = ToolArgs

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.Args is ToolArgs:
            return  # not typed (yet): a hand-written input_schema, checked by jsonschema
        cls.validate_arguments = False  # type: ignore[misc]
        if "Args" in cls.__dict__ or "input_schema" not in cls.__dict__:
            # generated on first read (a spec listing), not at import
            cls.input_schema = _SchemaOfArgs()  # type: ignore[assignment]

    def parse_args(self, args: JSONObject) -> ToolArgs:
        """Validate parsed JSON ``args`` into an ``Args`` instance.

        Raises:
            ArgumentError: ``invalid_arguments`` (see :func:`format_validation_error`).
        """
        return validate_arguments_of(self.Args, args, self.name)

    async def run(self, args: Any, ctx: ToolContext | None) -> ToolResult:
        """Run the tool with validated ``args`` (an instance of ``Args``).

        Raises:
            ToolError: for a typed failure the model should see.
        """
        raise NotImplementedError(f"tool {self.name!r} does not implement run()")

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        """Validate ``args`` and :meth:`run` (the path of hosts that call tools directly)."""
        return await self.run(self.parse_args(args), ctx)

    async def execute(self, args: JSONObject) -> ToolResult:
        """:meth:`execute_with_context` with :func:`~octos_tools.context.current_context`."""
        return await self.execute_with_context(current_context(), args)


def typed_model(tool: Tool) -> type[ToolArgs] | None:
    """The ``Args`` model the pipeline validates ``tool``'s arguments into, or ``None`` for
    a JSON-schema tool (or a typed tool that overrides ``execute_with_context`` and so
    validates by itself)."""
    if not isinstance(tool, TypedTool):
        return None
    model = tool.Args
    if model is ToolArgs or type(tool).execute_with_context is not TypedTool.execute_with_context:
        return None
    return model
