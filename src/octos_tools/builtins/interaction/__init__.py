"""Codex interaction tools: ``update_plan`` and ``request_user_input`` (octos
``crates/octos-agent/src/tools/coding_tools.rs``).

Rules: neither touches files or processes; the plan lives on ``ToolContext.state``; a
question goes through ``ToolContext.user_input`` and without that channel the answer is
``unavailable``, never an invented reply.

* :mod:`._interaction_tools`: both tools and their arguments.

Layout (the same in every family): this ``__init__`` is the family's public surface (its
re-exports and ``register``); every other module is private, named after the tool it
holds or its one job; another package imports the family only from here; tests are
``tests/builtins/test_<module>.py``, one per module, ``test_<family>.py`` for the family.
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
