"""``code_structure``: the outline of source files with tree-sitter (octos ``code_structure``;
extra ``code``).

Rules: read-only and Safe; only definitions at module level or in a class-like body are
listed; a folder's outline stops at a budget below the output cap and says what it left
out. Without the extra the tool is recorded in ``MISSING_EXTRAS``.

* :mod:`._outline`: the parsers per language, the outline, the tool.

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
"""

from __future__ import annotations

from ._outline import (
    EXTENSIONS,
    LANGUAGES,
    MAX_DIR_OUTPUT_BYTES,
    MAX_FILE_BYTES,
    MAX_FILES,
    CodeStructureTool,
    outline,
    register,
    render_outline,
)

__all__ = [
    "EXTENSIONS",
    "LANGUAGES",
    "MAX_DIR_OUTPUT_BYTES",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "CodeStructureTool",
    "outline",
    "register",
    "render_outline",
]
