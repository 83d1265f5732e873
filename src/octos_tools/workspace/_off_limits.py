"""The paths inside a workspace that no file tool reads, lists, writes or walks.

When the workspace holds the user's home folder (agents are often started in ``~``) or the
server's state folder, the file tools would otherwise read what commands may not: the
sandbox keeps the credential stores, ``[sandbox] deny_read``, the state folder and the MCP
token file unreadable for commands (:func:`octos_tools.sandbox._protected.unreadable_paths`),
and the same list is refused here, so ``read_file .ssh/id_ed25519`` cannot do what
``cat .ssh/id_ed25519`` cannot. The rule (one for every path of every file tool):

* **off limits** are the credential stores of the home folder
  (:data:`~octos_tools.sandbox._protected.CREDENTIAL_STORES`), the state folder
  (:func:`octos_tools.state_dir.state_root`: history, locks, tokens), the ``deny_read``
  entries and the server's secret files given by :meth:`OffLimits.protect`, when they lie
  strictly inside the root (as typed and as resolved), whether they exist or not (a write
  must not create ``.ssh/authorized_keys`` either). The credential stores are looked at
  only when the root holds the home folder (a store symlinked into a project folder is
  not found; commands still cannot read it);
* a user path at or below one of them is ``permission_denied`` naming the rule
  (:meth:`OffLimits.check`); a listing or walk leaves them out (:meth:`OffLimits.hides`);
* names are compared case-folded (macOS and Windows file systems ignore case by default;
  on Linux ``.SSH`` is refused too, a harmless false positive).

The set is computed once per workspace; a workspace that holds none of them (the usual
case) pays one truth test per path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import ErrorKind, PathError
from ._os_errors import show

__all__ = ["OffLimits"]


class OffLimits:
    """The off-limits paths of one workspace root (module docstring).

    Args:
        root: the workspace root, already resolved (``realpath``).
        home: the home folder whose credential stores are off limits (``None``: the
            user's, ``Path.home()``, which follows ``HOME``).
    """

    STATE_RULE = "the octos-tools state folder (history, locks, tokens)"
    """The description of the state folder's rule."""

    def __init__(self, root: Path, *, home: Path | None = None) -> None:
        from ..sandbox._protected import CREDENTIAL_STORES
        from ..state_dir import state_root

        self.root = root
        self._home = home if home is not None else _home()
        self.rules: dict[tuple[str, ...], str] = {}
        """case-folded components below the root -> the rule's description."""
        self.rels: frozenset[str] = frozenset()
        """The same paths as case-folded ``/``-joined strings (for the walkers)."""
        self._spelled: dict[tuple[str, ...], str] = {}
        self._first: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        self._root_parts = str(root).split("/")
        home_text = os.path.normpath(os.path.abspath(self._home)) if self._home else None
        if home_text is not None:
            real_home = os.path.realpath(home_text)
            # the stores lie below the home folder: only a root holding it can hold them
            if self._holds(home_text) or self._holds(real_home):
                for name in CREDENTIAL_STORES:
                    path = f"{home_text}/{name}"
                    # a store that does not exist resolves as its folder does
                    real = os.path.realpath(path) if os.path.lexists(path) else None
                    self._add(path, f"the credential store ~/{name}", real or f"{real_home}/{name}")
        try:
            state = state_root(create=False)
        except (OSError, RuntimeError):  # pragma: no cover - no home folder at all
            state = None
        if state is not None:
            text = os.path.normpath(state)
            self._add(text, self.STATE_RULE)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def protect(
        self, deny_read: Iterable[str] = (), secrets: Iterable[str | os.PathLike[str]] = ()
    ) -> None:
        """Add ``[sandbox] deny_read`` entries (``~`` expanded, relative ones to the home
        folder, as the sandbox reads them) and the server's secret files (the MCP token
        file) to the rule."""
        for entry in deny_read:
            path = Path(os.path.expanduser(entry))
            if not path.is_absolute() and self._home is not None:
                path = self._home / path
            self._add(os.path.abspath(path), f"[sandbox] deny_read {entry!r}")
        for secret in secrets:
            self._add(
                os.path.abspath(os.path.expanduser(os.fspath(secret))),
                "a secret file of the server",
            )

    def _holds(self, text: str) -> bool:
        """Whether the absolute path ``text`` is the root or below it."""
        parts = text.split("/")
        root = self._root_parts
        return len(parts) >= len(root) and parts[: len(root)] == root

    def _add(self, text: str, why: str, real: str | None = None) -> None:
        """Put the absolute path ``text`` (and its resolved spelling ``real``, looked up
        when not given) off limits when it lies below the root."""
        text = os.path.normpath(text)
        root = self._root_parts
        for spelling in dict.fromkeys((text, real or os.path.realpath(text))):
            parts = spelling.split("/")
            if len(parts) > len(root) and parts[: len(root)] == root:
                below = tuple(p.casefold() for p in parts[len(root) :])
                if below not in self.rules:
                    self.rules[below] = why
                    self._first.setdefault(below[0], []).append((below, why))
                    self._spelled[below] = "/".join(parts[len(root) :])
                    self.rels = self.rels | {"/".join(below)}

    @property
    def paths(self) -> list[str]:
        """The off-limits paths, workspace-relative, spelled as configured, sorted."""
        return sorted(self._spelled.values())

    def rule_for(self, parts: Sequence[str]) -> str | None:
        """The rule that puts the path ``parts`` (components below the root) off limits, or
        ``None``."""
        if not parts or not self.rules:
            return None
        candidates = self._first.get(parts[0].casefold())
        if candidates is None:  # the usual answer: one dict lookup
            return None
        folded = tuple(p.casefold() for p in parts)
        for key, why in candidates:
            if folded[: len(key)] == key:
                return why
        return None

    def check(self, parts: Sequence[str], text: str) -> None:
        """Raise when ``parts`` is at or below an off-limits path.

        Raises:
            PathError: ``permission_denied`` naming the rule.
        """
        why = self.rule_for(parts)
        if why is not None:
            raise PathError(
                ErrorKind.PERMISSION_DENIED,
                f"{show(text[:120])} is off limits: {why} lies inside the workspace, and "
                "file tools never read, list or change it, as commands cannot (the "
                "sandbox's unreadable paths, docs/sandbox.md). Serve a project folder, not "
                "the home folder",
            )

    def hides(self, rel: str) -> bool:
        """Whether a walk or listing leaves out the workspace-relative ``rel`` (an entry
        that is itself off limits; a walk never enters it, so what is below never comes)."""
        return bool(self.rels) and rel.casefold() in self.rels


def _home() -> Path | None:
    try:
        return Path.home()
    except (RuntimeError, KeyError):  # pragma: no cover - no HOME and no passwd entry
        return None
