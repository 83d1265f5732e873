"""Where the server finds the programs it runs itself (``bwrap``, ``git``, ``rg``, a
browser, a mounted server's command): a ``PATH`` lookup that a sandboxed command cannot
steer.

A command in ``workspace-write`` may write its writable roots. When one of them is on the
server's ``PATH`` (an activated ``.venv/bin`` inside the workspace, ``node_modules/.bin``),
a plain :func:`shutil.which` would find what the command planted there and the server
would run it unconfined at the next use: a planted ``bwrap`` *is* the sandbox (a command
writes ``.venv/bin/bwrap`` and the next command runs through it). :func:`which` therefore
skips, like a careful ``which``:

* a ``PATH`` entry, or the file it finds (the link and the file it resolves to), inside a
  folder commands may write: a workspace or ``[sandbox] writable_roots`` entry this process
  serves, a sandbox's private temp folder or home (:func:`distrust_folders`), unless it is
  the server's own environment (``sys.prefix``), which the sandbox keeps read-only;
* a file or any folder above it that is owned by another user than root or the server's
  own user, or writable by group or others (a sticky folder such as ``/tmp`` is accepted
  above a folder of the server's own user: others cannot rename or replace that).

Relative ``PATH`` entries (``.``, empty) are never used. The answer is computed once per
program name, ``PATH`` and set of distrusted folders. :func:`untrusted_hits` names the
files skipped (``octos-tools sandbox check`` prints them).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Iterable

__all__ = [
    "SERVER_PROGRAMS",
    "distrust_folders",
    "distrusted_folders",
    "is_trusted",
    "untrusted_hits",
    "which",
    "why_untrusted",
]

logger = logging.getLogger(__name__)

#: The programs the server runs itself (``octos-tools sandbox check`` lists untrusted ones).
SERVER_PROGRAMS = ("bwrap", "git", "rg")

_lock = threading.Lock()
_folders: dict[str, None] = {}
_cache: dict[tuple[str, str, int], str | None] = {}
_warned: set[str] = set()


def distrust_folders(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Mark folders sandboxed commands may write (a workspace, ``writable_roots``): no
    program of the server is taken from inside them from now on.

    Args:
        paths: folders (``~`` expanded; missing ones are kept by their absolute name).
    """
    with _lock:
        for p in paths:
            text = os.path.expanduser(os.fspath(p))
            for spelling in (os.path.abspath(text), os.path.realpath(text)):
                if spelling != "/" and spelling not in _folders:
                    _folders[spelling] = None
                    _cache.clear()


def distrusted_folders() -> list[str]:
    """The folders no server program is taken from (those of :func:`distrust_folders`)."""
    with _lock:
        return list(_folders)


def _under(path: str, roots: Iterable[str]) -> str | None:
    for root in roots:
        if path == root or path.startswith(root.rstrip("/") + "/"):
            return root
    return None


def _bad_owner_or_mode(path: str) -> str | None:
    """Why ``path`` or a folder above it could be changed by someone else, or ``None``."""
    me = os.geteuid()
    current = path
    while True:
        try:
            st = os.stat(current)
        except OSError as exc:
            return f"{current} cannot be examined ({exc.strerror})"
        if st.st_uid not in (0, me):
            return f"{current} belongs to another user (uid {st.st_uid})"
        sticky_above_own = st.st_mode & stat.S_ISVTX and current != path and st.st_uid == 0
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky_above_own:
            return f"{current} is writable by its group or by others"
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _own_environment() -> tuple[str, ...]:
    """The server's own environment (``sys.prefix``; the ``rg`` of the ``ripgrep`` wheel
    lives in its ``bin/``). Inside a writable root it stays trusted: the sandbox keeps it
    read-only for commands (bubblewrap) or refuses commands (Landlock), see
    :mod:`octos_tools.sandbox._own_code`."""
    import sys

    return tuple(dict.fromkeys(os.path.realpath(p) for p in (sys.prefix, sys.exec_prefix)))


def why_untrusted(path: str | os.PathLike[str]) -> str | None:
    """Why the server must not run the program ``path``, or ``None`` when it may.

    Args:
        path: an absolute file name (a link is judged with the file it resolves to).
    """
    text = os.path.abspath(os.fspath(path))
    if not os.path.isfile(text) or not os.access(text, os.X_OK):
        return f"{text} is not an executable file"
    real = os.path.realpath(text)
    roots = distrusted_folders()
    own = _own_environment()
    for candidate in dict.fromkeys((text, os.path.realpath(os.path.dirname(text)), real)):
        root = _under(candidate, roots)
        if root is not None and _under(os.path.realpath(candidate), own) is None:
            return f"{candidate} lies in {root}, which sandboxed commands may write"
    for candidate in dict.fromkeys((os.path.dirname(text), real)):
        bad = _bad_owner_or_mode(candidate)
        if bad is not None:
            return bad
    return None


def is_trusted(path: str | os.PathLike[str]) -> bool:
    """``path`` is a program the server may run (:func:`why_untrusted` has no objection)."""
    return why_untrusted(path) is None


def _candidates(name: str, path_var: str) -> list[str]:
    out = []
    for entry in path_var.split(os.pathsep):
        if entry and os.path.isabs(entry):
            full = os.path.join(entry, name)
            if os.path.isfile(full) and os.access(full, os.X_OK):
                out.append(full)
    return out


def which(name: str, path: str | None = None) -> str | None:
    """The first ``name`` on ``PATH`` that the server may run, or ``None``.

    Args:
        name: a program name (``"git"``); an absolute path is judged as it is.
        path: the search path (default ``$PATH``, else ``/usr/bin:/bin``).

    A skipped hit is logged once per file (a warning naming why).
    """
    path_var = path if path is not None else os.environ.get("PATH", "/usr/bin:/bin")
    with _lock:
        key = (name, path_var, len(_folders))
        if key in _cache:
            return _cache[key]
    if os.path.isabs(name):
        hits = [name]
    elif os.sep in name:
        hits = []
    else:
        hits = _candidates(name, path_var)
    found: str | None = None
    for hit in hits:
        why = why_untrusted(hit)
        if why is None:
            found = hit
            break
        with _lock:
            fresh = hit not in _warned
            _warned.add(hit)
        if fresh:
            logger.warning("not running %s: %s", hit, why)
    with _lock:
        _cache[key] = found
    return found


def untrusted_hits(name: str, path: str | None = None) -> list[tuple[str, str]]:
    """``(file, why)`` for each ``name`` on ``PATH`` that :func:`which` skips."""
    path_var = path if path is not None else os.environ.get("PATH", "/usr/bin:/bin")
    out = []
    for hit in _candidates(name, path_var):
        why = why_untrusted(hit)
        if why is not None:
            out.append((hit, why))
    return out
