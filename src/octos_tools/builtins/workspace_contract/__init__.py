"""``check_workspace_contract``: is the workspace (or a project in it) ready?

Rules: the contract is ``.octos-workspace.toml`` at the project's root (deliverable globs,
validator commands); validators run in the ``read-only`` sandbox, so the tool is Safe, and
where that sandbox cannot be enforced a validator does not run (``sandbox_unavailable``).

* :mod:`._check_workspace_contract`: the contract file, the validators, the tool.

Layout (the same in every family): this ``__init__`` is the family's public surface (its
re-exports and ``register``); every other module is private, named after the tool it
holds or its one job; another package imports the family only from here; tests are
``tests/builtins/test_<module>.py``, one per module, ``test_<family>.py`` for the family.
"""

from __future__ import annotations

from ._check_workspace_contract import (
    CONTRACT_FILE,
    CheckWorkspaceContractTool,
    ValidatorRun,
    register,
    run_validator,
)

__all__ = [
    "CONTRACT_FILE",
    "CheckWorkspaceContractTool",
    "ValidatorRun",
    "register",
    "run_validator",
]
