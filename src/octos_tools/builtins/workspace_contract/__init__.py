"""``check_workspace_contract``: is the workspace (or a project in it) ready?

Rules: the contract is ``.octos-workspace.toml`` at the project's root (deliverable globs,
validator commands); validators run in the ``read-only`` sandbox, so the tool is Safe, and
where that sandbox cannot be enforced a validator does not run (``sandbox_unavailable``).

* :mod:`._check_workspace_contract`: the contract file, the validators, the tool.

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
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
