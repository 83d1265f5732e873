"""The workspace's hidden state folder: staged files, backups, commit journals, recovery.

Layout: ``<root>/.octos-tmp-state/`` (mode 0700) holds

* staged new contents and backups of replaced files (``.octos-tmp-<hex>`` names), moved or
  hard-linked to and from their folders with ``renameat`` / ``linkat`` (same file system);
* ``.octos-tmp-<hex>.where``: where a temporary file was created *outside* the folder
  (beside its target, when that folder is on another file system), so it can be swept too;
* ``journal-<hex>.json``: the list of renames of one multi-file commit, written (fsync-ed with
  ``durable_writes``, renamed into place) after every new content is staged and before the
  first rename.

Locking (``flock`` on the state folder's descriptor): every writer holds a *shared* lock
while it has files in flight; recovery needs the *exclusive* lock, which it only takes when
no writer of any process is active, so it can never take a file another writer still uses.
A killed process's locks vanish with it. The folder exists only while
something is in flight: the last writer out removes it (holding the exclusive lock), and a
writer that finds its descriptor unlinked after locking opens a fresh one.

Recovery (when a :class:`~octos_tools.workspace.Workspace` is opened and before each write,
whenever the exclusive lock is free): each complete journal is *rolled forward* (every staged
file still present is renamed over its target, every deletion not yet done is done), so a
multi-file patch cut by a crash ends all applied; then every other file in the folder is
removed. Those are never the only copy of anything: a staged file without a journal belongs to
a write that had not touched its target yet, and a backup is a second name of a file whose
commit finished or was rolled back.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ._paths import DIR_FLAGS, O_CLOEXEC, O_NOFOLLOW
from ._tempnames import STATE_DIR_NAME, is_internal_temp_name, new_temp_name

__all__ = [
    "JOURNAL_PREFIX",
    "StateHold",
    "fsync_dir",
    "note_foreign_temp",
    "open_state_dir",
    "recover",
    "recover_if_idle",
    "write_journal",
    "writer_lock",
]

try:
    import fcntl
except ImportError:  # pragma: no cover - no flock here: no state folder, temporaries beside
    fcntl = None  # type: ignore[assignment]

JOURNAL_PREFIX = "journal-"


def fsync_dir(fd: int) -> None:
    """``fsync`` a directory so that renames in it survive a power cut (errors ignored)."""
    with contextlib.suppress(OSError):
        os.fsync(fd)


def open_state_dir(root_fd: int, *, create: bool) -> int | None:
    """A descriptor of the state folder under ``root_fd``, or ``None`` when it is missing
    (and not ``create``), cannot be created (read-only or full file system, no permission),
    is not a real folder (a symlink there is never followed) or the platform has no
    ``flock``."""
    if fcntl is None:  # pragma: no cover
        return None
    try:
        return os.open(STATE_DIR_NAME, DIR_FLAGS, dir_fd=root_fd)
    except FileNotFoundError:
        if not create:
            return None
    except OSError:
        return None
    try:
        os.mkdir(STATE_DIR_NAME, 0o700, dir_fd=root_fd)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        return os.open(STATE_DIR_NAME, DIR_FLAGS, dir_fd=root_fd)
    except OSError:
        return None


@contextlib.contextmanager
def writer_lock(root_fd: int) -> Iterator[int | None]:
    """Hold a shared writer lock on the state folder (created if needed) while the block
    runs; yield its descriptor, or ``None`` when there is no usable state folder.

    When no other writer is active the folder is recovered first (:func:`recover`); when the
    block ends and no other writer is active, the (then empty) folder is removed, so an idle
    workspace holds nothing of ours.
    """
    sfd = _locked_state_dir(root_fd)
    if sfd is None:
        yield None
        return
    try:
        yield sfd
    finally:
        _remove_if_idle(root_fd, sfd)
        os.close(sfd)


class StateHold:
    """Keeps the state folder, once a write has created it, until :meth:`release`.

    Every write holds a shared lock on the state folder and the last writer out removes it.
    Removing a folder costs a journal commit on ext4 (about 4 ms on a virtual disk, more than
    the whole write), so a host that writes often (``octos-tools serve``) holds one shared
    lock of its own for its lifetime: writers then find the folder and leave it. What a host
    gives up meanwhile: recovery of *other* killed writers waits until the hold ends (it
    needs the exclusive lock), and the empty folder stays visible. A killed host leaves the
    empty folder, removed by the next :class:`~octos_tools.workspace.Workspace` opened there.
    Nothing is created before the first write, so a read-only host creates nothing.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fds: tuple[int, int] | None = None  # (root, state folder), shared-locked
        self.active = True

    def ensure(self, open_root: Callable[[], int]) -> None:
        """Create (or re-open, if it was removed) and hold the state folder; a no-op once
        held or after :meth:`release`. Never raises: a write then goes the usual way."""
        with self._lock:
            if not self.active:
                return
            if self._fds is not None:
                try:
                    if os.fstat(self._fds[1]).st_nlink > 0:
                        return
                except OSError:
                    pass
                self._drop()
            try:
                root_fd = open_root()
            except OSError:
                return
            try:
                sfd = _locked_state_dir(root_fd)
            except OSError:
                sfd = None
            if sfd is None:
                os.close(root_fd)
                return
            self._fds = (root_fd, sfd)

    def release(self) -> None:
        """Stop holding: remove the folder if no other writer uses it (and it is empty)."""
        with self._lock:
            self.active = False
            self._drop()

    def _drop(self) -> None:
        if self._fds is None:
            return
        root_fd, sfd = self._fds
        self._fds = None
        try:
            _remove_if_idle(root_fd, sfd)
        finally:
            os.close(sfd)
            os.close(root_fd)


