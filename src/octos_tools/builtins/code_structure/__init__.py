"""``code_structure``: the outline of source files with tree-sitter (octos ``code_structure``;
extra ``code``).

Rules: read-only and Safe; only definitions at module level or in a class-like body are
listed; a folder's outline stops at a budget below the output cap and says what it left
out. Without the extra the tool is recorded in ``MISSING_EXTRAS``.

* :mod:`._outline`: the parsers per language, the outline, the tool.

Layout (the same in every family): this ``__init__`` is the family's public surface (its
re-exports and ``register``); every other module is private, named after the tool it
holds or its one job; another package imports the family only from here; tests are
``tests/builtins/test_<module>.py``, one per module, ``test_<family>.py`` for the family.
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
