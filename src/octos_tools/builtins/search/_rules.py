"""The one rule for which files exist, for ``glob``, ``grep`` and both grep engines.

* ``.gitignore`` files are honoured in every directory (nested ones too, negation ``!``
  included, a directory that is ignored is never entered), whether or not a ``.git`` exists;
* ``.git/info/exclude`` of a repository (a directory holding a ``.git`` directory) applies
  below it, after every ``.gitignore``;
* the rules of a directory apply to everything below it, a nested repository included (as
  ripgrep does with ``--no-require-git``);
* nothing named ``.git`` is listed or entered; other hidden files and folders (``.github``,
  ``.env.example``) are kept;
* octos-tools' own internal files (what ``octos_tools.workspace.is_internal_temp_name``
  names: ``.octos-tmp-*`` temporary files and the ``.octos-tmp-state`` folder) are never
  listed or searched;
* by default two kinds of folder are listed but not entered, even when no ``.gitignore``
  names them (Python 3.11's ``venv`` writes none, and many projects have none), because
  their thousands of third-party files would bury the project's own in every result:
  a Python virtual environment (a folder holding a ``pyvenv.cfg`` file, PEP 405) and a
  folder named ``node_modules``. A search that starts inside one (grep's ``path``, or a
  glob whose literal leading components name it, ``.venv/lib/**/*.py``) searches it
  normally. Virtual environments are recognised only in the first
  :data:`VENV_SCAN_DEPTH` levels below the search's start (``.venv``, ``backend/.venv``):
  the rg engine finds them by a pre-pass over those levels and excludes each with a
  ``--glob '!/<dir>/'`` override, and the Python walk checks the same levels, so both
  engines skip the same folders. Results name the folders skipped this way
  (:func:`default_skip`);
* global git excludes (``core.excludesFile``), ``.ignore`` / ``.rgignore`` files and
  ignore files above the workspace root are not read.

The Python walker (:mod:`._walk`) applies :class:`IgnoreRules` (patterns matched by the
``pathspec`` library's ``GitIgnoreSpec``); the ``rg`` engine applies the same rule through
:data:`RG_WALK_ARGS` plus, for a search below the root, :meth:`IgnoreRules.rg_ignore_lines` of the
directories above it. Tests compare the two walks on trees built to tell them apart.

Sources: gitignore(5) (https://git-scm.com/docs/gitignore) and ripgrep's ``ignore`` crate
(https://github.com/BurntSushi/ripgrep/tree/master/crates/ignore).
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...workspace._tempnames import TMP_PREFIX as INTERNAL_PREFIX
from ...workspace._tempnames import is_internal_temp_name

if TYPE_CHECKING:
    import regex

    from ...workspace import Workspace

__all__ = [
    "INTERNAL_PREFIX",
    "RG_WALK_ARGS",
    "SKIPPED_DIR_NAMES",
    "VENV_MARKER",
    "VENV_SCAN_DEPTH",
    "IgnoreRules",
    "default_skip",
    "hidden_prefix",
    "is_internal_path",
    "rg_glob_escape",
    "rules_above",
]

"""Names of octos-tools' temporary files (atomic writes) start with this."""
SKIPPED_DIR_NAMES = frozenset({"node_modules"})
"""Folders not entered by default, wherever they are (see the module docstring)."""
VENV_MARKER = "pyvenv.cfg"
"""A folder holding this regular file is a Python virtual environment (PEP 405)."""
VENV_SCAN_DEPTH = 2
"""Virtual environments are recognised in this many levels below a search's start."""
_MAX_IGNORE_FILE_BYTES = 1_000_000

RG_WALK_ARGS: tuple[str, ...] = (
    "--hidden",
    "--no-follow",
    "--no-require-git",
    "--no-ignore-dot",
    "--no-ignore-global",
    "--no-ignore-parent",
    "--glob",
    "!.git",
    "--glob",
    f"!{INTERNAL_PREFIX}*",
    "--glob",
    "!node_modules/",
)
"""rg flags for the rule above (virtual environments are added per search, see
:func:`default_skip`). They go after any ``--glob`` of the user: the last matching override
wins, so ``.git`` and internal files stay out whatever the user's glob. rg never filters the
folder it is given to search, so a search inside ``node_modules`` works."""


def default_skip(name: str, parent_fd: int, depth: int) -> str | None:
    """Why the folder ``name`` (in the directory open as ``parent_fd``, ``depth`` levels
    below the search's start, 1 for its entries) is not entered by default, or ``None``.

    Returns ``"node_modules"`` or ``"Python virtual environment"`` (``pyvenv.cfg`` inside,
    checked only for ``depth <= VENV_SCAN_DEPTH``).
    """
    if name in SKIPPED_DIR_NAMES:
        return "node_modules"
    if depth > VENV_SCAN_DEPTH:
        return None
    try:
        st = os.stat(f"{name}/{VENV_MARKER}", dir_fd=parent_fd, follow_symlinks=False)
    except (OSError, ValueError):
        return None
    return "Python virtual environment" if stat_mod.S_ISREG(st.st_mode) else None


