"""Restore: one file or the whole workspace back to a checkpoint, itself a checkpoint.

Steps, under the store's lock:

1. *Scan* the workspace (the file, or the whole tree) into the index, without recording.
2. *Plan*: the paths whose state differs from the checkpoint (``diff-tree`` of the scanned
   tree and the checkpoint's): a file changed since is written back, one deleted since
   recreated, one created since removed; modes (executable bit) and symlinks come back as
   recorded. A file whose current content is not in the history (over ``max_file_bytes``)
   and a nested repository are never touched (listed as skipped).
3. *Drift*: a planned path whose current state is not the newest checkpoint's (changed by
   something that did not record a checkpoint: an editor, another program) is refused
   (``stale_file``, nothing changed) unless ``force``; with ``force`` that state is first
   recorded as a checkpoint of its own, so it can be restored too.
4. *Apply* with the writer locks of every planned path: regular files as one
   all-or-nothing commit (:meth:`Workspace.apply_changes`), then symlinks; folders emptied
   by a removal are removed.
5. *Record* the result as a ``workspace_restore`` checkpoint: a restore can be undone.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import ErrorKind, ToolError
from ..workspace import FileChange
from ._git import GitError
from ._store import HistoryStore, HistoryUnavailable, Scan

if TYPE_CHECKING:
    from ..workspace import Workspace

__all__ = ["RestoreOutcome", "newest_note", "restore"]

_LINK = "120000"
_GITLINK = "160000"


@dataclass
class RestoreOutcome:
    """What a restore did.

    Attributes:
        target: the checkpoint restored (full id).
        restored: files written back to their recorded content (or mode, or link target).
        recreated: files deleted since the checkpoint, made again.
        removed: files created since the checkpoint, removed.
        skipped: paths left alone, with the reason.
        drift_checkpoint: the checkpoint recording drifted files first (``force``), if any.
        checkpoint: the checkpoint of the restore itself (``None`` when nothing changed).
    """

    target: str
    restored: list[str] = field(default_factory=list)
    recreated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    drift_checkpoint: str | None = None
    checkpoint: str | None = None


def newest_note(store: HistoryStore) -> str:
    """``"the newest is <id> (<tool>: <summary>)"`` or ``"there is none yet"``."""
    entries = store.log(1)
    if not entries:
        return "the history has no checkpoint yet"
    e = entries[0]
    return f"the newest is {e.commit[:12]} ({e.tool}: {e.summary})"


def restore(
    store: HistoryStore,
    ws: Workspace,
    commit: str,
    file: str | None = None,
    *,
    force: bool = False,
    call_id: str = "",
    session: str = "",
) -> RestoreOutcome:
    """Restore ``file`` (workspace-relative) or the whole tree to checkpoint ``commit``
    (module docstring).

    Raises:
        ToolError: ``not_found`` (no such checkpoint, naming the newest), ``stale_file``
            (drift, without ``force``; nothing changed), the path kinds of the workspace.
        HistoryUnavailable: the store cannot be used.
    """
    try:
        with store.locked():
            return _restore(store, ws, commit, file, force, call_id, session)
    except GitError as exc:
        raise HistoryUnavailable(str(exc)) from None


def _restore(
    store: HistoryStore,
    ws: Workspace,
    commit: str,
    file: str | None,
    force: bool,
    call_id: str,
    session: str,
) -> RestoreOutcome:
    target = store.resolve(commit)
    head = store.head()
    if target is None or head is None:
        raise ToolError(
            ErrorKind.NOT_FOUND, f"no checkpoint {commit!r} in this workspace; {newest_note(store)}"
        )
    scan = store.scan([file] if file else None)
    now = store.write_index_tree()
    drift = set(store._changed_between(head[1], now, file)) if now != head[1] else set()
    out = RestoreOutcome(target)
    out.skipped.update(scan.skipped)
    todo = []
    for c in store.tree_changes(now, target, file):
        if c.path in scan.skipped:
            out.skipped[c.path] = (
                "its current content is not in the history: " + scan.skipped[c.path]
            )
        elif _GITLINK in (c.old_mode, c.new_mode):
            out.skipped[c.path] = "a nested repository"
        elif ws.off_limits.rule_for(c.path.split("/")):
            out.skipped[c.path] = "off limits (a credential store or the state folder)"
        else:
            todo.append(c)
    drifted = sorted(c.path for c in todo if c.path in drift)
    if drifted and not force:
        store.reset_index(head[1])  # the index back to the newest checkpoint
        shown = ", ".join(drifted[:20]) + (" …" if len(drifted) > 20 else "")
        raise ToolError(
            ErrorKind.STALE_FILE,
            f"{len(drifted)} file(s) changed since the newest checkpoint and the restore would "
            f"overwrite or remove them: {shown}. Nothing was changed. Pass force: true to "
            "restore anyway (their current state is recorded as a checkpoint first)",
            drifted=drifted,
        )
    if now != head[1]:
        cp = store._commit(
            head, Scan(skipped=scan.skipped), "outside", call_id, session,
            "changes made outside octos-tools, recorded before a restore",
        )  # fmt: skip
        out.drift_checkpoint = cp.commit if cp else None
        head = store.head()
    if not todo:
        return out
    paths = sorted(c.path for c in todo)
    with ws.lock_paths(paths):
        blobs = store.blobs(sorted({c.new_blob for c in todo if c.status != "D"}))
        changes: list[FileChange] = []
        links: list[tuple[str, bytes]] = []
        for c in todo:
            if c.old_mode == _LINK and c.status != "A":
                ws.delete(c.path)  # a symlink itself (never followed)
            elif c.status != "A" and c.new_mode == _LINK:
                changes.append(FileChange(c.path, None))
            if c.status == "D":
                if c.old_mode != _LINK:
                    changes.append(FileChange(c.path, None))
                out.removed.append(c.path)
                continue
            data = blobs[c.new_blob]
            if c.new_mode == _LINK:
                links.append((c.path, data))
            else:
                changes.append(FileChange(c.path, data, 0o755 if c.new_mode == "100755" else 0o644))
            (out.recreated if c.status == "A" else out.restored).append(c.path)
        if changes:
            ws.apply_changes(changes)
        for path, link in links:
            pfd, name, _ = ws._parent(path, create=True, for_write=True)
            try:
                assert name is not None
                os.symlink(os.fsdecode(link), name, dir_fd=pfd)
            finally:
                os.close(pfd)
        for path in out.removed:
            _remove_empty_parents(ws, path)
    scan2 = store.scan(paths)
    cp = store._commit(
        head, scan2, "workspace_restore", call_id, session,
        f"{file or 'the workspace'} back to {target[:12]}", changed=paths,
    )  # fmt: skip
    out.checkpoint = cp.commit if cp else None
    return out


def _remove_empty_parents(ws: Workspace, rel: str) -> None:
    parts = rel.split("/")[:-1]
    while parts:
        with contextlib.suppress(OSError, ToolError):
            pfd = ws._open_dir(parts[:-1], "/".join(parts[:-1]) or ".")
            try:
                os.rmdir(parts[-1], dir_fd=pfd)
            finally:
                os.close(pfd)
            parts = parts[:-1]
            continue
        return
