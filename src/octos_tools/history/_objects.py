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

__all__ = ["TREE_MODE", "bytes_written", "object_id", "tree_body", "write_object"]

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
    global _written
    header = b"%s %d\0" % (kind.encode(), len(body))
    sha = hashlib.sha1(header + body).hexdigest()
    folder = git_dir / "objects" / sha[:2]
    path = folder / sha[2:]
    if not os.path.exists(path):
        folder.mkdir(exist_ok=True)
        tmp = folder / f"tmp-{os.getpid()}-{sha[2:10]}"
        compressor = zlib.compressobj(1)  # git's core.looseCompression default is 1
        data = compressor.compress(header) + compressor.compress(body) + compressor.flush()
        tmp.write_bytes(data)
        _written += len(data) + 4096  # at most a block more on disk
        os.replace(tmp, path)
    return sha


def tree_body(entries: Iterable[tuple[str, str, str]]) -> bytes:
    """The body of a tree of ``(name, mode, id)`` entries, in git's order."""

    def key(entry: tuple[str, str, str]) -> bytes:
        name = os.fsencode(entry[0])
        return name + b"/" if entry[1] == TREE_MODE else name

    return b"".join(
        b"%s %s\0" % (mode.encode(), os.fsencode(name)) + bytes.fromhex(sha)
        for name, mode, sha in sorted(entries, key=key)
    )
