"""The paths a sandboxed command may not read, and those it may not write inside a writable
root.

**Unreadable** (:func:`unreadable_paths`): the credential stores of the user's home
(:data:`CREDENTIAL_STORES`, the issue's list; Codex lets commands read them, we do not),
``[sandbox] deny_read``, and the server's own secrets: the state folder
(:func:`octos_tools.state_dir.state_root`: history, locks, tokens) and the MCP bearer
token file.

**Read-only inside writable roots** (:func:`git_protected_paths`): what makes git run code
later, in every repository found in a writable root (the top one, nested ones, submodules,
worktrees; a ``.git`` *file* and the folder it points to): ``hooks/``, ``config``,
``config.worktree``, ``commondir``, and wherever ``core.hooksPath`` points
(``.husky/``). The ``.git`` folder itself stays writable (``git add`` and ``git commit``
work: Codex locks the whole ``.git`` and breaks them, ``codex-rs/linux-sandbox/README.md``
"Git safety mounts"); Claude Code's sandbox-runtime protects hooks and config only, as here.
The server's own config file is read-only too (``extra``).

The walk that finds repositories stops at :data:`MAX_ENTRIES` folder entries and skips
dependency and build folders (:data:`SKIPPED_DIRS`); its answer is cached per writable root
for :data:`CACHE_SECS`.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "CACHE_SECS",
    "CREDENTIAL_STORES",
    "MAX_ENTRIES",
    "SKIPPED_DIRS",
    "git_protected_paths",
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
#: Seconds a walk's answer is reused.
CACHE_SECS = 5.0
_MAX_DEPTH = 6

#: Inside a git folder: what git reads to decide what to run (hooks, config, where the
#: common folder and the per-worktree config are).
_GIT_DIR_ENTRIES = ("hooks", "config", "config.worktree", "commondir")

_HOOKS_PATH = re.compile(r"^\s*hookspath\s*=\s*(.*?)\s*$", re.IGNORECASE)
_SECTION = re.compile(r"^\s*\[\s*([A-Za-z0-9.-]+)")

_cache: dict[str, tuple[float, tuple[str, ...]]] = {}


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


def _gitdir_of(dot_git: str) -> str | None:
    """The folder a ``.git`` file points to (``gitdir: PATH``), or ``None``."""
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as fh:
            line = fh.readline(4096).strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    target = line[len("gitdir:") :].strip()
    return os.path.normpath(os.path.join(os.path.dirname(dot_git), target))


def _hooks_path(gitdir: str, worktree: str) -> str | None:
    """``core.hooksPath`` of a repository's own config, as an absolute path."""
    try:
        with open(os.path.join(gitdir, "config"), encoding="utf-8", errors="replace") as fh:
            text = fh.read(1_000_000)
    except OSError:
        return None
    section = ""
    value: str | None = None
    for line in text.splitlines():
        head = _SECTION.match(line)
        if head:
            section = head.group(1).lower()
            continue
        if section == "core":
            m = _HOOKS_PATH.match(line)
            if m:
                value = m.group(1).strip('"')
    if not value:
        return None
    value = os.path.expanduser(value)
    return os.path.normpath(os.path.join(worktree, value))


def _protect_gitdir(gitdir: str, worktree: str, out: list[str]) -> None:
    for name in _GIT_DIR_ENTRIES:
        out.append(os.path.join(gitdir, name))
    hooks = _hooks_path(gitdir, worktree)
    if hooks:
        out.append(hooks)
    # worktrees and submodules kept inside this git folder
    for sub in ("worktrees", "modules"):
        base = os.path.join(gitdir, sub)
        for dirpath, dirnames, filenames in _walk(base, depth=4):
            if "config" in filenames or "commondir" in filenames or "HEAD" in filenames:
                for name in _GIT_DIR_ENTRIES:
                    out.append(os.path.join(dirpath, name))
            dirnames[:] = [d for d in dirnames if d not in ("objects", "refs", "logs")]


def _walk(root: str, depth: int) -> Iterable[tuple[str, list[str], list[str]]]:
    base_depth = root.rstrip("/").count("/")
    for dirpath, dirnames, filenames in os.walk(root):
        yield dirpath, dirnames, filenames
        if dirpath.count("/") - base_depth >= depth:
            dirnames[:] = []


def git_protected_paths(roots: Sequence[str]) -> tuple[str, ...]:
    """Paths inside (or reached from) the writable ``roots`` that stay read-only: see the
    module docstring. Paths that do not exist are included when a command could create them
    to the same effect (``hooks/``, ``core.hooksPath``); the engines decide what to do with
    them.

    Args:
        roots: absolute writable roots.
    """
    now = time.monotonic()
    result: list[str] = []
    for root in roots:
        hit = _cache.get(root)
        if hit is not None and now - hit[0] < CACHE_SECS:
            result.extend(hit[1])
            continue
        found: list[str] = []
        seen = 0
        for dirpath, dirnames, filenames in _walk(root, _MAX_DEPTH):
            seen += len(dirnames) + len(filenames)
            if ".git" in dirnames:
                gitdir = os.path.join(dirpath, ".git")
                dirnames.remove(".git")
                _protect_gitdir(gitdir, dirpath, found)
            elif ".git" in filenames:
                dot_git = os.path.join(dirpath, ".git")
                found.append(dot_git)
                target = _gitdir_of(dot_git)
                if target is not None:
                    _protect_gitdir(target, dirpath, found)
                    common = _commondir(target)
                    if common is not None:
                        _protect_gitdir(common, dirpath, found)
            dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS]
            if seen > MAX_ENTRIES:
                break
        unique = tuple(dict.fromkeys(os.path.normpath(p) for p in found))
        _cache[root] = (now, unique)
        result.extend(unique)
    return tuple(dict.fromkeys(result))


def _commondir(gitdir: str) -> str | None:
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as fh:
            rel = fh.readline(4096).strip()
    except OSError:
        return None
    return os.path.normpath(os.path.join(gitdir, rel)) if rel else None
