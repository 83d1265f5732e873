"""The newest checkpoint's tree, held in memory so a checkpoint of a few paths needs no git.

:class:`TreeCache` is loaded once (``git ls-tree -r -t``, one process) from the tree of a
checkpoint and then changed path by path; :meth:`TreeCache.write` hashes only the trees
along the changed paths (staged in an :class:`~._objects.ObjectBatch`, written as loose
objects by its caller) and gives the new root tree's id, the one ``git write-tree`` would
give for the same entries. Each folder keeps its entries encoded and in git's order, so a
folder of 100 entries with one changed is re-encoded for that entry only. The folder of a
path is created on the way (a file standing where a folder must be is replaced), and a
folder left empty disappears, as in git (a tree never holds an empty tree).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from ._git import GitRunner
from ._objects import TREE_MODE, ObjectBatch, tree_entry

__all__ = ["TreeCache"]


class TreeCache:
    """The entries of one tree, folder by folder.

    Attributes:
        commit: the checkpoint (commit id) this tree is the tree of; ``""`` when not yet
            committed.
        tree: the root tree's id as last written (stale while :meth:`dirty`).
    """

    def __init__(self, commit: str, tree: str) -> None:
        self.commit = commit
        self.tree = tree
        # folder ("" for the root) -> name -> (mode, object id); a sub-folder's entry has
        # TREE_MODE, and its own folder here
        self.dirs: dict[str, dict[str, tuple[str, str]]] = {"": {}}
        self._dirty: set[str] = set()
        # folder -> name -> its entry's bytes in the tree body, as last written (a folder
        # not there yet is encoded whole at its next write); the names changed since
        self._encoded: dict[str, dict[str, bytes]] = {}
        self._order: dict[str, list[str]] = {}  # folder -> names in git's order
        self._touched: dict[str, set[str]] = {}

    @classmethod
    def load(cls, git: GitRunner, commit: str, tree: str) -> TreeCache:
        """The tree ``tree`` of checkpoint ``commit`` (``git ls-tree -r -t -z``).

        Raises:
            GitError: git could not read it.
        """
        cache = cls(commit, tree)
        out = git.run("ls-tree", "-r", "-t", "-z", "--full-tree", tree)
        for item in out.split(b"\0"):
            if not item:
                continue
            meta, _, raw = item.partition(b"\t")
            mode, kind, sha = meta.decode().split(" ")
            if kind == "tree":
                mode = TREE_MODE  # ls-tree shows "040000"; a tree object holds "40000"
            path = os.fsdecode(raw)
            parent, _, name = path.rpartition("/")
            cache.dirs.setdefault(parent, {})[name] = (mode, sha)
            if mode == TREE_MODE:
                cache.dirs.setdefault(path, {})
        return cache

    def dirty(self) -> bool:
        """Whether entries changed since the last :meth:`write`."""
        return bool(self._dirty)

    def entry(self, path: str) -> tuple[str, str] | None:
        """``(mode, id)`` of ``path`` (a file, link or folder), or ``None``."""
        parent, _, name = path.rpartition("/")
        folder = self.dirs.get(parent)
        return folder.get(name) if folder is not None else None

    def files_under(self, folder: str) -> Iterator[str]:
        """Every path below ``folder`` that is not a folder itself (``""``: all)."""
        for name, (mode, _) in list(self.dirs.get(folder, {}).items()):
            path = f"{folder}/{name}" if folder else name
            if mode == TREE_MODE:
                yield from self.files_under(path)
            else:
                yield path

    def set(self, path: str, mode: str, sha: str) -> None:
        """Record file or link ``path`` as ``(mode, sha)`` (never a folder)."""
        parts = path.split("/")
        folder = ""
        for part in parts[:-1]:
            sub = f"{folder}/{part}" if folder else part
            have = self.dirs[folder].get(part)
            if have is None or have[0] != TREE_MODE:
                self.dirs[folder][part] = (TREE_MODE, "")
                self._drop_folder(sub)
                self.dirs[sub] = {}
                self._note(folder, part)
            folder = sub
        if self.dirs[folder].get(parts[-1], ("", ""))[0] == TREE_MODE:
            self._drop_folder(path)
        self.dirs[folder][parts[-1]] = (mode, sha)
        self._note(folder, parts[-1])
        self._touch(folder)

    def remove(self, path: str) -> None:
        """Forget ``path`` (a file, link or a whole folder); no-op when absent."""
        parent, _, name = path.rpartition("/")
        folder = self.dirs.get(parent)
        if folder is None or name not in folder:
            return
        if folder.pop(name)[0] == TREE_MODE:
            self._drop_folder(path)
        self._note(parent, name)
        self._touch(parent)

    def write(self, objects: ObjectBatch) -> str:
        """Hash the trees changed since the last write into ``objects`` (deepest first, so
        each is staged after the trees it names); the root tree's id."""
        for folder in sorted(self._dirty, key=lambda f: f.count("/") + bool(f), reverse=True):
            entries = self.dirs.get(folder)
            if entries is None:
                continue
            parent, _, name = folder.rpartition("/")
            if not entries and folder:
                self._drop_folder(folder)
                self.dirs[parent].pop(name, None)
                self._note(parent, name)
                continue
            sha = objects.put("tree", self._body(folder, entries))
            if folder:
                self.dirs[parent][name] = (TREE_MODE, sha)
                self._note(parent, name)
            else:
                self.tree = sha
        self._dirty.clear()
        return self.tree

    def _body(self, folder: str, entries: dict[str, tuple[str, str]]) -> bytes:
        """The tree body of ``folder``: its entries encoded, in git's order (a folder's name
        compared as ``name + "/"``), re-encoding only the names changed since last time."""
        encoded = self._encoded.get(folder)
        touched = self._touched.pop(folder, None)
        if encoded is None or touched is None:
            encoded = self._encoded[folder] = {
                n: tree_entry(n, m, s) for n, (m, s) in entries.items()
            }
            order = None
        else:
            order = self._order.get(folder)
            for n in touched:
                have = entries.get(n)
                old = encoded.pop(n, None)
                if have is None:
                    order = None  # a name left
                    continue
                new = encoded[n] = tree_entry(n, have[0], have[1])
                if old is None or old.startswith(b"40000 ") != new.startswith(b"40000 "):
                    order = None  # a name came, or changed between file and folder
        if order is None:
            order = self._order[folder] = sorted(
                entries, key=lambda n: os.fsencode(n) + b"/" if entries[n][0] == TREE_MODE
                else os.fsencode(n),
            )  # fmt: skip
        return b"".join([encoded[n] for n in order])

    def _note(self, folder: str, name: str) -> None:
        """Entry ``name`` of ``folder`` changed (it is re-encoded at the next write)."""
        if folder in self._encoded:
            self._touched.setdefault(folder, set()).add(name)

    def _touch(self, folder: str) -> None:
        while True:
            self._dirty.add(folder)
            if not folder:
                return
            folder = folder.rpartition("/")[0]

    def _drop_folder(self, folder: str) -> None:
        prefix = folder + "/"
        for key in [k for k in self.dirs if k == folder or k.startswith(prefix)]:
            del self.dirs[key]
            self._encoded.pop(key, None)
            self._order.pop(key, None)
            self._touched.pop(key, None)
