"""Base of the three search tools: a workspace tool, Safe, tagged ``search`` and ``code``,
whose blocking work runs in a worker thread bounded by the call's time limit."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass
from .._base import WorkspaceTool
from ._budget import Budget, BudgetExceeded, run_in_thread

if TYPE_CHECKING:
    from ...config import Config
    from ...workspace import Workspace

__all__ = ["SearchTool", "check_nul", "not_entered_note"]

_T = TypeVar("_T")


def not_entered_note(folders: list[tuple[str, str]], how: str) -> str:
    """One line naming the folders not entered by default (``(rel, reason)``, the first
    5) and ``how`` to search one (``{}``: the first folder's path)."""
    from ...workspace import text as textcodec

    names = ", ".join(f"{textcodec.display(p)}/ ({r})" for p, r in folders[:5])
    extra = f" and {len(folders) - 5} more" if len(folders) > 5 else ""
    hint = how.format(textcodec.display(folders[0][0]))
    return f"\n\n[not entered by default: {names}{extra}; {hint}]"


def check_nul(value: str, what: str) -> None:
    """Refuse a NUL byte in a pattern or path (``invalid_arguments``)."""
    if "\x00" in value:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"{what} contains a NUL byte (\\x00), which no path or pattern can hold",
        )


class SearchTool(WorkspaceTool):
    """A read-only tool over the workspace (``glob``, ``grep``, ``list_dir``).

    Args:
        workspace: the workspace the tool is confined to; ``None``: the call's
            ``ctx.workspace``.
        config: settings (unused by the search tools today; kept for a uniform signature).
    """

    tags = ("search", "code")
    concurrency_class = ConcurrencyClass.SAFE

    def __init__(self, workspace: Workspace | None = None, config: Config | None = None) -> None:
        super().__init__(workspace)
        self.config = config

    async def _bounded(self, fn: Callable[[Budget], _T]) -> _T:
        """``fn(budget)`` in a worker thread that stops at the call's time limit.

        Raises:
            ToolError: ``timeout`` when the work ran out of time.
        """
        try:
            return await run_in_thread(fn)
        except BudgetExceeded:
            raise ToolError(
                ErrorKind.TIMEOUT,
                f"{self.name} did not finish within the call's time limit and was stopped; "
                "search a smaller path or use a more specific pattern",
            ) from None
