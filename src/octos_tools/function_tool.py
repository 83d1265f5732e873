"""Typed Python functions as tools: ``@tool`` and :class:`FunctionTool`.

pydantic builds the arguments model from the type hints (``Annotated[..., Field(...)]``
included) on :class:`~octos_tools.typed.ToolArgs`, so a function tool follows the same
argument rules as every typed tool (strict JSON types, integral floats for integers,
``null`` = absent for an optional field, unknown fields refused, up to five problems
listed); the parameter descriptions come from the docstring (Google ``Args:``, NumPy
``Parameters`` or Sphinx ``:param x:`` style). A parameter typed
:class:`~octos_tools.context.ToolContext` is injected and left out of the schema. Sync
functions run in a worker thread, never on the event loop.

Example::

    from typing import Annotated
    from pydantic import Field
    from octos_tools import tool

    @tool(tags=("math",))
    def add(a: int, b: Annotated[int, Field(ge=0)] = 0) -> int:
        \"\"\"Add two numbers.

        Args:
            a: the first number.
            b: the second, not negative.
        \"\"\"
        return a + b
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, overload

import anyio.to_thread
from pydantic import BaseModel, create_model
from pydantic.fields import FieldInfo

from .context import ToolContext
from .tool_types import ConcurrencyClass, JSONObject, ToolResult, ok_result
from .typed import ToolArgs, TypedTool

__all__ = ["FunctionTool", "tool"]

_SECTION_RE = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns|Return|Yields|Raises|Example|Examples|"
    r"Note|Notes|Attributes)\s*:?\s*$",
    re.IGNORECASE,
)
_GOOGLE_PARAM_RE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM_RE = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into (description, {parameter: description}).

    Understands Google (``Args:``), NumPy (``Parameters`` + dashes) and Sphinx
    (``:param name:``) styles. The description is the text before the first section.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    numpy = False
    i = 0
    while i < len(lines):
        line = lines[i]
        sphinx = _SPHINX_PARAM_RE.match(line)
        if sphinx:
            current = sphinx.group(1)
            params[current] = sphinx.group(2).strip()
            section = "sphinx"
            i += 1
            continue
        header = _SECTION_RE.match(line)
        if header:
            section = header.group(1).lower()
            current = None
            numpy = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}
            if numpy:
                i += 1  # NumPy underline
            i += 1
            continue
        if section is None:
            if not line.strip().startswith(":"):
                summary.append(line)
        elif section in ("args", "arguments", "parameters", "params", "sphinx"):
            stripped = line.strip()
            match = _GOOGLE_PARAM_RE.match(line)
            indent = len(line) - len(line.lstrip())
            if numpy and stripped and indent == 0:
                current = stripped.split(":")[0].strip().lstrip("*")
                params[current] = ""
            elif match and indent <= 4 and not (current and indent > _indent_of(lines, current)):
                current = match.group(1).lstrip("*")
                params[current] = match.group(3).strip()
            elif current and stripped:
                params[current] = (params[current] + " " + stripped).strip()
        i += 1
    return "\n".join(summary).strip(), params


def _indent_of(lines: list[str], name: str) -> int:
    for line in lines:
        if re.match(rf"^\s*\*{{0,2}}{re.escape(name)}\b", line):
            return len(line) - len(line.lstrip())
    return 0


def _parameter_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Resolved type hints of ``fn``'s parameters (the return annotation is ignored, so a
    return type defined later or locally does not matter)."""
    target = inspect.unwrap(fn)
    raw = {k: v for k, v in getattr(target, "__annotations__", {}).items() if k != "return"}
    holder = type("_Hints", (), {"__annotations__": raw})
    globalns = getattr(target, "__globals__", {})
    try:
        localns = dict(inspect.getclosurevars(target).nonlocals)
    except TypeError:
        localns = {}
    return typing.get_type_hints(holder, globalns=globalns, localns=localns, include_extras=True)


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_context(typing.get_args(annotation)[0])
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return any(_is_context(a) for a in typing.get_args(annotation) if a is not type(None))
    return False


def _clean_schema(schema: JSONObject) -> JSONObject:
    schema = dict(schema)
    schema.pop("title", None)
    props = schema.get("properties")
    if isinstance(props, dict):
        schema["properties"] = {
            k: {kk: vv for kk, vv in v.items() if kk != "title"} if isinstance(v, dict) else v
            for k, v in props.items()
        }
    schema.setdefault("properties", {})
    schema["type"] = "object"
    schema["additionalProperties"] = False
    return schema


