"""Where a repository keeps what makes the user's git run code, as git itself reads it.

Two kinds of path make a later ``git status`` or ``git commit`` run a program chosen by
whoever wrote them: the **hooks folders** (``.git/hooks`` and wherever ``core.hooksPath``
points, such as ``.husky/``) and the **config files** (``.git/config``,
``config.worktree`` and every file they *include*: ``include.path`` and
``includeIf.<condition>.path``, e.g. a shared ``.gitconfig`` kept in the work tree, which
can set ``core.fsmonitor`` or ``core.hooksPath`` like the config itself; see
``git help config``, "Includes"). The sandbox keeps these read-only for commands
(:mod:`octos_tools.sandbox._protected`), its git guard judges what a command changes there
(:mod:`octos_tools.sandbox._git_guard`) and the file tools refuse to write them
(:func:`write_refusal`).

git's config syntax has more forms than a line pattern can follow (a key on its section's
line, inline ``;`` and ``#`` comments, quoting, continuation lines, case rules, nested
includes), so nothing here parses it: ``git config --list --show-origin -z`` is asked, with
no system or global config, a scrubbed environment and an explicit ``GIT_DIR`` (reading
config runs no program). The answer is cached per repository until a stat of one of the
files it came from changes. Every ``includeIf`` file is counted whatever its condition
(a condition can become true later: another branch, another folder). Without git on
``PATH`` the user's git cannot run either; the answer is then the repository's own hooks
folder and config files only.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "GitCodePaths",
    "code_paths",
    "enclosing_gitdirs",
    "gitfile_target",
    "neutral_git_env",
    "write_refusal",
]

_Print = tuple[int, int, int, int] | None


@dataclass(frozen=True, slots=True)
class GitCodePaths:
    """What makes git run code in one repository (absolute, normalised paths).

    Attributes:
        hooks: the hooks folders git uses: ``core.hooksPath`` when set, and ``GITDIR/hooks``
            always (git falls back to it when the setting goes away).
        configs: the config files git reads for the repository, included files too, those
            that do not exist yet included (creating one is how it would be planted).
    """

    hooks: tuple[str, ...]
    configs: tuple[str, ...]


def _fingerprint(path: str) -> _Print:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


_cache: dict[tuple[str, str], tuple[tuple[tuple[str, _Print], ...], GitCodePaths]] = {}
_lock = threading.Lock()


def code_paths(gitdir: str, worktree: str | None) -> GitCodePaths:
    """The hooks folders and config files of the repository whose git folder is ``gitdir``.

    Args:
        gitdir: the git folder (``.git``, a bare repository, a worktree's or a submodule's
            folder under ``.git/worktrees`` / ``.git/modules``), absolute.
        worktree: its work tree (a relative ``core.hooksPath`` is taken from there, as git
            does), or ``None`` for a bare repository (taken from ``gitdir``).

    Never raises: a git that fails or is missing gives the repository's own files.
    """
    gitdir = os.path.normpath(gitdir)
    base = os.path.normpath(worktree) if worktree else gitdir
    key = (gitdir, base)
    with _lock:
        hit = _cache.get(key)
    if hit is not None and all(_fingerprint(p) == fp for p, fp in hit[0]):
        return hit[1]
    own = (os.path.join(gitdir, "config"), os.path.join(gitdir, "config.worktree"))
    watched = [*own, os.path.join(gitdir, "commondir")]
    listed = _list_config(gitdir, base)
    hooks: list[str] = []
    configs: list[str] = list(own)
    if listed is not None:
        hooks_value: str | None = None
        for origin, name, value in listed:
            if origin not in configs:
                configs.append(origin)
            if name == "core.hookspath":
                hooks_value = value
            elif value and (name == "include.path" or _is_include_if_path(name)):
                configs.append(_include_target(origin, value))
        if hooks_value:
            hooks.append(os.path.normpath(os.path.join(base, os.path.expanduser(hooks_value))))
    hooks.append(os.path.join(gitdir, "hooks"))
    result = GitCodePaths(
        tuple(dict.fromkeys(hooks)), tuple(dict.fromkeys(os.path.normpath(c) for c in configs))
    )
    watched += [c for c in result.configs if c not in watched]
    prints = tuple((p, _fingerprint(p)) for p in watched)
    with _lock:
        if len(_cache) > 4096:
            _cache.clear()
        _cache[key] = (prints, result)
    return result


def _is_include_if_path(name: str) -> bool:
    # includeif.<condition>.path: the condition may itself hold dots
    return name.startswith("includeif.") and name.endswith(".path")


def _include_target(origin: str, value: str) -> str:
    """An include's file: ``~/`` is the user's home, a relative path is taken from the
    folder of the file that holds the include (``git help config``, "Includes")."""
    value = os.path.expanduser(value)
    return os.path.normpath(os.path.join(os.path.dirname(origin), value))


def neutral_git_env(gitdir: str, home: str) -> dict[str, str]:
    """The environment the server's own reads of a repository run git with: ``PATH``, the
    C locale, ``GIT_DIR`` explicit (no discovery, no ownership check), no system or global
    config, no optional locks, no prompt. ``home``: ``HOME`` for git (where ``~/`` in an
    include points)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LC_ALL": "C",
        "LANG": "C",
        "HOME": home,
        "GIT_DIR": gitdir,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0",
    }


