"""The Python walk of the workspace under the rule of :mod:`._rules`.

Every directory is opened from its parent's descriptor with ``O_NOFOLLOW``, starting at
the workspace root: no symbolic link is followed, and a directory swapped for a link during
the walk is skipped, never entered. Paths of any length work (nothing is opened by a full
path, so ``PATH_MAX`` does not apply). Entries come depth first, each directory's entries
in byte order of their names (``ripgrep --sort path`` order). Folders that
:func:`._rules.default_skip` names (virtual environments, ``node_modules``) are yielded but
not entered, unless listed in ``explicit``. What is off limits (credential stores, the
state folder: :mod:`octos_tools.workspace._off_limits`) is neither yielded nor entered.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...workspace import EntryKind, is_internal_temp_name
from ._budget import Budget
from ._rules import VENV_SCAN_DEPTH, IgnoreRules, default_skip, rules_above

if TYPE_CHECKING:
    from ...workspace import Workspace

__all__ = ["Found", "open_dir", "skipped_folders", "walk"]

_DIR_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


@dataclass(slots=True)
class Found:
    """One entry met by :func:`walk`.

    Attributes:
        rel: workspace-relative path.
        name: the last component.
        kind: ``"file"``, ``"dir"``, ``"symlink"`` or ``"other"`` (as ``lstat`` sees it).
        dir_fd: descriptor of the directory holding it, valid until the walk goes on
            (open the entry with ``dir_fd=`` to read it without re-resolving its path).
    """

    rel: str
    name: str
    kind: EntryKind
    dir_fd: int


def open_dir(ws: Workspace, rel: str) -> int:
    """A descriptor of the workspace directory ``rel`` (``"."``: the root), opened one
    component at a time from the root, never following a link. The caller closes it.

    Raises:
        OSError: a component is missing, not a directory or a symbolic link.
    """
    fd = os.open(ws.root, _DIR_FLAGS)
    try:
        for name in [] if rel in ("", ".") else rel.split("/"):
            nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _kind(de: os.DirEntry[str]) -> EntryKind | None:
    try:
        if de.is_symlink():
            return "symlink"
        if de.is_dir(follow_symlinks=False):
            return "dir"
        if de.is_file(follow_symlinks=False):
            return "file"
    except OSError:
        return None
    return "other"


def _scan(fd: int) -> list[tuple[bytes, str, EntryKind]]:
    out: list[tuple[bytes, str, EntryKind]] = []
    with os.scandir(fd) as it:
        for de in it:
            kind = _kind(de)
            if kind is not None:
                out.append((os.fsencode(de.name), de.name, kind))
    out.sort()
    return out


def walk(
    ws: Workspace,
    start: str,
    budget: Budget,
    *,
    descend: Callable[[str], bool] | None = None,
    on_error: Callable[[str, OSError], None] | None = None,
    on_skip: Callable[[str, str], None] | None = None,
    explicit: frozenset[str] = frozenset(),
    max_depth: int | None = None,
    rules_from_above: bool = True,
) -> Iterator[Found]:
    """Every entry below the directory ``start`` that the rule lets exist.

    Args:
        ws: the workspace.
        start: workspace-relative directory (``"."`` for the root), not itself yielded.
        budget: checked before each entry.
        descend: optional ``rel -> bool``; a directory is entered only when it returns
            ``True`` (its entry is yielded either way).
        on_error: called with ``(rel, error)`` for a directory that cannot be read.
        on_skip: called with ``(rel, reason)`` for a folder not entered by default
            (:func:`._rules.default_skip`; checked after ``descend``).
        explicit: folders the caller names (and their parents): entered even when
            :func:`._rules.default_skip` would skip them.
        max_depth: folders this many levels below ``start`` are checked but not entered.
        rules_from_above: ``False``: the ignore rules of the folders above ``start`` do not
            apply (a path named by the user that they hide, :func:`._rules.hidden_prefix`);
            ``start``'s own ``.gitignore`` and those below it still do.

    Raises:
        OSError: ``start`` cannot be opened.
        BudgetExceeded: out of time.
    """
    base = "" if start in ("", ".") else start
    off = ws.off_limits
    if off and off.rule_for(base.split("/") if base else ()):
        return
    fd = open_dir(ws, base)
    try:
        first = _scan(fd)
        if rules_from_above:
            top_rules = rules_above(ws, base or ".")
        else:
            top_rules = IgnoreRules().enter(base, fd, (e[1] for e in first))
    except BaseException:
        os.close(fd)
        raise
    stack: list[tuple[int, str, IgnoreRules, list[tuple[bytes, str, EntryKind]], int]] = [
        (fd, base, top_rules, first, 0)
    ]
    try:
        while stack:
            dfd, prefix, rules, entries, idx = stack[-1]
            if idx >= len(entries):
                stack.pop()
                os.close(dfd)
                continue
            stack[-1] = (dfd, prefix, rules, entries, idx + 1)
            budget.check()  # every entry: one ignore check may take a while (hostile rules)
            _, name, kind = entries[idx]
            is_dir = kind == "dir"
            if name == ".git" or is_internal_temp_name(name):
                continue
            rel = f"{prefix}/{name}" if prefix else name
            if off and off.hides(rel):
                continue  # a credential store or the state folder (workspace._off_limits)
            if not rules.empty and rules.ignored(rel, is_dir):
                continue
            yield Found(rel, name, kind, dfd)
            if not is_dir or (descend is not None and not descend(rel)):
                continue
            depth = len(stack)  # ``start``'s own entries are at depth 1
            if rel not in explicit and (why := default_skip(name, dfd, depth)) is not None:
                if on_skip is not None:
                    on_skip(rel, why)
                continue
            if max_depth is not None and depth >= max_depth:
                continue
            budget.check()
            try:
                sub = os.open(name, _DIR_FLAGS, dir_fd=dfd)
            except OSError as exc:
                if on_error is not None:
                    on_error(rel, exc)
                continue
            try:
                sub_entries = _scan(sub)
            except OSError as exc:
                os.close(sub)
                if on_error is not None:
                    on_error(rel, exc)
                continue
            sub_rules = rules.enter(rel, sub, (e[1] for e in sub_entries))
            stack.append((sub, rel, sub_rules, sub_entries, 0))
    finally:
        for dfd, *_ in stack:
            with contextlib.suppress(OSError):
                os.close(dfd)


def skipped_folders(
    ws: Workspace, start: str, budget: Budget, *, rules_from_above: bool = True
) -> list[tuple[str, str]]:
    """``(rel, reason)`` of the folders not entered by default in the first
    :data:`._rules.VENV_SCAN_DEPTH` levels below the directory ``start`` (the pre-pass of
    the rg engine: rg is told to exclude the virtual environments among them; both grep
    engines report these). A folder that cannot be read is left out.

    Raises:
        OSError: ``start`` cannot be opened.
        BudgetExceeded: out of time.
    """
    out: list[tuple[str, str]] = []
    depth = VENV_SCAN_DEPTH
    for _ in walk(
        ws,
        start,
        budget,
        on_skip=lambda r, w: out.append((r, w)),
        max_depth=depth,
        rules_from_above=rules_from_above,
    ):
        pass
    return out
