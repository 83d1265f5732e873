"""Arguments, in one module: the 1 MiB limit, exact size estimation, parsing, the
leniencies and validation, for typed and JSON-schema tools alike (octos
``crates/octos-agent/src/tools/registry.rs``).

A model sends tool arguments as a string. :func:`parse_arguments` checks its byte length
against the limit *before* parsing it, so a huge argument is refused without building a
huge object; arguments that arrive already parsed are sized with :func:`estimate_json_size`
without serialising them. Then:

* a JSON-schema tool's arguments are checked with :func:`validate_arguments` against its
  schema (Draft 2020-12, ``jsonschema``);
* a typed tool's (:mod:`octos_tools.typed`) are validated into its pydantic ``Args`` model
  by :func:`typed_call_arguments` (straight from the JSON text when it is short ASCII),
  :func:`validate_json_arguments` and :func:`validate_arguments_of`.

Both apply the same leniencies (:func:`apply_leniencies`) and report problems the same way
(:func:`join_problems`). This module imports nothing of the tool model: typed tools, the
registry and the pipeline call it, never the other way round.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import ArgumentError, ErrorKind

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

__all__ = [
    "MAX_ARGS_SIZE",
    "RawArguments",
    "apply_leniencies",
    "check_json_values",
    "compile_schema",
    "describe_value",
    "estimate_json_size",
    "format_validation_error",
    "join_problems",
    "parse_arguments",
    "typed_call_arguments",
    "validate_arguments",
    "validate_arguments_of",
    "validate_json_arguments",
]

RawArguments = str | bytes | Mapping[str, Any] | None
"""What a model (or a library caller) sends as a call's arguments."""

ArgsT = TypeVar("ArgsT", bound=BaseModel)

FAST_JSON_CHARS = 4000
"""Raw strings up to this length (ASCII, no ``\\u`` escape) are validated straight from
JSON: they cannot hold a lone surrogate or an integer Python refuses to print."""

MAX_ARGS_SIZE = 1_048_576
"""The argument limit in bytes (1 MiB, as octos ``tools/registry.rs``). A raw string of
exactly this many bytes is accepted; one byte more is refused with ``args_too_large``."""

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
    Unlike octos's estimate (``crates/octos-core/src/utils.rs``), control characters are
    counted as JSON escapes them (``\\u0001`` is 6 bytes).

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


_JSON_SCALARS = (str, int, float, bool, type(None))


def check_json_values(value: Any, tool_name: str) -> None:
    """Refuse arguments holding a value JSON cannot carry (bytes, sets, arbitrary objects,
    non-string keys), as Python callers can send them.

    Raises:
        ArgumentError: ``invalid_arguments`` naming the field (``details["field"]``).
    """
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, _JSON_SCALARS):
            continue
        if isinstance(item, Mapping):
            for key, sub in item.items():
                if not isinstance(key, str):
                    where = path or "(arguments)"
                    raise ArgumentError(
                        ErrorKind.INVALID_ARGUMENTS,
                        f"invalid arguments for {tool_name!r}: field {where!r} has the key "
                        f"{key!r} ({type(key).__name__}); JSON object keys are strings",
                        field=path or None,
                    )
                stack.append((sub, f"{path}.{key}" if path else key))
        elif isinstance(item, list | tuple):
            stack.extend((sub, f"{path}.{i}" if path else str(i)) for i, sub in enumerate(item))
        else:
            where = path or "(arguments)"
            raise ArgumentError(
                ErrorKind.INVALID_ARGUMENTS,
                f"invalid arguments for {tool_name!r}: field {where!r} holds a "
                f"{type(item).__name__}, which JSON cannot carry; send a string, number, "
                "boolean, null, array or object",
                field=path or None,
            )


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
        check_json_values(raw, tool_name)
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
    from jsonschema import Draft202012Validator

    from .schema_regex import BoundedValidator

    schema = json.loads(schema_json)
    Draft202012Validator.check_schema(schema)
    validator: Draft202012Validator = BoundedValidator(schema)  # patterns on RE2
    return validator


def compile_schema(schema: Mapping[str, Any]) -> Draft202012Validator:
    """A cached Draft 2020-12 validator for ``schema``.

    Raises:
        jsonschema.SchemaError: if ``schema`` is not a valid JSON Schema.
    """
    return _validator_for(json.dumps(schema, sort_keys=True))


