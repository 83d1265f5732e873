"""Argument safety: size before parsing, exact size estimate, schema validation (seed §6.4)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from octos_tools.arguments import (
    MAX_ARGS_SIZE,
    estimate_json_size,
    parse_arguments,
    validate_arguments,
)
from octos_tools.errors import ArgumentError, ErrorKind


def dumped(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


@pytest.mark.parametrize(
    ("value", "size"),
    [
        (None, 4),
        (True, 4),
        (False, 5),
        (42, 2),
        (2.72, 4),
        ("hello", 7),
        ('a"b', 6),
        ("a\nb", 6),
        ([], 2),
        ([1, 2, 3], 7),
        ({}, 2),
        ({"a": 1}, 7),
        ({"x": [1, 2]}, 11),
        ("\x01", 8),
        ("é", 4),
        (float("inf"), 8),
        ({1: "a", None: 2}, dumped({1: "a", None: 2})),
    ],
)
def test_estimate_matches_octos_table_and_json(value: Any, size: int) -> None:
    assert estimate_json_size(value) == size
    assert estimate_json_size(value) == dumped(value)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False)
    | st.text(alphabet=st.characters(codec="utf-8")),
    lambda children: (
        st.lists(children, max_size=6)
        | st.dictionaries(
            st.text(alphabet=st.characters(codec="utf-8"), max_size=8), children, max_size=6
        )
    ),
    max_leaves=40,
)


@settings(max_examples=400)
@given(json_values)
def test_estimate_equals_serialized_size(value: Any) -> None:
    assert estimate_json_size(value) == dumped(value)


def test_deep_nesting_does_not_recurse() -> None:
    value: Any = []
    for _ in range(100_000):
        value = [value]
    assert estimate_json_size(value) == 200_002


def test_estimate_stops_early() -> None:
    # The walk stops once past the limit: the unserialisable object is never reached.
    value = [object(), "x" * 6000]
    assert estimate_json_size(value, limit=5000) > 5000
    with pytest.raises(TypeError):
        estimate_json_size(value)


def _raw_of_size(n: int) -> str:
    prefix, suffix = '{"content":"', '"}'
    return prefix + "a" * (n - len(prefix) - len(suffix)) + suffix


def test_raw_limit_exact_and_plus_one() -> None:
    exact = _raw_of_size(MAX_ARGS_SIZE)
    assert len(exact.encode()) == MAX_ARGS_SIZE
    assert parse_arguments(exact, tool_name="t")["content"].startswith("a")
    with pytest.raises(ArgumentError) as info:
        parse_arguments(_raw_of_size(MAX_ARGS_SIZE + 1), tool_name="t")
    assert info.value.kind is ErrorKind.ARGS_TOO_LARGE
    assert str(MAX_ARGS_SIZE) in info.value.message


def test_raw_limit_counts_bytes_not_characters() -> None:
    # 600,000 "é" = 1,200,000 bytes, though only 600,000 characters
    raw = '{"c":"' + "é" * 600_000 + '"}'
    with pytest.raises(ArgumentError) as info:
        parse_arguments(raw, tool_name="t")
    assert info.value.kind is ErrorKind.ARGS_TOO_LARGE
    assert parse_arguments('{"c":"' + "é" * 400_000 + '"}', tool_name="t")


def test_oversized_raw_is_refused_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: Any, **k: Any) -> Any:
        raise AssertionError("json.loads must not run")

    monkeypatch.setattr(json, "loads", boom)
    with pytest.raises(ArgumentError) as info:
        parse_arguments("[" * (MAX_ARGS_SIZE + 1), tool_name="t")
    assert info.value.kind is ErrorKind.ARGS_TOO_LARGE


def test_parsed_args_are_sized() -> None:
    with pytest.raises(ArgumentError) as info:
        parse_arguments({"c": "a" * MAX_ARGS_SIZE}, tool_name="t")
    assert info.value.kind is ErrorKind.ARGS_TOO_LARGE


@pytest.mark.parametrize("raw", ['{"a": 1', "{'a': 1}", '{"a": 1,}', "nul"])
def test_invalid_json(raw: str) -> None:
    with pytest.raises(ArgumentError) as info:
        parse_arguments(raw, tool_name="write_file")
    assert info.value.kind is ErrorKind.INVALID_JSON
    assert "write_file" in info.value.message


def test_invalid_json_message_is_short() -> None:
    with pytest.raises(ArgumentError) as info:
        parse_arguments('{"content": "' + "a" * 20_000, tool_name="w")
    assert len(info.value.message) < 500


@pytest.mark.parametrize("raw", ["null", "[]", '"a.txt"', "42", "true"])
def test_non_object_is_invalid_arguments(raw: str) -> None:
    with pytest.raises(ArgumentError) as info:
        parse_arguments(raw, tool_name="read_file")
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS
    assert "object" in info.value.message


@pytest.mark.parametrize("raw", ["", "   ", None])
def test_empty_means_no_arguments(raw: str | None) -> None:
    assert parse_arguments(raw, tool_name="t") == {}


SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "flag": {"type": "boolean"},
        "items": {"type": "array", "items": {"type": "integer"}},
        "opts": {"type": "object", "properties": {"n": {"type": "integer"}}},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def kind_and_message(args: dict[str, Any]) -> tuple[ErrorKind, str]:
    with pytest.raises(ArgumentError) as info:
        validate_arguments(args, SCHEMA, tool_name="t")
    return info.value.kind, info.value.message


def test_missing_field_named() -> None:
    kind, message = kind_and_message({})
    assert kind is ErrorKind.INVALID_ARGUMENTS and "'path'" in message
    # the metadata names the missing field too (it was None)
    with pytest.raises(ArgumentError) as info:
        validate_arguments({}, SCHEMA, tool_name="t")
    assert info.value.details["field"] == "path"


def test_wrong_type_named_and_no_coercion() -> None:
    kind, message = kind_and_message({"path": "a", "flag": "false"})
    assert kind is ErrorKind.INVALID_ARGUMENTS and "'flag'" in message and "boolean" in message
    kind, message = kind_and_message({"path": 3})
    assert "'path'" in message


def test_unknown_field_named() -> None:
    _, message = kind_and_message({"path": "a", "bogus": 1})
    assert "bogus" in message


def test_json_encoded_array_and_object_decoded_once() -> None:
    out = validate_arguments(
        {"path": "a", "items": "[1, 2]", "opts": '{"n": 3}'}, SCHEMA, tool_name="t"
    )
    assert out["items"] == [1, 2] and out["opts"] == {"n": 3}
    # only once: a doubly-encoded array stays a string and fails
    _, message = kind_and_message({"path": "a", "items": json.dumps("[1, 2]")})
    assert "'items'" in message
    # a string field is never decoded
    assert validate_arguments({"path": "[1]"}, SCHEMA, tool_name="t")["path"] == "[1]"


def test_number_with_too_many_digits_is_invalid_json_not_a_crash() -> None:
    """Python refuses to convert integers of over 4,300 digits (CVE-2020-10735 limit):
    ``json.loads`` raises a plain ValueError, which must become invalid_json."""
    raw = '{"path": "a", "offset": ' + "9" * 5000 + "}"
    with pytest.raises(ArgumentError) as info:
        parse_arguments(raw, tool_name="t")
    assert info.value.kind is ErrorKind.INVALID_JSON
    assert "digits" in info.value.message


def test_estimate_of_huge_parsed_integer_does_not_crash() -> None:
    huge = 10**5000
    size = estimate_json_size({"n": huge})
    assert 5000 <= size <= 5020
    assert estimate_json_size({"n": -huge}) >= 5001


@pytest.mark.anyio
async def test_registry_execute_never_raises_on_odd_arguments() -> None:
    from octos_tools.registry import ToolRegistry

    from .helpers import EchoTool

    registry = ToolRegistry()
    registry.register(EchoTool("echo"))
    for raw in (
        '{"text": ' + "1" * 5000 + "}",
        {"text": 10**5000},
        '{"text": "\\ud800"}',
        '{"text": 1e999999}',
        '{"text": NaN}',
    ):
        result = await registry.execute("echo", raw)  # type: ignore[arg-type]
        assert not result.success, raw
        assert result.error_kind in (ErrorKind.INVALID_JSON, ErrorKind.INVALID_ARGUMENTS), (
            raw,
            result.output,
        )


def test_lone_surrogates_refused_but_escaped_pairs_accepted() -> None:
    for raw in ('{"p": "a\\ud800"}', '{"p": ["\\uDFFF"]}', '{"\\udc00": 1}', '{"p": "x\ud800"}'):
        with pytest.raises(ArgumentError) as info:
            parse_arguments(raw, tool_name="t")
        assert info.value.kind is ErrorKind.INVALID_ARGUMENTS
        assert "surrogate" in info.value.message
    with pytest.raises(ArgumentError):
        parse_arguments({"p": {"q": "\udc80"}}, tool_name="t")
    assert parse_arguments('{"p": "\\ud83d\\ude00"}', tool_name="t") == {"p": "\U0001f600"}


# ---------------------------------------------------------------- the argument rules


def test_integral_numbers_fill_integer_fields_fractional_ones_do_not() -> None:
    out = validate_arguments(
        {"path": "a", "items": [1.0, 2e0], "opts": {"n": 1e2}}, SCHEMA, tool_name="t"
    )
    assert out["items"] == [1, 2] and out["opts"] == {"n": 100}
    assert all(type(v) is int for v in out["items"]) and type(out["opts"]["n"]) is int
    kind, message = kind_and_message({"path": "a", "items": [1.5]})
    assert kind is ErrorKind.INVALID_ARGUMENTS and "'items.0'" in message
    assert "got a number (1.5)" in message


def test_null_for_an_optional_field_is_absent_for_a_required_one_got_null() -> None:
    assert validate_arguments({"path": "a", "flag": None}, SCHEMA, tool_name="t") == {"path": "a"}
    nullable = {
        "type": "object",
        "properties": {"x": {"type": ["integer", "null"]}},
        "additionalProperties": False,
    }
    assert validate_arguments({"x": None}, nullable, tool_name="t") == {"x": None}
    kind, message = kind_and_message({"path": None})
    assert kind is ErrorKind.INVALID_ARGUMENTS
    assert "field 'path' must be a string, got null" in message and "null null" not in message


def test_messages_say_what_was_sent_and_list_five_problems_missing_first() -> None:
    _, message = kind_and_message({"flag": "false", "file": "x", "a": 1, "b": 2, "c": 3, "d": 4})
    assert message.startswith("invalid arguments for 't': missing required field 'path'")
    assert 'got a string ("false")' in message
    assert message.count("unknown field") == 3  # five problems listed in all
    assert message.endswith("(and 2 more problems)")
    _, message = kind_and_message({"path": "a", "opts": [1]})
    assert "field 'opts' must be an object, got an array" in message
    _, message = kind_and_message({"path": {"k": 1}})
    assert "got an object" in message


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (b"bytes", "path"),
        ({1, 2}, "path"),
        (object(), "path"),
        ({"n": {3}}, "opts.n"),
        ([1, b"x"], "items.1"),
    ],
)
def test_values_json_cannot_carry_are_invalid_arguments_naming_the_field(
    value: Any, field: str
) -> None:
    top = field.split(".")[0]
    with pytest.raises(ArgumentError) as info:
        parse_arguments({top: value}, tool_name="t")
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS
    assert info.value.details["field"] == field
    assert repr(field) in info.value.message


def test_non_string_keys_are_invalid_arguments() -> None:
    for args in ({1: "x"}, {"opts": {(1, 2): 3}}):
        with pytest.raises(ArgumentError) as info:
            parse_arguments(args, tool_name="t")  # type: ignore[arg-type]
        assert info.value.kind is ErrorKind.INVALID_ARGUMENTS
        assert "keys are strings" in info.value.message


@pytest.mark.anyio
async def test_python_api_values_never_become_internal_errors() -> None:
    from octos_tools.function_tool import tool
    from octos_tools.registry import ToolRegistry

    from .helpers import EchoTool

    @tool
    def typed(text: str = "") -> str:
        return text

    registry = ToolRegistry()
    registry.register(EchoTool("echo"))
    registry.register(typed)
    for name in ("echo", "typed"):
        for value in (b"x", {1}, object(), {1: 2}, [b"y"], 1 + 2j):
            result = await registry.execute(name, {"text": value})
            assert result.error_kind is ErrorKind.INVALID_ARGUMENTS, (name, value, result.output)
            assert result.structured_metadata is not None
            assert str(result.structured_metadata.get("field", "")).startswith("text")
        result = await registry.execute(name, {3: "x"})
        assert result.error_kind is ErrorKind.INVALID_ARGUMENTS, result.output
