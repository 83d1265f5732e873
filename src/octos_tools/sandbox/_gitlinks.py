"""The gitlinks (mode ``160000`` entries) of a repository's index: where the user's next
``git status`` enters a nested repository, wherever it lies (a folder the guard's walk
skips, ``node_modules/`` or ``.venv/``, included).

git is run with an environment scrubbed down to ``PATH``, the locale and the repository's
git folder, with no system or global config, and with the command-line config that turns
off whatever could run a program (``core.fsmonitor``, hooks): the same neutral setup as the
history store's (:mod:`octos_tools.history._git`). ``git ls-files --stage`` only reads the
index.
"""

from __future__ import annotations

import os
import subprocess

from .. import trusted_programs
from .._git_code import neutral_git_env

__all__ = ["gitlinks"]

_CONFIG = ("core.fsmonitor=false", "core.hooksPath=/dev/null", "core.untrackedCache=false")


def gitlinks(gitdir: str) -> list[str]:
    """The paths (relative to the work tree, ``/``-separated) of the gitlinks in the index
    of the repository whose git folder is ``gitdir``; empty when it has no index, git is
    missing or fails (the guard then judges what its walk found, as before)."""
    exe = trusted_programs.which("git")
    if exe is None or not os.path.isfile(os.path.join(gitdir, "index")):
        return []
    env = neutral_git_env(gitdir, home=gitdir)
    argv = [exe, "--no-replace-objects"]
    for item in _CONFIG:
        argv += ["-c", item]
    try:
        proc = subprocess.run(
            [*argv, "ls-files", "--stage", "-z"],
            env=env,
            cwd=gitdir,
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if proc.returncode != 0:
        return []
    out = []
    for record in proc.stdout.split(b"\0"):
        head, sep, path = record.partition(b"\t")
        if sep and head.startswith(b"160000 "):
            out.append(os.fsdecode(path))
    return out
