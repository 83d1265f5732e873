"""Git objects written without a git process: loose objects in the store's object folder.

A loose object is ``zlib(b"<kind> <size>\\0" + body)`` stored at
``objects/<sha[:2]>/<sha[2:]>``, named by the SHA-1 of the uncompressed bytes (git's
``Documentation/technical/hash-function-transition.txt`` and ``object-file.c``): what
``git hash-object -w`` writes, so ``git cat-file``, ``fsck`` and the rest of git read it.
A tree's body is its entries sorted by name (a folder's name compared as ``name + "/"``),
each ``b"<mode> <name>\\0"`` and the 20 raw bytes of its object id (``tree.c``).
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "TREE_MODE",
    "ObjectBatch",
    "bytes_written",
    "object_id",
    "tree_body",
    "tree_entry",
    "write_object",
]

TREE_MODE = "40000"
"""The mode git writes for a folder in a tree (no leading zero)."""

_written = 0


def bytes_written() -> int:
    """Compressed bytes of every object this process has written so far (a store's size
    grows by at most that much between two measures of it)."""
    return _written


def object_id(kind: str, body: bytes) -> str:
    """The git object id (40 hex digits) of an object of ``kind`` (``blob``, ``tree``,
    ``commit``) with ``body``."""
    return hashlib.sha1(b"%s %d\0" % (kind.encode(), len(body)) + body).hexdigest()


def write_object(git_dir: Path, kind: str, body: bytes) -> str:
    """Write ``body`` as a loose object of ``kind`` unless the store has it; its id.

    Atomic (a temporary file renamed into place), so a reader never sees half an object.

    Raises:
        OSError: the object folder cannot be written.
    """
    header = b"%s %d\0" % (kind.encode(), len(body))
    sha = hashlib.sha1(header + body).hexdigest()
    _write_loose(os.fspath(git_dir), sha, header, body)
    return sha


def _write_loose(git_dir: str, sha: str, header: bytes, body: bytes) -> None:
    global _written
    folder = f"{git_dir}/objects/{sha[:2]}"
    path = f"{folder}/{sha[2:]}"
    if os.path.exists(path):
        return
    # git's own prefix: fsck does not list it, prune removes one a crash left behind
    tmp = f"{folder}/tmp_obj_{os.getpid()}_{sha[2:10]}"
    compressor = zlib.compressobj(1)  # git's core.looseCompression default is 1
    data = compressor.compress(header) + compressor.compress(body) + compressor.flush()
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o644)
    except FileNotFoundError:  # the first object of its folder
        os.makedirs(folder, exist_ok=True)
        fd = os.open(tmp, flags, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    _written += len(data) + 4096  # at most a block more on disk
    os.replace(tmp, path)


class ObjectBatch:
    """Objects hashed now and written later (:meth:`write`): a checkpoint's ids are known
    before any file is written, so its writing can leave the call's path.

    Args:
        git_dir: the store's git directory.
    """

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self._staged: dict[str, tuple[bytes, bytes]] = {}

    def put(self, kind: str, body: bytes, sha: str | None = None) -> str:
        """Stage an object of ``kind`` with ``body``; its id (nothing is written yet).
        ``sha``: its id when the caller computed it already (:func:`object_id`)."""
        header = b"%s %d\0" % (kind.encode(), len(body))
        if sha is None:
            sha = hashlib.sha1(header + body).hexdigest()
        self._staged[sha] = (header, body)
        return sha

    def __len__(self) -> int:
        return len(self._staged)

    def write(self) -> None:
        """Write every staged object the store does not have yet (in the order staged:
        blobs, then trees from the deepest up, then the commit, so an object is written
        only after those it names).

        Raises:
            OSError: the object folder cannot be written (what was written stays: loose
                objects nothing names are harmless, and pruned with the rest).
        """
        git_dir = os.fspath(self.git_dir)
        for sha, (header, body) in self._staged.items():
            _write_loose(git_dir, sha, header, body)
        self._staged.clear()


def tree_entry(name: str, mode: str, sha: str) -> bytes:
    """One entry of a tree's body: ``b"<mode> <name>\\0"`` and the id's 20 raw bytes."""
    return b"%s %s\0" % (mode.encode(), os.fsencode(name)) + bytes.fromhex(sha)


def tree_body(entries: Iterable[tuple[str, str, str]]) -> bytes:
    """The body of a tree of ``(name, mode, id)`` entries, in git's order."""

    def key(entry: tuple[str, str, str]) -> bytes:
        name = os.fsencode(entry[0])
        return name + b"/" if entry[1] == TREE_MODE else name

    return b"".join(
        b"%s %s\0" % (mode.encode(), os.fsencode(name)) + bytes.fromhex(sha)
        for name, mode, sha in sorted(entries, key=key)
    )
