"""Search tools: ``glob``, ``grep``, ``list_dir`` (tags ``search``, ``code``; all Safe).

None of them follows a symbolic link, and all see the same files: one rule
(:mod:`._rules`) says which exist (``.gitignore`` honoured, ``.git`` never entered, other
hidden files kept, octos-tools' internal files hidden), applied by one Python walk
(:mod:`._walk`) and, for ``grep`` with ripgrep, by the equivalent rg flags. Every call is
bounded by its time limit (:mod:`._budget`).

Modules, one job each: ``_rules`` (which files exist), ``_walk`` (the descriptor walk),
``_globmatch`` (glob patterns), ``_rg`` and ``_pygrep`` (the two grep engines),
``_linematch`` (the Python engine's killable matching process), ``_hits`` (grep results and
the checks they pass), ``_budget`` (time limits), ``_tool`` (their base class),
``_list_dir``, ``_glob_tool``, ``_grep_tool`` (the tools).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._glob_tool import GlobTool
from ._globmatch import expand_braces, glob_match
from ._grep_tool import MAX_GREP_LINE_CHARS, GrepTool
from ._list_dir import MAX_LIST_ENTRIES, ListDirTool
from ._rg import find_rg

if TYPE_CHECKING:
    from ...config import Config
    from ...registry import ToolRegistry
    from ...workspace import Workspace

__all__ = [
    "MAX_GREP_LINE_CHARS",
    "MAX_LIST_ENTRIES",
    "GlobTool",
    "GrepTool",
    "ListDirTool",
    "expand_braces",
    "find_rg",
    "glob_match",
    "register",
]


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``glob``, ``grep``, ``list_dir`` (octos order)."""
    for cls in (GlobTool, GrepTool, ListDirTool):
        registry.register(cls(workspace, config))
