"""Discovery tools: many tools, few tokens, every tool one call away.

Rules: the catalog is every tool a policy allows, deferred ones included, never a denied
one; what the tools see and change is the caller's view (the session's when the call has
``ctx.session``, else the registry's); ``activate_tools`` is registered by
:func:`octos_tools.profile.apply_deferral`, not here.

* :mod:`._tool_search`: ``tool_search`` (``select:a,b`` loads exact tools) and ``tool_suggest``;
* :mod:`._activate_tools`: ``activate_tools`` (loads groups);
* :mod:`._read_task_output`: a background task's log by head, tail, grep, lines or file;
* :mod:`._ranking`: BM25F over names, hints, tags, descriptions and schema words;
* :mod:`._hints`: the search hints of the built-in tools;
* :mod:`._catalog_view`: the caller's view of the catalog, scored.

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._activate_tools import ActivateToolsTool
from ._catalog_view import DISCOVERY_TOOLS, ScoredEntry, View, score_catalog
from ._hints import BUILTIN_HINTS, hints_of
from ._ranking import Document, Scored, rank, tokenize
from ._read_task_output import DEFAULT_LINES, MAX_LINES, MAX_OUTPUT_BYTES, ReadTaskOutputTool
from ._tool_search import ToolSearchTool, ToolSuggestTool

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
