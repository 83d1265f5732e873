"""Typed tools: one set of argument rules, the raw JSON path and the parsed path alike."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from octos_tools.arguments import validate_arguments
from octos_tools.context import ToolContext
from octos_tools.errors import ArgumentError, ErrorKind
from octos_tools.function_tool import tool
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import ToolResult
from octos_tools.typed import ToolArgs, TypedTool, json_schema_of, validate_arguments_of


class Mode(str, Enum):
    FAST = "fast"
    SLOW = "slow"


class Inner(BaseModel):
    n: int


class Probe(TypedTool):
    name = "probe"
    description = "Echo the validated arguments."

    class Args(ToolArgs):
        path: str = Field(description="A path.")
        start: int = Field(1, ge=1)
        mode: Mode = Mode.FAST
        pair: tuple[int, int] | None = None
        tags: list[str] = Field(default_factory=list)
        inner: Inner | None = None
        flag: bool = False

    async def run(self, args: Args, ctx: ToolContext | None) -> ToolResult:  # type: ignore[override]
        return ToolResult.ok(args.model_dump_json())


@pytest.fixture
def registry() -> ToolRegistry:
    r = ToolRegistry()
    r.register(Probe())
    return r


async def _both(registry: ToolRegistry, args: dict[str, Any]) -> ToolResult:
    """Call with the raw JSON text and with the parsed object: the answers must agree."""
    raw = await registry.execute("probe", json.dumps(args))
    parsed = await registry.execute("probe", args)
    assert (raw.success, raw.output) == (parsed.success, parsed.output)
    return raw


@pytest.mark.anyio
async def test_values_read_as_json_on_every_path(registry: ToolRegistry) -> None:
    ok = await _both(registry, {"path": "a", "mode": "slow", "pair": [1, 2], "tags": ["x"]})
    assert ok.success, ok.output
    assert json.loads(ok.output) == {
        "path": "a",
        "start": 1,
        "mode": "slow",
        "pair": [1, 2],
        "tags": ["x"],
        "inner": None,
        "flag": False,
    }


@pytest.mark.anyio
async def test_integral_floats_fill_integers_at_any_depth(registry: ToolRegistry) -> None:
    ok = await _both(registry, {"path": "a", "start": 2.0, "inner": {"n": 1e2}, "pair": [1.0, 2]})
    assert ok.success, ok.output
    data = json.loads(ok.output)
    assert data["start"] == 2 and data["inner"] == {"n": 100} and data["pair"] == [1, 2]
    assert (await registry.execute("probe", '{"path": "a", "start": 1e2}')).success
    bad = await _both(registry, {"path": "a", "start": 2.5})
    assert bad.error_kind is ErrorKind.INVALID_ARGUMENTS and "'start'" in bad.output
    assert "got a number (2.5)" in bad.output


@pytest.mark.anyio
async def test_null_means_absent_for_an_optional_field(registry: ToolRegistry) -> None:
    ok = await _both(registry, {"path": "a", "start": None, "mode": None, "tags": None})
    assert ok.success, ok.output
    assert json.loads(ok.output)["start"] == 1 and json.loads(ok.output)["mode"] == "fast"
    bad = await _both(registry, {"path": None})
    assert bad.error_kind is ErrorKind.INVALID_ARGUMENTS
    assert "got null" in bad.output and "null null" not in bad.output


@pytest.mark.anyio
async def test_nothing_else_is_coerced(registry: ToolRegistry) -> None:
    for args, sent in (
        ({"path": "a", "start": "5"}, 'got a string ("5")'),
        ({"path": "a", "flag": "false"}, 'got a string ("false")'),
        ({"path": 3}, "got a number (3)"),
        ({"path": "a", "tags": {"k": 1}}, "got an object"),
        ({"path": "a", "mode": "medium"}, 'got a string ("medium")'),
    ):
        bad = await _both(registry, args)
        assert bad.error_kind is ErrorKind.INVALID_ARGUMENTS, (args, bad.output)
        assert sent in bad.output, (args, bad.output)


@pytest.mark.anyio
async def test_json_encoded_arrays_are_decoded_once(registry: ToolRegistry) -> None:
    ok = await _both(registry, {"path": "a", "tags": '["x", "y"]'})
    assert ok.success and json.loads(ok.output)["tags"] == ["x", "y"]


@pytest.mark.anyio
async def test_problems_listed_missing_first_up_to_five(registry: ToolRegistry) -> None:
    bad = await _both(registry, {"file": "README.md"})
    assert bad.error_kind is ErrorKind.INVALID_ARGUMENTS
    assert "missing required field 'path'; unknown field 'file'" in bad.output
    assert "more problem" not in bad.output
    assert bad.structured_metadata is not None and bad.structured_metadata["field"] == "path"
    many = await _both(
        registry, {"start": "x", "flag": 1, "a": 1, "b": 2, "c": 3, "mode": 0, "tags": 1}
    )
    text = many.output
    assert text.index("missing required field 'path'") < text.index("'start'")
    assert text.count(";") == 4 and text.rstrip().endswith("more problems)")


@pytest.mark.anyio
async def test_bad_argument_text_keeps_its_kinds(registry: ToolRegistry) -> None:
    assert (await registry.execute("probe", "{bad")).error_kind is ErrorKind.INVALID_JSON
    assert (await registry.execute("probe", "[1]")).error_kind is ErrorKind.INVALID_ARGUMENTS
    assert (await registry.execute("probe", '"x"')).error_kind is ErrorKind.INVALID_ARGUMENTS
    assert (await registry.execute("probe", "")).error_kind is ErrorKind.INVALID_ARGUMENTS
    lone = await registry.execute("probe", '{"path": "\\ud800"}')
    assert lone.error_kind is ErrorKind.INVALID_ARGUMENTS and "surrogate" in lone.output
    wide = await registry.execute("probe", '{"path": "é"}')
    assert wide.success and json.loads(wide.output)["path"] == "é"


@pytest.mark.anyio
async def test_function_tools_follow_the_same_rules() -> None:
    @tool
    def add(a: int, b: int = 0) -> int:
        """Add two integers."""
        return a + b

    registry = ToolRegistry()
    registry.register(add)
    assert (await registry.execute("add", '{"a": 1, "b": 2}')).output == "3"
    assert (await registry.execute("add", '{"a": 1e1, "b": null}')).output == "10"
    refused = await registry.execute("add", '{"a": "1"}')
    assert (
        refused.error_kind is ErrorKind.INVALID_ARGUMENTS and 'got a string ("1")' in refused.output
    )
    missing = await registry.execute("add", {"b": 1})
    assert "missing required field 'a'" in missing.output


# ---------------------------------------------------------------- one rule, two paths


class Same(ToolArgs):
    a: int
    b: str = ""
    c: bool = False
    d: list[int] = Field(default_factory=list)
    e: int | None = None


_SCHEMA = json_schema_of(Same)
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.sampled_from([2.0, 1e2, 2.5, -0.0]),
    st.text(max_size=5),
    st.sampled_from(["[1, 2]", "[1.0]", '{"k": 1}', "5", "false"]),
    st.lists(st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False)), max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e", "zz"]), _VALUES, max_size=5))
@example({"a": 0, "d": "[0.0]"})  # a JSON-encoded array of integral floats (found by hypothesis)
@example({"a": 0, "d": "[1.0, 2]"})
def test_json_schema_tools_and_typed_tools_read_arguments_alike(args: dict[str, Any]) -> None:
    try:
        typed: dict[str, Any] | None = validate_arguments_of(Same, args, "t").model_dump()
    except ArgumentError:
        typed = None
    try:
        plain: dict[str, Any] | None = validate_arguments(dict(args), _SCHEMA, tool_name="t")
    except ArgumentError:
        plain = None
    assert (typed is None) == (plain is None), (args, typed, plain)
    if typed is not None and plain is not None:
        defaults = Same(a=0).model_dump()
        assert typed == {**defaults, **plain}, (args, typed, plain)


def test_a_json_encoded_array_gets_the_integral_float_leniency_too() -> None:
    assert validate_arguments_of(Same, {"a": 0, "d": "[2.0, 3]"}, "t").d == [2, 3]
    assert validate_arguments(dict({"a": 0, "d": "[2.0]"}), _SCHEMA, tool_name="t")["d"] == [2]
    with pytest.raises(ArgumentError):
        validate_arguments_of(Same, {"a": 0, "d": "[2.5]"}, "t")
