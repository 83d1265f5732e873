"""The read-only ``git`` tool (octos ``git``; extra ``git``, which needs no Python package).

Rules: runs the ``git`` binary in the workspace with the commands' scrubbed environment and
no configured helper, pager or hook able to run code; read-only commands only
(``status``, ``diff``, ``log``, ``show``, ``blame``); a revision is validated before use.
Without ``git`` on ``PATH`` the tool stays registered and answers ``unavailable``.

* :mod:`._git_tool`: the tool, its environment and output parsing.

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
"""

from __future__ import annotations

from ._git_tool import GitTool, git_environment, register, validate_revision

__all__ = ["GitTool", "git_environment", "register", "validate_revision"]
