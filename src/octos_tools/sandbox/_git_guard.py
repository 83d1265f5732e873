"""The git guard: what a sandboxed command did to make git run a program later, undone
after the command (and after every poll of a session), on both engines.

A mount can make an *existing* ``.git/config`` read-only, but a command can create what
git will read next: ``git init sub && git -C sub config core.fsmonitor CMD && git add sub``
(the user's next ``git status`` enters the gitlink and runs ``CMD``), a ``.git`` *file*
``gitdir: x`` pointing to a crafted folder, ``.git/modules/NAME/config`` with a gitlink,
``.git/worktrees/NAME/commondir``, a missing ``config.worktree``, a hook. Neither peer
covers this: Claude Code's sandbox-runtime denies writes to ``.git/hooks`` and
``.git/config`` found when the command starts (``linuxGetMandatoryDenyPaths``, a ripgrep
search) and blocks the creation of a missing deny path by mounting ``/dev/null`` on its
first missing component; Codex makes an existing top-level ``.git`` read-only
(``codex-rs/linux-sandbox``). A repository created during the command is out of reach of
both. Under Landlock no path inside a writable root can be read-only at all.

So the guard looks after the command:

1. **before** (:meth:`GitGuard.watch`): the folders of the writable roots are brought up to
   date (an incremental walk: a folder is listed again only when its ``ctime`` changed,
   which a command cannot fake: ``utimensat`` sets ``ctime`` to now), every git location
   is found (``.git`` folders, ``.git`` files and links, bare repositories, ``modules/`` and
   ``worktrees/`` inside them, what ``commondir`` and ``gitdir:`` point to), and the
   protected files are fingerprinted (inode, size, ``ctime``, mode) with their contents
   kept (read again only when the fingerprint moved);
2. **after** (:meth:`GuardWatch.check`): the same, and each protected file that is new,
   changed or gone is judged: a ``config`` / ``config.worktree`` by the allow-list of
   :mod:`._git_config` (only the entries the command added), a hook (any file in
   ``hooks/`` or ``core.hooksPath`` but ``*.sample``) always, a ``commondir`` or ``gitdir:``
   pointing outside the writable roots always, the server's own config file (inside the
   workspace) always;
3. a dangerous file is **neutralised without losing data**: the command's version moves
   to a quarantine folder under the state folder (unreadable by commands), and what was
   there before comes back (an existing file) or, for a new config, its safe entries are
   written back so the repository keeps working. Each gets one line in the command's
   result naming the path, the keys and the ``mv`` that brings it back.

The walk skips :data:`._protected.SKIPPED_DIRS` (dependency folders); its first listing of
a writable root stops after :data:`._protected.MAX_ENTRIES` entries (later ones, of what
changed, are not capped).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import stat
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .. import _git_code
from . import _git_config, _gitlinks, _protected

__all__ = ["GitGuard", "GuardWatch", "guard_for"]

#: Files bigger than this are not kept for restoring (a config or hook never is).
_MAX_KEEP = 1 << 20
#: Seconds the walk of :meth:`GitGuard.watch` is reused (the check after each command
#: always walks).
WALK_REUSE_SECS = 5.0
#: Fingerprint of a path: (inode, size, ctime_ns, mode); ``None``: it does not exist.
Fingerprint = tuple[int, int, int, int] | None
_counter = itertools.count(1)


def _fingerprint(path: str) -> Fingerprint:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_ctime_ns, st.st_mode)


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_KEEP + 1)
    except OSError:
        return None
    return data if len(data) <= _MAX_KEEP else None


@dataclass
class _Snapshot:
    """Fingerprints (and contents) of every protected path at one moment."""

    prints: dict[str, Fingerprint]
    kinds: dict[str, str]
    contents: dict[str, bytes]


@dataclass
class _Finding:
    """One neutralised file: ``outcome`` is ``restored`` (the version from before is
    back), ``moved`` (nothing was there before), ``filtered`` (a new config, its safe
    entries written back) or ``recreated`` (a protected file the command removed)."""

    path: str
    what: str
    moved_to: str | None
    outcome: str

    def line(self) -> str:
        """The one line for the command's result."""
        head = f"Sandbox git guard: {self.path}: "
        if self.outcome == "recreated":
            return head + "the command removed this protected file; it was put back."
        undo = f"mv {self.moved_to} {self.path}"
        head += (
            f"{self.what}, changed while the command ran, could make git run a program "
            "outside the sandbox; "
        )
        if self.outcome == "restored":
            return head + (
                f"the version from before the command is back, the changed one is in "
                f"{self.moved_to} ({undo} to take it)."
            )
        if self.outcome == "filtered":
            return head + f"taken out (the original is in {self.moved_to}: {undo} to get it back)."
        return head + f"moved to {self.moved_to} ({undo} to get it back)."


