"""Sub-agent tools: ``spawn_agent`` (alias ``delegate``), ``send_input``, ``resume_agent``,
``wait_agent``, ``close_agent`` over the calling registry's task supervisor.

Rules: running an agent is a delegate's job (:class:`SpawnDelegate`, bound with
:func:`bind_spawn_delegate`, or the context's ``spawn_delegate``); without one
``spawn_agent`` is ``not_configured``. Nesting stops at ``ctx.spawn_depth >= 4`` or the
delegate's ``max_depth`` (``policy_denied``). Each call acts on ``ctx.registry``'s
supervisor, the one ``read_task_output`` reads.

* :mod:`._agent_tools`: the protocols, the hub and the tools.

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
"""

from __future__ import annotations

from ._agent_tools import (
    DELEGATE_ROLES,
    MAX_SPAWN_DEPTH,
    SUB_AGENT_TOOLS,
    AgentHub,
    CloseAgentTool,
    DelegateTool,
    ResumeAgentTool,
    SendInputTool,
    SpawnAgentTool,
    SpawnDelegate,
    SpawnRequest,
    SupportsLiveInput,
    SupportsPrepare,
    WaitAgentTool,
    bind_spawn_delegate,
    failure_kind,
    has_spawn_delegate,
    register,
    spawn_delegate_of,
)

__all__ = [
    "DELEGATE_ROLES",
    "MAX_SPAWN_DEPTH",
    "SUB_AGENT_TOOLS",
    "AgentHub",
    "CloseAgentTool",
    "DelegateTool",
    "ResumeAgentTool",
    "SendInputTool",
    "SpawnAgentTool",
    "SpawnDelegate",
    "SpawnRequest",
    "SupportsLiveInput",
    "SupportsPrepare",
    "WaitAgentTool",
    "bind_spawn_delegate",
    "failure_kind",
    "has_spawn_delegate",
    "register",
    "spawn_delegate_of",
]
