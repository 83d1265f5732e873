"""Host profile: build a ready registry from a :class:`~octos_tools.config.Config`.

One place decides how a host (the CLI, the MCP server, the agent loop) assembles its
registry, in octos's order (reference §3.6): builtins → hard ``tool_policy`` (and the
read-only preset) → ``context_filter`` → provider policy → deferral of low-use groups when
more than ``max_active`` tools are visible (seed §6.2.5 side bar).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from .config import Config
from .lifecycle import ToolLifecycle
from .policy import ToolPolicy, resolve_provider_policy
from .registry import ToolRegistry
from .tool import ConcurrencyClass

if TYPE_CHECKING:
    from .workspace import Workspace

__all__ = ["apply_deferral", "build_registry", "read_only_policy"]


def read_only_policy(registry: ToolRegistry) -> ToolPolicy:
    """A policy denying every Exclusive tool of ``registry`` (the ``--read-only`` preset)."""
    return ToolPolicy(
        deny=[t.name for t in registry.tools() if t.concurrency_class is ConcurrencyClass.EXCLUSIVE]
    )


def apply_deferral(registry: ToolRegistry, config: Config) -> list[str]:
    """Defer ``config.deferred_groups`` when more than ``max_active`` tools are visible.

    If more than ``max_active`` tools (``activate_tools`` not counted) are still visible
    after that, the overflow is deferred too: base tools and spawn-only tools stay, the
    other tools are kept in registration order while slots remain and the rest deferred.
    The first request then shows at most ``max_active`` tools plus ``activate_tools``
    (unless the base tools alone are more), which the LRU would reach after
    ``idle_threshold`` requests anyway (seed §6.2.3: first request small, every tool one
    call away).

    Registers ``activate_tools`` when something was deferred (and the discovery family
    provides it). Returns the names deferred.
    """
    max_active = config.lifecycle.max_active
    if not config.lifecycle.defer or len(registry.specs()) <= max_active:
        return []
    deferred: list[str] = []
    for group in config.deferred_groups:
        deferred.extend(registry.defer_group(group))
    visible = [n for n in registry.visible_names() if n != "activate_tools"]
    if len(visible) > max_active:
        base = registry.lifecycle.base_tools
        pinned = [n for n in visible if n in base or registry.is_spawn_only(n)]
        others = [n for n in visible if n not in pinned]
        deferred.extend(registry.defer(others[max(max_active - len(pinned), 0) :]))
    if deferred:
        try:
            from .builtins.discovery import ActivateToolsTool
        except ImportError:  # the discovery family is not installed in this build
            return deferred
        if "activate_tools" not in registry:
            registry.register(ActivateToolsTool())
    return deferred


def build_registry(
    config: Config | None = None,
    workspace: str | os.PathLike[str] | Workspace | None = None,
    *,
    session_key: str | None = None,
    builtins: bool = True,
) -> ToolRegistry:
    """Build the registry a host serves.

    Args:
        config: the configuration (defaults when ``None``).
        workspace: the workspace root (a path or a ``Workspace``); default
            ``config.workspace``, else the current directory.
        session_key: the session the registry serves.
        builtins: register the built-in tools.

    Raises:
        PathError: if the workspace root does not exist or is not a directory.
    """
    from .workspace import Workspace

    config = config or Config()
    if workspace is None:
        workspace = config.workspace or os.getcwd()
    ws = workspace if isinstance(workspace, Workspace) else Workspace(Path(workspace))
    registry = ToolRegistry(
        ws,
        lifecycle=ToolLifecycle(
            config.lifecycle.max_active, config.lifecycle.idle_threshold, config.base_tools
        ),
        max_args_size=config.limits.max_args_bytes,
        default_timeout=config.limits.tool_timeout_secs,
        max_output_bytes=config.limits.max_output_bytes,
        session_key=session_key,
    )
    if builtins:
        from .builtins import register_builtins

        register_builtins(registry, ws, config)
    if config.plugins:  # before policies and deferral: plugin tools obey them like any other
        from .plugins import load_plugins

        load_plugins(registry, ws, config)
    apply_policies(registry, config)
    apply_deferral(registry, config)
    return registry


def apply_policies(registry: ToolRegistry, config: Config) -> None:
    """Apply the read-only preset, ``tool_policy``, ``context_filter`` and the provider
    policy of ``config`` to ``registry`` (reference §3.6 order)."""
    if config.read_only:
        registry.apply_policy(read_only_policy(registry), source="read-only mode")
    registry.apply_policy(config.tool_policy.to_policy())
    if config.context_filter:
        registry.set_context_filter(config.context_filter)
    resolved = resolve_provider_policy(config.provider_policies(), config.provider, config.model)
    if resolved is not None:
        registry.set_provider_policy(resolved[1])
