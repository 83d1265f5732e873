"""Running ``git`` on the history store: its own git directory and index, neutral config.

Every command runs with ``GIT_DIR`` (the store), ``GIT_INDEX_FILE`` (the store's own index)
and ``GIT_WORK_TREE`` (the workspace) set, so git never looks for (or at) the user's
``.git``; with an environment scrubbed down to ``PATH``, the locale and those variables; with
no system or global config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``) and a
neutral command-line config (no hooks, no fsmonitor, no automatic gc, no line-ending or
filter conversion, literal pathspecs). The store's ``info/attributes`` (highest precedence)
unsets ``text``, ``eol``, ``filter``, ``ident`` and ``working-tree-encoding`` for every path,
so a workspace's ``.gitattributes`` cannot make git store other bytes than the file's.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from .. import trusted_programs

__all__ = ["EMAIL", "IDENT", "GitError", "GitRunner"]

_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.symlinks=true",
    "core.filemode=true",
    "core.quotePath=false",
    "core.bigFileThreshold=1m",
    "core.splitIndex=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "commit.gpgSign=false",
    "log.showSignature=false",
    "diff.external=",
    "advice.addEmbeddedRepo=false",
)
IDENT = "octos-tools"
EMAIL = "octos-tools@localhost"


class GitError(Exception):
    """A git command of the history store failed; the message holds git's own words."""


class GitRunner:
    """Runs git for one store.

    Args:
        git_dir: the store's git directory.
        index: the store's index file.
        work_tree: the workspace root.

    Raises:
        GitError: ``git`` is not installed.
    """

    def __init__(self, git_dir: Path, index: Path, work_tree: Path) -> None:
        exe = trusted_programs.which("git")
        if exe is None:
            raise GitError("the git program is not installed")
        self.exe = exe
        self.git_dir = git_dir
        self.work_tree = work_tree
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LC_ALL": "C",
            "LANG": "C",
            "HOME": str(git_dir),  # nothing of the user's home is read
            "GIT_DIR": str(git_dir),
            "GIT_INDEX_FILE": str(index),
            "GIT_WORK_TREE": str(work_tree),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_LITERAL_PATHSPECS": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_AUTHOR_NAME": IDENT,
            "GIT_AUTHOREMAIL": EMAIL,
            "GIT_COMMITTER_NAME": IDENT,
            "GIT_COMMITTEREMAIL": EMAIL,
        }
        self.env = env
        self.before: Callable[[], None] | None = None
        """Called before each command (the store's pending write is finished first)."""
        self.prefix = [exe, "--no-replace-objects"]
        for item in _CONFIG:
            self.prefix += ["-c", item]

    def init(self) -> None:
        """Create the store's git directory (bare: it has no work tree of its own).

        Raises:
            GitError: git failed.
        """
        env = {k: v for k, v in self.env.items() if k not in ("GIT_WORK_TREE", "GIT_INDEX_FILE")}
        self.run("init", "-q", "--bare", self.env["GIT_DIR"], env=env)

    def run(
        self,
        *args: str,
        data: bytes | None = None,
        env: dict[str, str] | None = None,
        ok: tuple[int, ...] = (0,),
    ) -> bytes:
        """Run ``git ARGS`` in the workspace; its standard output.

        Raises:
            GitError: an exit status not in ``ok`` (with git's message) or the program could
                not start.

        ``env`` replaces the whole environment (default: the store's).
        """
        if self.before is not None:
            self.before()
        try:
            proc = subprocess.run(
                [*self.prefix, *args],
                input=data if data is not None else b"",
                capture_output=True,
                cwd=self.work_tree,
                env=env if env is not None else self.env,
                timeout=120,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GitError(f"git {args[0]} could not run: {exc}") from None
        if proc.returncode not in ok:
            msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git {args[0]} failed: {' '.join(msg[-3:]) or proc.returncode}")
        return proc.stdout
