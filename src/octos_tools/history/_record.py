"""Record some paths of the workspace into the checkpoint tree, in-process.

The checkpoint of a file tool (its paths) and of a command whose changes the watcher told
(:mod:`._watch`) needs no git process for the usual case: each path's current state is read
(a regular file's bytes, a link's target), hashed and staged as a blob
(:class:`~._objects.ObjectBatch`, written as a loose object when not in the store yet),
and set in the :class:`~._tree.TreeCache`; a path that is gone leaves the tree. The rules
are the full scan's (``git ls-files --others --exclude-standard``):

* a path already recorded stays recorded whatever the ignore rules say (as a tracked file
  in git); a new one is recorded unless ``git check-ignore --no-index`` (one process for all
  new paths) says it is ignored by ``.gitignore`` or the store's ``info/exclude``;
* a ``.git`` entry and our own temporary files (``.octos-tmp-*``) are never recorded; a
  folder holding a ``.git`` (a nested repository) is skipped, neither recorded nor renamed;
* a regular file over ``max_file_bytes`` is skipped (and leaves the tree);
* only regular files and symbolic links are recorded (mode 100644, 100755 when the owner
  may execute it, 120000 for a link), as git records them with ``core.filemode``.

A folder to take whole (new, or moved in) is walked level by level, each level's new names
asked of ``check-ignore`` at once, so an ignored ``node_modules`` is never walked.
"""

from __future__ import annotations

import os
import stat as stat_mod
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ._git import GitRunner
from ._objects import TREE_MODE, ObjectBatch, object_id
from ._tree import TreeCache
from ._watch import Watcher

__all__ = ["MAX_SCAN_FILES", "Scan", "Stats", "excluded", "record", "signature"]

MAX_SCAN_FILES = 100_000
"""A scan finding more new or changed files than this records nothing (the checkpoint is
skipped, saying why): a workspace that large (a home folder) is not copied into the store."""

Stats = dict[str, tuple[int, int, int, int, int]]
"""path -> :func:`signature` of the file as last recorded by this process."""

_RACY_NS = 2_000_000_000


