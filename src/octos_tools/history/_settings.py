"""Which history store a workspace uses, with which settings (``[history]`` of the config).

A :class:`~octos_tools.workspace.Workspace` carries the ``[history]`` section it was
registered with (``Workspace.history_config``, set by
:func:`~octos_tools.builtins.register_builtins`); one :class:`HistoryStore` per workspace
root, state folder and settings is kept for the process.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ._store import HistoryStore, HistoryUnavailable

if TYPE_CHECKING:
    from ..workspace import Workspace

__all__ = ["DEFAULT_MAX_FILE_BYTES", "DEFAULT_MAX_STORE_BYTES", "history_for"]

DEFAULT_MAX_FILE_BYTES = 5_000_000
DEFAULT_MAX_STORE_BYTES = 1 << 30

_stores: dict[tuple[str, str, int, int], HistoryStore] = {}
_lock = threading.Lock()
_folders: dict[tuple[str, str | None, str | None, str | None], Path] = {}
"""(root, the variables that choose the state folder) -> the workspace's history folder,
so a call does not hash and create the state folder each time (a missing store is made
again below)."""


def history_for(ws: Workspace) -> tuple[HistoryStore | None, str | None]:
    """The store of ``ws``: ``(store, None)``; ``(None, None)`` when history is off;
    ``(None, reason)`` when it is on but cannot be used."""
    cfg = getattr(ws, "history_config", None)
    if cfg is not None and not cfg.enabled:
        return None, None
    max_file = cfg.max_file_bytes if cfg is not None else DEFAULT_MAX_FILE_BYTES
    max_store = cfg.max_store_bytes if cfg is not None else DEFAULT_MAX_STORE_BYTES
    from ..state_dir import STATE_DIR_ENV, workspace_state_dir

    env = os.environ
    where = (str(ws.root), env.get(STATE_DIR_ENV), env.get("XDG_STATE_HOME"), env.get("HOME"))
    folder = _folders.get(where)
    if folder is None:
        try:
            folder = _folders[where] = workspace_state_dir(ws.root) / "history"
        except OSError as exc:
            return None, f"the state folder cannot be created: {exc}"
    key = (str(ws.root), str(folder), max_file, max_store)
    with _lock:
        store = _stores.get(key)
        if store is not None and store.git_dir.is_dir():
            return store, None
        if store is not None:
            store.close()  # its store was removed: a new one, and a new watcher
        try:
            store = HistoryStore(
                Path(ws.root),
                folder,
                max_file_bytes=max_file,
                max_store_bytes=max_store,
                off_limits=ws.off_limits.paths,
            )
        except HistoryUnavailable as exc:
            return None, str(exc)
        _stores[key] = store
        return store, None