def _list_config(gitdir: str, worktree: str) -> list[tuple[str, str, str]] | None:
    """``(origin file, key, value)`` of every entry git reads for the repository, or
    ``None`` when git is missing or fails (git found by
    :func:`octos_tools.trusted_programs.which`: never one a command planted)."""
    from . import trusted_programs

    exe = trusted_programs.which("git")
    if exe is None:
        return None
    env = neutral_git_env(gitdir, os.path.expanduser("~"))
    cwd = worktree if os.path.isdir(worktree) else gitdir
    try:
        proc = subprocess.run(
            [exe, "config", "--list", "--includes", "--show-origin", "-z"],
            env=env,
            cwd=cwd,
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode not in (0, 1):  # 1: no config at all
        return None
    out: list[tuple[str, str, str]] = []
    fields = proc.stdout.split(b"\0")
    for i in range(0, len(fields) - 1, 2):
        origin, entry = os.fsdecode(fields[i]), os.fsdecode(fields[i + 1])
        if not origin.startswith("file:"):
            continue  # command line, blobs: not a file in the work tree
        name, _, value = entry.partition("\n")
        out.append((os.path.normpath(origin[len("file:") :]), name.lower(), value))
    return out


def enclosing_gitdirs(root: str, parts: Sequence[str]) -> list[tuple[str, str]]:
    """``(gitdir, worktree)`` of every repository whose work tree holds ``root/parts``,
    innermost first, from the path's folder up to ``root`` (and the repository ``root``
    itself lies in, when ``root`` is not a work tree's top: up to ``/``).

    A ``.git`` folder is used as is; a ``.git`` file is followed (``gitdir: PATH``).
    """
    out: list[tuple[str, str]] = []
    folder = os.path.join(root, *parts[:-1]) if parts else root
    root_norm = os.path.normpath(root)
    inside = True
    while True:
        dot_git = os.path.join(folder, ".git")
        if os.path.isdir(dot_git) and not os.path.islink(dot_git):
            out.append((dot_git, folder))
            if not inside:
                break
        elif os.path.isfile(dot_git):
            target = gitfile_target(dot_git)
            if target is not None:
                out.append((target, folder))
                if not inside:
                    break
        if os.path.normpath(folder) == root_norm:
            inside = False
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return out


def gitfile_target(dot_git: str) -> str | None:
    """The folder a ``.git`` file points to (``gitdir: PATH``, relative to the file's
    folder), or ``None`` when it is not such a file."""
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as fh:
            line = fh.readline(4096).strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    target = line[len("gitdir:") :].strip()
    return os.path.normpath(os.path.join(os.path.dirname(dot_git), target))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def write_refusal(root: str, parts: Sequence[str]) -> str | None:
    """Why a file tool must not write ``root/parts``, or ``None``.

    Refused: a file in a hooks folder of a repository that holds the path or holds the
    workspace (``core.hooksPath``: ``.husky/``), and any config file such a repository
    reads (an included ``.gitconfig``). ``.git`` itself is refused earlier, by name.
    A hooks folder configured by a repository that does not hold the path (a nested
    repository pointing outside its own work tree) is not seen here; the command sandbox's
    guard, which walks every repository, still covers commands.
    """
    if not parts:
        return None
    target = os.path.normpath(os.path.join(root, *parts))
    for gitdir, worktree in enclosing_gitdirs(root, parts):
        paths = code_paths(gitdir, worktree)
        for hooks in paths.hooks:
            if _inside(target, hooks):
                return (
                    "is in the folder git runs hooks from (core.hooksPath): what is there "
                    "runs at the user's next commit"
                )
        if target in paths.configs:
            return (
                "is a config file git reads for this repository (an include): a line "
                "there (core.fsmonitor, core.hooksPath) runs code at the next git command"
            )
    return None