def _locked_state_dir(root_fd: int) -> int | None:
    """Open (creating) the state folder and take the shared lock; recover it first when the
    exclusive lock is free. Retries when another process removed the folder meanwhile."""
    for _ in range(20):
        sfd = open_state_dir(root_fd, create=True)
        if sfd is None:
            return None
        try:
            try:
                fcntl.flock(sfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fcntl.flock(sfd, fcntl.LOCK_SH)
            else:
                if os.fstat(sfd).st_nlink > 0:
                    recover(root_fd, sfd)
                fcntl.flock(sfd, fcntl.LOCK_SH)
            if os.fstat(sfd).st_nlink > 0:
                return sfd  # still linked: not removed by an idle sweep meanwhile
        except BaseException:
            os.close(sfd)
            raise
        os.close(sfd)
    return None  # pragma: no cover - removed 20 times in a row


def _remove_if_idle(root_fd: int, sfd: int) -> None:
    """Remove the state folder if no other writer holds it and it is empty."""
    try:
        fcntl.flock(sfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return
    with contextlib.suppress(OSError):
        if os.fstat(sfd).st_nlink > 0:
            os.rmdir(STATE_DIR_NAME, dir_fd=root_fd)


def recover_if_idle(root_fd: int) -> None:
    """Recover (then remove) the state folder under ``root_fd`` if it exists and no writer
    is active; otherwise do nothing (never blocks)."""
    sfd = open_state_dir(root_fd, create=False)
    if sfd is None:
        return
    try:
        try:
            fcntl.flock(sfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return
        recover(root_fd, sfd)
        _remove_if_idle(root_fd, sfd)
    finally:
        os.close(sfd)


def write_journal(sfd: int, items: list[dict[str, Any]], *, durable: bool = True) -> str:
    """Write a commit journal into the state folder ``sfd``; return its name. With
    ``durable`` the journal and the folder are ``fsync``-ed.

    Raises:
        OSError: the journal could not be written (nothing has been renamed yet).
    """
    data = json.dumps({"version": 1, "items": items}).encode("utf-8")
    tmp = new_temp_name()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC
    fd = os.open(tmp, flags, 0o600, dir_fd=sfd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        name = f"{JOURNAL_PREFIX}{tmp.rsplit('-', 1)[-1]}.json"
        os.rename(tmp, name, src_dir_fd=sfd, dst_dir_fd=sfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=sfd)
        raise
    if durable:
        fsync_dir(sfd)
    return name


def note_foreign_temp(sfd: int, dir_rel: str, name: str) -> str:
    """Record, in the state folder, a temporary file about to be created outside it (in
    the workspace folder ``dir_rel``, which sits on another file system); return the
    record's name, to remove once the temporary file is gone.

    Recovery removes the temporary files so recorded, so that a writer killed there leaves
    nothing behind either.

    Raises:
        OSError: the record could not be written.
    """
    marker = new_temp_name(".where")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC
    fd = os.open(marker, flags, 0o600, dir_fd=sfd)
    try:
        os.write(fd, json.dumps({"dir": dir_rel, "name": name}).encode("utf-8"))
    finally:
        os.close(fd)
    return marker


def _remove_foreign_temp(root_fd: int, sfd: int, marker: str) -> None:
    items = _load_journal(sfd, marker, single=True)
    if not items:
        return
    name = _single(items[0].get("name"))
    if name is None or not is_internal_temp_name(name):
        return
    dfd = _open_rel_dir(root_fd, str(items[0].get("dir", "")))
    if dfd is None:
        return
    try:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dfd)
    finally:
        os.close(dfd)


def recover(root_fd: int, sfd: int) -> None:
    """Roll every complete journal in ``sfd`` forward, then remove every other file there.

    The caller holds the exclusive lock. Files named by a journal that could not be rolled
    forward (its folder vanished) are kept, with the journal, for a later attempt.
    """
    try:
        names = os.listdir(sfd)
    except OSError:
        return
    keep: set[str] = set()
    for name in sorted(n for n in names if n.startswith(JOURNAL_PREFIX)):
        items = _load_journal(sfd, name)
        if items is None:
            continue  # unreadable: dropped below with the rest
        if _roll_forward(root_fd, sfd, items):
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=sfd)
        else:
            keep.add(name)
            keep.update(str(it.get(k)) for it in items for k in ("tmp", "backup") if it.get(k))
    for name in names:
        if name.endswith(".where"):
            _remove_foreign_temp(root_fd, sfd, name)
    removed = False
    for name in names:
        if name in keep:
            continue
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=sfd)
            removed = True
    if removed:
        fsync_dir(sfd)


def _load_journal(sfd: int, name: str, *, single: bool = False) -> list[dict[str, Any]] | None:
    try:
        fd = os.open(name, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC, dir_fd=sfd)
    except OSError:
        return None
    try:
        with open(fd, "rb", closefd=False) as fh:
            doc = json.loads(fh.read(1 << 24))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if single:
        return [doc] if isinstance(doc, dict) else None
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
        return None
    return items


def _single(name: object) -> str | None:
    """``name`` if it is one ordinary path component, else ``None``."""
    if not isinstance(name, str) or not name or "/" in name or "\x00" in name:
        return None
    return None if name in (".", "..") else name


def _open_rel_dir(root_fd: int, rel: str) -> int | None:
    """Open the workspace folder ``rel`` without following links or leaving the root."""
    parts = [p for p in rel.split("/") if p]
    if any(_single(p) is None for p in parts):
        return None
    fd = os.dup(root_fd)
    try:
        for part in parts:
            nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except OSError:
        os.close(fd)
        return None
    return fd


def _roll_forward(root_fd: int, sfd: int, items: list[dict[str, Any]]) -> bool:
    """Finish the renames of one journal; ``False`` when some item could not be finished."""
    ok = True
    for item in items:
        rel = item.get("dir", "")
        if not isinstance(rel, str) or any(_single(p) is None for p in rel.split("/") if p):
            continue  # not a journal we wrote: ignored
        dfd = _open_rel_dir(root_fd, rel)
        if dfd is None:
            ok = False  # the folder is gone or unreadable: keep the journal for later
            continue
        try:
            name = _single(item.get("name"))
            tmp = _single(item.get("tmp")) if item.get("tmp") else None
            if name is None or (tmp is not None and not is_internal_temp_name(tmp)):
                continue  # not a journal we wrote: ignored
            src_fd = sfd if item.get("tmp_in") == "state" else dfd
            if tmp:
                try:
                    os.replace(tmp, name, src_dir_fd=src_fd, dst_dir_fd=dfd)
                except FileNotFoundError:
                    pass  # renamed before the crash
            elif item.get("delete"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=dfd)
            backup = _single(item.get("backup"))
            if backup and is_internal_temp_name(backup) and item.get("backup_in") != "state":
                with contextlib.suppress(OSError):
                    os.unlink(backup, dir_fd=dfd)
            fsync_dir(dfd)
        except OSError:
            ok = False
        finally:
            os.close(dfd)
    return ok