class GitGuard:
    """The guard of one set of writable roots (one per process and roots, see
    :func:`guard_for`).

    Args:
        roots: absolute, real writable roots.
        pinned: files inside them that stay as they are whatever a command does (the
            server's own config file).
        quarantine: the folder quarantined files move to (default: ``quarantine/`` in the
            state folder, :func:`octos_tools.state_dir.state_root`).
    """

    def __init__(
        self, roots: Sequence[str], pinned: Sequence[str] = (), quarantine: str | None = None
    ) -> None:
        self.roots = tuple(roots)
        self.pinned = tuple(p for p in pinned if _under(p, self.roots))
        self._quarantine = quarantine
        self._lock = threading.Lock()
        self._dirs: dict[str, int] = {}
        self._sizes: dict[str, int] = {}  # folder -> entries listed in it
        self._total: dict[str, int] = {}  # root -> entries listed under it
        self._git: dict[str, str] = {}  # git location -> "dir" | "file" | "bare"
        self._kept: dict[str, tuple[Fingerprint, bytes]] = {}
        self._walked = float("-inf")
        self._kinds: dict[str, str] = {}  # the last snapshot's protected paths
        self._gitdirs: dict[str, _git_code.GitCodePaths] = {}  # of the last snapshot
        self._links: dict[str, tuple[Fingerprint, list[str]]] = {}  # gitdir -> its gitlinks
        self.truncated = False

    # ------------------------------------------------------------------ the walk

    def _root_of(self, path: str) -> str:
        for root in self.roots:
            if _under(path, (root,)):
                return root
        return self.roots[0]

    def _list(self, start: str, capped: bool) -> None:
        """List ``start`` again (its git locations), and every folder below it not seen
        before. ``capped`` (the first walk of a root): stop listing new folders after
        :data:`._protected.MAX_ENTRIES` entries; later listings are not capped, so a command
        cannot hide a repository behind many files it made (it pays their walk once)."""
        stack = [start]
        while stack:
            folder = stack.pop()
            subdirs = self._list_one(folder)
            root = self._root_of(folder)
            if capped and self._total.get(root, 0) > _protected.MAX_ENTRIES:
                self.truncated = True
                return
            stack.extend(sub for sub in subdirs if sub not in self._dirs)

    def _list_one(self, folder: str) -> list[str]:
        """List one folder: its git locations; returns its subfolders to walk."""
        try:
            ctime = os.lstat(folder).st_ctime_ns
            entries = list(os.scandir(folder))
        except OSError:
            self._forget(folder)
            return []
        listed_before = folder in self._dirs
        self._dirs[folder] = ctime
        root = self._root_of(folder)
        self._total[root] = self._total.get(root, 0) + len(entries) - self._sizes.get(folder, 0)
        self._sizes[folder] = len(entries)
        for loc in [g for g in self._git if os.path.dirname(g) == folder or g == folder]:
            del self._git[loc]
        names = {e.name for e in entries}
        subdirs = []
        if {"HEAD", "objects", "refs"} <= names:
            self._git[folder] = "bare"  # git finds a bare repository in its folder too
        else:
            for entry in entries:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if entry.name == ".git":
                    self._git[entry.path] = "dir" if is_dir else "file"
                elif is_dir and entry.name not in _protected.SKIPPED_DIRS:
                    subdirs.append(entry.path)
        if listed_before:  # a folder listed again: forget its subfolders that went away
            known = {d for d in self._dirs if os.path.dirname(d) == folder}
            for gone in known - set(subdirs):
                self._forget(gone)
        return subdirs

    def _forget(self, folder: str) -> None:
        prefix = folder.rstrip("/") + "/"
        for d in [d for d in self._dirs if d == folder or d.startswith(prefix)]:
            del self._dirs[d]
            root = self._root_of(d)
            self._total[root] = self._total.get(root, 0) - self._sizes.pop(d, 0)
        for g in [g for g in self._git if g == folder or g.startswith(prefix)]:
            del self._git[g]

    def _refresh(self) -> None:
        self._walked = time.monotonic()
        for root in self.roots:
            if root not in self._dirs:
                self._list(root, capped=True)
        for folder, ctime in list(self._dirs.items()):
            if folder not in self._dirs:
                continue  # forgotten with its parent meanwhile
            try:
                now = os.lstat(folder).st_ctime_ns
            except OSError:
                self._forget(folder)
                continue
            if now != ctime:
                self._list(folder, capped=False)

    # ------------------------------------------------------------------ protected paths

    def _protected(self) -> dict[str, str]:
        """Every protected path now, with its kind: ``config``, ``commondir``, ``hook``,
        ``pointer`` (a ``.git`` file or link), ``pinned``."""
        out: dict[str, str] = {}
        seen: set[str] = set()
        self._gitdirs = {}
        for loc, kind in list(self._git.items()):
            if kind == "dir":
                self._gitdir(loc, os.path.dirname(loc), out, seen)
            elif kind == "bare":
                self._gitdir(loc, None, out, seen)
            else:
                out[loc] = "pointer"
                target = _target_of(loc)
                if target is not None and _under(target, self.roots):
                    self._gitdir(target, os.path.dirname(loc), out, seen)
        for path in self.pinned:
            out[path] = "pinned"
        return out

    def _gitdir(
        self, gitdir: str, worktree: str | None, out: dict[str, str], seen: set[str]
    ) -> None:
        if gitdir in seen or len(seen) > 10_000:
            return
        seen.add(gitdir)
        out[os.path.join(gitdir, "config")] = "config"
        out[os.path.join(gitdir, "config.worktree")] = "config"
        out[os.path.join(gitdir, "commondir")] = "commondir"
        facts = self._gitdirs[gitdir] = _git_code.code_paths(gitdir, worktree)
        for config in facts.configs:
            if config not in out and _under(config, self.roots):
                out[config] = "config"  # an included file: judged as the config itself
        for hooks in facts.hooks:
            for name in _listing(hooks):
                if not name.endswith(".sample"):
                    out[os.path.join(hooks, name)] = "hook"
        common = _protected.commondir_of(gitdir)
        if common is not None and _under(common, self.roots):
            self._gitdir(common, worktree, out, seen)
        if worktree is not None:
            self._gitlinked(gitdir, worktree, out, seen)
        for sub in ("modules", "worktrees"):
            base = os.path.join(gitdir, sub)
            if not os.path.isdir(base):
                continue
            for dirpath, dirnames, filenames in os.walk(base):
                if dirpath.count("/") - base.count("/") > 4:
                    dirnames[:] = []
                if dirpath != base and {"HEAD", "config", "commondir"} & set(filenames):
                    self._gitdir(dirpath, None, out, seen)
                dirnames[:] = [d for d in dirnames if d not in ("objects", "refs", "logs")]

    def _gitlinked(self, gitdir: str, worktree: str, out: dict[str, str], seen: set[str]) -> None:
        """The repositories the index of ``gitdir`` links (its gitlinks), judged as the
        walk's are wherever they lie (a skipped folder too): listed again only when the
        index's fingerprint moved."""
        index = _fingerprint(os.path.join(gitdir, "index"))
        known = self._links.get(gitdir)
        if known is None or known[0] != index:
            known = self._links[gitdir] = (index, _gitlinks.gitlinks(gitdir) if index else [])
        top = worktree.rstrip("/") + "/"
        for rel in known[1]:
            sub = os.path.normpath(os.path.join(worktree, rel))
            loc = os.path.join(sub, ".git")
            if not sub.startswith(top) or loc in out or not os.path.lexists(loc):
                continue
            if os.path.isdir(loc) and not os.path.islink(loc):
                self._gitdir(loc, sub, out, seen)
                continue
            out[loc] = "pointer"
            target = _target_of(loc)
            if target is not None and _under(target, self.roots):
                self._gitdir(target, sub, out, seen)

    def mount_paths(self) -> list[str]:
        """What the bubblewrap engine binds read-only (or covers, when missing): per git
        folder its ``hooks``, ``config``, ``config.worktree``, ``commondir`` and
        ``core.hooksPath``; the ``.git`` files. Call after :meth:`watch`."""
        with self._lock:
            out: list[str] = []
            for path, kind in self._kinds.items():
                gitdir = os.path.dirname(path)
                if kind == "config" and path.endswith("/config") and gitdir in self._gitdirs:
                    out += [path, *self._gitdirs[gitdir].hooks]
                elif kind in ("config", "commondir", "pointer") and (
                    kind != "config" or os.path.lexists(path) or path.endswith("/config.worktree")
                ):
                    # a missing included config cannot be covered (a mount point would be
                    # left in the work tree): the guard judges it if a command makes one
                    out.append(path)
            return list(dict.fromkeys(os.path.normpath(p) for p in out))

    # ------------------------------------------------------------------ snapshots

    def _snapshot(self) -> _Snapshot:
        kinds = self._kinds = self._protected()
        prints: dict[str, Fingerprint] = {}
        contents: dict[str, bytes] = {}
        for path in kinds:
            fp = _fingerprint(path)
            prints[path] = fp
            if fp is None or not stat.S_ISREG(fp[3]):
                continue  # only regular files are kept to be put back
            kept = self._kept.get(path)
            if kept is None or kept[0] != fp:
                data = _read(path)
                if data is None:
                    continue
                kept = (fp, data)
                self._kept[path] = kept
            contents[path] = kept[1]
        for path in [p for p in self._kept if p not in kinds]:
            del self._kept[path]
        for gitdir in [g for g in self._links if os.path.join(g, "config") not in kinds]:
            del self._links[gitdir]
        return _Snapshot(prints, kinds, contents)

    def watch(self) -> GuardWatch:
        """Fingerprint the protected files: the state a command about to start is compared
        with. The walk of the folders is the last check's when it is less than
        :data:`WALK_REUSE_SECS` old (a repository made outside the sandbox in those seconds
        is judged after the command as if it had made it; a file's ``ctime`` cannot tell:
        a folder moved in keeps its files' ``ctime``)."""
        with self._lock:
            if time.monotonic() - self._walked > WALK_REUSE_SECS:
                self._refresh()
            return GuardWatch(self, self._snapshot())

    def _check(
        self, before: _Snapshot, read_only: dict[str, _Chain] | None = None
    ) -> tuple[list[str], _Snapshot]:
        with self._lock:
            self._refresh()
            now = self._snapshot()
            findings: list[_Finding] = []
            for path, kind in now.kinds.items():
                old = before.prints.get(path)
                fp = now.prints[path]
                if path in before.prints and fp == old:
                    continue
                if fp is None and old is None:
                    continue
                if read_only and _mounted_read_only(path, read_only):
                    continue  # the command could not write it: the user's (or git's) change
                found = self._judge(path, kind, before.contents.get(path), old)
                if found is not None:
                    findings.append(found)
            if findings:
                self._refresh()
                now = self._snapshot()
            return [f.line() for f in findings], now

    # ------------------------------------------------------------------ judging

    def _judge(
        self, path: str, kind: str, old: bytes | None, old_print: Fingerprint
    ) -> _Finding | None:
        mode = old_print[3] if old_print is not None else None
        if old is not None and mode is not None and stat.S_ISLNK(mode):
            old = None  # a link is not put back as a file
        exists = os.path.lexists(path)
        if not exists:
            if old is None:
                return None
            _write(path, old, mode)  # a protected file the command removed
            return _Finding(path, "", None, "recreated")
        if kind == "pointer":
            target = _target_of(path)
            if target is not None and _under(target, self.roots):
                return None
            what = f"a .git file or link pointing outside the writable roots (to {target})"
            return self._neutralise(path, what, old, mode, None)
        if os.path.islink(path) or not os.path.isfile(path):
            return self._neutralise(path, "a protected path that is not a file", old, mode, None)
        data = _read(path)
        if data is not None and data == old and os.lstat(path).st_mode == mode:
            return None  # the same bytes and mode as before (a file another check put back)
        if kind == "config":
            text = (data or b"\0").decode("utf-8", errors="replace")
            before = old.decode("utf-8", errors="replace") if old is not None else None
            bad = _git_config.dangerous_entries(text, before) if data is not None else []
            if data is not None and not bad:
                return None
            keys = ", ".join(dict.fromkeys(e.key for e in bad)) or "(too large to judge)"
            safe = None if old is not None or data is None else _git_config.safe_config_text(text)
            what = f"git config key {keys}"
            return self._neutralise(
                path, what, old, mode, safe.encode() if safe is not None else None
            )
        if kind == "commondir":
            if old is not None and data == old:
                return None  # touched, not changed
            rel = (data or b"").decode("utf-8", errors="replace").strip()
            here = os.path.dirname(path)
            common = os.path.normpath(os.path.join(here, rel))
            # the one layout git makes: GITDIR/worktrees/NAME/commondir -> GITDIR (`git
            # worktree add`); any other commondir that appears or changes hands the
            # repository's config, hooks, refs and objects to another folder
            standard = os.path.basename(os.path.dirname(here)) == "worktrees" and (
                os.path.realpath(common) == os.path.realpath(os.path.dirname(os.path.dirname(here)))
            )
            if rel and standard and _under(os.path.realpath(common), self.roots):
                return None
            what = f"a new or changed commondir (it hands the repository to {common})"
            return self._neutralise(path, what, old, mode, None)
        if kind == "hook":
            return self._neutralise(path, "a git hook", old, mode, None)
        what = "a change to the server's own config file or a hook's program (read-only)"
        return self._neutralise(path, what, old, mode, None)

    def _neutralise(
        self,
        path: str,
        what: str,
        old: bytes | None,
        mode: int | None,
        replacement: bytes | None,
    ) -> _Finding:
        moved = self._move_to_quarantine(path)
        if old is not None:
            _write(path, old, mode)
            return _Finding(path, what, moved, "restored")
        if replacement is not None:
            _write(path, replacement, None)
            return _Finding(path, what, moved, "filtered")
        return _Finding(path, what, moved, "moved")

    def _move_to_quarantine(self, path: str) -> str:
        base = self._quarantine
        if base is None:
            from ..state_dir import state_root

            base = str(state_root() / "quarantine")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        folder = os.path.join(base, f"{stamp}-{os.getpid()}-{next(_counter)}")
        dest = os.path.join(folder, path.lstrip("/"))
        os.makedirs(os.path.dirname(dest), mode=0o700, exist_ok=True)
        try:
            os.replace(path, dest)
        except OSError:
            shutil.move(path, dest)  # another filesystem: copy, then remove
        return dest


