"""Which sandbox mode a command runs in: the seam between approvals and the sandbox.

Codex's modes are ``read-only``, ``workspace-write`` and ``danger-full-access``. A command
runs in the mode the configuration resolves (``None`` here: the spawn applies it), except
a command whose ``sandbox_permissions = "require_escalated"`` a person approved: that one
command runs in :data:`ESCALATED_MODE` (Codex runs an approved escalation unsandboxed).

:func:`sandbox_mode_for` is the one function the command tools ask;
``_CommandTool.sandbox_for_call`` turns its answer into the
:class:`~octos_tools.sandbox.SandboxSettings` the spawn (:mod:`._command`) applies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...context import ToolContext

__all__ = ["ESCALATED_MODE", "sandbox_mode_for"]

#: The mode of an approved escalation (Codex's name).
ESCALATED_MODE = "danger-full-access"


def sandbox_mode_for(ctx: ToolContext | None, *, escalated: bool) -> str | None:
    """The sandbox mode of one command.

    Args:
        ctx: the call's context.
        escalated: a person approved running this command outside the sandbox.

    Returns:
        :data:`ESCALATED_MODE` for an approved escalation, else ``None``: the configured
        mode, applied where the command is spawned.
    """
    del ctx  # the configured mode is the spawn's to read
    return ESCALATED_MODE if escalated else None
