"""The history store: checkpoints of a workspace in a git directory of its own.

Layout, under the workspace's per-user state folder
(:func:`octos_tools.state_dir.workspace_state_dir`)::

    history/
        git/      the git directory (objects, refs/octos/checkpoints, info/exclude,
                  info/attributes, shallow once old checkpoints were collected)
        index     its index (git's stat cache for the whole-tree scans)
        index-tree  the tree the index holds (it lags behind in-process checkpoints and is
                  brought to the newest one, ``read-tree --reset``, before a whole-tree scan)
        head      "<commit> <tree> <count>" of the newest checkpoint
        lock      flock: one writer of the store at a time, across processes

A checkpoint is a commit whose tree is the workspace as last recorded. Two ways to make it:

* *some paths, in-process* (:mod:`._record`): a file tool's paths, and a command's when the
  watcher (:mod:`._watch`, inotify) told what changed before and during it. Each path is
  read and hashed as a blob, the trees along it re-hashed from the newest checkpoint's tree
  held in memory (:mod:`._tree`), the commit hashed as ``commit-tree`` would write it: no
  git process (``check-ignore`` for a path new to the history). The objects are then
  written as loose objects, then the ref, then the head; for a file tool's checkpoint after
  its call, by a thread of the store while the call answers (*write-behind*: the lock is
  kept until they are written, and :meth:`HistoryStore.flush`, called by every reader and
  writer of the store, waits for them);
* *the whole tree, by git*: the first checkpoint, a command without a healthy watcher (its
  queue overflowed, inotify unavailable, a ``.gitignore`` changed) and a restore
  (``ls-files --others --modified --deleted``, answered from the index's stat cache, then
  ``update-index`` and ``write-tree``).

Its message names the tool, the call id, the session and the changed paths, and the paths
skipped (over ``max_file_bytes``; a nested repository, recorded neither as files nor as a
gitlink). ``.gitignore`` rules apply (``--exclude-standard``, ``check-ignore``); ``.git``
entries are never recorded and never renamed; our own temporary files are excluded.

The user's repository is never touched: git runs with the store's ``GIT_DIR`` and
``GIT_INDEX_FILE`` (:mod:`._git`). The workspace's own ``.git`` is not even read.

Quota: every :attr:`HistoryStore.quota_every` checkpoints, when its size as last measured
plus what this process wrote since may exceed ``max_store_bytes``, it is measured again;
over ``max_store_bytes``, the oldest half of the checkpoints is cut off (the newest kept one
becomes a shallow boundary, so commit ids stay valid) and unreachable objects are pruned,
until the store fits or one checkpoint is left.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import stat as stat_mod
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._git import EMAIL as _EMAIL
from ._git import IDENT as _IDENT
from ._git import GitError, GitRunner
from ._objects import TREE_MODE, ObjectBatch, bytes_written
from ._record import MAX_SCAN_FILES, Scan, Stats, excluded, record, signature
from ._tree import TreeCache
from ._watch import Changes, Watcher
from ._watch import start as start_watcher

try:
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "MAX_SCAN_FILES",
    "REF",
    "Checkpoint",
    "HistoryStore",
    "HistoryUnavailable",
    "LogEntry",
    "Scan",
    "TreeChange",
]

logger = logging.getLogger(__name__)

REF = "refs/octos/checkpoints"
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_LOCK_WAIT_SECS = 10.0
_RACY_NS = 2_000_000_000
_MAX_LISTED_PATHS = 50
_EXCLUDES = ".git\n.octos-tmp-*\n"
_ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding\n"


def _exclude_escape(rel: str) -> str:
    """``rel`` as a literal gitignore pattern (``*?[\\`` escaped, gitignore(5))."""
    return "".join("\\" + ch if ch in "*?[\\" else ch for ch in rel)


class HistoryUnavailable(Exception):
    """The history store cannot be used (git missing, store corrupt, full or unwritable, its
    lock held too long); the message says why. The user's work is never blocked by it."""


@dataclass(frozen=True)
class Checkpoint:
    """One recorded checkpoint.

    Attributes:
        commit: the full commit id.
        changed: the paths it changed.
        skipped: paths left out, with the reason.
    """

    commit: str
    changed: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...] = ()

    @property
    def short(self) -> str:
        """The first 12 hex digits of :attr:`commit`."""
        return self.commit[:12]


