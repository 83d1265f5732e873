"""Argument safety: the 1 MiB limit, exact size estimation, parsing and validation (seed §6.4).

A model sends tool arguments as a string. :func:`parse_arguments` checks its byte length
against the limit *before* parsing it, so a huge argument is refused without building a
huge object; arguments that arrive already parsed are sized with :func:`estimate_json_size`
without serialising them. :func:`validate_arguments` then checks them against the tool's
JSON Schema (Draft 2020-12, ``jsonschema``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from .errors import ArgumentError, ErrorKind

__all__ = [
    "MAX_ARGS_SIZE",
    "estimate_json_size",
    "parse_arguments",
    "validate_arguments",
]

MAX_ARGS_SIZE = 1_048_576
"""The argument limit in bytes (1 MiB, seed §6.4). A raw string of exactly this many bytes
is accepted; one byte more is refused with ``args_too_large``."""

_PREVIEW_CHARS = 120

# Characters json.dumps escapes (ensure_ascii=False): '"', '\\' and U+0000..U+001F.
_ESCAPED = re.compile(r'["\\\x00-\x1f]')
_SHORT_ESCAPES = frozenset('"\\\n\r\t\b\f')


def _string_size(s: str) -> int:
    """Bytes of ``json.dumps(s, ensure_ascii=False)`` encoded as UTF-8, quotes included."""
    size = len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))
    for ch in _ESCAPED.findall(s):
        size += 1 if ch in _SHORT_ESCAPES else 5  # "\n" is 2 bytes, "\u0001" is 6
    return size + 2


def _scalar_size(value: Any) -> int:
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    if isinstance(value, str):
        return _string_size(value)
    if isinstance(value, int):
        bits = value.bit_length()
        if bits > 10_000:  # repr() refuses over 4,300 digits; estimate from the bit length
            return int(bits * math.log10(2)) + 1 + (value < 0)
        return len(int.__repr__(value))
    if isinstance(value, float):
        if math.isnan(value):
            return 3  # NaN
        if math.isinf(value):
            return 8 if value > 0 else 9  # Infinity / -Infinity
        return len(float.__repr__(value))
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _key_size(key: Any) -> int:
    if isinstance(key, str):
        return _string_size(key)
    # json.dumps turns non-string keys into strings: True -> "true", 1 -> "1", None -> "null"
    return _scalar_size(key) + 2


def estimate_json_size(value: Any, limit: int | None = None) -> int:
    """Exact UTF-8 byte size of ``value`` as compact JSON, without serialising it.

    The result equals
    ``len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())``
    for every value ``json.dumps`` accepts (dicts, lists, tuples, str, int, float, bool,
    None). The walk is iterative, so nesting depth is not limited by the recursion limit.
    Unlike octos's estimate (reference §4), control characters are counted as JSON escapes
    them (``\\u0001`` is 6 bytes).

    Args:
        value: a JSON-like Python value.
        limit: stop as soon as the size exceeds ``limit`` bytes and return the partial
            size (which is then ``> limit``); ``None`` walks everything.

    Returns:
        The size in bytes (or a partial size above ``limit``).

    Raises:
        TypeError: for a value ``json.dumps`` could not serialise.
    """
    total = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            n = len(item)
            total += 2 + (n - 1 if n else 0) + n  # braces, commas, colons
            for k, v in item.items():
                total += _key_size(k)
                stack.append(v)
        elif isinstance(item, list | tuple):
            n = len(item)
            total += 2 + (n - 1 if n else 0)
            stack.extend(item)
        else:
            total += _scalar_size(item)
        if limit is not None and total > limit:
            return total
    return total


def _preview(text: str) -> str:
    one_line = text.replace("\n", "\\n")
    if len(one_line) <= _PREVIEW_CHARS:
        return one_line
    return one_line[:_PREVIEW_CHARS] + f"… ({len(text)} chars in all)"


def _utf8_len(text: str, limit: int) -> int:
    """UTF-8 byte length of ``text``; only its lower bound when that already exceeds ``limit``."""
    if len(text) > limit or text.isascii():  # every character is at least one byte
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def parse_arguments(
    raw: str | bytes | Mapping[str, Any] | None,
    *,
    tool_name: str,
    limit: int = MAX_ARGS_SIZE,
) -> dict[str, Any]:
    """Turn what the model sent into an argument object, checking size first.

    * A string (or bytes) is measured in UTF-8 bytes against ``limit`` *before*
      ``json.loads``. An empty or all-blank string means "no arguments" (``{}``).
    * A mapping is measured with :func:`estimate_json_size` (early exit at ``limit``).

    Args:
        raw: the raw argument text, or already-parsed arguments.
        tool_name: used in error messages.
        limit: the size limit in bytes (default :data:`MAX_ARGS_SIZE`).

    Returns:
        The arguments as a ``dict``.

    Raises:
        ArgumentError: ``args_too_large`` over the limit; ``invalid_json`` when the text is
            not JSON; ``invalid_arguments`` when it is JSON but not an object.
    """
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        size = estimate_json_size(raw, limit)
        if size > limit:
            raise _too_large(tool_name, size, limit, exact=False)
        _refuse_lone_surrogates(raw, tool_name)
        return dict(raw)
    if isinstance(raw, bytes | bytearray):
        if len(raw) > limit:
            raise _too_large(tool_name, len(raw), limit, exact=True)
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ArgumentError(
                ErrorKind.INVALID_JSON,
                f"arguments for {tool_name!r} are not UTF-8 text (byte {exc.start})",
            ) from None
    elif isinstance(raw, str):
        text = raw
        size = _utf8_len(text, limit)
        if size > limit:
            raise _too_large(tool_name, size, limit, exact=True)
    else:
        raise ArgumentError(
            ErrorKind.INVALID_ARGUMENTS,
            f"arguments for {tool_name!r} must be a JSON object, got {type(raw).__name__}",
        )
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArgumentError(
            ErrorKind.INVALID_JSON,
            f"arguments for {tool_name!r} are not valid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno}); they begin: {_preview(text)}",
        ) from None
    except RecursionError:
        raise ArgumentError(
            ErrorKind.INVALID_JSON, f"arguments for {tool_name!r} are nested too deeply"
        ) from None
    except ValueError as exc:  # e.g. an integer of over 4,300 digits (Python's own limit)
        raise ArgumentError(
            ErrorKind.INVALID_JSON,
            f"arguments for {tool_name!r} cannot be read: {exc}; they begin: {_preview(text)}",
        ) from None
    if _MAYBE_SURROGATE.search(text):
        _refuse_lone_surrogates(value, tool_name)
    if not isinstance(value, dict):
        raise ArgumentError(
            ErrorKind.INVALID_ARGUMENTS,
            f"arguments for {tool_name!r} must be a JSON object, got "
            f"{_json_type_name(value)}: {_preview(text)}",
        )
    return value


_MAYBE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
"""A ``\\uD800``-``\\uDFFF`` escape or a raw surrogate: the parsed value may hold a lone one."""
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _refuse_lone_surrogates(value: Any, tool_name: str) -> None:
    """Refuse a string (or key) holding a lone UTF-16 surrogate: it is not a Unicode
    character, so no path, command or file content can carry it (ours; JSON's grammar
    allows the escape). Parsed arguments are also refused for an integer Python cannot
    print (over 4,300 digits). Iterative, like :func:`estimate_json_size`."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found = _LONE_SURROGATE.search(item)
            if found:
                raise ArgumentError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"arguments for {tool_name!r} hold a lone surrogate "
                    f"(U+{ord(found.group()):04X} at character {found.start()} of a string), "
                    "which is not a Unicode character; send the text as UTF-8",
                )
        elif isinstance(item, int) and item.bit_length() > 14_000:
            raise ArgumentError(
                ErrorKind.INVALID_ARGUMENTS,
                f"arguments for {tool_name!r} hold an integer of over 4,000 digits",
            )
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def _json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def _too_large(tool_name: str, size: int, limit: int, *, exact: bool) -> ArgumentError:
    approx = "" if exact else "more than "
    return ArgumentError(
        ErrorKind.ARGS_TOO_LARGE,
        f"arguments for {tool_name!r} are {approx}{size} bytes; the limit is {limit} bytes. "
        "Split the work into smaller calls (e.g. write a file in parts).",
        size=size,
        limit=limit,
    )


