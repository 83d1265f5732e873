"""Helpers shared by the apply_patch tests: the Codex conformance folder, a runner, patch text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from octos_tools.builtins.patch import (
    ApplyPatchTool,
)
from octos_tools.context import ToolContext
from octos_tools.errors import ErrorKind, ToolError
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace


#: The Codex apply_patch conformance scenarios, in ``../shared`` beside the repository.
def _find_conformance() -> Path:
    """``shared/conformance/codex-apply-patch`` in the nearest folder above the repository
    that has one (the checkout may be a worktree one level deeper)."""
    here = Path(__file__).resolve().parents[2]
    for base in here.parents:
        cand = base / "shared" / "conformance" / "codex-apply-patch"
        if cand.is_dir():
            return cand
    return here.parent / "shared" / "conformance" / "codex-apply-patch"


CONFORMANCE = _find_conformance()


_ABSENT = f"conformance folder {CONFORMANCE} is absent (it sits in ../shared beside the repository)"


async def run(root: Path, patch: str, **ctx_kw: Any) -> ToolResult:
    tool = ApplyPatchTool(Workspace(root))
    try:
        return await tool.execute_with_context(ToolContext(**ctx_kw), {"patch": patch})
    except ToolError as exc:
        return ToolResult.from_error(exc)


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch", ""])


_TWO_CLASSES = (
    "class A:\n    def run(self):\n        return 1\n\n    def stop(self):\n        return 1\n"
    "\nclass B:\n    def run(self):\n        return 1\n\n    def stop(self):\n        return 1\n"
)


# A good first section before each refused one proves the refusal changes nothing at all.
_GOOD_FIRST = ("*** Add File: fresh.txt", "+fresh")


_UPDATE_A = ("@@", "-a1", "+a2")


_LINK = ErrorKind.SYMLINK_REFUSED


_DIR = ErrorKind.IS_A_DIRECTORY


#: Scenarios where we deliberately differ from Codex, and what we check instead.
#: 015: Codex keeps the Add applied before the failing Update; our patches are atomic, so
#: the tree must stay exactly as the input (empty).
DELIBERATE = {"015_failure_after_partial_success_leaves_changes": "unchanged"}


#: Scenarios Codex defines as failures (README: exit status non-zero for exactly these).
FAILING = {"005", "006", "007", "008", "009", "012", "013", "015"}