@dataclass(frozen=True)
class LogEntry:
    """A checkpoint as listed by :meth:`HistoryStore.log`."""

    commit: str
    time: int
    tool: str
    call_id: str
    session: str
    summary: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class TreeChange:
    """One path that differs between two trees (``git diff-tree --raw``)."""

    status: str  # A (only in the new tree), D (only in the old), M, T (type changed)
    path: str
    old_mode: str
    new_mode: str
    new_blob: str


class HistoryStore:
    """The checkpoints of one workspace (module docstring).

    Args:
        root: the workspace root.
        folder: the store's folder (``<workspace state folder>/history``).
        max_file_bytes: files larger than this are not recorded (listed as skipped).
        max_store_bytes: the size quota of the store.

    Raises:
        HistoryUnavailable: git is missing or the store cannot be created or read.
    """

    quota_every = 16
    """Measure the store's size once per this many checkpoints (of this process)."""
    watch = True
    """Watch the workspace (inotify) so a command's checkpoint needs no whole-tree scan."""

    def __init__(
        self,
        root: Path,
        folder: Path,
        *,
        max_file_bytes: int,
        max_store_bytes: int,
        off_limits: Sequence[str] = (),
    ) -> None:
        self.root = root
        self._excludes = _EXCLUDES + "".join(f"/{_exclude_escape(p)}\n" for p in off_limits)
        self.folder = folder
        self.git_dir = folder / "git"
        self.max_file_bytes = max_file_bytes
        self.max_store_bytes = max_store_bytes
        self._since_quota = 0
        self._measured: int | None = None  # the store's size as last walked
        self._written_at = 0  # bytes_written() then
        self._git_bytes = 0  # bytes of files given to git since (an upper bound)
        self._stats: Stats = {}  # path -> stat as last recorded by this process
        self._tree: TreeCache | None = None  # the newest checkpoint's tree, in memory
        self._watcher: Watcher | None = None
        self._watch_failed = False  # too many folders, or no inotify: do not try again
        self._pending = Changes()  # told by the watcher, not yet recorded
        self._ignored: dict[str, bool] = {}  # check-ignore's answers, until a scan
        self._lost = False  # the watcher lost count of changes: the next record scans all
        self._held: int | None = None  # the lock's fd while held by hold()
        # the head as read or written while held: no other writer can change it meanwhile
        self._head_held: tuple[str, str, int] | None = None
        # the write-behind of a file tool's checkpoint (see defer in checkpoint())
        self._job_lock = threading.Lock()
        self._job: threading.Event | None = None  # set once the pending write is done
        self._job_thread: int | None = None
        self._release_after_job = False  # release() came while the write was pending
        self.last_write_error: str | None = None
        """Why the newest deferred checkpoint could not be written (``None``: it was)."""
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.git = GitRunner(self.git_dir, folder / "index", root)
            self.git.before = self.flush
            with self.locked():
                if not (self.git_dir / "HEAD").is_file():
                    self._init()
                self._write_excludes()
        except (OSError, GitError) as exc:
            raise HistoryUnavailable(str(exc)) from None

    # ------------------------------------------------------------------ set-up, lock

    def _init(self) -> None:
        self.git.init()
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "exclude").write_text(self._excludes)
        (info / "attributes").write_text(_ATTRIBUTES)

    def _write_excludes(self) -> None:
        """``info/exclude`` with the workspace's off-limits paths (the state folder, the
        credential stores: :mod:`octos_tools.workspace._off_limits`), so that a workspace
        holding the store never records it (a restore would delete its own objects)."""
        exclude = self.git_dir / "info" / "exclude"
        try:
            current = exclude.read_text()
        except OSError:
            current = None
        if current != self._excludes:
            exclude.parent.mkdir(exist_ok=True)
            exclude.write_text(self._excludes)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's lock (waits up to 10 s, then :class:`HistoryUnavailable`); taken
        at once while this process holds it (:meth:`hold`)."""
        self.flush()
        if self._held is not None:
            yield
            return
        fd = self._acquire()
        try:
            yield
        finally:
            if fd is not None:
                os.close(fd)

    def hold(self) -> None:
        """Take the store's lock until :meth:`release` (a file tool's records before and
        after its call and the call itself, so another process's checkpoint cannot take
        this call's change as its own). Waits as :meth:`locked`.

        Raises:
            HistoryUnavailable: the lock cannot be had (the reason in the message).
        """
        self.flush()
        if self._held is None:
            self._held = self._acquire() or -1
            self._head_held = None

    def try_hold(self) -> bool:
        """Take the store's lock as :meth:`hold` does if that needs no wait: ``False`` when
        a checkpoint is being written, the lock is held by this process already or by
        another process (the caller then waits in :meth:`hold`, off the event loop)."""
        if self._job is not None or self._held is not None or fcntl is None:
            return False
        try:
            fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._held = fd
        self._head_held = None
        return True

    def release(self) -> None:
        """Give back the lock taken by :meth:`hold` (nothing when not held); while a
        deferred checkpoint is being written, the lock is given back when it is written."""
        with self._job_lock:
            if self._job is not None:
                self._release_after_job = True
                return
            fd, self._held = self._held, None
            self._head_held = None
        if fd is not None and fd >= 0:
            os.close(fd)

    def flush(self) -> None:
        """Wait until the deferred checkpoint (if any) is written: every reader and writer
        of the store calls this first, so none sees the store without it."""
        job = self._job
        if job is not None and threading.get_ident() != self._job_thread:
            job.wait()

    def _acquire(self) -> int | None:
        if fcntl is None:  # pragma: no cover
            return None
        try:
            fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise HistoryUnavailable(f"the history lock cannot be opened: {exc}") from None
        deadline = time.monotonic() + _LOCK_WAIT_SECS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise HistoryUnavailable(
                        "the history store is busy (its lock is held by another process)"
                    ) from None
                time.sleep(0.005)
            except OSError as exc:
                os.close(fd)
                raise HistoryUnavailable(f"the history lock cannot be taken: {exc}") from None

    # ------------------------------------------------------------------ head

    def head(self) -> tuple[str, str, int] | None:
        """``(commit, tree, number of checkpoints)`` of the newest checkpoint, or ``None``."""
        self.flush()
        if self._head_held is not None and self._held is not None:
            return self._head_held
        try:
            with open(self.folder / "head", "rb") as fh:
                parts = fh.read().split()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise HistoryUnavailable(f"the history head cannot be read: {exc}") from None
        if len(parts) != 3 or len(parts[0]) != 40 or not parts[2].isdigit():
            raise HistoryUnavailable("the history store is corrupt (its head file)")
        head = parts[0].decode(), parts[1].decode(), int(parts[2])
        if self._held is not None:
            self._head_held = head
        return head

    def _set_head(self, commit: str, tree: str, count: int) -> None:
        """Write the ref, then the head (each a temporary file renamed into place)."""
        for name, text in (("git/" + REF, f"{commit}\n"), ("head", f"{commit} {tree} {count}\n")):
            path = f"{self.folder}/{name}"
            tmp = path + ".lock"  # a name git never takes for a ref
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            except FileNotFoundError:  # the ref's folder, the first time
                os.makedirs(os.path.dirname(path), exist_ok=True)
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
            os.replace(tmp, path)
        if self._held is not None:
            self._head_held = (commit, tree, count)

    # ------------------------------------------------------------------ the index

    def _index_tree(self) -> str | None:
        try:
            return (self.folder / "index-tree").read_text().strip() or None
        except OSError:
            return None

    def _set_index_tree(self, tree: str) -> None:
        path = self.folder / "index-tree"
        tmp = path.with_name("index-tree.tmp")
        tmp.write_text(tree + "\n")
        os.replace(tmp, path)

    def sync_index(self) -> None:
        """Bring the index to the newest checkpoint's tree when in-process checkpoints left
        it behind (``read-tree --reset``: the stat data of entries that did not change is kept).
        The caller holds :meth:`locked`."""
        head = self.head()
        if head is not None and self._index_tree() != head[1]:
            self.reset_index(head[1])

    def reset_index(self, tree: str) -> None:
        """Set the index to ``tree`` (``read-tree --reset``: no work tree check). The caller
        holds :meth:`locked`."""
        self.git.run("read-tree", "--reset", tree)
        self._set_index_tree(tree)

    def write_index_tree(self) -> str:
        """``git write-tree`` of the index; the tree's id. The caller holds :meth:`locked`."""
        tree = self.git.run("write-tree").decode().strip()
        self._set_index_tree(tree)
        return tree

    # ------------------------------------------------------------------ scanning

    def scan(self, paths: Sequence[str] | None) -> Scan:
        """Bring the index up to date with the workspace for ``paths`` (all when ``None``);
        the caller holds :meth:`locked`."""
        if paths is not None and not paths:
            return Scan()
        self.sync_index()
        removed: set[str] = set()
        present: set[str] = set()
        # paths this process recorded before are in the index: git's ignore rules no longer
        # apply to them, so they need no listing (one process less per edit)
        ask = None if paths is None else [p for p in paths if p not in self._stats]
        if paths is not None:
            for rel in paths:
                if rel in self._stats:
                    (present if os.path.lexists(self.root / rel) else removed).add(rel)
        if ask is None or ask:
            spec = ["--", *ask] if ask is not None else []
            out = self.git.run(
                "ls-files", "-z", "-t", "-o", "-m", "-d", "--exclude-standard", *spec
            )
            for item in out.split(b"\0"):
                if len(item) < 3:
                    continue
                tag, rel = item[:1], os.fsdecode(item[2:])
                (removed if tag == b"R" else present).add(rel)
        present -= removed
        if len(present) > MAX_SCAN_FILES:
            raise HistoryUnavailable(
                f"{len(present):,} files changed or unrecorded at once, more than the history "
                f"records in one checkpoint ({MAX_SCAN_FILES:,}); is the workspace a home folder?"
            )
        scan = Scan()
        update: list[str] = sorted(removed)
        drop: list[str] = []
        for rel in sorted(present):
            if rel.endswith("/"):
                scan.skipped[rel.rstrip("/")] = "a nested repository"
                continue
            try:
                st = os.lstat(self.root / rel)
            except OSError:
                update.append(rel)  # gone meanwhile: --remove drops it
                continue
            if stat_mod.S_ISREG(st.st_mode) and st.st_size > self.max_file_bytes:
                scan.skipped[rel] = f"{st.st_size:,} bytes, over max_file_bytes"
                drop.append(rel)
                continue
            if not (stat_mod.S_ISREG(st.st_mode) or stat_mod.S_ISLNK(st.st_mode)):
                continue
            update.append(rel)
        if update:
            self.git.run(
                "update-index", "-z", "--add", "--remove", "--replace", "--stdin", data=_z(update)
            )
        if drop:
            self.git.run("update-index", "-z", "--force-remove", "--stdin", data=_z(drop))
        scan.changed = sorted(set(update) | set(drop))
        now = time.time_ns()
        for rel in update:
            try:
                st = os.lstat(self.root / rel)
            except OSError:
                self._stats.pop(rel, None)
                continue
            self._git_bytes += st.st_size + 4096
            if now - st.st_mtime_ns > _RACY_NS and now - st.st_ctime_ns > _RACY_NS:
                self._stats[rel] = signature(st)
            else:
                self._stats.pop(rel, None)  # racy: read again next time
        for rel in drop:
            self._stats.pop(rel, None)
        return scan

    def known_unchanged(self, paths: Sequence[str]) -> bool:
        """Whether every path has the stat this process last recorded (no scan needed)."""
        self.flush()
        for rel in paths:
            want = self._stats.get(rel)
            try:
                st = os.lstat(self.root / rel)
            except FileNotFoundError:
                if want is not None:
                    return False
                continue
            except OSError:
                return False
            if want != signature(st):
                return False
        return True

    def in_memory(self, paths: Sequence[str]) -> bool:
        """Whether a checkpoint of ``paths`` needs no git process: the newest checkpoint's
        tree is held in memory and each path is a file in it already (a new path is asked
        of ``check-ignore``). The caller holds the lock."""
        tree, head = self._tree, self.head()
        if tree is None or head is None or tree.commit != head[0]:
            return False
        for rel in paths:
            have = tree.entry(rel)
            if have is None or have[0] == TREE_MODE:
                return False
        return True

    # ------------------------------------------------------------------ the watcher

    def _start_watching(self) -> None:
        """Watch every folder the history records, before a whole-tree scan (a change made
        during the scan is told at the next checkpoint). The caller holds :meth:`locked`."""
        if not self.watch or self._watch_failed:
            return
        if self._watcher is None or not self._watcher.healthy:
            if self._watcher is not None:
                self._watcher.close()
            self._watcher = start_watcher(self.root)
            if self._watcher is None:
                self._watch_failed = True
                return
        watcher = self._watcher
        out = self.git.run("ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory")
        ignored = {os.fsdecode(p).rstrip("/") for p in out.split(b"\0") if p.endswith(b"/")}
        todo = [""]
        while todo and watcher.healthy:
            folder = todo.pop()
            if not watcher.add(folder):
                break
            try:
                entries = list(os.scandir(self.root / folder if folder else self.root))
            except OSError:
                continue
            for entry in entries:
                rel = f"{folder}/{entry.name}" if folder else entry.name
                with contextlib.suppress(OSError):
                    if (
                        entry.is_dir(follow_symlinks=False)
                        and not excluded(rel)
                        and rel not in ignored
                        and not os.path.lexists(os.path.join(entry.path, ".git"))
                    ):
                        todo.append(rel)
        if not watcher.healthy:
            watcher.close()
            self._watcher = None
            self._watch_failed = True  # e.g. more folders than MAX_WATCHES
            return
        watcher.drain()  # what happened so far, the scan that follows sees
        self._pending = Changes()

    def _drain(self) -> None:
        if self._watcher is None:
            return
        got = self._watcher.drain()
        if got is None:
            self._watcher.close()
            self._watcher = None
            self._pending = Changes()
            self._lost = True
            return
        self._pending.paths |= got.paths
        self._pending.folders |= got.folders

    def has_pending(self) -> bool:
        """Whether the watcher told of changes not recorded yet, or lost count of them
        (cheap: one non-blocking read of its queue)."""
        self.flush()
        self._drain()
        return self._lost or bool(self._pending.paths or self._pending.folders)

    def close(self) -> None:
        """Stop watching the workspace (the store stays usable: commands scan the tree)."""
        self.flush()
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None

    # ------------------------------------------------------------------ checkpoints

    def checkpoint(
        self,
        paths: Sequence[str] | None,
        *,
        tool: str,
        call_id: str = "",
        session: str = "",
        summary: str = "",
        pending: bool = False,
        defer: bool = False,
    ) -> Checkpoint | None:
        """Record the workspace (``paths`` only, or everything when ``None``) as a checkpoint;
        ``None`` when nothing changed since the newest one. ``pending``: with ``paths``, also
        what the watcher told changed (a scan of all when it lost count), so the checkpoint
        before a file tool's call is the whole workspace as it is (a command's always is).
        ``defer``: with ``paths``, not ``pending`` and the lock held (:meth:`hold`), the
        checkpoint's objects are hashed and its id returned at once, and its files (objects,
        ref, head) are written by a worker thread; the lock is kept until they are, and
        every other use of the store waits for them (:meth:`flush`). A process killed
        before they are written loses that checkpoint only (docs/history.md, "Crash").

        Raises:
            HistoryUnavailable: the store cannot be written (the reason in the message).
        """
        try:
            with self.locked():
                head = self.head()
                if head is None:  # the first checkpoint records the whole tree
                    return self._whole(None, tool, call_id, session, summary)
                self._drain()
                if paths is not None and (
                    not pending or (self._watcher is None and not self._lost)
                ):
                    defer = defer and not pending and self._held is not None
                    told_here = self._pending.paths.intersection(paths)
                    self._pending.paths.difference_update(paths)  # recorded now
                    try:
                        return self._some(head, paths, (), tool, call_id, session, summary, defer)
                    except BaseException:
                        self._pending.paths |= told_here  # told again at the next one
                        raise
                told = self._pending
                if self._watcher is None or any(
                    p.rpartition("/")[2] == ".gitignore" for p in told.paths
                ):
                    return self._whole(head, tool, call_id, session, summary)
                self._pending = Changes()
                try:
                    return self._some(
                        head, {*told.paths, *(paths or ())}, told.folders,
                        tool, call_id, session, summary,
                    )  # fmt: skip
                except BaseException:
                    self._pending.paths |= told.paths  # told again at the next one
                    self._pending.folders |= told.folders
                    raise
        except GitError as exc:
            raise HistoryUnavailable(str(exc)) from None
        except ValueError as exc:
            raise HistoryUnavailable(str(exc)) from None
        except OSError as exc:
            raise HistoryUnavailable(f"the history store cannot be written: {exc}") from None

    def _whole(
        self,
        head: tuple[str, str, int] | None,
        tool: str,
        call_id: str,
        session: str,
        summary: str,
    ) -> Checkpoint | None:
        """A checkpoint of the whole tree by git (the index's stat cache)."""
        self._ignored.clear()  # the rules may have changed (a .gitignore)
        self._lost = False
        self._start_watching()
        scan = self.scan(None)
        return self._commit(head, scan, tool, call_id, session, summary)

    def _some(
        self,
        head: tuple[str, str, int],
        paths: Iterable[str],
        folders: Iterable[str],
        tool: str,
        call_id: str,
        session: str,
        summary: str,
        defer: bool = False,
    ) -> Checkpoint | None:
        """A checkpoint of ``paths`` and ``folders``, in-process (:mod:`._record`)."""
        tree = self._tree
        if tree is None or tree.commit != head[0]:
            tree = self._tree = TreeCache.load(self.git, head[0], head[1])
        objects = ObjectBatch(self.git_dir)
        try:
            scan = record(
                root=self.root, git=self.git, tree=tree, objects=objects, stats=self._stats,
                max_file_bytes=self.max_file_bytes, paths=paths, folders=folders,
                watcher=self._watcher, ignored=self._ignored,
            )  # fmt: skip
            if not tree.dirty():
                return None
            new = tree.write(objects)
            if new == head[1]:
                return None
            cp = self._finish(
                head, new, scan.changed, scan.skipped, tool, call_id, session, summary,
                objects=objects, defer=defer,
            )  # fmt: skip
        except BaseException:
            self._tree = None  # half changed: read again next time
            raise
        tree.commit = cp.commit
        return cp

    def _commit(
        self,
        head: tuple[str, str, int] | None,
        scan: Scan,
        tool: str,
        call_id: str,
        session: str,
        summary: str,
        *,
        changed: Sequence[str] | None = None,
    ) -> Checkpoint | None:
        """A checkpoint of the index's tree (``write-tree``) after :meth:`scan`."""
        tree = self.write_index_tree()
        if head is not None and tree == head[1]:
            return None
        cached = self._tree if head is not None and changed is None else None
        self._tree = None
        if changed is None:
            changes = self.tree_changes(head[1] if head else _EMPTY_TREE, tree)
            changed = [c.path for c in changes]
            if cached is not None and head is not None and cached.commit == head[0]:
                # keep the tree in memory: apply what git found, check it gives git's tree
                for c in changes:
                    if c.status == "D":
                        cached.remove(c.path)
                    else:
                        cached.set(c.path, c.new_mode, c.new_blob)
                if cached.write(ObjectBatch(self.git_dir)) == tree:  # git wrote them
                    self._tree = cached
        cp = self._finish(head, tree, changed, scan.skipped, tool, call_id, session, summary)
        if self._tree is not None:
            self._tree.commit = cp.commit
        return cp

    def _finish(
        self,
        head: tuple[str, str, int] | None,
        tree: str,
        changed: Sequence[str],
        skipped: dict[str, str],
        tool: str,
        call_id: str,
        session: str,
        summary: str,
        *,
        objects: ObjectBatch | None = None,
        defer: bool = False,
    ) -> Checkpoint:
        """Stage the commit of ``tree`` in ``objects`` and write them, the ref and the
        head: now, or by the worker thread when ``defer``."""
        shown = list(changed[:_MAX_LISTED_PATHS])
        title = summary or (", ".join(shown[:3]) + (" …" if len(changed) > 3 else ""))
        lines = [f"{tool}: {title}"[:200], "", f"Tool: {tool}"]
        lines += [f"Call-Id: {call_id}", f"Session: {session}"]
        lines += [f"Changed: {p}" for p in shown]
        if len(changed) > len(shown):
            lines.append(f"Changed: … {len(changed) - len(shown)} more")
        lines += [f"Skipped: {p} ({why})" for p, why in sorted(skipped.items())[:50]]
        objects = objects if objects is not None else ObjectBatch(self.git_dir)
        commit = _stage_commit(objects, tree, head[0] if head else None, "\n".join(lines) + "\n")
        count = (head[2] if head else 0) + 1
        cp = Checkpoint(commit, tuple(changed), tuple(sorted(skipped.items())))
        if defer and self._start_job(objects, cp, tree, count):
            return cp
        self._write(objects, commit, tree, count)
        return cp

    def _write(self, objects: ObjectBatch, commit: str, tree: str, count: int) -> None:
        """Write the objects, then the ref and the head (a head never names a commit whose
        objects are not all written), then measure the quota when due."""
        objects.write()
        self._set_head(commit, tree, count)
        self._since_quota += 1
        if self._since_quota >= self.quota_every:
            self._since_quota = 0
            if self._over_quota():
                self.collect()
                self._measured = None

    def _start_job(self, objects: ObjectBatch, cp: Checkpoint, tree: str, count: int) -> bool:
        """Hand the writing of checkpoint ``cp`` to the history's writer thread (a queue:
        no thread start on the call's path); ``False`` when no thread can start (the
        interpreter is shutting down): the caller writes it."""
        done = threading.Event()
        with self._job_lock:
            self._job = done
        try:
            _submit(done, lambda: self._job_main(done, objects, cp, tree, count))
        except RuntimeError:
            with self._job_lock:
                self._job = None
            return False
        return True

    def _job_main(
        self, done: threading.Event, objects: ObjectBatch, cp: Checkpoint, tree: str, count: int
    ) -> None:
        self._job_thread = threading.get_ident()
        try:
            self._write(objects, cp.commit, tree, count)
            self.last_write_error = None
        except (OSError, GitError, HistoryUnavailable) as exc:
            # the call's result named this checkpoint; it is not in the store: what it
            # recorded is recorded again by the next checkpoint (its paths are pending)
            self.last_write_error = f"checkpoint {cp.short} could not be written: {exc}"
            logger.warning("history: %s", self.last_write_error)
            self._tree = None
            for path in cp.changed:
                self._stats.pop(path, None)
            if self._watcher is not None:
                self._pending.paths.update(cp.changed)
            else:
                self._lost = True  # no watcher to tell them: the next checkpoint scans all
        finally:
            with self._job_lock:
                self._job = None
                fd = None
                if self._release_after_job:
                    self._release_after_job = False
                    fd, self._held = self._held, None
                    self._head_held = None
            if fd is not None and fd >= 0:
                os.close(fd)
            _unwritten.discard(done)
            done.set()

    def _changed_between(self, old: str, new: str, path: str | None = None) -> list[str]:
        return [c.path for c in self.tree_changes(old, new, path)]

    def tree_changes(self, old: str, new: str, path: str | None = None) -> list[TreeChange]:
        """What differs from tree (or commit) ``old`` to ``new`` (under ``path``)."""
        spec = ["--", path] if path else []
        out = self.git.run("diff-tree", "-r", "-z", "--raw", "--no-renames", old, new, *spec)
        fields = out.split(b"\0")
        changes: list[TreeChange] = []
        i = 0
        while i + 1 < len(fields):
            meta = fields[i].decode()
            if not meta.startswith(":"):
                i += 1
                continue
            old_mode, new_mode, _, new_blob, status = meta[1:].split(" ")
            changes.append(
                TreeChange(status[:1], os.fsdecode(fields[i + 1]), old_mode, new_mode, new_blob)
            )
            i += 2
        return changes

    # ------------------------------------------------------------------ reading

    def resolve(self, commit: str) -> str | None:
        """The full id of checkpoint ``commit`` (a prefix of 4+ hex digits, or ``HEAD``), or
        ``None`` when the store has no such checkpoint."""
        head = self.head()
        if head is None:
            return None
        if commit.upper() == "HEAD" or not commit:
            return head[0]
        if not all(c in "0123456789abcdefABCDEF" for c in commit) or len(commit) < 4:
            return None
        try:
            full = self.git.run("rev-parse", "-q", "--verify", f"{commit}^{{commit}}")
        except GitError:
            return None
        return full.decode().strip() or None

    def log(self, limit: int, project: str | None = None) -> list[LogEntry]:
        """The newest ``limit`` checkpoints (touching ``project`` when given)."""
        if self.head() is None:
            return []
        spec = ["--", project] if project else []
        try:
            out = self.git.run("log", "-z", f"-n{limit}", "--format=%H%x01%ct%x01%B", REF, *spec)
        except GitError as exc:
            raise HistoryUnavailable(str(exc)) from None
        entries: list[LogEntry] = []
        for item in out.split(b"\0"):
            if not item.strip():
                continue
            commit, ct, body = item.decode("utf-8", "replace").split("\x01", 2)
            fields: dict[str, str] = {}
            paths: list[str] = []
            for line in body.splitlines()[2:]:
                key, _, value = line.partition(": ")
                if key == "Changed":
                    paths.append(value)
                else:
                    fields.setdefault(key, value)
            title = body.splitlines()[0] if body else ""
            entries.append(
                LogEntry(
                    commit.strip(),
                    int(ct),
                    fields.get("Tool", ""),
                    fields.get("Call-Id", ""),
                    fields.get("Session", ""),
                    title.partition(": ")[2],
                    tuple(paths),
                )
            )
        return entries

    def blob_at(self, commit: str, path: str) -> tuple[str, bytes] | None:
        """``(mode, content)`` of ``path`` in checkpoint ``commit``, or ``None``."""
        try:
            line = self.git.run("ls-tree", "-z", commit, "--", path).split(b"\0")[0]
        except GitError as exc:
            raise HistoryUnavailable(str(exc)) from None
        if not line:
            return None
        meta, _, _ = line.partition(b"\t")
        mode, kind, blob = meta.decode().split(" ")
        if kind != "blob":
            return None
        return mode, self.git.run("cat-file", "blob", blob)

    def blobs(self, ids: Sequence[str]) -> dict[str, bytes]:
        """The contents of blobs ``ids`` (one ``cat-file --batch``)."""
        if not ids:
            return {}
        out = self.git.run("cat-file", "--batch", data=("\n".join(ids) + "\n").encode())
        result: dict[str, bytes] = {}
        pos = 0
        for blob in ids:
            nl = out.index(b"\n", pos)
            header = out[pos:nl].decode().split(" ")
            size = int(header[2])
            result[blob] = out[nl + 1 : nl + 1 + size]
            pos = nl + 1 + size + 1
        return result

    def diff(self, old: str, new: str, path: str | None = None) -> str:
        """A unified diff (text) from checkpoint ``old`` to ``new`` (under ``path``)."""
        spec = ["--", path] if path else []
        out = self.git.run(
            "diff-tree", "-p", "-r", "--no-color", "--no-ext-diff", "--no-textconv",
            "--no-renames", old, new, *spec,
        )  # fmt: skip
        return out.decode("utf-8", "replace")

    # ------------------------------------------------------------------ quota

    def size(self) -> int:
        """Bytes used by the store's objects."""
        total = 0
        for dirpath, _, files in os.walk(self.git_dir / "objects"):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
        return total

    def _over_quota(self) -> bool:
        """Whether the store may be over ``max_store_bytes``: walked (:meth:`size`) only
        when its last measure plus what was written since could be (a walk of 10,000
        objects takes a good part of a second)."""
        if self._measured is not None:
            grown = bytes_written() - self._written_at + self._git_bytes
            if self._measured + grown <= self.max_store_bytes:
                return False
        self._measured = self.size()
        self._written_at = bytes_written()
        self._git_bytes = 0
        return self._measured > self.max_store_bytes

    def collect(self) -> int:
        """Cut the oldest checkpoints off while the store is over its quota; return the
        number of checkpoints kept. The caller holds :meth:`locked`."""
        head = self.head()
        if head is None:
            return 0
        kept = head[2]
        while kept > 1 and self.size() > self.max_store_bytes:
            kept = max(1, kept // 2)
            out = self.git.run("rev-list", f"-n{kept}", REF).decode().split()
            boundary = out[-1]
            (self.git_dir / "shallow").write_text(boundary + "\n")
            self.git.run("prune", "--expire=now")
            self._set_head(head[0], head[1], len(out))
        return kept


_jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
_writer: threading.Thread | None = None
_writer_lock = threading.Lock()
_unwritten: set[threading.Event] = set()  # the jobs queued or running


def _write_jobs() -> None:
    while True:
        _jobs.get()()


def _submit(done: threading.Event, job: Callable[[], None]) -> None:
    """Queue ``job`` (which sets ``done`` when it ends) for the writer thread, started
    once per process (a daemon: :func:`_write_pending` waits for its jobs at exit).

    Raises:
        RuntimeError: the thread cannot start (the interpreter is shutting down).
    """
    global _writer
    with _writer_lock:
        if _writer is None or not _writer.is_alive():
            _writer = threading.Thread(target=_write_jobs, name="octos-history-write", daemon=True)
            _writer.start()
        _unwritten.add(done)
    _jobs.put(job)


@atexit.register
def _write_pending() -> None:
    """At the end of the process, wait (up to 10 s each) for the checkpoints still being
    written."""
    for done in list(_unwritten):
        done.wait(10)


def _stage_commit(objects: ObjectBatch, tree: str, parent: str | None, message: str) -> str:
    """Stage a commit object (what ``git commit-tree`` writes); its id."""
    ident = f"{_IDENT} <{_EMAIL}> {int(time.time())} +0000"
    head = f"tree {tree}\n" + (f"parent {parent}\n" if parent else "")
    body = f"{head}author {ident}\ncommitter {ident}\n\n{message}".encode()
    return objects.put("commit", body)


def _z(paths: Sequence[str]) -> bytes:
    return b"".join(os.fsencode(p) + b"\0" for p in paths)
