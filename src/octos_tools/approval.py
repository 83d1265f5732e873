"""Asking a person before a risky action: one channel, :attr:`ToolContext.approval
<octos_tools.context.ToolContext.approval>`, and one rule (docs/approvals.md).

What asks: a SafePolicy ``ask`` pattern (``rm -rf build``, ``git reset --hard``), a
command that asks to leave the sandbox (``sandbox_permissions = "require_escalated"``,
Codex's unified exec), a hook's ``ask``. Every one goes through :func:`require_approval`:

* ``approval_policy = "never"`` (Codex's name): nobody is asked; the action is refused as
  ``approval_required``;
* ``"on-request"`` (the default): the host's callback is asked; no callback attached means
  ``approval_required``, a "no" means ``approval_denied``. In both cases nothing runs.

An approval covers the one request it answered (:meth:`ApprovalRequest.key
<octos_tools.context.ApprovalRequest.key>`): the same command later asks again.

The channels each host attaches are built where the host lives: MCP elicitation and the
2026-07-28 input-required round trip (:mod:`octos_tools.mcp.approval`), the terminal
prompt of ``octos-tools call`` (:func:`terminal_approval`), the agent loop's
``approve=`` callback, and each framework adapter's own approval mechanism.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Literal, TextIO

from ._printable import printable
from .context import ApprovalCallback, ApprovalRequest
from .errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from .context import ToolContext
    from .tool_types import Tool

__all__ = [
    "APPROVAL_POLICIES",
    "ApprovalPolicy",
    "approval_error",
    "approval_for_call",
    "approving",
    "printable",
    "printable_prompt",
    "require_approval",
    "terminal_approval",
]

ApprovalPolicy = Literal["on-request", "never"]
#: The values of ``approval_policy`` (Codex's names; ``untrusted`` and ``on-failure`` are
#: not offered: nothing here retries a failed command on its own).
APPROVAL_POLICIES: tuple[str, ...] = ("on-request", "never")


def approval_error(kind: ErrorKind, request: ApprovalRequest, message: str) -> ToolError:
    """The typed refusal of ``request`` (``approval_required`` or ``approval_denied``), its
    details naming the command, the rule and the request's key."""
    return ToolError(
        kind,
        message,
        command=request.action,
        reason=request.reason,
        approval=request.kind,
        approval_key=request.key(),
    )


async def require_approval(
    ctx: ToolContext | None,
    request: ApprovalRequest,
    *,
    policy: str = "on-request",
) -> None:
    """Return when a person approved ``request``; raise otherwise (then nothing may run).

    Args:
        ctx: the call's context; its ``approval`` callback is the channel.
        request: what to approve (one exact action).
        policy: ``"on-request"`` or ``"never"`` (the config's ``approval_policy``).

    Raises:
        ToolError: ``approval_required`` when the policy is ``never`` or no channel is
            attached (or the channel could not reach a person), ``approval_denied`` when
            the person said no.
    """
    what = "leave the sandbox" if request.kind == "escalation" else "run"
    if policy == "never":
        raise approval_error(
            ErrorKind.APPROVAL_REQUIRED,
            request,
            f"this needs a person's approval to {what} ({request.reason}) and approval_policy "
            "is 'never'; do it another way",
        )
    approve: ApprovalCallback | None = ctx.approval if ctx is not None else None
    if approve is None:
        raise approval_error(
            ErrorKind.APPROVAL_REQUIRED,
            request,
            f"this needs a person's approval to {what} ({request.reason}) and no approval "
            "channel is attached; do it another way or ask the user to run it",
        )
    try:
        approved = await approve(request)
    except ToolError as exc:
        if exc.kind in (ErrorKind.APPROVAL_REQUIRED, ErrorKind.APPROVAL_DENIED):
            raise
        raise approval_error(
            ErrorKind.APPROVAL_REQUIRED,
            request,
            f"this needs a person's approval ({request.reason}) and they could not be asked "
            f"({exc.message})",
        ) from None
    if not approved:
        raise approval_error(
            ErrorKind.APPROVAL_DENIED,
            request,
            "the user did not approve this; do not retry it as it is: ask them or do it "
            "another way",
        )


def approval_for_call(
    tool: Tool | None, arguments: Mapping[str, object] | None, ctx: ToolContext | None = None
) -> ApprovalRequest | None:
    """What a call of ``tool`` with ``arguments`` would ask a person, found before it runs
    (for frameworks that approve a call before invoking it: openai-agents'
    ``needs_approval``, pydantic-ai's ``ApprovalRequired``); ``None`` when nothing would
    be asked, or when the arguments are refused (the call then reports that itself).

    Args:
        tool: the tool (a tool without ``approval_request`` never asks).
        arguments: the parsed arguments.
        ctx: the call's context (its workspace), or ``None``.
    """
    probe = getattr(tool, "approval_request", None)
    if probe is None or not isinstance(arguments, dict):
        return None
    try:
        request = probe(arguments, ctx)
    except Exception:  # noqa: BLE001 - bad arguments or a deny rule: the call says so
        return None
    return request if isinstance(request, ApprovalRequest) else None


def approving(
    requests: Iterable[ApprovalRequest], fallback: ApprovalCallback | None = None
) -> ApprovalCallback:
    """An approval callback that says yes to exactly ``requests`` (approved already, by
    the framework's own mechanism) and asks ``fallback`` about anything else (no
    ``fallback``: no).

    Args:
        requests: the approved requests (matched by :meth:`ApprovalRequest.key`).
        fallback: the channel for any other request, or ``None``.
    """
    keys = {r.key() for r in requests}

    async def approve(request: ApprovalRequest) -> bool:
        if request.key() in keys:
            return True
        return await fallback(request) if fallback is not None else False

    return approve


def terminal_approval(
    stdin: TextIO | None = None, stderr: TextIO | None = None
) -> ApprovalCallback | None:
    """An :data:`~octos_tools.context.ApprovalCallback` asking on the terminal (a ``y/N``
    prompt on standard error, the answer read from standard input; the default is no), or
    ``None`` when either is not a terminal (nobody to ask).

    Args:
        stdin / stderr: the streams (default ``sys.stdin`` / ``sys.stderr``).
    """
    inp = sys.stdin if stdin is None else stdin
    err = sys.stderr if stderr is None else stderr
    if inp is None or err is None or not inp.isatty() or not err.isatty():
        return None

    async def approve(request: ApprovalRequest) -> bool:
        import anyio.to_thread
        from rich.console import Console
        from rich.prompt import Confirm

        console = Console(file=err, stderr=True)

        def ask() -> bool:
            console.print("[bold yellow]approval needed[/]", markup=True)
            console.print(printable_prompt(request), markup=False, highlight=False)
            try:
                return Confirm.ask("Allow it?", console=console, default=False, stream=inp)
            except EOFError:
                return False

        with _PROMPTING:
            return await anyio.to_thread.run_sync(ask)

    return approve


def printable_prompt(request: ApprovalRequest) -> str:
    """:meth:`ApprovalRequest.prompt`: every field already escaped with :func:`printable`
    there, for every channel (terminal, MCP elicitation, the adapters)."""
    return request.prompt()


class _Prompting:
    """Counts open terminal prompts (``octos-tools call``'s spinner waits while one is)."""

    def __init__(self) -> None:
        self.open = 0

    def __enter__(self) -> None:
        self.open += 1

    def __exit__(self, *exc: object) -> None:
        self.open -= 1


_PROMPTING = _Prompting()


def prompt_open() -> bool:
    """Whether a terminal approval prompt is waiting for an answer now."""
    return _PROMPTING.open > 0
