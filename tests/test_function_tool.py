"""@tool: schema from type hints and docstrings, context injection, sync in threads."""

from __future__ import annotations

import threading
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from octos_tools.context import ToolContext
from octos_tools.errors import ErrorKind, ToolError
from octos_tools.function_tool import FunctionTool, parse_docstring, tool
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import ConcurrencyClass


@tool
def greet(name: str, times: Annotated[int, Field(ge=1, le=3)] = 1, loud: bool = False) -> str:
    """Greet somebody.

    Args:
        name: who to greet.
        times: how many times.
        loud: shout it.
    """
    text = " ".join([f"hello {name}"] * times)
    return text.upper() if loud else text


def test_bare_decorator_builds_schema() -> None:
    assert isinstance(greet, FunctionTool)
    assert greet.name == "greet"
    assert greet.description == "Greet somebody."
    schema = greet.input_schema
    assert schema["required"] == ["name"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["name"] == {"description": "who to greet.", "type": "string"}
    assert schema["properties"]["times"]["maximum"] == 3
    assert schema["properties"]["times"]["description"] == "how many times."
    assert greet("bob") == "hello bob"  # still callable directly
    assert greet.__wrapped__ is greet.fn


def test_decorator_with_options() -> None:
    @tool(name="do_it", description="Custom.", tags=("x",), concurrency="exclusive", timeout=3)
    async def f(mode: Literal["a", "b"], ctx: ToolContext) -> dict[str, str]:
        return {"mode": mode, "call": ctx.tool_call_id}

    assert f.name == "do_it" and f.description == "Custom." and f.tags == ("x",)
    assert f.concurrency_class is ConcurrencyClass.EXCLUSIVE and f.timeout == 3
    assert "ctx" not in f.input_schema["properties"]
    assert f.input_schema["properties"]["mode"]["enum"] == ["a", "b"]


@pytest.mark.anyio
async def test_execution_through_registry_with_context_injected() -> None:
    @tool
    async def who(ctx: ToolContext, suffix: str = "") -> str:
        """Report the call id."""
        return ctx.tool_call_id + suffix

    r = ToolRegistry()
    r.register(greet)
    r.register(who)
    res = await r.execute("greet", '{"name": "ann", "times": 2, "loud": true}')
    assert res.success and res.output == "HELLO ANN HELLO ANN"
    res = await r.execute("greet", '{"name": "ann", "times": 4}')
    assert res.error_kind is ErrorKind.INVALID_ARGUMENTS
    res = await r.execute("greet", '{"name": "ann", "loud": "true"}')
    assert res.error_kind is ErrorKind.INVALID_ARGUMENTS
    res = await r.execute("who", {"suffix": "!"}, ToolContext(tool_call_id="c9"))
    assert res.output == "c9!"


@pytest.mark.anyio
async def test_sync_functions_run_in_a_worker_thread() -> None:
    main = threading.get_ident()

    @tool
    def where() -> bool:
        """Is this the main thread?"""
        return threading.get_ident() == main

    r = ToolRegistry()
    r.register(where)
    assert (await r.execute("where", {})).output == "false"


@pytest.mark.anyio
async def test_return_values_and_tool_errors() -> None:
    class Point(BaseModel):
        x: int
        y: int

    @tool
    def point() -> Point:
        """A point."""
        return Point(x=1, y=2)

    @tool
    def nothing() -> None:
        """Nothing."""

    @tool
    def refuse() -> str:
        """Refuse."""
        raise ToolError(ErrorKind.NO_MATCH, "nothing matched")

    r = ToolRegistry()
    for t in (point, nothing, refuse):
        r.register(t)
    res = await r.execute("point", {})
    assert res.output == '{"x": 1, "y": 2}'
    assert res.structured_metadata == {"result": {"x": 1, "y": 2}}
    assert (await r.execute("nothing", {})).output == ""
    res = await r.execute("refuse", {})
    assert res.error_kind is ErrorKind.NO_MATCH and res.error == {
        "kind": "no_match",
        "message": "nothing matched",
    }


def test_bad_functions_raise_type_error() -> None:
    with pytest.raises(TypeError, match="type hint"):

        @tool
        def nohint(x) -> None:  # type: ignore[no-untyped-def]
            """x"""

    with pytest.raises(TypeError, match="args"):

        @tool
        def star(*args: int) -> None:
            """x"""

    with pytest.raises(TypeError):
        tool(42)  # type: ignore[call-overload]


def test_docstring_styles() -> None:
    summary, params = parse_docstring(
        """Do a thing.

        More text.

        :param a: first
        :param int b: second
        """
    )
    assert summary.startswith("Do a thing.") and params == {"a": "first", "b": "second"}
    summary, params = parse_docstring(
        """Numpy style.

        Parameters
        ----------
        a : int
            the a value
        b : str
            the b value
        """
    )
    assert summary == "Numpy style." and params == {"a": "the a value", "b": "the b value"}
    summary, params = parse_docstring(
        """Google.

        Args:
            a (int): first line
                continued here.
            b: second.

        Returns:
            nothing.
        """
    )
    assert params == {"a": "first line continued here.", "b": "second."}
