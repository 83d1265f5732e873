"""Typed tools: arguments declared once as a pydantic model (:class:`ToolArgs`), the wire
schema generated from it, each call validated once (:class:`TypedTool`).

A built-in tool declares::

    class ReadFile(WorkspaceTool):           # or TypedTool for tools without a workspace
        name = "read_file"
        description = "Read a text file ..."

        class Args(ToolArgs):
            path: str = Field(description="File path, relative to the workspace.")
            start_line: int | None = Field(None, ge=1, description="First line (1-based).")

        async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
            ...

Argument rules (the field's way, as OpenAI's strict mode and Codex read them):

* nothing is coerced: ``"false"`` is not ``false``, ``"5"`` is not ``5``;
* an integer field accepts an integral number sent as ``2.0`` or ``1e2`` (models do this);
* ``null`` for an optional field means the field is absent;
* a JSON-encoded string where the field wants an array or object is decoded once;
* unknown fields are refused (``extra="forbid"``).

Validation errors become :class:`~octos_tools.errors.ArgumentError` (``invalid_arguments``)
with a message listing up to five problems, missing required fields first.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from .context import ToolContext, current_context
from .errors import ArgumentError, ErrorKind
from .tool import JSONObject, Tool, ToolResult

__all__ = ["ToolArgs", "TypedTool", "format_validation_error", "json_schema_of"]

_MAX_PROBLEMS = 5


def _base_kinds(annotation: Any) -> set[str]:
    """Which of ``int`` / ``array`` / ``object`` an annotation can be (Optional unwrapped)."""
    kinds: set[str] = set()
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _base_kinds(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            kinds |= _base_kinds(arg)
        return kinds
    target = origin or annotation
    if target is int:
        kinds.add("int")
    elif target in (list, tuple, set, frozenset) or (
        isinstance(target, type) and issubclass(target, (list, tuple))
    ):
        kinds.add("array")
    elif target is dict or (isinstance(target, type) and issubclass(target, (dict, BaseModel))):
        kinds.add("object")
    return kinds


class ToolArgs(BaseModel):
    """Base class of a typed tool's arguments (see the module docstring for the rules).

    Subclasses declare fields with type hints and ``Field(description=...)``; the
    description is what the model reads, so keep it short and exact.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=False)

    _field_kinds: ClassVar[dict[str, set[str]]] = {}
    _optional_fields: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._field_kinds = {
            name: kinds
            for name, info in cls.model_fields.items()
            if (kinds := _base_kinds(info.annotation))
        }
        # null for an optional field means the field is absent (its default applies)
        cls._optional_fields = tuple(
            name for name, info in cls.model_fields.items() if not info.is_required()
        )

    @model_validator(mode="before")
    @classmethod
    def _field_leniencies(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = data
        for name in cls._optional_fields:
            if name in data and data[name] is None:
                if out is data:
                    out = dict(data)
                del out[name]
        for name, kinds in cls._field_kinds.items():
            if name not in data:
                continue
            value = data[name]
            new = value
            if "int" in kinds and isinstance(value, float) and value.is_integer():
                new = int(value)
            elif isinstance(value, str) and ("array" in kinds or "object" in kinds):
                stripped = value.lstrip()
                if stripped[:1] in ("[", "{"):
                    try:
                        decoded = json.loads(value)
                    except ValueError:
                        decoded = None
                    if (isinstance(decoded, list) and "array" in kinds) or (
                        isinstance(decoded, dict) and "object" in kinds
                    ):
                        new = decoded
            if new is not value:
                if out is data:
                    out = dict(data)
                out[name] = new
        return out


def json_schema_of(model: type[BaseModel]) -> JSONObject:
    """The wire input schema of an arguments model: pydantic's JSON Schema without titles,
    ``type: object``, ``additionalProperties: false``.
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

    schema = typing.cast(JSONObject, strip(schema))
    schema["type"] = "object"
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema


def _got(value: Any) -> str:
    if value is None:
        return "got null"
    if isinstance(value, bool):
        return f"got a boolean ({'true' if value else 'false'})"
    if isinstance(value, int | float):
        return f"got a number ({value!r})"
    if isinstance(value, str):
        preview = value if len(value) <= 40 else value[:37] + "..."
        return f"got a string ({json.dumps(preview)})"
    if isinstance(value, list):
        return "got an array"
    if isinstance(value, dict):
        return "got an object"
    return f"got a {type(value).__name__}"


def format_validation_error(exc: ValidationError, tool_name: str) -> ArgumentError:
    """An ``invalid_arguments`` :class:`ArgumentError` listing up to five problems of
    ``exc``, missing required fields first; ``details["field"]`` names the first one."""
    errors = exc.errors(include_url=False)
    errors.sort(key=lambda e: 0 if e["type"] == "missing" else 1)
    parts: list[str] = []
    first_field: str | None = None
    for err in errors[:_MAX_PROBLEMS]:
        where = ".".join(str(p) for p in err["loc"])
        if first_field is None:
            first_field = where or None
        kind = err["type"]
        if kind == "missing":
            parts.append(f"missing required field {where!r}")
        elif kind == "extra_forbidden":
            parts.append(f"unknown field {where!r}")
        else:
            msg = err["msg"]
            parts.append(f"field {where or '(arguments)'!r}: {msg}, {_got(err.get('input'))}")
    more = len(errors) - len(parts)
    text = "; ".join(parts)
    if more > 0:
        text += f" (and {more} more problem{'s' if more > 1 else ''})"
    return ArgumentError(
        ErrorKind.INVALID_ARGUMENTS,
        f"invalid arguments for {tool_name!r}: {text}",
        field=first_field,
    )


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
            cls.input_schema = json_schema_of(cls.Args)

    def parse_args(self, args: JSONObject) -> ToolArgs:
        """Validate parsed JSON ``args`` into an ``Args`` instance.

        Raises:
            ArgumentError: ``invalid_arguments`` (see :func:`format_validation_error`).
        """
        try:
            return self.Args.model_validate(args)
        except ValidationError as exc:
            raise format_validation_error(exc, self.name) from None

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
