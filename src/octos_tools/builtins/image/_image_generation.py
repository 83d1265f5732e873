"""``image_generation``: the typed stub of octos's ``image_generation``.

No image backend is bound in octos-tools, so the tool exists only to tell the model so in a
way it can act on: a blank prompt is ``invalid_arguments``; any other call is a failed result
of kind ``coding_tool_unsupported`` that echoes the accepted input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from ...config import Config
from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, ToolResult
from ...typed import ToolArgs, TypedTool

if TYPE_CHECKING:
    from ...context import ToolContext
    from ...registry import ToolRegistry
    from ...workspace import Workspace

__all__ = ["ImageGenerationTool", "register"]


class ImageGenerationTool(TypedTool):
    """``image_generation {prompt, size?, n?}``: always unsupported (as in octos, which
    binds no backend by default)."""

    name = "image_generation"
    title = "Generate an image (unsupported)"
    description = (
        "Generate images from a prompt. No image backend is attached in this runtime: the "
        "call reports coding_tool_unsupported."
    )

    class Args(ToolArgs):
        prompt: str = Field(description="What to draw.")
        size: str | None = Field(None, description="e.g. 1024x1024.")
        n: int | None = Field(None, ge=1, le=4, description="How many images.")

    tags = ("media", "code")
    concurrency_class = ConcurrencyClass.SAFE

    def unavailable_reason(self, ctx: ToolContext | None = None) -> str | None:
        """Never listed: no image backend is bound (a call by name still answers the typed
        ``coding_tool_unsupported``, so the coding contract holds)."""
        return "no image backend is bound"

    async def run(self, args: Args, ctx: ToolContext | None) -> ToolResult:
        prompt = args.prompt
        if not prompt.strip():
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "image_generation needs a non-empty prompt"
            )
        accepted = {"prompt": prompt, "size": args.size, "n": args.n or 1}
        return ToolResult.failure(
            ErrorKind.CODING_TOOL_UNSUPPORTED,
            "image_generation has no image backend in this runtime; describe the image in text "
            "or use another tool",
            metadata={
                "codex_tool": self.name,
                "reason": "no_backend_bound",
                "accepted_input": accepted,
            },
        )


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register the ``image_generation`` stub."""
    registry.register(ImageGenerationTool())
