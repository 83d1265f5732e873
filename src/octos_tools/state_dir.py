"""The per-user state folder: where octos-tools keeps what outlives a process.

Layout (each folder created with mode ``0700``, owned by the running user)::

    $OCTOS_TOOLS_STATE_DIR            (default: $XDG_STATE_HOME/octos-tools,
                                       or ~/.local/state/octos-tools)
    └── workspaces/<name>-<digest>/   one per workspace: history, locks, tokens

``<name>`` is the workspace folder's base name (for a person reading the folder), ``<digest>``
the first 16 hex digits of the SHA-256 of its resolved absolute path, so two workspaces with
the same base name never share a folder. The location follows the XDG Base Directory
specification's ``XDG_STATE_HOME`` ("state data that should persist between restarts").

This folder is outside every workspace on purpose: a command confined to the workspace
cannot rewrite the server's history, locks or tokens, and the user's repository never sees
them.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

__all__ = ["STATE_DIR_ENV", "state_root", "workspace_state_dir"]

STATE_DIR_ENV = "OCTOS_TOOLS_STATE_DIR"
"""Environment variable that moves the whole state folder (tests, containers)."""

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def state_root(*, create: bool = True) -> Path:
    """The per-user state folder (see the module docstring for how it is chosen).

    Args:
        create: make the folder (mode ``0700``) when it does not exist.

    Returns:
        The absolute path of the folder.

    Raises:
        OSError: when ``create`` is true and the folder cannot be made.
    """
    override = os.environ.get(STATE_DIR_ENV)
    if override:
        root = Path(override).expanduser()
    else:
        xdg = os.environ.get("XDG_STATE_HOME")
        base = (
            Path(xdg).expanduser()
            if xdg and os.path.isabs(xdg)
            else Path.home() / ".local" / "state"
        )
        root = base / "octos-tools"
    root = root.absolute()
    if create:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root


def workspace_state_dir(workspace: str | os.PathLike[str], *, create: bool = True) -> Path:
    """The state folder of one workspace: ``<state_root>/workspaces/<name>-<digest>``.

    Args:
        workspace: the workspace folder (resolved with :func:`os.path.realpath`, so a
            symlinked spelling of the same folder gets the same state folder).
        create: make the folder (and its parents, mode ``0700``) when missing.

    Returns:
        The absolute path of the folder.

    Raises:
        OSError: when ``create`` is true and the folder cannot be made.
    """
    real = os.path.realpath(os.fspath(workspace))
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = _UNSAFE_NAME.sub("_", os.path.basename(real) or "root")[:48]
    folder = state_root(create=create) / "workspaces" / f"{name}-{digest}"
    if create:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder
