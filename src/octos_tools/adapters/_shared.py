"""What every framework adapter needs from a :class:`~octos_tools.session.ToolSession`.

The adapters list the session's visible specs before each model request and run every call
through :meth:`ToolSession.call` (the one call path: policy, deferral, size check, validation
once, timeout, output cap, redaction). Each session has its own activation, deferral and LRU
state over a shared registry. This module holds what the adapters share: turning a registry
into a session, reading its view, and the rules for failures (which are worth a retry, the
text a model sees).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..errors import ErrorKind
from ..tool_types import ToolResult, ToolSpec

if TYPE_CHECKING:
    from ..context import ApprovalRequest, ToolContext
    from ..registry import ToolRegistry
    from ..session import ToolSession

__all__ = [
    "RETRY_KINDS",
    "activate",
    "approved_ctx",
    "as_session",
    "deferred_names",
    "failure_text",
    "import_extra",
    "listed_specs",
    "pending_approval",
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


def sub_agent_session(session: ToolSession, allowed_tools: Iterable[str] = ()) -> ToolSession:
    """A session for a sub-agent the framework runs (its own delegation, e.g. an agent used
    as a tool): over :func:`octos_tools.agent.spawn.child_registry` of ``session``'s
    registry (its policies and settings kept, ``allowed_tools`` as a hard allow list, the
    sub-agent tools removed), with :func:`~octos_tools.agent.spawn.sub_agent_context` of
    its base context (``spawn_depth + 1``)."""
    from ..agent.spawn import child_registry, sub_agent_context
    from ..session import ToolSession

    registry = child_registry(session.registry, allowed_tools=tuple(allowed_tools))
    return ToolSession(registry, sub_agent_context(session.ctx))


def listed_specs(session: ToolSession, *, request: bool) -> list[ToolSpec]:
    """The specs the model sees now (read-only; the session's cached list).

    Args:
        session: the session.
        request: ``True`` right before a model request: the session's housekeeping runs
            (:meth:`ToolSession.before_model_request`: LRU tick and eviction); ``False``
            for a pure read (:meth:`ToolSession.specs`).
    """
    return session.before_model_request() if request else session.specs()


def deferred_names(session: ToolSession) -> list[str]:
    """The names deferred in ``session`` (one call or one activation away)."""
    return session.deferred_names()


def activate(session: ToolSession, names: Iterable[str]) -> list[str]:
    """Activate deferred ``names`` (tool names or groups) in ``session`` only; returns the
    tool names activated."""
    wanted = list(dict.fromkeys(names))
    return session.activate(wanted) if wanted else []


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


def approved_ctx(session: ToolSession, requests: Iterable[ApprovalRequest]) -> ToolContext:
    """The session's context with an approval channel that says yes to exactly
    ``requests`` (approved through the framework's own mechanism) and asks the session's
    own channel, if any, about anything else (docs/approvals.md)."""
    from dataclasses import replace

    from ..approval import approving

    return replace(session.ctx, approval=approving(requests, session.ctx.approval))


def pending_approval(session: ToolSession, name: str, arguments: Any) -> ApprovalRequest | None:
    """What a call would ask a person to approve before it runs, when the framework must
    ask (the session has no approval channel of its own); else ``None``."""
    from ..approval import approval_for_call

    if session.ctx.approval is not None or not isinstance(arguments, dict):
        return None
    return approval_for_call(session.get(name), arguments, session.ctx)
