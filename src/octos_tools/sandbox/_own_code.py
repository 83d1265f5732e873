"""The folders the server's own code is imported from: the
``octos_tools`` package, every folder on ``sys.path`` (the editable source folder,
``site-packages``, where plugins are imported from) and the environment it runs from
(``sys.prefix``: its ``bin/python``, ``pyvenv.cfg``, a ``.pth`` file in ``site-packages``
runs at every later Python start).

When one lies inside a writable root (the README's quick start serves its own clone, with
its ``.venv`` inside), a command could rewrite a module the server imports later, or plant
a ``.pth`` file, and run code in the server, unconfined. bubblewrap mounts these folders
read-only; Landlock cannot take a folder back out of a writable root, so commands are
refused there (``sandbox_unavailable``) rather than run with the hole
(:mod:`._spawn`); the file tools refuse to write them (:mod:`octos_tools.profile`).

A ``sys.path`` entry that *is* a writable root is not counted: that is the current folder
of ``python -m`` or ``python -c`` started in the workspace, and keeping it would make the
whole workspace read-only (docs/sandbox.md, limits).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

__all__ = ["own_code_inside", "own_code_paths"]


def own_code_paths() -> tuple[str, ...]:
    """Real paths of the server's code folders, for ``sys.path`` as it is now (a plugin
    may have added a folder)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    candidates = [package, sys.prefix, sys.exec_prefix, *(p for p in sys.path if p)]
    out: list[str] = []
    for path in candidates:
        real = os.path.realpath(path)
        if os.path.isdir(real) and real != "/" and real not in out:
            out.append(real)
    return tuple(out)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def own_code_inside(roots: Sequence[str]) -> list[str]:
    """The code folders (:func:`own_code_paths`) strictly inside one of ``roots`` (real
    paths). A code folder that is a root or lies above one (the current folder of ``python
    -m`` started above the workspace) is not counted: only a package named like the
    workspace folder would be imported from there."""
    found: list[str] = []
    for code in own_code_paths():
        if any(code != root and _under(code, root) for root in roots) and code not in found:
            found.append(code)
    return found