@dataclass
class GuardWatch:
    """The state one command (or one mounted server) is compared with; :meth:`check`
    after it ran, at each poll of its session, after each call to the server; and
    :meth:`tick` in the background while it lives (:mod:`._guard_ticker`).

    Attributes:
        notes: lines found by :meth:`tick` not yet handed out by :meth:`check`.
    """

    guard: GitGuard
    snapshot: _Snapshot
    notes: list[str] = field(default_factory=list)
    read_only: dict[str, _Chain] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def mounted_read_only(self, paths: Iterable[str]) -> None:
        """Record the paths the sandbox mounts read-only for the command (bubblewrap's
        binds and tmpfs, :func:`._bubblewrap.read_only_mounts`): a change there while the
        command runs is not the command's and is not judged, as long as each folder from the
        path up is the same folder (inode) as now and a file has no other hard link (a
        command could write another link to the same file)."""
        for path in paths:
            chain = _chain(path)
            if chain is not None:
                self.read_only[path] = chain

    def keep_read_only(self, other: GuardWatch) -> None:
        """Keep only the read-only mounts ``other`` (a later spawn's view) shares with
        this one: a mounted server restarted while its previous process may still run is
        judged on what neither process could write."""
        self.read_only = {p: c for p, c in self.read_only.items() if other.read_only.get(p) == c}

    def check(self) -> list[str]:
        """Judge what changed since :meth:`GitGuard.watch` (or the last check), neutralise
        what is dangerous, and return one line per finding (empty: nothing found), the
        :attr:`notes` of earlier ticks first. Never raises: a failure becomes a line saying
        the guard could not finish. Thread-safe (one check of a watch at a time)."""
        with self._lock:
            lines, self.notes = self.notes, []
            return lines + self._check_locked()

    def tick(self) -> list[str]:
        """:meth:`check` from the background: the lines found are kept in :attr:`notes`
        (for the next :meth:`check`) and returned."""
        with self._lock:
            found = self._check_locked()
            self.notes += found
            return found

    def _check_locked(self) -> list[str]:
        try:
            lines, self.snapshot = self.guard._check(self.snapshot, self.read_only)
        except Exception as exc:  # noqa: BLE001 - the command's result must come back
            lines = [f"Sandbox git guard: the check after this command failed ({exc})."]
        return lines


