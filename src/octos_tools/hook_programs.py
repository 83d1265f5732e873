"""The files a hook command runs: they must not be writable by the
commands the sandbox confines, since the server runs hooks unconfined.

A hook's ``command`` runs by ``sh -c`` in the workspace (:mod:`octos_tools.hooks`). Its
*programs* here are each word that names an existing file (relative words resolved
against the workspace, ``~`` and ``$CLAUDE_PROJECT_DIR`` expanded: ``./check-write.sh``,
``.venv/bin/ruff``, ``python scripts/lint.py``'s script) and what the first word finds on
``PATH`` (``ruff`` in an activated ``.venv/bin``). The sandbox keeps those read-only for
commands like the server's config (:func:`octos_tools.sandbox.settings_from_config`), the
file tools refuse to write them (:meth:`octos_tools.workspace.Workspace.protect_file`),
and a program inside the workspace is warned about at start: what the program itself
loads (a module next to the script) is not covered, so hook programs belong outside the
workspace (``~/.config/octos-tools/hooks/``, docs/hooks.md).
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import Config

__all__ = ["hook_commands", "hook_programs"]


def hook_commands(config: Config) -> list[str]:
    """Every hook command line of ``config`` (all events)."""
    hooks = config.hooks
    blocks = [*hooks.PreToolUse, *hooks.PostToolUse, *hooks.PostToolUseFailure]
    return [h.command for block in blocks for h in block.hooks]


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


def hook_programs(commands: Iterable[str], workspace: str | os.PathLike[str]) -> list[str]:
    """Absolute paths of the existing files the hook ``commands`` run (see the module).

    Args:
        commands: hook command lines.
        workspace: the folder hooks run in (relative words are resolved against it).

    Returns:
        Each file by its absolute name, and by its real name when a link leads elsewhere.
    """
    root = os.path.abspath(os.fspath(workspace))
    found: list[str] = []
    for command in commands:
        words = _words(command)
        for i, word in enumerate(words):
            text = word.replace("${CLAUDE_PROJECT_DIR}", root).replace("$CLAUDE_PROJECT_DIR", root)
            text = os.path.expanduser(text)
            path: str | None = None
            if i == 0 and "/" not in text:
                path = shutil.which(text)
            elif text and not text.startswith("-"):
                candidate = os.path.normpath(os.path.join(root, text))
                if os.path.isfile(candidate):
                    path = candidate
            if path is None:
                continue
            for spelling in (os.path.abspath(path), os.path.realpath(path)):
                if spelling not in found:
                    found.append(spelling)
    return found
