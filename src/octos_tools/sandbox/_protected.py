"""The paths a sandboxed command may not read, and those it may not write inside a writable
root.

**Unreadable** (:func:`unreadable_paths`): the credential stores of the user's home
(:data:`CREDENTIAL_STORES`, the issue's list; Codex lets commands read them, we do not),
``[sandbox] deny_read``, and the server's own secrets: the state folder
(:func:`octos_tools.state_dir.state_root`: history, locks, tokens) and the MCP bearer
token file.

**Read-only inside writable roots** (found by the walk of :mod:`._git_guard`,
:meth:`~._git_guard.GitGuard.mount_paths`): what makes git run code later, in every
repository found in a writable root (the top one, nested ones, submodules,
worktrees; a ``.git`` *file* and the folder it points to): ``hooks/``, ``config``,
``config.worktree``, ``commondir``, wherever ``core.hooksPath`` points (``.husky/``) and
every config file the config includes (a shared ``.gitconfig`` in the work tree); git
itself is asked where those are (:mod:`octos_tools._git_code`). The ``.git`` folder itself
stays writable (``git add`` and ``git commit`` work: Codex locks the whole ``.git`` and
breaks them, ``codex-rs/linux-sandbox/README.md`` "Git safety mounts"); Claude Code's
sandbox-runtime protects hooks and config only, as here.
The server's own config file is read-only too. What a command creates during its run is
the guard's job (:mod:`._git_guard`). The helpers here read where a git folder points
(:func:`gitdir_of`, :func:`commondir_of`, :func:`hooks_path`).

The walk that finds repositories stops listing new folders after :data:`MAX_ENTRIES`
entries per writable root and skips dependency and build folders (:data:`SKIPPED_DIRS`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .. import _git_code

__all__ = [
    "CREDENTIAL_STORES",
    "MAX_ENTRIES",
    "SKIPPED_DIRS",
    "commondir_of",
    "gitdir_of",
    "hooks_path",
    "included_configs",
    "unreadable_paths",
]

CREDENTIAL_STORES: tuple[str, ...] = (
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".gnupg",
    ".npmrc",
    ".pypirc",
    ".config/gh",
    ".config/hub",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".pgpass",
    ".terraform.d/credentials.tfrc.json",
)
"""Credential stores under the home folder that commands never read."""

#: Folders the repository walk does not enter (dependencies, caches, build outputs).
SKIPPED_DIRS = frozenset(
    {"node_modules", ".venv", "venv", "__pycache__", "target", ".tox", ".mypy_cache", "dist"}
)
#: Folder entries the walk looks at, at most, per writable root.
MAX_ENTRIES = 20_000


def unreadable_paths(
    home: Path, deny_read: Iterable[str], secrets: Iterable[str | os.PathLike[str]]
) -> list[str]:
    """Absolute paths of what commands must not read, that exist now.

    Args:
        home: the user's home folder.
        deny_read: ``[sandbox] deny_read`` entries (``~`` expanded; relative to ``home``).
        secrets: the server's own secret paths (state folder, token file).
    """
    found: list[str] = []
    candidates = [home / name for name in CREDENTIAL_STORES]
    candidates += [home / Path(os.path.expanduser(p)) for p in deny_read]
    candidates += [Path(s) for s in secrets]
    for path in candidates:
        text = os.path.abspath(path)
        if os.path.lexists(text) and text not in found:
            found.append(text)
    return found


def gitdir_of(dot_git: str) -> str | None:
    """The folder a ``.git`` file points to (``gitdir: PATH``), or ``None``."""
    return _git_code.gitfile_target(dot_git)


def hooks_path(gitdir: str, worktree: str) -> str | None:
    """``core.hooksPath`` of a repository as git reads it (its config and every file that
    includes), as an absolute path; ``None`` when unset (:mod:`octos_tools._git_code`)."""
    hooks = _git_code.code_paths(gitdir, worktree).hooks
    return hooks[0] if len(hooks) > 1 else None


def included_configs(gitdir: str, worktree: str | None) -> tuple[str, ...]:
    """The config files a repository's config includes (``include.path``,
    ``includeIf.*.path``), those missing too: each can set what ``config`` can."""
    own = (os.path.join(gitdir, "config"), os.path.join(gitdir, "config.worktree"))
    return tuple(c for c in _git_code.code_paths(gitdir, worktree).configs if c not in own)


def commondir_of(gitdir: str) -> str | None:
    """The folder a git folder's ``commondir`` file names, or ``None``."""
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as fh:
            rel = fh.readline(4096).strip()
    except OSError:
        return None
    return os.path.normpath(os.path.join(gitdir, rel)) if rel else None
