"""Codex interaction tools: ``update_plan`` and ``request_user_input`` (octos
``crates/octos-agent/src/tools/coding_tools.rs``).

Rules: neither touches files or processes; the plan lives on ``ToolContext.state``; a
question goes through ``ToolContext.user_input`` and without that channel the answer is
``unavailable``, never an invented reply.

* :mod:`._interaction_tools`: both tools and their arguments.

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
"""

from __future__ import annotations

from ._interaction_tools import (
    PLAN_STATE_KEY,
    PLAN_STATUSES,
    RequestUserInputTool,
    UpdatePlanTool,
    register,
)

__all__ = ["PLAN_STATE_KEY", "PLAN_STATUSES", "RequestUserInputTool", "UpdatePlanTool", "register"]