def rg_glob_escape(rel: str) -> str:
    """``rel`` with rg glob metacharacters escaped by a backslash."""
    return "".join("\\" + c if c in "*?[]{}\\!" else c for c in rel)


_Compiled = tuple[tuple["regex.Pattern[str]", bool], ...]
"""Per pattern: its regex (matching a path itself) and whether it ignores (``False``: a
``!`` negation)."""
_DIR_MARK_OPT = "(?:(?P<ps_d>/)|$)"
_DIR_MARK = "(?P<ps_d>/)"
_RX_FLAGS = 0x2 | 0x8 | 0x10  # re.IGNORECASE | re.MULTILINE | re.DOTALL: same in regex


def _spec(lines: Iterable[str]) -> _Compiled | None:
    """Compile gitignore lines with ``pathspec``'s ``GitIgnoreSpec`` patterns; a line
    that is not a valid pattern is skipped (git skips it too).

    pathspec's expressions are searched with prefix semantics: ``build/`` also matches
    ``build/gen.py`` through the "directory mark" group. Here a pattern must match the path
    itself, as in git and ripgrep (what lies below an ignored folder is never walked; what
    lies below a folder named explicitly is searched): the mark is anchored at the end of
    the path (directories are checked with a trailing ``/``).

    The expressions are run by the ``regex`` package: Python's :mod:`re` backtracks for
    minutes on a hostile line such as ``*a*a*a*a*a*a*b`` against a long name; ``regex``
    stays within a fraction of a second even on a 4 KiB path.
    """
    import regex
    from pathspec import GitIgnoreSpec

    lines = list(lines)
    try:
        pairs = list(zip(lines, GitIgnoreSpec.from_lines(lines).patterns, strict=True))
    except Exception:  # noqa: BLE001 - pathspec raises several kinds for a bad line
        pairs = []
        for line in lines:  # again line by line, keeping the valid ones
            try:
                pairs += [(line, p) for p in GitIgnoreSpec.from_lines([line]).patterns]
            except Exception:  # noqa: BLE001
                continue
    out = []
    for _line, pat in pairs:
        if pat.include is None or pat.regex is None:
            continue
        text = pat.regex.pattern.replace(_DIR_MARK_OPT, "/?\\Z").replace(_DIR_MARK, "/\\Z")
        out.append((regex.compile(text, pat.regex.flags & _RX_FLAGS), bool(pat.include)))
    return tuple(out) or None


def is_internal_path(rel: str) -> bool:
    """Whether any component of the workspace-relative ``rel`` is an internal name."""
    return any(is_internal_temp_name(p) for p in rel.split("/"))


def _verdict(spec: _Compiled, path: str) -> bool | None:
    """The last pattern of ``spec`` matching ``path`` itself (a directory with a trailing
    ``/``): ``True`` ignored, ``False`` re-included, ``None`` no match."""
    verdict = None
    for rx, include in spec:
        if rx.search(path) is not None:
            verdict = include
    return verdict


