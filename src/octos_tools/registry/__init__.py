"""The tool registry: tools, policies and groups shared by every session, and the
per-session views over them.

* :class:`ToolRegistry` (``_registry.py``): registration, policies, groups, the configured
  deferred set and spawn-only markers; its own methods act on a default view.
* :class:`ToolView` (``_view.py``): one session's activation / deferral / LRU state.
* :class:`CatalogEntry` (``_catalog.py``): one entry of the live catalog.
* policy verdicts (``_verdicts.py``).

The call pipeline itself lives in :mod:`octos_tools.pipeline`.
"""

from __future__ import annotations

from ..pipeline import SPAWN_ONLY_READ_MODES
from ._catalog import CatalogEntry
from ._registry import DEFAULT_TOOL_TIMEOUT, ToolRegistry
from ._view import ToolView

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "SPAWN_ONLY_READ_MODES",
    "CatalogEntry",
    "ToolRegistry",
    "ToolView",
]
