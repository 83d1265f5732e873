"""Per-call context: :class:`ToolContext` and :func:`current_context` (octos ``tools/mod.rs``).

The registry passes a :class:`ToolContext` to ``Tool.execute_with_context`` and also sets it
in a :class:`contextvars.ContextVar` around the call, so tools written against plain
``execute(args)`` can still read it (octos's task-local ``TOOL_CTX``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from .policy import EQUIVALENT_NAMES

if TYPE_CHECKING:
    from .registry import ToolRegistry
    from .session import ToolSession
    from .workspace import Workspace

__all__ = [
    "ApprovalCallback",
    "ApprovalRequest",
    "ProgressReporter",
    "ToolContext",
    "ToolPermissions",
    "UserInputCallback",
    "current_context",
    "reset_current_context",
    "set_current_context",
    "use_context",
]


class ProgressReporter(Protocol):
    """Receives progress of a long call: ``await reporter(progress, total, message)``.

    ``progress`` and ``total`` are in the tool's own unit (bytes, files, steps); ``total`` is
    ``None`` when unknown. The MCP server forwards these as progress notifications.
    """

    def __call__(
        self, progress: float, total: float | None, message: str | None
    ) -> Awaitable[None]: ...


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What a tool asks a person to approve (a SafePolicy ``ask`` pattern, an escalation
    out of the sandbox, a hook's ``ask``); see docs/approvals.md.

    An approval covers this exact request only: the same command again asks again.

    Attributes:
        tool: the tool name.
        action: the exact action, e.g. the shell command line.
        reason: why approval is needed (the matching rule).
        kind: what asks: ``"ask_pattern"`` (SafePolicy), ``"escalation"``
            (``sandbox_permissions = "require_escalated"``, Codex's name), ``"hook"``.
        justification: the model's one-sentence question for the person (Codex's
            ``justification``), or ``None``.
        cwd: the folder the command would run in (absolute), or ``None``.
        sandbox_mode: the sandbox mode the action runs in once approved
            (``"danger-full-access"`` for an escalation), or ``None``: the configured one.
    """

    tool: str
    action: str
    reason: str
    kind: str = "ask_pattern"
    justification: str | None = None
    cwd: str | None = None
    sandbox_mode: str | None = None

    def key(self) -> str:
        """A stable id of this exact request (tool, action, folder, mode): what an answer
        given for it is bound to (16 hex digits of SHA-256)."""
        import hashlib

        text = "\0".join((self.tool, self.action, self.cwd or "", self.sandbox_mode or ""))
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    def prompt(self) -> str:
        """The question shown to a person, the same in every channel (terminal, MCP
        elicitation, adapters): the tool and the exact action first, then the folder, the
        reason, and last the model's justification marked as the model's words and cut at
        :data:`JUSTIFICATION_CHARS`. Every field is escaped
        (:func:`octos_tools._printable.printable`: a line break shows as ``\\n``, no
        terminal sequence survives), so neither the command nor the justification can draw
        a fake line of the question or push the real command out of view."""
        from ._printable import printable

        lines = [f"{printable(self.tool)} wants to run: {printable(self.action)}"]
        if self.cwd:
            lines.append(f"in: {printable(self.cwd)}")
        lines.append(f"why approval is needed: {printable(self.reason)}")
        if self.justification and self.justification.strip():
            said = self.justification.strip()
            if len(said) > JUSTIFICATION_CHARS:
                said = said[:JUSTIFICATION_CHARS] + "…"
            lines.append(f"the model says: {printable(said)}")
        return "\n".join(lines)


JUSTIFICATION_CHARS = 300
"""The model's justification is shown up to this many characters in an approval question."""

ApprovalCallback = Callable[[ApprovalRequest], Awaitable[bool]]
"""``await approve(request) -> bool``: ``True`` to let the action run."""

UserInputCallback = Callable[[dict[str, Any]], Awaitable[Any]]
"""``await ask(request) -> answer``: used by ``request_user_input``; the request is the
tool's validated arguments, the answer any JSON-serialisable value."""


@dataclass(frozen=True, slots=True)
class ToolPermissions:
    """Per-context tool permissions (octos ``tools/mod.rs`` ``ToolPermissions``).

    Attributes:
        mode: an informational label (``"workspace_write"``, ``"read_only"``, …).
        denied_tools: names refused in this context.
        allowed_tools: if not ``None``, only these names are allowed.
        read_only: file-writing tools refuse to write.
    """

    mode: str = "workspace_write"
    denied_tools: frozenset[str] = frozenset()
    allowed_tools: frozenset[str] | None = None
    read_only: bool = False

    def is_tool_allowed(self, name: str) -> bool:
        """Not denied, and in ``allowed_tools`` when that set is given.

        The alias links of the policies apply here too
        (:data:`~octos_tools.policy.EQUIVALENT_NAMES`): denying ``exec_command`` denies
        ``bash``, denying ``spawn`` denies ``spawn_agent``; allowing either name of a pair
        allows the alias.
        """
        if not self.denied_tools and self.allowed_tools is None:
            return True
        names = EQUIVALENT_NAMES.get(name, (name,))
        if any(n in self.denied_tools for n in names):
            return False
        return self.allowed_tools is None or any(n in self.allowed_tools for n in names)


