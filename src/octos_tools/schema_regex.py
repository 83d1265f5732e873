"""JSON Schema ``pattern`` checks that cannot backtrack without limit.

``jsonschema`` runs ``pattern``, ``patternProperties`` (and through them ``propertyNames``)
with Python's backtracking ``re``: a third party's schema (a mounted MCP server's tool) with
a pattern such as ``^(a+)+$`` takes time doubling with each character of the argument, and
freezes the event loop that serves every client. Here they run on RE2 (``google-re2``), whose
matching time is linear in the text (https://github.com/google/re2/wiki/WhyRE2).

RE2 has no backreferences or lookaround. A pattern it cannot compile is **not checked**
here (it is logged once); the tool's own server still validates its arguments. ``format``
is an annotation only (no format checker is installed), so it runs no regular expression.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

__all__ = ["BoundedValidator", "bounded_search"]

logger = logging.getLogger("octos_tools.schema_regex")


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        logger.warning("schema pattern %r is not checked: RE2 cannot run it (%s)", pattern, exc)
        return None


def bounded_search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text`` (``re.search`` semantics), in time
    linear in ``len(text)``; ``True`` for a pattern RE2 cannot compile (not checked)."""
    compiled = _compiled(pattern)
    if compiled is None:
        return True
    try:
        return compiled.search(text) is not None
    except UnicodeEncodeError:  # a lone surrogate: RE2 reads UTF-8
        return (
            compiled.search(text.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))
            is not None
        )


def _pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Any:
    from jsonschema import ValidationError

    if validator.is_type(instance, "string") and not bounded_search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(validator: Any, properties: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            if bounded_search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


@lru_cache(maxsize=1)
def _validator_class() -> Any:
    from jsonschema import Draft202012Validator, validators

    return validators.extend(  # type: ignore[no-untyped-call]
        Draft202012Validator,
        {"pattern": _pattern, "patternProperties": _pattern_properties},
    )


def BoundedValidator(schema: Any) -> Any:
    """A Draft 2020-12 validator of ``schema`` whose patterns run on RE2 (see the module
    docstring). Its ``check_schema`` is Draft 2020-12's."""
    return _validator_class()(schema)
