"""History tools: ``workspace_log``, ``workspace_show``, ``workspace_diff``,
``workspace_restore`` over the checkpoints of :mod:`octos_tools.history` (docs/history.md).

Rules: a store that cannot be used answers ``history_unavailable`` with the cause, an
unknown checkpoint ``not_found`` naming the newest; ``project`` narrows each tool to a
subfolder of the workspace.

* :mod:`._history_tools`: the four tools.

Layout (the same in every family): this ``__init__`` is the family's public surface (its
re-exports and ``register``); every other module is private, named after the tool it
holds or its one job; another package imports the family only from here; tests are
``tests/builtins/test_<module>.py``, one per module, ``test_<family>.py`` for the family.
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
