"""Shared parts of the built-in tools: the workspace-bound base class and argument readers.

:class:`WorkspaceTool` is the base of every cwd-bound built-in (files, search, patch, git,
code, the command tools): it keeps the tool's own :class:`~octos_tools.workspace.Workspace`
(``None`` → the call's ``ctx.workspace``), marks the tool ``cwd_bound`` so that
``ToolRegistry.rebind_cwd`` rebuilds it, and runs :meth:`execute` with the current context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ErrorKind, ToolError
from ..tool_types import JSONObject
from ..typed import TypedTool

if TYPE_CHECKING:
    from ..context import ToolContext
    from ..workspace import Workspace

__all__ = ["WorkspaceTool", "int_arg", "str_arg"]


class WorkspaceTool(TypedTool):
    """Base of the tools bound to a workspace (octos's cwd-bound tools): every path they
    touch is resolved inside it.

    Subclasses declare ``Args`` (a :class:`~octos_tools.typed.ToolArgs` model) and implement
    :meth:`~octos_tools.typed.TypedTool.run`, getting their workspace there with
    :meth:`workspace_for`. (Not yet converted tools still implement
    ``execute_with_context`` with a hand-written ``input_schema``.)

    Args:
        workspace: the :class:`~octos_tools.workspace.Workspace` the tool is confined to;
            when ``None`` the call's ``ctx.workspace`` is used.
    """

    cwd_bound = True

    def __init__(self, workspace: Workspace | None = None) -> None:
        self.workspace = workspace

    def workspace_for(self, ctx: ToolContext | None) -> Workspace:
        """The workspace this call works in: the tool's own, else ``ctx.workspace``.

        Raises:
            ToolError: ``not_configured`` when neither the tool nor the context has one.
        """
        ws = self.workspace
        if ws is None and ctx is not None:
            ws = ctx.workspace
        if ws is None:
            raise ToolError(ErrorKind.NOT_CONFIGURED, f"{self.name} has no workspace to work in")
        return ws


def str_arg(args: JSONObject, key: str, *, default: str | None = None) -> str:
    """``args[key]`` as a string (``default`` when absent).

    Raises:
        ToolError: ``invalid_arguments`` when the value (or a ``None`` default) is no string.
    """
    value = args.get(key, default)
    if not isinstance(value, str):
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, f"{key!r} must be a string")
    return value


def int_arg(args: JSONObject, key: str, *, label: str | None = None) -> int | None:
    """``args[key]`` as an integer, or ``None`` when absent or null.

    Args:
        args: the arguments (or a nested object of them).
        key: the property name.
        label: how the message names the property (default ``repr(key)``), e.g.
            ``"mode.lines"`` for a nested one.

    Raises:
        ToolError: ``invalid_arguments`` when the value is not an integer (``bool`` is not).
    """
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        name = repr(key) if label is None else label
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, f"{name} must be an integer")
    return value