@dataclass(slots=True)
class ToolContext:
    """Everything a tool call may need besides its arguments (octos ``ToolContext``).

    Attributes:
        tool_call_id: the model's tool-call id (``""`` outside a model turn).
        workspace: the :class:`~octos_tools.workspace.Workspace` of the call, or ``None``.
        permissions: :class:`ToolPermissions` (default: allow all).
        progress: a :class:`ProgressReporter`, or ``None``.
        attachments: paths of files the user attached to the turn.
        session_key: the host session this call belongs to (task ownership), or ``None``.
        spawn_depth: sub-agent nesting depth, 0 at top level (limit 4 for ``spawn_agent``).
        approval: callback asked before risky actions, or ``None`` (then they are refused
            with ``approval_required``).
        user_input: callback for ``request_user_input``, or ``None``.
        state: a per-session mutable mapping shared by the calls of one host session
            (``update_plan`` stores the plan here).
        extras: host-specific values, untouched by octos-tools.
        registry: the :class:`~octos_tools.registry.ToolRegistry` executing the call (set by
            the registry; discovery tools such as ``activate_tools`` use it).
        session: the :class:`~octos_tools.session.ToolSession` running the call, or ``None``
            for a call through :meth:`ToolRegistry.execute` (the registry's default view).
            Activation, deferral and LRU state are per session: tools that read or change
            them (``activate_tools``, ``tool_search``) use ``session`` when set, else
            ``registry``.
    """

    tool_call_id: str = ""
    workspace: Workspace | None = None
    permissions: ToolPermissions = field(default_factory=ToolPermissions)
    progress: ProgressReporter | None = None
    attachments: list[str] = field(default_factory=list)
    session_key: str | None = None
    spawn_depth: int = 0
    approval: ApprovalCallback | None = None
    user_input: UserInputCallback | None = None
    state: dict[str, Any] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)
    registry: ToolRegistry | None = None
    session: ToolSession | None = None

    @classmethod
    def zero(cls) -> ToolContext:
        """The all-defaults context (empty ``tool_call_id``), as octos's ``ToolContext::zero()``."""
        return cls()

    def for_call(self, tool_call_id: str) -> ToolContext:
        """A copy with another ``tool_call_id``; mutable fields are shared, not copied.

        (What ``dataclasses.replace`` makes, field by field: a tenth of its cost, paid by
        every call a host runs with its model's call id.)
        """
        if type(self) is not ToolContext:  # a subclass may have fields of its own
            return replace(self, tool_call_id=tool_call_id)
        clone: ToolContext = object.__new__(ToolContext)
        clone.tool_call_id = tool_call_id
        clone.workspace = self.workspace
        clone.permissions = self.permissions
        clone.progress = self.progress
        clone.attachments = self.attachments
        clone.session_key = self.session_key
        clone.spawn_depth = self.spawn_depth
        clone.approval = self.approval
        clone.user_input = self.user_input
        clone.state = self.state
        clone.extras = self.extras
        clone.registry = self.registry
        clone.session = self.session
        return clone

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Forward progress to the reporter, if any; errors of the reporter are ignored."""
        if self.progress is None:
            return
        try:
            await self.progress(progress, total, message)
        except Exception:  # noqa: BLE001 - progress must never fail a call
            return


_CURRENT: contextvars.ContextVar[ToolContext | None] = contextvars.ContextVar(
    "octos_tools_tool_context", default=None
)


set_current_context = _CURRENT.set
"""``set_current_context(ctx) -> token``: make ``ctx`` the :func:`current_context` of this
task until :func:`reset_current_context` (the pipeline's per-call form of
:func:`use_context`: a bound method, no generator)."""

reset_current_context = _CURRENT.reset
"""``reset_current_context(token)``: undo :data:`set_current_context`."""


def current_context() -> ToolContext:
    """The :class:`ToolContext` of the tool call running in this task.

    Outside a call it returns a fresh :meth:`ToolContext.zero`.
    """
    ctx = _CURRENT.get()
    return ctx if ctx is not None else ToolContext.zero()


@contextmanager
def use_context(ctx: ToolContext) -> Iterator[ToolContext]:
    """Set ``ctx`` as :func:`current_context` for the ``with`` block (task-local)."""
    token = _CURRENT.set(ctx)
    try:
        yield ctx
    finally:
        _CURRENT.reset(token)
