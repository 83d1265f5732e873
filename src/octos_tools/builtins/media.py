"""``image_generation``: the typed stub of octos (§1.6).

No image backend is bound in octos-tools, so the tool exists only to tell the model so in a
way it can act on: a blank prompt is ``invalid_arguments``; any other call is a failed result
of kind ``coding_tool_unsupported`` that echoes the accepted input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import Config
from ..errors import ErrorKind, ToolError
from ..tool import ConcurrencyClass, JSONObject, Tool, ToolResult

if TYPE_CHECKING:
    from ..registry import ToolRegistry
    from ..workspace import Workspace

__all__ = ["ImageGenerationTool", "register"]


class ImageGenerationTool(Tool):
    """``image_generation {prompt, size?, n?}``: always unsupported (octos §1.6)."""

    name = "image_generation"
    title = "Generate an image (unsupported)"
    description = (
        "Generate images from a prompt. No image backend is attached in this runtime: the "
        "call reports coding_tool_unsupported."
    )
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "What to draw."},
            "size": {"type": "string", "description": "e.g. 1024x1024."},
            "n": {"type": "integer", "minimum": 1, "maximum": 4},
        },
        "required": ["prompt"],
        "additionalProperties": False,
    }
    tags = ("media", "code")
    concurrency_class = ConcurrencyClass.SAFE

    async def execute(self, args: JSONObject) -> ToolResult:
        prompt = str(args["prompt"])
        if not prompt.strip():
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "image_generation needs a non-empty prompt"
            )
        accepted = {"prompt": prompt, "size": args.get("size"), "n": args.get("n", 1)}
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
    """Register the ``image_generation`` stub (octos §1.1 #33)."""
    registry.register(ImageGenerationTool())
