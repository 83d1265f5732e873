"""What changed in the workspace since the last checkpoint, told by the kernel (inotify).

A command's checkpoint must know what changed before the command (someone else's work,
recorded apart as ``outside``) and what the command changed. Asking ``git ls-files`` means
one ``lstat`` of every file, twice per command (about 25 ms each on 10,000 files). A
:class:`Watcher` instead holds an inotify watch on each folder of the workspace that the
history records (``inotify(7)``): the kernel queues the name of every file created,
written, removed, renamed or re-moded there, and :meth:`Watcher.drain` reads that queue.
Nothing runs between calls: events wait in the kernel queue until drained.

A new folder gets its watch when drained, and is reported whole (what was written in it
before the watch existed is found by walking it). Anything that makes the queue
incomplete (its overflow, the root removed or moved, a watch that cannot be added) makes
:meth:`drain` answer ``None``: the caller scans the whole tree instead. Linux only
(elsewhere :func:`start` answers ``None``). Not seen: a write through a hard link from a
folder outside the workspace, a file changed through ``mmap``, a change on a network file
system made by another machine.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["MAX_WATCHERS", "MAX_WATCHES", "Changes", "Watcher", "start"]

MAX_WATCHES = 8192
"""Folders one workspace may watch; a bigger tree is scanned by git at each command."""
MAX_WATCHERS = 8
"""inotify instances one process keeps (the user's limit, ``max_user_instances``, is
shared by all their programs, 128 by default): starting one more closes the one drained
longest ago, whose workspace goes back to whole-tree scans until its next one."""

_live: dict[int, Watcher] = {}  # id -> watcher, least recently drained first
_live_lock = threading.RLock()  # a watcher is never closed while another thread reads it

_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_UNMOUNT = 0x2000
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_EXCL_UNLINK = 0x04000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_MASK = (
    _IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE
    | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR | _IN_DONT_FOLLOW
    | _IN_EXCL_UNLINK
)  # fmt: skip
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (struct inotify_event)

_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL | None:
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            lib.inotify_init1.argtypes = [ctypes.c_int]
            lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            lib.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
            _libc = lib
        except (OSError, AttributeError):
            return None
    return _libc


@dataclass
class Changes:
    """What :meth:`Watcher.drain` found since the previous drain.

    Attributes:
        paths: workspace-relative paths whose entry may have changed (created, written,
            removed, renamed, re-moded); a folder among them may be one that disappeared.
        folders: folders to take whole (new since the watch, or moved in): their content
            was not watched before.
    """

    paths: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.paths or self.folders)


class Watcher:
    """Watches on the folders of one workspace (module docstring). Use :func:`start`."""

    def __init__(self, root: Path, fd: int, lib: ctypes.CDLL) -> None:
        self.root = root
        self._fd = fd
        self._lib = lib
        self._paths: dict[int, str] = {}  # watch descriptor -> folder ("" for the root)
        self._wds: dict[str, int] = {}
        self.healthy = True
        self._pending = Changes()

    def add(self, folder: str) -> bool:
        """Watch ``folder`` (workspace-relative, ``""`` for the root); ``False`` (and the
        watcher unhealthy) when it cannot be watched, except a folder already gone."""
        if folder in self._wds:
            return True
        if len(self._wds) >= MAX_WATCHES:
            self.healthy = False
            return False
        path = os.fsencode(self.root / folder) if folder else os.fsencode(self.root)
        with _live_lock:
            mask = _MASK if folder else _MASK & ~_IN_DONT_FOLLOW  # the root may be a link
            wd = self._lib.inotify_add_watch(self._fd, path, mask) if self._fd >= 0 else -1
            err = ctypes.get_errno() if self._fd >= 0 else errno.EBADF
        if wd < 0:
            if err in (errno.ENOENT, errno.ENOTDIR) and folder:
                return True  # gone meanwhile: its parent's event tells
            self.healthy = False
            return False
        old = self._paths.get(wd)
        if old is not None and old != folder:  # the same folder under a new name
            self._wds.pop(old, None)
        self._paths[wd] = folder
        self._wds[folder] = wd
        return True

    def remove(self, folder: str) -> None:
        """Stop watching ``folder`` and the folders below it."""
        prefix = folder + "/"
        with _live_lock:
            for sub in [f for f in self._wds if f == folder or f.startswith(prefix)]:
                wd = self._wds.pop(sub)
                self._paths.pop(wd, None)
                if self._fd >= 0:
                    self._lib.inotify_rm_watch(self._fd, wd)

    def add_all(self, folders: Iterable[str]) -> bool:
        """:meth:`add` each of ``folders``; whether all could be watched."""
        return all(self.add(f) for f in folders)

    def watching(self, folder: str) -> bool:
        """Whether ``folder`` has a watch."""
        return folder in self._wds

    def drain(self) -> Changes | None:
        """What changed since the last drain, or ``None`` when that cannot be told (the
        queue overflowed, the root went away, a watch could not be added, the watcher was
        closed): scan all."""
        with _live_lock:
            if _live.pop(id(self), None) is not None:
                _live[id(self)] = self  # most recently used
            while self.healthy:
                try:
                    data = os.read(self._fd, 1 << 16)
                except BlockingIOError:
                    break
                except OSError:
                    self.healthy = False
                    break
                self._parse(data)
        if not self.healthy:
            return None
        changes, self._pending = self._pending, Changes()
        # watches for new folders: what was written before the watch existed is found by
        # walking them (the caller does), what comes after by their own events
        for folder in sorted(changes.folders, key=len):
            if os.path.isdir(self.root / folder) and not os.path.islink(self.root / folder):
                if not self.add(folder):
                    return None
        return changes

    def _parse(self, data: bytes) -> None:
        pos = 0
        size = _EVENT.size
        while pos + size <= len(data):
            wd, mask, _, length = _EVENT.unpack_from(data, pos)
            raw = data[pos + size : pos + size + length].split(b"\0", 1)[0]
            pos += size + length
            if mask & (_IN_Q_OVERFLOW | _IN_UNMOUNT):
                self.healthy = False
                return
            folder = self._paths.get(wd)
            if mask & _IN_IGNORED:
                if folder is not None:
                    del self._paths[wd]
                    if self._wds.get(folder) == wd:
                        del self._wds[folder]
                if folder == "":
                    self.healthy = False
                continue
            if folder is None:
                continue
            if mask & (_IN_DELETE_SELF | _IN_MOVE_SELF):
                if folder == "":
                    self.healthy = False  # the workspace itself went away
                    return
                # the names it and its sub-folders had are stale; its parent's events
                # report the old name (gone) and the new one (a folder to take whole)
                self.remove(folder)
                continue
            if not raw:
                continue
            name = os.fsdecode(raw)
            if name == ".git" or name.startswith(".octos-tmp-"):
                continue  # never recorded (``_record.excluded``): a file tool's own staging
            path = f"{folder}/{name}" if folder else name
            self._pending.paths.add(path)
            if mask & _IN_ISDIR and mask & (_IN_CREATE | _IN_MOVED_TO):
                self._pending.folders.add(path)

    def close(self) -> None:
        """Drop every watch (the inotify instance is closed)."""
        with _live_lock:
            _live.pop(id(self), None)
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            self.healthy = False


def start(root: Path) -> Watcher | None:
    """A watcher for ``root`` (nothing watched yet), or ``None`` where inotify cannot be
    used (not Linux, no instance left: ``fs.inotify.max_user_instances``)."""
    lib = _lib()
    if lib is None:
        return None
    with _live_lock:
        while len(_live) >= MAX_WATCHERS:
            next(iter(_live.values())).close()
        fd = lib.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        watcher = Watcher(root, fd, lib)
        _live[id(watcher)] = watcher
        return watcher