def _types(schema: Mapping[str, Any]) -> set[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str)}
    found: set[str] = set()
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for option in options:
                if isinstance(option, Mapping):
                    found |= _types(option)
    return found


def _admits_null(schema: Mapping[str, Any]) -> bool:
    if "null" in _types(schema):
        return True
    const = schema.get("const", ...)
    enum = schema.get("enum")
    return const is None or (isinstance(enum, list) and None in enum)


_SHAPES = frozenset({"properties", "items", "prefixItems"})


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    """Follow a local ``$ref`` (``#/$defs/Name``) and unwrap a one-object ``anyOf`` /
    ``oneOf`` (pydantic writes ``Optional[Model]`` so) to the schema that describes an
    object or array."""
    for _ in range(8):
        if not isinstance(schema, Mapping):
            return schema
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            node: Any = root
            for part in ref[2:].split("/"):
                node = node.get(part) if isinstance(node, Mapping) else None
            schema = node
            continue
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and not _SHAPES & schema.keys():
                shaped = [
                    o
                    for o in (_resolve(o, root) for o in options)
                    if isinstance(o, Mapping) and _SHAPES & o.keys()
                ]
                if len(shaped) == 1:
                    return {**shaped[0], "type": sorted(_types(schema) | _types(shaped[0]))}
        return schema
    return schema


def apply_leniencies(args: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """The argument leniencies, applied where ``schema`` (a JSON Schema object, local
    ``$ref`` s followed) asks for them, at any depth:

    * an integral number (``2.0``, ``1e2``) where only an integer is allowed becomes the
      integer (a fractional one is left for validation to refuse);
    * ``null`` for a property that is not required and does not admit null is removed
      (the field is absent);
    * a JSON-encoded array or object string where the schema wants an array or object (and
      no string) is decoded once.

    Returns:
        ``args`` itself when nothing applies, else a changed copy (``args`` is not changed).
    """
    out = _lenient(args, schema, schema)
    return out if isinstance(out, dict) else args


def _lenient(value: Any, schema: Any, root: Mapping[str, Any]) -> Any:
    """``value`` with the argument leniencies applied where ``schema`` asks for them
    (returns ``value`` itself when nothing changes)."""
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping):
        return value
    types = _types(schema)
    if isinstance(value, float) and "integer" in types and "number" not in types:
        if value.is_integer() and math.isfinite(value):
            return int(value)
        return value
    if isinstance(value, str) and "string" not in types and types & {"array", "object"}:
        stripped = value.strip()
        if stripped[:1] in ("[", "{"):
            try:
                decoded = json.loads(stripped)
            except (ValueError, RecursionError):
                return value
            if ("array" in types and isinstance(decoded, list)) or (
                "object" in types and isinstance(decoded, dict)
            ):
                # the decoded value gets the other leniencies (``"[2.0]"`` for a list of
                # integers is ``[2]``); being a list or dict, it is not decoded again
                return _lenient(decoded, schema, root)
        return value
    if isinstance(value, dict):
        props = schema.get("properties")
        if not isinstance(props, Mapping):
            return value
        required = schema.get("required")
        required_names = set(required) if isinstance(required, list) else set()
        out = value
        for key, item in value.items():
            sub = _resolve(props.get(key), root)
            if not isinstance(sub, Mapping):
                continue
            if item is None and key not in required_names and not _admits_null(sub):
                new: Any = _ABSENT
            else:
                new = _lenient(item, sub, root)
            if new is not item:
                if out is value:
                    out = dict(value)
                if new is _ABSENT:
                    del out[key]
                else:
                    out[key] = new
        return out
    if isinstance(value, list):
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        if not isinstance(items, Mapping) and not prefix:
            return value
        new_list = [
            _lenient(v, prefix[i] if i < len(prefix) else items, root) for i, v in enumerate(value)
        ]
        return value if all(a is b for a, b in zip(new_list, value, strict=True)) else new_list
    return value


_ABSENT = object()
MAX_PROBLEMS = 5
"""How many problems an ``invalid_arguments`` message lists (missing fields first)."""


