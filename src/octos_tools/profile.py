"""Host profile: build a ready registry from a :class:`~octos_tools.config.Config`.

One place decides how a host (the CLI, the MCP server, the agent loop) assembles its
registry, in octos's order: builtins → hard ``tool_policy`` (and the read-only preset) →
``context_filter`` → provider policy → deferral.

Deferral (on unless ``lifecycle.defer`` is false, or ``build_registry(defer=False)`` for
``serve --no-defer``) lists :data:`DEFAULT_LISTED`, what a coding agent uses on most
requests, and defers every other tool: web, sub-agents and sessions, media, the command
aliases ``shell`` / ``bash``, ``diff_edit`` (``edit_file`` and ``apply_patch`` cover it for
fewer tokens), ``tool_suggest`` / ``activate_tools`` (``tool_search`` does their job) and
``read_task_output`` (it reads the output of spawn-only tools; none is spawn-only by
default). ``request_user_input`` is listed: a host that cannot ask hides it per session. A
deferred tool stays callable by name (the call loads it) and ``tool_search`` finds it, so
the first request stays the same size however many tools are registered or mounted.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .config import Config, default_config
from .lifecycle import ToolLifecycle
from .policy import ToolPolicy, group_members, resolve_provider_policy
from .registry import ToolRegistry
from .tool_types import ConcurrencyClass, Tool

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from .workspace import Workspace

__all__ = [
    "DEFAULT_LISTED",
    "apply_deferral",
    "apply_policies",
    "build_call_registry",
    "build_registry",
    "deferral_enabled",
    "read_only_policy",
]

DEFAULT_LISTED: tuple[str, ...] = (
    "read_file",
    "write_file",
    "edit_file",
    "apply_patch",
    "glob",
    "grep",
    "list_dir",
    "exec_command",
    "write_stdin",
    "update_plan",
    "request_user_input",
    "git",
    "tool_search",
)
"""Built-in tools the default profile lists on every request (in registration order on the
wire); every other built-in tool is deferred. :func:`build_registry` makes them the LRU's
base tools (never evicted) unless the configuration sets ``base_tools``. A host that cannot
ask the user hides ``request_user_input`` (``serve`` does for a client without MCP
elicitation)."""


def read_only_policy(registry: ToolRegistry) -> ToolPolicy:
    """A policy denying every tool of ``registry`` that may write (the ``--read-only``
    preset): every Exclusive tool and every built-in whose spec is not read-only
    (``write_stdin`` types into a shell), except the command tools and ``write_stdin`` when
    the commands run in the ``read-only`` sandbox (:func:`octos_tools.sandbox.settings_from_config`;
    a machine that cannot enforce it answers ``sandbox_unavailable`` instead of running
    them; what ``write_stdin`` types runs in its session's sandbox); and every tool that is
    not a built-in unless it declares ``declares_read_only`` (``@tool(read_only=True)``): a
    plugin's plain ``@tool`` is Safe by default, which says it may run beside others, not
    that it writes nothing."""
    from .sandbox import SandboxMode, SandboxSettings

    def confined(tool: object) -> bool:
        box = getattr(tool, "sandbox", None)
        return isinstance(box, SandboxSettings) and box.mode is SandboxMode.READ_ONLY

    commands_confined = any(confined(t) for t in registry.tools())

    def may_write(tool: Tool) -> bool:
        if confined(tool) or (tool.name == "write_stdin" and commands_confined):
            return False
        if tool.concurrency_class is ConcurrencyClass.EXCLUSIVE:
            return True
        if type(tool).__module__.startswith("octos_tools.builtins."):
            return not tool.spec().read_only
        return not getattr(tool, "declares_read_only", False)

    return ToolPolicy(deny=[t.name for t in registry.tools() if may_write(t)])


def deferral_enabled(config: Config, defer: bool | None = None) -> bool:
    """Whether deferral applies: ``defer`` when given (``serve --no-defer`` passes
    ``False``), else ``config.lifecycle.defer``."""
    return config.lifecycle.defer if defer is None else defer


def _is_builtin(registry: ToolRegistry, name: str) -> bool:
    tool = registry.get(name)
    return tool is not None and type(tool).__module__.startswith("octos_tools.builtins.")


def _register_activate_tools(registry: ToolRegistry) -> None:
    try:
        from .builtins.discovery import ActivateToolsTool
    except ImportError:  # the discovery family is not installed in this build
        return
    registry.register(ActivateToolsTool())
    registry.defer(["activate_tools"])


def apply_deferral(
    registry: ToolRegistry, config: Config, *, defer: bool | None = None
) -> list[str]:
    """Defer the built-in tools that are not in :data:`DEFAULT_LISTED`, when more than
    ``lifecycle.max_active`` tools are visible.

    * Built-in tools outside :data:`DEFAULT_LISTED` are deferred; so are the members of
      ``config.deferred_groups`` when the configuration sets that key itself.
    * Other tools (yours, registered before this call) stay listed while fewer than
      ``max_active`` are: the overflow is deferred in registration order.
    * LRU base tools and spawn-only tools are never deferred.
    * ``activate_tools`` is registered (deferred: callable, not listed) when something was
      deferred.

    Args:
        registry: the registry, tools registered.
        config: the configuration.
        defer: override ``config.lifecycle.defer`` (see :func:`deferral_enabled`).

    Returns:
        The names deferred, in registration order.
    """
    max_active = config.lifecycle.max_active
    if not deferral_enabled(config, defer) or len(registry.visible_names()) <= max_active:
        return []
    base = registry.lifecycle.base_tools
    keep = set(DEFAULT_LISTED) | base
    targets = [n for n in registry.names() if n not in keep and _is_builtin(registry, n)]
    if "deferred_groups" in config.model_fields_set:
        for group in config.deferred_groups:
            targets.extend(n for n in group_members(group) if n not in base)
    deferred = registry.defer(targets)
    visible = registry.visible_names()
    if len(visible) > max_active:
        pinned = [n for n in visible if n in keep or registry.is_spawn_only(n)]
        others = [n for n in visible if n not in pinned]
        deferred.extend(registry.defer(others[max(max_active - len(pinned), 0) :]))
    if deferred and "activate_tools" not in registry:
        _register_activate_tools(registry)
    order = {n: i for i, n in enumerate(registry.names())}
    return sorted(dict.fromkeys(deferred), key=lambda n: order.get(n, len(order)))


def build_registry(
    config: Config | None = None,
    workspace: str | os.PathLike[str] | Workspace | None = None,
    *,
    session_key: str | None = None,
    builtins: bool = True,
    defer: bool | None = None,
) -> ToolRegistry:
    """Build the registry a host serves.

    Args:
        config: the configuration (defaults when ``None``).
        workspace: the workspace root (a path or a ``Workspace``); default
            ``config.workspace``, else the current directory.
        session_key: the session the registry serves.
        builtins: register the built-in tools.
        defer: override ``config.lifecycle.defer`` (``False`` lists every tool: ``serve
            --no-defer``); see :func:`apply_deferral`.

    Raises:
        PathError: if the workspace root does not exist or is not a directory.
    """
    return _build(
        config or default_config(),
        workspace,
        session_key=session_key,
        families=None if builtins else [],
        defer=defer,
    )


def build_call_registry(
    tool: str,
    config: Config | None = None,
    workspace: str | os.PathLike[str] | Workspace | None = None,
    *,
    session_key: str | None = None,
) -> ToolRegistry:
    """Build a registry for one call of ``tool`` (``octos-tools call``): only the built-in
    families that call needs (:func:`octos_tools.builtins.families_for`), so a one-shot
    process does not import and build every family.

    The call's outcome is the one :func:`build_registry` would give: the same policies, the
    same read-only preset and configuration apply to the tool, and every verdict depends
    only on names, tags and the group table. The whole registry is built instead when the
    tool needs the catalog (discovery, sub-agents), is not a built-in tool (a plugin's, a
    mounted server's, an unknown name: its "did you mean" names every tool), when plugins
    are configured, or when its family registered nothing under that name (its extra is
    missing). What the partial registry lists (its specs, its deferral) is not the full
    list: use :func:`build_registry` for anything but the call.

    Args:
        tool: the name of the tool to call.
        config, workspace, session_key: as :func:`build_registry`.

    Raises:
        PathError: if the workspace root does not exist or is not a directory.
    """
    from .builtins import families_for

    config = config or default_config()
    families = None if config.plugins else families_for(tool)
    if families is not None:
        registry = _build(config, workspace, session_key=session_key, families=families)
        if tool in registry or tool in registry.removed_by_policy():
            return registry
    return _build(config, workspace, session_key=session_key, families=None)


def _build(
    config: Config,
    workspace: str | os.PathLike[str] | Workspace | None,
    *,
    session_key: str | None,
    families: list[str] | None,
    defer: bool | None = None,
) -> ToolRegistry:
    """Builtins (``families``: ``None`` for all) → plugins → policies → deferral."""
    from .workspace import Workspace

    if workspace is None:
        workspace = config.workspace or os.getcwd()
    ws = (
        workspace
        if isinstance(workspace, Workspace)
        else Workspace(Path(workspace), durable_writes=config.files.durable_writes)
    )
    # what commands may not read, file tools may not touch (workspace._off_limits)
    token = config.serve.auth_token_file
    ws.off_limits.protect(config.sandbox.deny_read, [token] if token else [])

    from . import trusted_programs

    # sandboxed commands write these: the server takes none of its own programs from them
    trusted_programs.distrust_folders([ws.root, *config.sandbox.writable_roots])
    _protect_server_files(ws, config)
    # the listed tools are the LRU's base tools unless the configuration names its own
    base = config.base_tools if "base_tools" in config.model_fields_set else DEFAULT_LISTED
    registry = ToolRegistry(
        ws,
        lifecycle=ToolLifecycle(config.lifecycle.max_active, config.lifecycle.idle_threshold, base),
        max_args_size=config.limits.max_args_bytes,
        default_timeout=config.limits.tool_timeout_secs,
        max_output_bytes=config.limits.max_output_bytes,
        session_key=session_key,
    )
    registry.injection_filter = config.output.injection_filter
    if config.source_path:
        ws.protect_file(config.source_path, "the server's own config file")
    if config.audit.path:
        ws.protect_file(config.audit.path, "the audit log")
    if families is None or families:
        from .builtins import register_builtins

        register_builtins(registry, ws, config, families=families)
    if config.plugins:  # before policies and deferral: plugin tools obey them like any other
        from .plugins import load_plugins

        load_plugins(registry, ws, config)
    apply_policies(registry, config)
    apply_deferral(registry, config, defer=defer)
    apply_stages(registry, config)
    return registry


def _protect_server_files(ws: Workspace, config: Config) -> None:
    """What the server runs itself stays out of the file tools' reach when it lies in the
    workspace (the sandbox keeps it read-only for commands too): the programs of its hooks
    (:mod:`octos_tools.hook_programs`, warned about: they belong outside the workspace) and
    the folders its own code is imported from."""
    from .hook_programs import hook_commands, hook_programs
    from .sandbox._own_code import own_code_inside

    root = str(ws.root)
    inside = root.rstrip("/") + "/"
    for program in hook_programs(hook_commands(config), root):
        if program.startswith(inside):
            ws.protect_file(program, "a program a hook runs")
            logger.warning(
                "hook program %s lies in the workspace: commands and file tools may not "
                "change it, but what it loads may be; keep hook programs outside the "
                "workspace (docs/hooks.md)",
                program,
            )
    for folder in own_code_inside([root]):
        ws.protect_file(folder, "the server's own code")


def apply_stages(registry: ToolRegistry, config: Config) -> None:
    """Install ``config``'s hooks, audit log and tracing on ``registry``
    (:mod:`octos_tools.stages`); nothing when none is configured.

    Raises:
        ConfigError: if the audit log cannot be opened, or tracing is ``true`` without
            ``opentelemetry-api``.
    """
    from .errors import ConfigError

    hooks = config.hooks
    root = str(registry.workspace.root) if registry.workspace is not None else None
    for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        for block in getattr(hooks, event):
            for handler in block.hooks:
                from .hooks import CommandHook

                registry.add_hook(
                    event,
                    CommandHook(handler.command, timeout=float(handler.timeout), cwd=root),
                    matcher=block.matcher,
                    fail_closed=handler.fail_closed,
                )
    if config.audit.path is not None:
        from .audit import AuditLog

        try:
            registry.set_audit(AuditLog(config.audit.path))
        except OSError as exc:
            raise ConfigError(f"audit.path: cannot open {config.audit.path!r}: {exc}") from None
    enabled = config.tracing.enabled
    if enabled is True or (enabled == "auto" and "opentelemetry.trace" in sys.modules):
        from .tracing import Tracing

        try:
            tracing = Tracing.default(None if enabled == "auto" else True)
        except ImportError:
            raise ConfigError(
                "tracing.enabled: opentelemetry-api is not installed "
                "(pip install 'octos-tools[otel]')"
            ) from None
        if tracing is not None:
            registry.set_tracing(tracing)


def apply_policies(registry: ToolRegistry, config: Config) -> None:
    """Apply the read-only preset, ``tool_policy``, ``context_filter`` and the provider
    policy of ``config`` to ``registry`` (octos's order)."""
    if config.read_only:
        registry.apply_policy(read_only_policy(registry), source="read-only mode")
    registry.apply_policy(config.tool_policy.to_policy())
    if config.context_filter:
        registry.set_context_filter(config.context_filter)
    resolved = resolve_provider_policy(config.provider_policies(), config.provider, config.model)
    if resolved is not None:
        registry.set_provider_policy(resolved[1])
