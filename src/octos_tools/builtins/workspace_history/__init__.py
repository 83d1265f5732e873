"""History tools: ``workspace_log``, ``workspace_show``, ``workspace_diff``,
``workspace_restore`` over the checkpoints of :mod:`octos_tools.history` (docs/history.md).

Rules: a store that cannot be used answers ``history_unavailable`` with the cause, an
unknown checkpoint ``not_found`` naming the newest; ``project`` narrows each tool to a
subfolder of the workspace.

* :mod:`._history_tools`: the four tools.

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
"""

from __future__ import annotations

from ._history_tools import (
    WorkspaceDiffTool,
    WorkspaceLogTool,
    WorkspaceRestoreTool,
    WorkspaceShowTool,
    register,
)

__all__ = [
    "WorkspaceDiffTool",
    "WorkspaceLogTool",
    "WorkspaceRestoreTool",
    "WorkspaceShowTool",
    "register",
]