def describe_value(value: Any) -> str:
    """What the model sent, in the words an argument error uses: ``got null``, ``got a
    string ("5")``, ``got a number (2.5)``, ``got a boolean (true)``, ``got an array``,
    ``got an object``."""
    if value is None:
        return "got null"
    if isinstance(value, bool):
        return f"got a boolean ({'true' if value else 'false'})"
    if isinstance(value, int | float):
        text = repr(value) if not isinstance(value, int) or value.bit_length() < 64 else "…"
        return f"got a number ({text})"
    if isinstance(value, str):
        preview = value if len(value) <= 40 else value[:37] + "..."
        return f"got a string ({json.dumps(preview, ensure_ascii=False)})"
    if isinstance(value, list | tuple):
        return "got an array"
    if isinstance(value, Mapping):
        return "got an object"
    return f"got a {type(value).__name__}"


def join_problems(tool_name: str, problems: list[tuple[str, str | None]]) -> ArgumentError:
    """The ``invalid_arguments`` error listing ``problems`` (``(text, field)`` pairs, in
    order: missing fields, then wrong values, then unknown fields): up to
    :data:`MAX_PROBLEMS`, then ``(and N more problems)``; ``details["field"]`` names the
    first problem's field."""
    shown = problems[:MAX_PROBLEMS]
    text = "; ".join(p for p, _ in shown)
    more = len(problems) - len(shown)
    if more > 0:
        text += f" (and {more} more problem{'s' if more > 1 else ''})"
    return ArgumentError(
        ErrorKind.INVALID_ARGUMENTS,
        f"invalid arguments for {tool_name!r}: {text}",
        field=shown[0][1] if shown else None,
    )


def _type_words(expected: Any) -> str:
    names = [expected] if isinstance(expected, str) else list(expected or [])
    words = {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "boolean": "a boolean",
        "array": "an array",
        "object": "an object",
        "null": "null",
    }
    return " or ".join(words.get(str(n), str(n)) for n in names) or "another type"


def _problems(errors: list[Any]) -> list[tuple[str, str | None]]:
    missing: list[tuple[str, str | None]] = []
    other: list[tuple[str, str | None]] = []
    unknown: list[tuple[str, str | None]] = []
    for err in errors:
        path = ".".join(str(p) for p in err.absolute_path)
        if err.validator == "required":
            instance = err.instance if isinstance(err.instance, Mapping) else {}
            for name in err.validator_value:
                if name not in instance:
                    field = ".".join(filter(None, [path, str(name)]))
                    missing.append((f"missing required field {field!r}", field))
        elif err.validator == "additionalProperties":
            allowed = (err.schema.get("properties") or {}).keys()
            extra = [k for k in err.instance if k not in allowed]
            for name in extra:
                field = ".".join(filter(None, [path, str(name)]))
                unknown.append((f"unknown field {field!r}", field))
        elif err.validator == "type":
            where = path or "(arguments)"
            other.append(
                (
                    f"field {where!r} must be {_type_words(err.validator_value)}, "
                    f"{describe_value(err.instance)}",
                    path or None,
                )
            )
        else:
            where = path or "(arguments)"
            other.append((f"field {where!r}: {err.message}", path or None))
    return missing + other + unknown


