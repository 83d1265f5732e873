"""``apply_patch``: the Codex patch envelope, applied atomically through the workspace.

Rules: the whole patch is planned in memory and every target checked (regular files only,
no symlinks, inside the workspace, nothing under ``.git``) before anything is written with
:meth:`Workspace.apply_changes`: when anything fails no file changes, and a process killed
during the commit leaves a journal the next start rolls forward (ours, on purpose unlike
Codex scenario 015). As in Codex, Add and Move overwrite an existing regular file (the
result says so and shows the old content). ``{path, diff}`` goes to the registry's
``diff_edit``.

* :mod:`._grammar`: the patch text -> operations;
* :mod:`._matching`: finding hunks in a file;
* :mod:`._planning`: every change worked out in memory;
* :mod:`._apply_patch`: the tool.

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
"""

from __future__ import annotations

from ._apply_patch import ApplyPatchTool, register
from ._grammar import AddFile, DeleteFile, Hunk, PatchOp, UpdateFile, parse_patch
from ._matching import apply_hunks, seek_sequence
from ._planning import PlannedFile, plan_patch

__all__ = [
    "AddFile",
    "ApplyPatchTool",
    "DeleteFile",
    "Hunk",
    "PatchOp",
    "PlannedFile",
    "UpdateFile",
    "apply_hunks",
    "parse_patch",
    "plan_patch",
    "register",
    "seek_sequence",
]
