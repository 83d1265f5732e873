"""Cross-process writer locks: one writer at a time per file, from its read to its rename.

An edit reads a file, computes the new content and renames a new file over it. Two writers
doing that at once (two ``octos-tools call`` processes, two HTTP sessions, a ``serve`` and
an editor plug-in) would each read the same old content and the second rename would drop
the first edit: a lost update. Every writer of the file tools (``write_file``,
``edit_file``, ``diff_edit``, ``apply_patch``, ``workspace_restore``) therefore holds the lock
of each file it writes from before its read until after its rename.

The locks are ``flock`` locks (exclusive) on lock files in the per-user state folder of the
workspace (:func:`octos_tools.state_dir.workspace_state_dir`), under ``locks/``: a path is
hashed (SHA-256 of the workspace-relative path) into one of :data:`LOCK_SLOTS` lock files,
so the folder never holds more than that many files whatever the number of paths. Two
paths in one slot just take turns. ``flock`` locks belong to the open file description, so
two threads of one process exclude each other too, and a killed process's locks vanish with
it.

A writer of several files (a multi-file patch, a restore) takes the slots in ascending
order, each once, so two such writers can never wait for each other in a cycle (no
deadlock). Where no lock can be had (no state folder, a platform without ``flock``) the
write goes on unlocked: the lock protects against concurrent writers, it must never make a
single writer fail.

Limits: the lock is per user (the state folder is); two users writing one workspace are
not ordered by it, nor is a program that does not take it (an editor).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - no flock on this platform: writes go unlocked
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_SLOTS", "lock_slots", "path_locks"]

LOCK_SLOTS = 256
"""Number of lock files per workspace (paths are hashed into them)."""

_dirs: dict[str, Path | None] = {}


def lock_slots(rels: Iterable[str]) -> list[int]:
    """The sorted, distinct lock slots of the workspace-relative paths ``rels``."""
    out = {
        int.from_bytes(hashlib.sha256(r.encode("utf-8", "surrogateescape")).digest()[:4], "big")
        % LOCK_SLOTS
        for r in rels
    }
    return sorted(out)


def _lock_dir(root: Path) -> Path | None:
    key = str(root)
    if key in _dirs:
        return _dirs[key]
    from ..state_dir import workspace_state_dir

    try:
        folder: Path | None = workspace_state_dir(root) / "locks"
        assert folder is not None
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        folder = None
    _dirs[key] = folder
    return folder


@contextlib.contextmanager
def path_locks(root: Path, rels: Iterable[str], *, blocking: bool = True) -> Iterator[bool]:
    """Hold the writer locks of ``rels`` (paths relative to the workspace ``root``) while the
    block runs.

    Args:
        root: the workspace root (its state folder holds the lock files).
        rels: the workspace-relative paths about to be read and written.
        blocking: wait for a lock another writer holds; when false, yield ``False`` at once
            (holding nothing) instead.

    Yields:
        ``True`` when every lock is held (or locking is impossible here and the write goes
        on unlocked), ``False`` only when ``blocking`` is false and a lock was busy.
    """
    folder = _lock_dir(root) if fcntl is not None else None
    if folder is None:
        yield True
        return
    held: list[int] = []
    try:
        for slot in lock_slots(rels):
            try:
                fd = os.open(
                    folder / f"{slot:03d}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
                )
            except OSError:
                continue  # the state folder went away: unlocked rather than failed
            held.append(fd)
            if blocking:
                fcntl.flock(fd, fcntl.LOCK_EX)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                break
        else:
            yield True
            return
        yield False
    finally:
        for fd in reversed(held):
            os.close(fd)  # closing the last descriptor releases its lock