#: A read-only mount's identity: (path, device, inode) of the path (when it exists) and of
#: each folder above it up to ``/``.
_Chain = tuple[tuple[str, int, int], ...]


def _chain(path: str) -> _Chain | None:
    """The identity of ``path`` and its folders; ``None`` for a file with other links."""
    out: list[tuple[str, int, int]] = []
    at = path
    while True:
        try:
            st = os.lstat(at)
        except OSError:
            st = None
        if st is not None:
            if at == path and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                return None
            out.append((at, st.st_dev, st.st_ino))
        elif at != path:
            return None
        parent = os.path.dirname(at)
        if parent == at:
            return tuple(out)
        at = parent


def _mounted_read_only(path: str, mounts: dict[str, _Chain]) -> bool:
    """``path`` lies in one of ``mounts`` (itself or below a mounted folder), that mount
    still sits where it was (the same folders), and the file has one link."""
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            return False
    except OSError:
        pass
    at = path
    while True:
        chain = mounts.get(at)
        if chain is not None:
            # a folder moved away with the mount on it and another made in its place: the
            # path is not the mounted one any more
            return all(_same(p, dev, ino) for p, dev, ino in chain if p != at)
        parent = os.path.dirname(at)
        if parent == at:
            return False
        at = parent


def _same(path: str, dev: int, ino: int) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (dev, ino)


