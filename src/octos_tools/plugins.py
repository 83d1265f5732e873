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

**Replacing a tool that is already registered** (a built-in such as ``read_file``, or another
plugin's) is refused unless the plugin declares it: its ``register`` callable carries an
``overrides`` attribute naming the tools it replaces::

    def register(registry, workspace, config):
        registry.register(my_read_file)
    register.overrides = ("read_file",)

An undeclared replacement is undone (the original tool is put back) and reported in
:attr:`PluginReport.failed`; a declared one is listed in :attr:`PluginReport.overrides`, and
``octos-tools tools`` shows ``<plugin> (overrides)`` in its plugin column.

Plugins run in this process: they are trusted code. What the server still enforces on their
tools: every call of a plugin tool, ``async`` or not, runs on an event loop of its own in a
worker thread (:mod:`octos_tools._off_loop`), so a tool that blocks stalls no other call, and
its timeout fires on the main loop (the call answers ``timeout`` on time even while the
plugin's code is still blocked).
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING

from ._off_loop import wrap_off_loop

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
    overrides: dict[str, list[str]] = field(default_factory=dict)
    """``plugin name -> names of already registered tools it replaced`` (declared)."""


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
        before = {n: registry.get(n) for n in registry.names()}
        try:
            register = ep.load()
            if not callable(register):
                raise TypeError(f"{ep.value} is not callable")
            register(registry, workspace, config)
            declared = set(getattr(register, "overrides", ()) or ())
            replaced = [n for n, t in before.items() if registry.get(n) is not t]
            undeclared = [n for n in replaced if n not in declared]
            if undeclared:
                raise PermissionError(
                    f"it replaces {', '.join(repr(n) for n in undeclared)}, already registered "
                    "(declare it with register.overrides = (NAME, ...) to allow it)"
                )
        except Exception as exc:  # noqa: BLE001 - a broken plugin never stops the others
            for added in set(registry.names()) - set(before):
                registry.unregister(added)
            for old_name, old_tool in before.items():
                if old_tool is not None and registry.get(old_name) is not old_tool:
                    registry.register(old_tool)
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
            report.failed[name] = reason
            logger.warning("plugin %r failed to load: %s", name, reason)
            continue
        added_names = [n for n in registry.names() if n not in before]
        report.loaded[name] = added_names + replaced
        if replaced:
            report.overrides[name] = replaced
        for tool_name in added_names + replaced:
            wrap_off_loop(registry.get(tool_name))
        for tool_name in added_names:
            origins[tool_name] = name
        for tool_name in replaced:
            origins[tool_name] = f"{name} (overrides)"
    previous = _REPORTS.get(registry)
    if previous is not None:
        previous.loaded.update(report.loaded)
        previous.failed.update(report.failed)
        previous.overrides.update(report.overrides)
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
    origin = _ORIGINS.get(registry, {}).get(tool_name)
    return origin.removesuffix(" (overrides)") if origin is not None else None