def validate_arguments(
    args: dict[str, Any],
    schema: Mapping[str, Any],
    *,
    tool_name: str,
    validator: Draft202012Validator | None = None,
) -> dict[str, Any]:
    """Validate ``args`` against a JSON-schema tool's ``schema`` (Draft 2020-12).

    The argument rules (the same as typed tools', :mod:`octos_tools.typed`):

    * an ``integer`` field takes an integral number sent as ``2.0`` or ``1e2``;
    * ``null`` for a field that is not required and whose schema does not admit null
      means the field is absent;
    * a JSON-encoded string where the schema wants an array or object is decoded once;
    * nothing else is coerced (the string ``"false"`` is not a boolean).

    Args:
        args: the parsed arguments.
        schema: the tool's input schema.
        tool_name: used in messages.
        validator: a pre-compiled validator of ``schema`` (see :func:`compile_schema`).

    Returns:
        The arguments with the leniencies applied.

    Raises:
        ArgumentError: ``invalid_arguments`` listing up to five problems, missing required
            fields first (``got null``, ``got a string``, ...); ``details["field"]`` names
            the first.
    """
    if validator is None:
        validator = compile_schema(schema)
    args = apply_leniencies(args, schema)
    errors = list(validator.iter_errors(args))
    if not errors:
        return args
    errors.sort(key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    raise join_problems(tool_name, _problems(errors))


# ---------------------------------------------------------------------- typed models


_LENIENCY_SCHEMAS: dict[type[BaseModel], dict[str, Any]] = {}


def _leniency_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = _LENIENCY_SCHEMAS.get(model)
    if schema is None:
        schema = _LENIENCY_SCHEMAS[model] = model.model_json_schema()
    return schema


def validate_json_arguments(model: type[ArgsT], text: str | bytes, tool_name: str) -> ArgsT:
    """Validate a call's JSON argument text into ``model`` with the argument rules.

    ``text`` must be a JSON object already checked for size (the pipeline checks the raw
    bytes first); invalid JSON is reported as ``invalid_arguments`` here, so callers with
    unchecked text should use :func:`octos_tools.arguments.parse_arguments` first.

    Raises:
        ArgumentError: ``invalid_arguments`` listing up to five problems.
    """
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        first = exc
    try:
        data = json.loads(text)
    except ValueError:
        raise format_validation_error(first, tool_name) from None
    if isinstance(data, dict):
        fixed = apply_leniencies(data, _leniency_schema(model))
        if fixed is not data:
            try:
                return model.model_validate_json(json.dumps(fixed, ensure_ascii=False))
            except ValidationError as exc:
                raise format_validation_error(exc, tool_name) from None
    raise format_validation_error(first, tool_name) from None


def validate_arguments_of(model: type[ArgsT], args: Mapping[str, Any], tool_name: str) -> ArgsT:
    """Validate parsed ``args`` (JSON values) into ``model`` with the argument rules, the
    same way as their JSON text (see the module docstring).

    Raises:
        ArgumentError: ``invalid_arguments`` listing up to five problems, or naming a value
            JSON cannot carry.
    """
    check_json_values(args, tool_name)
    return validate_json_arguments(model, json.dumps(args, ensure_ascii=False), tool_name)


def format_validation_error(exc: ValidationError, tool_name: str) -> ArgumentError:
    """An ``invalid_arguments`` :class:`ArgumentError` listing up to five problems of
    ``exc``, missing required fields first; ``details["field"]`` names the first one."""
    errors = exc.errors(include_url=False)
    order = {"missing": 0, "extra_forbidden": 2}
    errors.sort(key=lambda e: order.get(e["type"], 1))
    problems: list[tuple[str, str | None]] = []
    for err in errors:
        where = ".".join(str(p) for p in err["loc"])
        kind = err["type"]
        if kind == "missing":
            problems.append((f"missing required field {where!r}", where or None))
        elif kind == "extra_forbidden":
            problems.append((f"unknown field {where!r}", where or None))
        elif kind in ("json_invalid", "json_type"):
            problems.append((f"the arguments are not a JSON object: {err['msg']}", None))
        else:
            msg = err["msg"]
            problems.append(
                (
                    f"field {where or '(arguments)'!r}: {msg}, {describe_value(err.get('input'))}",
                    where or None,
                )
            )
    return join_problems(tool_name, problems)


def typed_call_arguments(
    model: type[ArgsT], tool_name: str, raw: RawArguments, limit: int = MAX_ARGS_SIZE
) -> ArgsT:
    """A call's raw arguments validated into a typed tool's ``model``: size first, then
    the argument rules (:func:`validate_json_arguments`). A short ASCII string without
    escapes (no lone surrogate, no integer Python refuses, under the limit) is validated
    straight from JSON; anything else is parsed first (:func:`parse_arguments`).

    Raises:
        ArgumentError: ``args_too_large``, ``invalid_json`` or ``invalid_arguments``.
    """
    if (
        type(raw) is str
        and len(raw) <= FAST_JSON_CHARS
        and len(raw) <= limit
        and raw.isascii()
        and "\\u" not in raw
    ):
        try:  # model_validate_json without its Python wrapper
            return model.__pydantic_validator__.validate_json(raw)  # type: ignore[no-any-return]
        except ValidationError:
            pass  # the rules below say exactly what is wrong (or apply a leniency)
    parsed = parse_arguments(raw, tool_name=tool_name, limit=limit)
    return validate_arguments_of(model, parsed, tool_name)
