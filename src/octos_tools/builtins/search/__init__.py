"""Search tools: ``glob``, ``grep``, ``list_dir`` (tags ``search``, ``code``; all Safe).

Rules: none follows a symbolic link, and all see the same files: one rule says which exist
(``.gitignore`` honoured, ``.git`` never entered, other hidden files kept, octos-tools'
internal files hidden), applied by one Python walk and, for ``grep`` with ripgrep, by the
equivalent rg flags. Every call is bounded by its time limit.

* :mod:`._rules`: which files exist; :mod:`._walk`: the descriptor walk;
* :mod:`._globmatch`: glob patterns; :mod:`._rg` and :mod:`._pygrep`: the two grep engines;
  :mod:`._linematch`: the Python engine's killable matching process;
* :mod:`._hits`: grep results and the checks they pass; :mod:`._budget`: time limits;
* :mod:`._search_tool`: the tools' base class; :mod:`._glob_tool`, :mod:`._grep_tool`,
  :mod:`._list_dir`: the tools.

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
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
