"""Plugins: tool families other packages contribute through the ``octos_tools.tools``
entry-point group.

A plugin package declares, in its ``pyproject.toml``::

    [project.entry-points."octos_tools.tools"]
    notes = "octos_notes:register"

where ``register(registry, workspace, config) -> None`` registers its tools on the
registry, exactly as a built-in family module does (see :mod:`octos_tools.builtins`). The
configuration names the plugins to load (``plugins = ["notes"]``, or ``["*"]`` for every
installed one); nothing is loaded unless named, so installing a package never changes what a
server offers by itself. Plugin tools obey policies, groups and deferral like any other:
they are registered before policies and deferral are applied.

A plugin that fails to import or to register is reported by name (one line, logged as a
warning and returned in :attr:`PluginReport.failed`) and the others still load; tools a
failed plugin registered before failing are removed again.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import Config
    from .registry import ToolRegistry
    from .workspace import Workspace

__all__ = [
    "ENTRY_POINT_GROUP",
    "PluginReport",
    "load_plugins",
    "plugin_of",
    "plugin_report",
    "tool_origins",
]

logger = logging.getLogger("octos_tools.plugins")

ENTRY_POINT_GROUP = "octos_tools.tools"
"""The entry-point group plugins register under."""

_ORIGINS: weakref.WeakKeyDictionary[ToolRegistry, dict[str, str]] = weakref.WeakKeyDictionary()
_REPORTS: weakref.WeakKeyDictionary[ToolRegistry, PluginReport] = weakref.WeakKeyDictionary()


@dataclass
class PluginReport:
    """What :func:`load_plugins` did.

    Attributes:
        loaded: ``plugin name -> tool names it registered``, in load order.
        failed: ``plugin name -> one-line reason`` for plugins that failed to import or
            register, or that were named but are not installed.
    """

    loaded: dict[str, list[str]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


def _installed() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_plugins(
    registry: ToolRegistry, workspace: Workspace, config: Config, names: list[str] | None = None
) -> PluginReport:
    """Load the plugins ``names`` (default ``config.plugins``) into ``registry``.

    Args:
        registry: the registry to register into.
        workspace: the workspace passed to each plugin's ``register``.
        config: the configuration passed to each plugin's ``register``.
        names: entry-point names, or ``["*"]`` for every installed plugin.

    Returns:
        A :class:`PluginReport`; never raises for a broken plugin.
    """
    wanted = list(config.plugins if names is None else names)
    report = PluginReport()
    if not wanted:
        return report
    installed = _installed()
    if "*" in wanted:
        order = sorted(installed)
    else:
        order = list(dict.fromkeys(wanted))
    origins = _ORIGINS.setdefault(registry, {})
    for name in order:
        ep = installed.get(name)
        if ep is None:
            report.failed[name] = (
                f"not installed (no entry point of that name in group {ENTRY_POINT_GROUP!r})"
            )
            logger.warning("plugin %r: %s", name, report.failed[name])
            continue
        before = set(registry.names())
        try:
            register = ep.load()
            if not callable(register):
                raise TypeError(f"{ep.value} is not callable")
            register(registry, workspace, config)
        except Exception as exc:  # noqa: BLE001 - a broken plugin never stops the others
            for added in set(registry.names()) - before:
                registry.unregister(added)
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
            report.failed[name] = reason
            logger.warning("plugin %r failed to load: %s", name, reason)
            continue
        added_names = [n for n in registry.names() if n not in before]
        report.loaded[name] = added_names
        for tool_name in added_names:
            origins[tool_name] = name
    previous = _REPORTS.get(registry)
    if previous is not None:
        previous.loaded.update(report.loaded)
        previous.failed.update(report.failed)
    else:
        _REPORTS[registry] = report
    return report


def plugin_report(registry: ToolRegistry) -> PluginReport:
    """What the plugin loads into ``registry`` did so far (empty when none ran)."""
    return _REPORTS.get(registry) or PluginReport()


def tool_origins(registry: ToolRegistry) -> dict[str, str]:
    """``tool name -> plugin name`` of the tools plugins registered in ``registry``."""
    return dict(_ORIGINS.get(registry, {}))


def plugin_of(registry: ToolRegistry, tool_name: str) -> str | None:
    """The plugin that registered ``tool_name`` in ``registry``, or ``None``."""
    return _ORIGINS.get(registry, {}).get(tool_name)
