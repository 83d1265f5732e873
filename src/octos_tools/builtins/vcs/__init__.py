"""The read-only ``git`` tool (octos ``git``; extra ``git``, which needs no Python package).

Rules: runs the ``git`` binary in the workspace with the commands' scrubbed environment and
no configured helper, pager or hook able to run code; read-only commands only
(``status``, ``diff``, ``log``, ``show``, ``blame``); a revision is validated before use.
Without ``git`` on ``PATH`` the tool stays registered and answers ``unavailable``.

* :mod:`._git_tool`: the tool, its environment and output parsing.

Layout (the same in every family): this ``__init__`` is the family's public surface (its
re-exports and ``register``); every other module is private, named after the tool it
holds or its one job; another package imports the family only from here; tests are
``tests/builtins/test_<module>.py``, one per module, ``test_<family>.py`` for the family.
"""

from __future__ import annotations

from ._git_tool import GitTool, git_environment, register, validate_revision

__all__ = ["GitTool", "git_environment", "register", "validate_revision"]
