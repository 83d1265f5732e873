"""Sandboxes for commands and mounted servers (issue 20): Codex's modes, two engines.

Public surface:

* :class:`SandboxMode`: ``read-only`` | ``workspace-write`` | ``danger-full-access``;
* :class:`SandboxSettings`: ``[sandbox]`` resolved (mode, engine, network, writable roots,
  unreadable and read-only paths); :func:`settings_from_config` builds it from a
  :class:`~octos_tools.config.Config` (``read_only = true`` and a denied web included);
* :func:`wrap_command`: ``(argv, cwd, env, settings, workspace)`` -> :class:`SandboxSpawn`
  (what to start), or ``sandbox_unavailable``; :func:`wrap_server` -> :class:`ServerSpawn`
  for a process a library starts (a mounted stdio MCP server);
* :func:`blocked_note`: the line that tells the model a rule blocked its command;
* :func:`engine_status`, :func:`resolve_engine`: what this machine can enforce.

Private modules, one job each: :mod:`._settings` (modes), :mod:`._protected` (paths that
stay unreadable or read-only), :mod:`._bubblewrap` and :mod:`._landlock` (the engines),
:mod:`._seccomp` (the filter), :mod:`._detect` (which engine runs here), :mod:`._spawn`
(putting it together), :mod:`._notes`, :mod:`._probe` (``octos-tools sandbox check``);
for git: :mod:`._git_guard` (what a command planted for git to run, undone after it),
:mod:`._git_config` (its allow-list), :mod:`._gitlinks`, :mod:`._guard_ticker` (the guard in
the background while a session or a mounted server lives);
for ``[sandbox] allowed_hosts``: :mod:`._egress` (the allow-list), :mod:`._proxy` (the
egress proxy; :mod:`._proxy_http`, its HTTP/1.x rules), :mod:`._bridge` (the proxy
inside a bubblewrap command's network namespace).
docs/sandbox.md explains what each mode blocks and the limits.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..hook_programs import hook_commands, hook_programs
from ._detect import EngineStatus, bubblewrap_status, landlock_status
from ._notes import blocked_note
from ._settings import ENGINES, SandboxMode, SandboxSettings
from ._spawn import Sandbox, SandboxSpawn, ServerSpawn, resolve_engine, sandbox_for

if TYPE_CHECKING:
    from ..config import Config

__all__ = [
    "ENGINES",
    "EngineStatus",
    "Sandbox",
    "SandboxMode",
    "SandboxSettings",
    "SandboxSpawn",
    "ServerSpawn",
    "blocked_note",
    "engine_status",
    "resolve_engine",
    "sandbox_for",
    "settings_from_config",
    "web_denied",
    "wrap_command",
    "wrap_server",
]


def engine_status() -> list[EngineStatus]:
    """Both engines' status on this machine (measured once per process)."""
    return [bubblewrap_status(), landlock_status()]


def web_denied(config: Config) -> bool:
    """The hard policy denies the web (``group:web``, ``web_fetch`` or a wildcard that
    matches it): commands then get no network either."""
    policy = config.tool_policy.to_policy()
    return not policy.is_allowed("web_fetch")


def settings_from_config(
    config: Config,
    *,
    mode: SandboxMode | str | None = None,
    config_path: str | os.PathLike[str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
) -> SandboxSettings:
    """The commands' sandbox for ``config``.

    * the mode: ``mode`` (``--sandbox``) or ``[sandbox] mode``; ``read_only = true`` makes
      it at most ``read-only`` (commands run read-only instead of being removed);
    * the network: ``[sandbox] network``, and always off when the policy denies the web;
      ``[sandbox] allowed_hosts`` (egress through the proxy) likewise dropped then;
    * the server's own files: its config file (``config_path``), its audit log
      (``[audit] path``, append-only) and the programs its hooks run
      (:func:`octos_tools.hook_programs.hook_programs`, relative to ``workspace``, default
      ``config.workspace`` or the current folder) read-only, its MCP token file
      (``serve.auth_token_file``) and state folder unreadable.

    Raises:
        ValueError: ``mode`` is not a mode name.
    """
    section = config.sandbox
    chosen = SandboxMode.parse(str(mode)) if mode is not None else SandboxMode(section.mode)
    reason = "--sandbox" if mode is not None else "config"
    if config.read_only:
        strict = chosen.at_most(SandboxMode.READ_ONLY)
        if strict is not chosen:
            chosen, reason = strict, "read_only"
    secrets: list[str] = []
    if config.serve.auth_token_file:
        secrets.append(os.path.abspath(os.path.expanduser(config.serve.auth_token_file)))
    web_off = web_denied(config)
    pinned = [os.path.abspath(config_path)] if config_path else []
    commands = hook_commands(config)
    if commands:
        where = workspace if workspace is not None else (config.workspace or os.getcwd())
        pinned += [p for p in hook_programs(commands, where) if p not in pinned]
    audit = config.audit.path
    return SandboxSettings(
        mode=chosen,
        engine=section.engine,
        network=section.network and not web_off,
        allowed_hosts=() if web_off else tuple(section.allowed_hosts),
        writable_roots=tuple(section.writable_roots),
        deny_read=tuple(section.deny_read),
        read_only_paths=tuple(pinned),
        append_only_paths=(os.path.abspath(os.path.expanduser(audit)),) if audit else (),
        secret_paths=tuple(secrets),
        reason=reason,
    )


def wrap_command(
    argv: Sequence[str],
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    settings: SandboxSettings,
    workspace: str | os.PathLike[str] | None,
    *,
    tty: str | None = None,
) -> SandboxSpawn:
    """What to spawn to run ``argv`` in ``cwd`` with ``env`` under ``settings``.

    Args:
        argv: the program and its arguments (``["/bin/sh", "-c", CMD]``).
        cwd: the working folder (absolute).
        env: the complete environment.
        settings: the sandbox (``danger-full-access``: ``argv`` unchanged).
        workspace: the workspace root, writable in ``workspace-write``.
        tty: the slave of the command's own pseudo-terminal (``/dev/pts/N``), the only
            terminal besides ``/dev/tty`` it may open under Landlock; ``None``: none.

    Returns:
        A :class:`SandboxSpawn`; call its ``close()`` after the process started.

    Raises:
        ToolError: ``sandbox_unavailable`` (cause and fix in the message) when no engine
            can enforce ``settings.mode`` on this machine; the command must not run.
    """
    return sandbox_for(settings).wrap(
        argv,
        cwd=os.fspath(cwd),
        env=env,
        workspace=os.fspath(workspace) if workspace is not None else None,
        tty=tty,
    )


def wrap_server(
    argv: Sequence[str],
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    settings: SandboxSettings,
    workspace: str | os.PathLike[str] | None,
) -> ServerSpawn:
    """What starts ``argv`` confined by ``settings`` when a library spawns the process (a
    mounted stdio MCP server: no descriptor passing, no ``preexec_fn``): the command line,
    the environment and, in ``workspace-write``, the git guard's view from before the
    start (:attr:`ServerSpawn.guard`: check it after each call and when the server exits).

    Raises:
        ToolError: ``sandbox_unavailable`` when no engine can enforce the mode here.
    """
    return sandbox_for(settings).wrap_server(
        argv,
        cwd=os.fspath(cwd),
        env=env,
        workspace=os.fspath(workspace) if workspace is not None else None,
    )
