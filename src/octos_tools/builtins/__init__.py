"""Built-in tools, one package per family; :func:`register_builtins` registers them all.

Each family module exposes ``register(registry, workspace, config) -> None``. A family whose
optional extra is not installed registers nothing and records, in :data:`MISSING_EXTRAS`,
which extra would add each missing tool (``octos-tools tools`` shows it).

:data:`FAMILY_TOOLS` names, without importing anything, every tool each family can register,
so a one-shot call (``octos-tools call NAME``) imports only the families that call needs
(:func:`families_for`); ``tests/test_call_fast_path.py`` checks the table against what each
family's ``register`` does, so it cannot drift.

Layout (the same in every family): a family is a package; its ``__init__`` is the family's
public surface (its re-exports and ``register``) and its docstring holds the family's own
rules; every other module is private, named after the tool it holds or its one job; another
package imports the family only from here; tests are ``tests/builtins/test_<module>.py``, one
per module, ``test_<family>.py`` for the family.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Config
    from ..registry import ToolRegistry
    from ..workspace import Workspace

__all__ = [
    "BUILTIN_TOOLS",
    "FAMILIES",
    "FAMILY_TOOLS",
    "MISSING_EXTRAS",
    "families_for",
    "register_builtins",
]

#: Family modules under ``octos_tools.builtins``, in registration order (octos's order in
#: ``with_builtins_and_permissions``, ``crates/octos-agent/src/tools/registry.rs``: runtime,
#: coding, sub-agents, files, search, web, git, code, discovery, media).
FAMILIES: list[str] = [
    "runtime",
    "interaction",
    "agents",
    "files",
    "patch",
    "search",
    "web",
    "vcs",
    "workspace_history",
    "workspace_contract",
    "code_structure",
    "discovery",
    "image",
    "browser",
]

#: ``family -> every tool its register() can add`` (registered, or recorded in
#: :data:`MISSING_EXTRAS` when its extra is missing). ``activate_tools`` is registered by
#: :func:`octos_tools.profile.apply_deferral`, not by a family.
FAMILY_TOOLS: dict[str, tuple[str, ...]] = {
    "runtime": ("shell", "exec_command", "bash", "write_stdin"),
    "interaction": ("update_plan", "request_user_input"),
    "agents": (
        "spawn_agent",
        "delegate",
        "send_input",
        "resume_agent",
        "wait_agent",
        "close_agent",
    ),
    "files": ("read_file", "diff_edit", "edit_file", "write_file"),
    "patch": ("apply_patch",),
    "search": ("glob", "grep", "list_dir"),
    "web": ("web_search", "web_fetch"),
    "vcs": ("git",),
    "workspace_history": ("workspace_log", "workspace_show", "workspace_diff", "workspace_restore"),
    "workspace_contract": ("check_workspace_contract",),
    "code_structure": ("code_structure",),
    "discovery": ("tool_search", "tool_suggest", "read_task_output"),
    "image": ("image_generation", "view_image"),
    "browser": ("browser",),
}

#: Every built-in tool name (``activate_tools`` included).
BUILTIN_TOOLS: frozenset[str] = frozenset(
    {name for names in FAMILY_TOOLS.values() for name in names} | {"activate_tools"}
)

#: Tools whose call uses another family's tool: ``apply_patch`` hands ``{path, diff}`` to
#: the registry's ``diff_edit``.
_ALSO_NEEDS: dict[str, tuple[str, ...]] = {"apply_patch": ("files",)}

#: Tools whose call reads the whole catalog or other tools of the registry: discovery ranks
#: and activates every tool, the sub-agent tools run agents over the registry.
_NEEDS_ALL: frozenset[str] = frozenset(
    FAMILY_TOOLS["discovery"] + FAMILY_TOOLS["agents"] + ("activate_tools",)
)

_FAMILY_OF: dict[str, str] = {
    name: family for family, names in FAMILY_TOOLS.items() for name in names
}

#: ``tool name -> extra`` for built-in tools left out because their extra is missing.
MISSING_EXTRAS: dict[str, str] = {}


def families_for(name: str) -> list[str] | None:
    """The families a call of tool ``name`` needs, in :data:`FAMILIES` order, or ``None``
    when it needs every family: ``name`` is not a built-in tool (a plugin's, a mounted MCP
    server's, a misspelling that wants the full list of suggestions) or its call reads the
    whole catalog (discovery, sub-agents)."""
    family = _FAMILY_OF.get(name)
    if family is None or name in _NEEDS_ALL:
        return None
    wanted = {family, *_ALSO_NEEDS.get(name, ())}
    return [f for f in FAMILIES if f in wanted]


def register_builtins(
    registry: ToolRegistry,
    workspace: Workspace,
    config: Config | None = None,
    *,
    families: Iterable[str] | None = None,
) -> list[str]:
    """Register the built-in tools bound to ``workspace``.

    Args:
        registry: the registry to fill.
        workspace: the :class:`~octos_tools.workspace.Workspace` file tools are confined to.
        config: settings (shell, web, limits); defaults when ``None``.
        families: register only these families (names of :data:`FAMILIES`, registered in
            that order); every family when ``None``.

    Returns:
        The names registered, in order.

    Raises:
        ValueError: ``families`` names an unknown family.
    """
    if config is None:
        from ..config import default_config

        config = default_config()
    chosen = FAMILIES
    if families is not None:
        wanted = set(families)
        unknown = wanted.difference(FAMILIES)
        if unknown:
            raise ValueError(f"unknown built-in families: {', '.join(sorted(unknown))}")
        chosen = [f for f in FAMILIES if f in wanted]
    workspace.history_config = config.history  # the [history] settings its checkpoints use
    before = set(registry.names())
    for family in chosen:
        module = importlib.import_module(f"{__name__}.{family}")
        module.register(registry, workspace, config)
    return [n for n in registry.names() if n not in before]
