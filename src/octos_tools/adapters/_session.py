"""What every framework adapter needs from a :class:`~octos_tools.session.ToolSession`.

The adapters list the session's visible specs before each model request and run every call
through :meth:`ToolSession.call` (the one call path: policy, deferral, size check, validation
once, timeout, output cap, redaction). This module hides the differences between session
versions (``specs()`` / ``activate()`` on the session, or the registry's own methods) and
holds the rules the adapters share: which failures are worth a retry, and the text a model
sees for a failed result.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING

from ..errors import ErrorKind
from ..tool import ToolResult, ToolSpec

if TYPE_CHECKING:
    from ..registry import ToolRegistry
    from ..session import ToolSession

__all__ = [
    "RETRY_KINDS",
    "activate",
    "as_session",
    "deferred_names",
    "failure_text",
    "import_extra",
    "listed_specs",
]

RETRY_KINDS: frozenset[ErrorKind] = frozenset(
    {ErrorKind.INVALID_ARGUMENTS, ErrorKind.INVALID_JSON, ErrorKind.ARGS_TOO_LARGE}
)
"""Failures the model fixes by sending the same call with other arguments; frameworks with
a retry convention (pydantic-ai's ``ModelRetry``) get these as retries."""


def import_extra(module: str, extra: str) -> ModuleType:
    """Import ``module`` of an optional framework, or raise a clear ``ImportError``.

    Args:
        module: the module to import (``"pydantic_ai"``).
        extra: the octos-tools extra that installs it (``"pydantic-ai"``).

    Raises:
        ImportError: naming ``pip install 'octos-tools[extra]'``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"this adapter needs {module!r}: install it with pip install 'octos-tools[{extra}]'"
        ) from exc


def as_session(source: ToolSession | ToolRegistry) -> ToolSession:
    """``source`` itself when it is a session, else a new session over the registry.

    Raises:
        TypeError: for anything else.
    """
    from ..registry import ToolRegistry
    from ..session import ToolSession

    if isinstance(source, ToolSession):
        return source
    if isinstance(source, ToolRegistry):
        return ToolSession(source)
    raise TypeError(f"expected a ToolSession or a ToolRegistry, got {type(source).__name__}")


def listed_specs(session: ToolSession, *, request: bool) -> list[ToolSpec]:
    """The specs the model sees now.

    Args:
        session: the session.
        request: ``True`` right before a model request: the session's housekeeping runs
            (LRU tick and eviction, :meth:`ToolSession.before_model_request`); ``False``
            for a pure read.
    """
    if request:
        return list(session.before_model_request())
    specs = getattr(session, "specs", None)
    if callable(specs):
        return list(specs())
    return list(session.current_specs())


def deferred_names(session: ToolSession) -> list[str]:
    """The names deferred in ``session`` (one call or one activation away)."""
    names = getattr(session, "deferred_names", None)
    if callable(names):
        return list(names())
    return session.registry.deferred_names()


def activate(session: ToolSession, names: Iterable[str]) -> list[str]:
    """Activate deferred ``names`` (tool names or groups) in ``session``; returns the tool
    names activated."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return []
    method = getattr(session, "activate", None)
    if callable(method):
        return list(method(wanted))
    done: list[str] = []
    for name in wanted:
        done.extend(session.registry.activate(name))
    return done


def failure_text(result: ToolResult) -> str:
    """The text a model sees for a failed ``result``: its output, prefixed with
    ``Error [kind]:`` when the output does not already name the kind."""
    kind = result.error_kind
    text = result.output
    if kind is not None and f"[{kind.value}]" not in text:
        err = result.error or {}
        message = str(err.get("message") or "")
        head = f"Error [{kind.value}]: {message}".rstrip(": ")
        text = f"{head}\n{text}" if text and text != message else head
    return text or "Error: the tool call failed"