def _listing(folder: str) -> list[str]:
    try:
        return [e.name for e in os.scandir(folder) if not e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _target_of(dot_git: str) -> str | None:
    """Where a ``.git`` file (``gitdir: PATH``) or link points, as a real path."""
    if os.path.islink(dot_git):
        return os.path.realpath(dot_git)
    target = _protected.gitdir_of(dot_git)
    return os.path.realpath(target) if target is not None else None


def _write(path: str, data: bytes, mode: int | None) -> None:
    """Write ``data`` to ``path`` atomically (a temp file in the same folder, renamed),
    with the permission bits of ``mode`` (default ``0o644``)."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".octos-guard-{os.getpid()}-{next(_counter)}")
    with open(tmp, "wb") as fh:
        fh.write(data)
    with contextlib.suppress(OSError):
        os.chmod(tmp, stat.S_IMODE(mode) if mode is not None else 0o644)
    os.replace(tmp, path)


_guards: dict[tuple[tuple[str, ...], tuple[str, ...]], GitGuard] = {}
_guards_lock = threading.Lock()


def guard_for(roots: Sequence[str], pinned: Sequence[str] = ()) -> GitGuard:
    """The process's :class:`GitGuard` for these writable roots and pinned files."""
    key = (tuple(roots), tuple(pinned))
    with _guards_lock:
        guard = _guards.get(key)
        if guard is None:
            guard = _guards[key] = GitGuard(roots, pinned)
        return guard
