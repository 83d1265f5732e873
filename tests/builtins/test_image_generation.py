"""image_generation: the typed stub (no image backend is bound)."""

from __future__ import annotations

import pytest

from octos_tools.builtins.image import ImageGenerationTool
from octos_tools.errors import ErrorKind
from octos_tools.registry import ToolRegistry


@pytest.mark.anyio
async def test_image_generation_stub() -> None:
    registry = ToolRegistry()
    registry.register(ImageGenerationTool())
    # never listed (no backend can work here), yet a call by name answers
    assert registry.visible_names() == []
    assert registry.unavailable() == {"image_generation": "no image backend is bound"}
    blank = await registry.execute("image_generation", {"prompt": "   "})
    assert blank.error_kind is ErrorKind.INVALID_ARGUMENTS
    missing = await registry.execute("image_generation", {})
    assert missing.error_kind is ErrorKind.INVALID_ARGUMENTS
    result = await registry.execute("image_generation", {"prompt": "a cat", "n": 2})
    assert result.error_kind is ErrorKind.CODING_TOOL_UNSUPPORTED
    meta = result.structured_metadata
    assert meta is not None and meta["accepted_input"]["n"] == 2
    too_many = await registry.execute("image_generation", {"prompt": "a cat", "n": 9})
    assert too_many.error_kind is ErrorKind.INVALID_ARGUMENTS
    await registry.aclose()