class FunctionTool(TypedTool):
    """A :class:`~octos_tools.typed.TypedTool` made from a typed function (see :func:`tool`).

    Calling the instance calls the wrapped function directly (handy in unit tests);
    ``__wrapped__`` is the function.

    Args:
        fn: a sync or async function whose parameters have type hints.
        name: the tool name (default: the function name).
        description: the description (default: the docstring before its sections).
        tags: capability tags.
        concurrency: ``"safe"`` / ``"exclusive"`` or a :class:`ConcurrencyClass`.
        timeout: per-call timeout in seconds (``None``: the registry default).
        cwd_bound: the tool depends on the workspace (rebuilt by ``rebind_cwd``).
        read_only: the tool declares that it writes nothing and has no other side effect;
            only such tools (and the built-ins that are Safe) survive ``--read-only``.
            ``concurrency="safe"`` alone does not say it.

    Raises:
        TypeError: for ``*args`` / ``**kwargs`` parameters or a parameter without a hint.
    """

    validate_arguments = False  # the pipeline validates into ``Args`` (pydantic)

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        tags: Iterable[str] = (),
        concurrency: ConcurrencyClass | str = ConcurrencyClass.SAFE,
        timeout: float | None = None,
        cwd_bound: bool = False,
        read_only: bool = False,
    ) -> None:
        self.fn = fn
        self.declares_read_only = read_only
        self.__wrapped__ = fn
        self.name = name or fn.__name__
        doc_summary, doc_params = parse_docstring(fn.__doc__)
        self.description = (description or doc_summary or self.name).strip()
        self.tags = tuple(tags)
        self.concurrency_class = ConcurrencyClass(concurrency)
        self.timeout = timeout
        self.cwd_bound = cwd_bound
        self._is_async = inspect.iscoroutinefunction(fn)
        self._context_params: list[str] = []
        self.Args = self._build_model(fn, doc_params)  # type: ignore[misc]
        self.input_schema = _clean_schema(self.Args.model_json_schema())

    @property
    def context_params(self) -> tuple[str, ...]:
        """The function's parameters that receive the call's
        :class:`~octos_tools.context.ToolContext` (annotated with it), in order."""
        return tuple(self._context_params)

    @property
    def _model(self) -> type[ToolArgs]:
        """The arguments model (``Args``)."""
        return self.Args

    def _build_model(self, fn: Callable[..., Any], doc_params: dict[str, str]) -> type[ToolArgs]:
        signature = inspect.signature(fn)
        try:
            hints = _parameter_hints(fn)
        except Exception as exc:
            raise TypeError(f"cannot resolve type hints of {fn.__qualname__}: {exc}") from exc
        fields: dict[str, Any] = {}
        for param in signature.parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"{fn.__qualname__}: *args/**kwargs cannot become tool parameters")
            if param.name not in hints:
                raise TypeError(f"{fn.__qualname__}: parameter {param.name!r} needs a type hint")
            annotation = hints[param.name]
            if _is_context(annotation):
                self._context_params.append(param.name)
                continue
            default: Any = ... if param.default is inspect.Parameter.empty else param.default
            description = doc_params.get(param.name)
            if isinstance(default, FieldInfo):
                field_info = default
            else:
                field_info = FieldInfo.from_annotated_attribute(annotation, default)
            if description and not field_info.description:
                field_info.description = description
            fields[param.name] = (annotation, field_info)
        model_name = "".join(part.capitalize() for part in self.name.split("_")) + "Args"
        return create_model(  # type: ignore[call-overload, no-any-return]
            model_name, __base__=ToolArgs, **fields
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    async def run(self, args: Any, ctx: ToolContext | None) -> ToolResult:
        """Call the function with validated ``args`` (an ``Args`` instance) and convert
        its return value.

        Return conversion: a ``ToolResult`` as is; ``str`` as the output; ``None`` as an
        empty output; a pydantic model or any JSON value as JSON text (also placed in
        ``structured_metadata["result"]``).
        """
        kwargs = args.__dict__
        if self._context_params:
            kwargs = dict(kwargs)
            for name in self._context_params:
                kwargs[name] = ctx
        if self._is_async:
            value = await self.fn(**kwargs)
        else:
            value = await anyio.to_thread.run_sync(partial(self.fn, **kwargs))
        return to_result(value)


def to_result(value: Any) -> ToolResult:
    """A function tool's return value as its result (see :meth:`FunctionTool.run`)."""
    kind = type(value)
    if kind is int:  # the common scalars: no JSON round trip
        return ok_result(str(value), {"result": value})
    if kind is bool:
        return ok_result("true" if value else "false", {"result": value})
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult.ok("")
    if isinstance(value, str):
        return ToolResult.ok(value)
    if isinstance(value, BaseModel):
        data = value.model_dump(mode="json")
    else:
        data = json.loads(json.dumps(value, default=str, ensure_ascii=False))
    text = json.dumps(data, ensure_ascii=False)
    return ToolResult.ok(text, structured_metadata={"result": data})


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    tags: Iterable[str] = (),
    concurrency: ConcurrencyClass | str = ConcurrencyClass.SAFE,
    timeout: float | None = None,
    cwd_bound: bool = False,
    read_only: bool = False,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    tags: Iterable[str] = (),
    concurrency: ConcurrencyClass | str = ConcurrencyClass.SAFE,
    timeout: float | None = None,
    cwd_bound: bool = False,
    read_only: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a typed function into a :class:`FunctionTool`; usable bare or with options.

    ``@tool`` or ``@tool(name=..., description=..., tags=..., concurrency=..., timeout=...)``.
    See :class:`FunctionTool` for the arguments.

    Raises:
        TypeError: if given something that is not callable.
    """
    if fn is not None:
        if not callable(fn):
            raise TypeError(f"@tool decorates a function, got {type(fn).__name__}")
        return FunctionTool(fn)

    def decorate(func: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            func,
            name=name,
            description=description,
            tags=tags,
            concurrency=concurrency,
            timeout=timeout,
            cwd_bound=cwd_bound,
            read_only=read_only,
        )

    return decorate
