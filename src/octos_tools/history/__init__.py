"""Workspace history: every change a tool makes can be seen and undone.

Checkpoints live in a git directory of their own under the per-user state folder
(:mod:`._store`), never in the user's repository; :func:`around_call` records them around
each Exclusive call (:mod:`._hook`); the tools ``workspace_log``, ``workspace_show``,
``workspace_diff`` and ``workspace_restore`` read and restore them
(:mod:`octos_tools.builtins.workspace_history._history_tools`). See docs/history.md.
"""

from __future__ import annotations

from ._hook import COMMAND_TOOLS, FILE_TOOLS, around_call
from ._settings import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_STORE_BYTES, history_for
from ._store import REF, Checkpoint, HistoryStore, HistoryUnavailable, LogEntry, TreeChange

__all__ = [
    "COMMAND_TOOLS",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_STORE_BYTES",
    "FILE_TOOLS",
    "REF",
    "Checkpoint",
    "HistoryStore",
    "HistoryUnavailable",
    "LogEntry",
    "TreeChange",
    "around_call",
    "history_for",
]
