"""The tool registry: the store of tools, validators, policies and verdicts, groups, the
configured deferral, spawn-only markers and listeners, shared by every session.

* :class:`ToolRegistry` (``_registry.py``): the store, and thin conveniences over its
  default session (:attr:`ToolRegistry.default_session`).
* :class:`CatalogEntry` (``_catalog.py``): one entry of the live catalog.
* policy verdicts (``_verdicts.py``).

Per-session state lives in :class:`~octos_tools.session.ToolSession` and its
:class:`~octos_tools.view.ToolView`; the call pipeline in :mod:`octos_tools.pipeline`. Both
sit above this package and use its public methods; nothing here imports them at run time
(except :attr:`ToolRegistry.default_session`, which makes the conveniences' session).
"""

from __future__ import annotations

from typing import Any

from ..tasks import SPAWN_ONLY_READ_MODES
from ._catalog import CatalogEntry
from ._registry import DEFAULT_TOOL_TIMEOUT, ToolRegistry

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "SPAWN_ONLY_READ_MODES",
    "CatalogEntry",
    "ToolRegistry",
    "ToolView",
]


def __getattr__(name: str) -> Any:
    if name == "ToolView":  # moved to octos_tools.view (a session's state, not the store's)
        from ..view import ToolView

        return ToolView
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