@dataclass
class Scan:
    """What a scan recorded (internal).

    Attributes:
        changed: paths whose recorded entry changed (or, for the index scan, was refreshed).
        skipped: paths left out, with the reason.
    """

    changed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def signature(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What tells a file changed without reading it: mtime, ctime, size, inode, mode."""
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)


def excluded(path: str) -> bool:
    """Whether ``path`` is never recorded (a ``.git`` entry, our temporary files)."""
    parts = path.split("/")
    return ".git" in parts or parts[-1].startswith(".octos-tmp-")


def record(
    *,
    root: Path,
    git: GitRunner,
    tree: TreeCache,
    objects: ObjectBatch,
    stats: Stats,
    max_file_bytes: int,
    paths: Iterable[str],
    folders: Iterable[str] = (),
    watcher: Watcher | None = None,
    ignored: dict[str, bool] | None = None,
) -> Scan:
    """Bring ``tree`` up to date with the workspace for ``paths`` and every path below
    ``folders`` (module docstring), the new blobs staged in ``objects``; ``watcher`` gets a
    watch on each folder walked (and loses the watch of one found ignored). ``ignored``
    keeps git's answers (path -> ignored) while the ignore rules stay the same (the caller
    empties it when a ``.gitignore`` changes).

    Raises:
        GitError: ``check-ignore`` failed.
        OSError: the store cannot be written.
        ValueError: more than :data:`MAX_SCAN_FILES` paths at once (the message says so).
    """
    scan = Scan()
    asked = _Ignore(git, {} if ignored is None else ignored)
    files: set[str] = set()
    whole: set[str] = set()
    for p in paths:
        _classify(root, tree, watcher, p, files, whole)
    whole.update(f for f in folders if not excluded(f))
    if whole:
        _walk(root, asked, tree, watcher, sorted(whole), files, scan)
    if len(files) > MAX_SCAN_FILES:
        raise ValueError(
            f"{len(files):,} files changed or unrecorded at once, more than the history "
            f"records in one checkpoint ({MAX_SCAN_FILES:,}); is the workspace a home folder?"
        )
    new: list[tuple[str, os.stat_result]] = []
    now = time.time_ns()
    for p in sorted(files):
        try:
            st = os.lstat(root / p)
        except OSError:
            st = None
        have = tree.entry(p)
        if have is not None and have[0] == TREE_MODE:
            have = None
        if st is None or not (stat_mod.S_ISREG(st.st_mode) or stat_mod.S_ISLNK(st.st_mode)):
            stats.pop(p, None)
            if have is not None:
                tree.remove(p)
                scan.changed.append(p)
            continue
        if have is None:
            new.append((p, st))
            continue
        _record_one(root, tree, objects, stats, max_file_bytes, p, st, have, now, scan)
    if new:
        keep = _not_nested(root, [p for p, _ in new], scan)
        left_out = asked([p for p in keep if p not in scan.skipped])
        for p, st in new:
            if p in keep and p not in left_out:
                _record_one(root, tree, objects, stats, max_file_bytes, p, st, None, now, scan)
    scan.changed.sort()
    return scan


def _classify(
    root: Path,
    tree: TreeCache,
    watcher: Watcher | None,
    p: str,
    files: set[str],
    whole: set[str],
) -> None:
    if not p or excluded(p):
        return
    have = tree.entry(p)
    was_dir = have is not None and have[0] == TREE_MODE
    try:
        is_dir = stat_mod.S_ISDIR(os.lstat(root / p).st_mode)
    except OSError:
        is_dir = False
    if not is_dir:
        files.add(p)
        if was_dir:
            files.update(tree.files_under(p))  # a folder gone: all it held leaves the tree
    elif not was_dir or (watcher is not None and not watcher.watching(p)):
        whole.add(p)  # a folder new to the history (or to the watcher): take it whole
        if have is not None and not was_dir:
            files.add(p)  # a file replaced by a folder
    # else a watched folder still there: its own events tell what changed in it


def _walk(
    root: Path,
    asked: _Ignore,
    tree: TreeCache,
    watcher: Watcher | None,
    top: list[str],
    files: set[str],
    scan: Scan,
) -> None:
    """Add to ``files`` what is below the folders ``top`` on disk and in the tree."""
    level: list[str] = []
    for folder in top:
        have = tree.entry(folder)
        if have is not None and have[0] == TREE_MODE:
            files.update(tree.files_under(folder))
        level.append(folder)
    # the top folders themselves may be ignored (or inside an ignored one)
    new_tops = [f for f in level if tree.entry(f) is None]
    ignored = asked(new_tops)
    level = [f for f in level if f not in ignored]
    if watcher is not None:
        for folder in ignored:
            watcher.remove(folder)  # its churn (build output, node_modules) is not ours
    while level:
        names: list[str] = []
        subdirs: list[str] = []
        for folder in level:
            if os.path.lexists(root / folder / ".git"):
                scan.skipped[folder] = "a nested repository"
                continue
            if watcher is not None:
                watcher.add(folder)
            try:
                entries = list(os.scandir(root / folder))
            except OSError:
                continue
            for entry in entries:
                rel = f"{folder}/{entry.name}"
                if excluded(rel):
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                (subdirs if is_dir else names).append(rel)
        files.update(names)
        unknown = [d for d in subdirs if tree.entry(d) is None]
        ignored = asked(unknown)
        level = [d for d in subdirs if d not in ignored]


def _record_one(
    root: Path,
    tree: TreeCache,
    objects: ObjectBatch,
    stats: Stats,
    max_file_bytes: int,
    p: str,
    st: os.stat_result,
    have: tuple[str, str] | None,
    now: int,
    scan: Scan,
) -> None:
    if stat_mod.S_ISREG(st.st_mode) and st.st_size > max_file_bytes:
        scan.skipped[p] = f"{st.st_size:,} bytes, over max_file_bytes"
        stats.pop(p, None)
        if have is not None:
            tree.remove(p)
            scan.changed.append(p)
        return
    sig = signature(st)
    if have is not None and stats.get(p) == sig:
        return  # as recorded (and not racy: see below)
    try:
        if stat_mod.S_ISLNK(st.st_mode):
            data = os.fsencode(os.readlink(root / p))
            mode = "120000"
        else:
            fd = os.open(root / p, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                with os.fdopen(fd, "rb", closefd=False) as fh:
                    data = fh.read()
            finally:
                os.close(fd)
            mode = "100755" if st.st_mode & stat_mod.S_IXUSR else "100644"
    except OSError:  # gone, or unreadable, meanwhile
        stats.pop(p, None)
        if have is not None:
            tree.remove(p)
            scan.changed.append(p)
        return
    # a stat as fresh as the clock's granularity may not tell a later write apart (git's
    # "racy clean" entries): such a file is read again next time
    if now - st.st_mtime_ns > _RACY_NS and now - st.st_ctime_ns > _RACY_NS:
        stats[p] = sig
    else:
        stats.pop(p, None)
    sha = object_id("blob", data)
    if have == (mode, sha):
        return
    objects.put("blob", data, sha)
    tree.set(p, mode, sha)
    scan.changed.append(p)


def _not_nested(root: Path, paths: list[str], scan: Scan) -> set[str]:
    """The paths not inside a nested repository (those inside one are listed skipped)."""
    nested: dict[str, bool] = {}

    def inside(folder: str) -> str | None:
        while folder:
            known = nested.get(folder)
            if known is None:
                known = nested[folder] = os.path.lexists(root / folder / ".git")
            if known:
                return folder
            folder = folder.rpartition("/")[0]
        return None

    keep: set[str] = set()
    for p in paths:
        repo = inside(p.rpartition("/")[0])
        if repo is None:
            keep.add(p)
        else:
            scan.skipped[repo] = "a nested repository"
    return keep


class _Ignore:
    """Which paths git's ignore rules leave out, each asked of git once."""

    def __init__(self, git: GitRunner, known: dict[str, bool]) -> None:
        self.git = git
        self.known = known

    def __call__(self, paths: list[str]) -> set[str]:
        ask = [p for p in paths if p not in self.known]
        if ask:
            out = _ignored(self.git, ask)
            for p in ask:
                self.known[p] = p in out
        return {p for p in paths if self.known[p]}


def _ignored(git: GitRunner, paths: list[str]) -> set[str]:
    """Which of ``paths`` git's ignore rules leave out (``check-ignore --no-index``)."""
    # check-ignore takes pathspecs (GIT_LITERAL_PATHSPECS is refused): a leading ":" would
    # be magic, "./" keeps it a name; the path is matched as a name, never as a pattern
    sent = {("./" + p if p.startswith(":") else p): p for p in paths}
    data = b"".join(os.fsencode(p) + b"\0" for p in sent)
    env = {k: v for k, v in git.env.items() if k != "GIT_LITERAL_PATHSPECS"}
    out = git.run("check-ignore", "--no-index", "-z", "--stdin", data=data, env=env, ok=(0, 1))
    return {sent.get(os.fsdecode(p), os.fsdecode(p)) for p in out.split(b"\0") if p}
