"""Discovery tools: many tools, few tokens, every tool one call away.

A host defers low-use tools so the first model request stays small (octos's deferred
tool groups); these tools let the model find and load what it needs, and read the output
of background (spawn-only) tasks in pieces instead of flooding its context.

* ``tool_search`` (:mod:`.search`): the one discovery tool the default profile lists.
  Ranks every allowed tool, deferred ones included, for a task sentence (:mod:`.ranking`,
  over names, descriptions, tags and search hints: :mod:`.hints`); ``select:a,b`` loads
  exact tools. ``tool_suggest`` (same ranking, older name) and ``activate_tools``
  (:mod:`.activate`, loads groups) stay callable under their names.
* ``read_task_output`` (:mod:`.task_output`): a task's log by head, tail, grep, line range
  or output file.

What the tools see and change is the caller's view (:mod:`.catalog`): the session's when
the call has ``ctx.session``, else the registry's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .activate import ActivateToolsTool
from .catalog import DISCOVERY_TOOLS, ScoredEntry, View, score_catalog
from .hints import BUILTIN_HINTS, hints_of
from .ranking import Document, Scored, rank, tokenize
from .search import ToolSearchTool, ToolSuggestTool
from .task_output import DEFAULT_LINES, MAX_LINES, MAX_OUTPUT_BYTES, ReadTaskOutputTool

if TYPE_CHECKING:
    from ...config import Config
    from ...registry import ToolRegistry
    from ...workspace import Workspace

__all__ = [
    "BUILTIN_HINTS",
    "DEFAULT_LINES",
    "DISCOVERY_TOOLS",
    "MAX_LINES",
    "MAX_OUTPUT_BYTES",
    "ActivateToolsTool",
    "Document",
    "ReadTaskOutputTool",
    "Scored",
    "ScoredEntry",
    "ToolSearchTool",
    "ToolSuggestTool",
    "View",
    "hints_of",
    "rank",
    "register",
    "score_catalog",
    "tokenize",
]


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``tool_search``, ``tool_suggest`` and ``read_task_output``.

    ``activate_tools`` is not registered here: :func:`octos_tools.profile.apply_deferral`
    adds it when something is deferred.
    """
    del workspace, config  # discovery reads ctx.registry and ctx.workspace per call
    registry.register(ToolSearchTool())
    registry.register(ToolSuggestTool())
    registry.register(ReadTaskOutputTool())