def read_ignore_file(dir_fd: int, parts: tuple[str, ...]) -> list[str] | None:
    """Lines of the regular file ``parts`` below ``dir_fd`` (no symlink followed), or
    ``None`` when it is missing, not a regular file, unreadable or over 1 MB."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fds: list[int] = []
    try:
        fd = dir_fd
        for name in parts[:-1]:
            fd = os.open(name, flags | getattr(os, "O_DIRECTORY", 0), dir_fd=fd)
            fds.append(fd)
        leaf = os.open(parts[-1], flags | getattr(os, "O_NONBLOCK", 0), dir_fd=fd)
        fds.append(leaf)
        st = os.fstat(leaf)
        if not stat_mod.S_ISREG(st.st_mode) or st.st_size > _MAX_IGNORE_FILE_BYTES:
            return None
        with os.fdopen(os.dup(leaf), "rb") as fh:
            data = fh.read(_MAX_IGNORE_FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        for fd in fds:
            os.close(fd)
    return data.decode("utf-8", "replace").splitlines()


@dataclass(frozen=True, slots=True)
class _Level:
    base: str  # workspace-relative directory of the rules ("" for the root)
    gitignore: _Compiled | None
    exclude: _Compiled | None
    lines: tuple[str, ...]  # .gitignore lines (for IgnoreRules.rg_ignore_lines)
    exclude_lines: tuple[str, ...]


class IgnoreRules:
    """The ignore rules in force in one directory: a stack of per-directory levels.

    Immutable; :meth:`enter` returns the rules of a subdirectory.
    """

    __slots__ = ("_levels",)

    def __init__(self, levels: tuple[_Level, ...] = ()) -> None:
        self._levels = levels

    def enter(self, rel: str, dir_fd: int, names: Iterable[str]) -> IgnoreRules:
        """The rules inside the directory ``rel`` (workspace-relative, ``""`` for the
        root), open as ``dir_fd``, whose entries are ``names``."""
        names = set(names)
        ex_lines: list[str] = []
        gi_lines: list[str] = []
        if ".git" in names:
            ex_lines = read_ignore_file(dir_fd, (".git", "info", "exclude")) or []
        if ".gitignore" in names:
            gi_lines = read_ignore_file(dir_fd, (".gitignore",)) or []
        if not gi_lines and not ex_lines:
            return self
        level = _Level(rel, _spec(gi_lines), _spec(ex_lines), tuple(gi_lines), tuple(ex_lines))
        if level.gitignore is None and level.exclude is None:
            return self
        return IgnoreRules((*self._levels, level))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether the entry ``rel`` (workspace-relative) is ignored: the deepest
        ``.gitignore`` with a matching pattern decides (its last matching pattern), then
        ``.git/info/exclude``."""
        if not self._levels:
            return False
        for attr in ("gitignore", "exclude"):
            for level in reversed(self._levels):
                spec: _Compiled | None = getattr(level, attr)
                if spec is None:
                    continue
                sub = rel[len(level.base) + 1 :] if level.base else rel
                verdict = _verdict(spec, sub + "/" if is_dir else sub)
                if verdict is not None:
                    return verdict
        return False

    @property
    def empty(self) -> bool:
        """No rule applies."""
        return not self._levels

    def rg_ignore_lines(self) -> list[str]:
        """These rules as lines of one gitignore file relative to the workspace root, for
        ``rg --ignore-file`` (rg runs with ``--no-ignore-parent``, so it never reads an
        ignore file above the directory it searches). Exclude rules come first: later lines
        win."""
        out: list[str] = []
        for level in self._levels:
            out += [r for ln in level.exclude_lines if (r := _rooted(level.base, ln)) is not None]
        for level in self._levels:
            out += [r for ln in level.lines if (r := _rooted(level.base, ln)) is not None]
        return out


def rules_above(ws: Workspace, target: str) -> IgnoreRules:
    """The rules in force inside the directory ``target`` (workspace-relative, ``"."``
    for the root) from the directories from the root down to ``target`` itself.

    Directories are opened from the root without following links; a missing one ends
    the chain (the caller reports the path's own error).
    """
    return _chain(ws, target)[0]


def hidden_prefix(ws: Workspace, target: str) -> str | None:
    """The first of ``target``'s folders, from the root down to ``target`` itself
    (workspace-relative), that the rules above it ignore, or ``None``: a walk from the
    root would never show ``target``. ripgrep searches a path it is given whatever the
    ignore rules say; a grep on such a path lifts the rules from above it
    (:func:`._walk.walk` with ``rules_from_above=False``)."""
    return _chain(ws, target)[1]


def _chain(ws: Workspace, target: str) -> tuple[IgnoreRules, str | None]:
    parts = [] if target in ("", ".") else target.split("/")
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    rules = IgnoreRules()
    hidden: str | None = None
    try:
        fd = os.open(ws.root, flags)
    except OSError:
        return rules, hidden
    try:
        rel = ""
        for i in range(len(parts) + 1):
            try:
                names = os.listdir(fd)
            except OSError:
                return rules, hidden
            rules = rules.enter(rel, fd, names)
            if i == len(parts):
                break
            nxt_rel = parts[i] if not rel else f"{rel}/{parts[i]}"
            if hidden is None and rules.ignored(nxt_rel, True):
                hidden = nxt_rel
            try:
                nxt = os.open(parts[i], flags, dir_fd=fd)
            except OSError:
                return rules, hidden
            os.close(fd)
            fd = nxt
            rel = nxt_rel
    finally:
        os.close(fd)
    return rules, hidden


def _rooted(base: str, line: str) -> str | None:
    """One gitignore line of the directory ``base`` rewritten relative to the root."""
    if not line.strip() or line.startswith("#"):
        return None
    if not base:
        return line
    neg = line.startswith("!")
    body = line[1:] if neg else line
    trail = "/" if body.rstrip(" ").endswith("/") else ""
    core = body.rstrip(" ").rstrip("/")
    if not core:
        return None
    if "/" in core:
        rooted = f"/{base}/{core.lstrip('/')}{trail}"
    else:
        rooted = f"/{base}/**/{core}{trail}"
    return ("!" if neg else "") + rooted