@lru_cache(maxsize=1024)
def _validator_for(schema_json: str) -> Draft202012Validator:
    schema = json.loads(schema_json)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def compile_schema(schema: Mapping[str, Any]) -> Draft202012Validator:
    """A cached Draft 2020-12 validator for ``schema``.

    Raises:
        jsonschema.SchemaError: if ``schema`` is not a valid JSON Schema.
    """
    return _validator_for(json.dumps(schema, sort_keys=True))


def _wants(schema: Mapping[str, Any], type_name: str) -> bool:
    t = schema.get("type")
    return t == type_name or (isinstance(t, list) and type_name in t)


def _decode_json_strings(args: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """The documented leniency: a JSON-encoded string where the schema wants an array or an
    object is decoded once (models sometimes double-encode nested values)."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return args
    out = args
    for key, value in args.items():
        sub = props.get(key)
        if not isinstance(value, str) or not isinstance(sub, Mapping):
            continue
        if _wants(sub, "string"):
            continue
        want_array, want_object = _wants(sub, "array"), _wants(sub, "object")
        if not (want_array or want_object):
            continue
        stripped = value.strip()
        if not stripped.startswith(("[", "{")):
            continue
        try:
            decoded = json.loads(stripped)
        except (json.JSONDecodeError, RecursionError):
            continue
        if (want_array and isinstance(decoded, list)) or (
            want_object and isinstance(decoded, dict)
        ):
            if out is args:
                out = dict(args)
            out[key] = decoded
    return out


def _field_path(err: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in err.absolute_path]
    return ".".join(parts) if parts else ""


def validate_arguments(
    args: dict[str, Any],
    schema: Mapping[str, Any],
    *,
    tool_name: str,
    validator: Draft202012Validator | None = None,
) -> dict[str, Any]:
    """Validate ``args`` against ``schema`` (Draft 2020-12); no silent coercion.

    The one leniency: a JSON-encoded string where the schema wants an array or object is
    decoded once. Everything else must match as sent (the string ``"false"`` is not a
    boolean).

    Args:
        args: the parsed arguments.
        schema: the tool's input schema.
        tool_name: used in messages.
        validator: a pre-compiled validator of ``schema`` (see :func:`compile_schema`).

    Returns:
        The (possibly leniency-decoded) arguments.

    Raises:
        ArgumentError: ``invalid_arguments`` naming the field and what was expected.
    """
    if validator is None:
        validator = compile_schema(schema)
    args = _decode_json_strings(args, schema)
    errors = list(validator.iter_errors(args))
    if not errors:
        return args
    err = best_match(errors)
    assert err is not None
    path = _field_path(err)
    field = path
    if err.validator == "required":
        missing = [r for r in err.validator_value if r not in (err.instance or {})]
        field = ".".join(filter(None, [path, missing[0] if missing else ""]))
        message = f"missing required field {field!r}"
    elif err.validator == "additionalProperties":
        allowed = sorted((err.schema.get("properties") or {}).keys())
        extra = sorted(set(err.instance) - set(allowed)) if isinstance(err.instance, dict) else []
        where = f" in {path!r}" if path else ""
        message = f"unknown field(s) {extra}{where}; allowed fields: {allowed}"
    elif err.validator == "type":
        message = (
            f"field {path or '(arguments)'!r} must be of type {err.validator_value}, "
            f"got {_json_type_name(err.instance)} {_preview(json.dumps(err.instance))}"
        )
    else:
        message = f"field {path or '(arguments)'!r}: {err.message}"
    extra_count = len(errors) - 1
    if extra_count:
        message += f" (and {extra_count} more problem{'s' if extra_count > 1 else ''})"
    raise ArgumentError(
        ErrorKind.INVALID_ARGUMENTS,
        f"invalid arguments for {tool_name!r}: {message}",
        field=field or None,
    )
