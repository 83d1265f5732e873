"""The :class:`Workspace`: descriptor-based, symlink-refusing file access under one root.

The class is assembled from one module per job: :mod:`._paths` (path checks and descriptor
walks), :mod:`._reading`, :mod:`._listing`, :mod:`._atomic` (single-file atomic writes),
:mod:`._commit` (multi-file commits with a journal), :mod:`._state` (the hidden state folder,
locking, crash recovery and sweeping), :mod:`._locks` (cross-process writer locks per file)
and :mod:`._links` (other names of a hard-linked file).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from typing import Any

from ._commit import Committing
from ._links import LinkSearch, find_hard_links
from ._listing import Listing
from ._locks import path_locks
from ._state import recover_if_idle

__all__ = ["Workspace"]


class Workspace(Committing, Listing):
    """A directory tree that tools may read and write, and nothing outside it.

    Args:
        root: an existing directory. It is resolved once (``realpath``) and stored as
            :attr:`root`; later symlink swaps of the root itself are not followed because
            every call re-opens the resolved path with ``O_NOFOLLOW``.
        durable_writes: ``fsync`` every written file and its folder, so a finished write
            survives a power cut too (:mod:`._atomic`); off by default: writes are atomic
            (never a torn file for other processes or after a crash of this one) but not
            synced, as in ``@modelcontextprotocol/server-filesystem`` and Codex.

    Raises:
        FileNotFoundError: ``root`` does not exist.
        NotADirectoryError: ``root`` is not a directory.

    Every method takes a *user path* (``str`` or path-like): relative to the root, or
    absolute inside it. Failures raise :class:`~octos_tools.errors.PathError` with kind
    ``invalid_arguments`` (NUL byte, empty where not allowed, a name over 255 bytes),
    ``path_outside_workspace``, ``symlink_refused``, ``not_found``, ``is_a_directory``,
    ``not_a_directory``, ``permission_denied``, ``already_exists`` or ``disk_full``.

    Opening a workspace finishes or cleans up what a killed writer left in the state folder
    (see :mod:`octos_tools.workspace._state`); this costs one failed ``open`` when there is
    none.
    """

    history_config: Any = None
    """The ``[history]`` settings (:class:`~octos_tools.config.HistoryConfig`) of the
    checkpoints recorded here; ``None``: the defaults (:mod:`octos_tools.history`)."""

    def __init__(self, root: str | os.PathLike[str], *, durable_writes: bool = False) -> None:
        super().__init__(root)
        self.durable_writes = durable_writes
        with contextlib.suppress(OSError):
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                recover_if_idle(fd)
            finally:
                os.close(fd)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workspace) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    def lock_paths(
        self, paths: Iterable[str | os.PathLike[str]], *, blocking: bool = True
    ) -> contextlib.AbstractContextManager[bool]:
        """Hold the cross-process writer locks of ``paths`` (user paths) while the block
        runs: a writer takes them before it reads a file it will replace and keeps them until
        after the rename (:mod:`._locks`; several paths are locked in a fixed order).

        Args:
            paths: the files about to be read and written.
            blocking: wait for a busy lock; when false the block gets ``False`` at once
                (holding nothing) if a lock is busy.

        Returns:
            A context manager yielding ``True`` when the locks are held.

        Raises:
            PathError: a path kind of :meth:`relpath`.
        """
        return path_locks(self.root, [self.relpath(p) for p in paths], blocking=blocking)

    def hard_links(
        self, inode: tuple[int, int], *, exclude: str | None = None, max_dirs: int = 2_000
    ) -> LinkSearch:
        """Other names inside the workspace of the file ``(st_dev, st_ino)``.

        Returns:
            ``(names, complete)``; ``complete`` is false when the search stopped after
            ``max_dirs`` folders or 10 names. See :func:`._links.find_hard_links`.
        """
        return find_hard_links(self, inode, exclude=exclude, max_dirs=max_dirs)
