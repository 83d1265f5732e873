"""Image tools: ``view_image`` and the ``image_generation`` stub.

Rules: ``view_image`` resolves its path like every file tool, takes the format from the
bytes (never the name), and downscales with Pillow (extra ``image``, imported when an image
is processed) to the ``[image]`` limits; ``image_generation`` has no backend and says so
(``coding_tool_unsupported``).

* :mod:`._view_image`: sniffing, fitting, the tool (``fit_image`` is also ``browser``'s);
* :mod:`._image_generation`: the stub.

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._image_generation import ImageGenerationTool
from ._image_generation import register as register_image_generation
from ._view_image import FittedImage, ViewImageTool, fit_image, sniff_image_format
from ._view_image import register as register_view_image

if TYPE_CHECKING:
    from ...config import Config
    from ...registry import ToolRegistry
    from ...workspace import Workspace

__all__ = [
    "FittedImage",
    "ImageGenerationTool",
    "ViewImageTool",
    "fit_image",
    "register",
    "sniff_image_format",
]


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``image_generation``, then ``view_image`` (octos order)."""
    register_image_generation(registry, workspace, config)
    register_view_image(registry, workspace, config)
