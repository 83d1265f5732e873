"""Built-in tools, one module per family; :func:`register_builtins` registers them all.

Each family module exposes ``register(registry, workspace, config) -> None``. A family whose
optional extra is not installed registers nothing and records, in :data:`OPTIONAL_TOOLS`,
which extra would add each missing tool (``octos-tools tools`` shows it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ..config import Config

if TYPE_CHECKING:
    from ..registry import ToolRegistry
    from ..workspace import Workspace

__all__ = ["FAMILIES", "MISSING_EXTRAS", "register_builtins"]

#: Family modules under ``octos_tools.builtins``, in registration order (octos's order in
#: ``with_builtins_and_permissions``, ``crates/octos-agent/src/tools/registry.rs``: runtime,
#: coding, sub-agents, files, search, web, git, code, discovery, media).
FAMILIES: list[str] = [
    "runtime",
    "coding",
    "agents",
    "files",
    "patch",
    "search",
    "web",
    "git",
    "code",
    "discovery",
    "media",
    "image",
    "browser",
]

#: ``tool name -> extra`` for built-in tools left out because their extra is missing.
MISSING_EXTRAS: dict[str, str] = {}


def register_builtins(
    registry: ToolRegistry, workspace: Workspace, config: Config | None = None
) -> list[str]:
    """Register every built-in tool bound to ``workspace``.

    Args:
        registry: the registry to fill.
        workspace: the :class:`~octos_tools.workspace.Workspace` file tools are confined to.
        config: settings (shell, web, limits); defaults when ``None``.

    Returns:
        The names registered, in order.
    """
    config = config or Config()
    before = set(registry.names())
    for family in FAMILIES:
        module = importlib.import_module(f"{__name__}.{family}")
        module.register(registry, workspace, config)
    return [n for n in registry.names() if n not in before]
