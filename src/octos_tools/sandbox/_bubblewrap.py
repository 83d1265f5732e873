"""The bubblewrap engine: ``bwrap`` arguments for one command (Debian ``bubblewrap``, the
same tool under Codex's and Claude Code's Linux sandboxes).

The view, built in this order (a later mount wins over an earlier one)::

    --ro-bind / /                 everything read-only
    --dev /dev                    a private /dev (null, zero, tty, pts, an empty shm)
    --proc /proc --unshare-pid    a new pid namespace: no host process is visible, so
                                  none can be signalled, traced or read (/proc/<pid>/environ)
    --cap-drop ALL                no capability, even for a root server (else it could
                                  mount over the read-only view)
    --bind TMP /tmp               the private temp folder ($TMPDIR=/tmp)
    --bind ROOT ROOT              each writable root (workspace-write)
    --bind GITDIR GITDIR          each git folder pinned as a mount point (not renamable)
    --bind D D                    each folder above a read-only path in a writable root,
                                  pinned the same way
    --ro-bind P P                 what makes git run code, the server's config (read-only)
    --perms 0000 --tmpfs D --remount-ro D
                                  an unreadable folder (credential store, state folder):
                                  empty and not even listable, as under Landlock
    --ro-bind /dev/null F         an unreadable file
    --unshare-net                 only with allowed_hosts and the Python bridge: a network
                                  namespace of its own (loopback only), bridged to the egress
                                  proxy (:mod:`._bridge`); the pre-made namespace of
                                  :mod:`._netns` exists before bwrap starts instead
    --seccomp FD                  the filter of :mod:`._seccomp`; with the network off it
                                  refuses every socket() (no --unshare-net)
    --die-with-parent             the sandbox ends if the server dies

(Codex ``codex-rs/linux-sandbox``: ``--ro-bind / /``, then writable roots, then read-only
sub-paths; it locks all of ``.git``, we lock only hooks and config, see :mod:`._protected`.)
A missing ``hooks/`` folder or ``core.hooksPath`` target becomes an empty read-only tmpfs
(its mount point is created), so a command cannot create one either. A missing
``config.worktree`` or ``commondir`` is not covered (a mount point would leave an empty
file that git then reads), nor is a repository the command creates: the git guard
(:mod:`._git_guard`) judges those after the command.

No network or IPC namespace: creating one costs about 12 ms per command here (measured:
``bench/bench_sandbox.py``), and the seccomp filter already refuses every ``socket()`` with
the network off (the Landlock engine does the same). System V IPC objects of the host stay
reachable (they hold no files or credentials of the user).

A consequence of the pid namespace: when the command's shell exits, whatever it left in the
background is killed with the namespace (start a server in an ``exec_command`` session to
keep it running).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

__all__ = ["bwrap_args", "read_only_mounts"]


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def bwrap_args(
    bwrap: str,
    *,
    network: bool,
    tmpdir: str,
    writable: Sequence[str],
    gitdirs: Sequence[str],
    read_only: Sequence[str],
    unreadable: Sequence[str],
    seccomp_fd: int,
    cwd: str,
    home_bind: tuple[str, str] | None = None,
    visible: Sequence[str] = (),
    unshare_net: bool = False,
    sync_fd: int | None = None,
) -> list[str]:
    """The ``bwrap`` argument list up to and including ``--`` (the command follows).

    Args:
        bwrap: the ``bwrap`` executable.
        network: the network is on (unused here: the seccomp filter decides).
        tmpdir: the host folder mounted at ``/tmp``.
        writable: absolute writable roots.
        gitdirs: git folders inside writable roots (pinned as mount points).
        read_only: paths made read-only (those inside a writable root matter; a missing
            ``hooks`` folder becomes an empty read-only tmpfs).
        unreadable: paths hidden (folders: an empty read-only tmpfs of mode 0000; files:
            ``/dev/null``).
        seccomp_fd: an open descriptor to read the filter from.
        cwd: the working folder inside the sandbox.
        home_bind: ``(host folder, mount point)`` of a private writable home.
        visible: folders to keep visible read-only although they are under ``/tmp`` (which
            the private temp folder replaces): the workspace in ``read-only``.
        unshare_net: give the command a network namespace of its own (``allowed_hosts``).
        sync_fd: a descriptor bwrap keeps open (outside the command) until the sandbox
            ends (``--sync-fd``: the egress proxy's end-of-sandbox signal).
    """
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    args += ["--unshare-pid", "--cap-drop", "ALL"]
    if unshare_net:
        args.append("--unshare-net")
    args += ["--bind", tmpdir, "/tmp"]
    shown: list[str] = []
    for path in visible:
        if _under(path, ["/tmp"]) and not _under(path, writable) and os.path.isdir(path):
            args += ["--ro-bind", path, path]
            shown.append(path)
    for root in writable:
        args += ["--bind", root, root]
    if home_bind is not None:
        args += ["--bind", home_bind[0], home_bind[1]]
    for gitdir in gitdirs:
        if _under(gitdir, writable) and os.path.isdir(gitdir):
            args += ["--bind", gitdir, gitdir]
    for folder in _pinned_parents(writable, read_only, gitdirs):
        args += ["--bind", folder, folder]
    for path in read_only:
        if not _under(path, writable):
            # read-only already, except under the replaced /tmp; inside a folder shown
            # read-only there it is too (a bind onto a link in it would fail)
            if os.path.lexists(path) and _under(path, ["/tmp"]) and not _under(path, shown):
                args += ["--ro-bind", path, path]
            continue
        how = _read_only_mount(path)
        if how == "bind":
            args += ["--ro-bind", path, path]
        elif how == "tmpfs":
            args += ["--tmpfs", path, "--remount-ro", path]
    for path in unreadable:
        if os.path.isdir(path) and not os.path.islink(path):
            args += ["--perms", "0000", "--tmpfs", path, "--remount-ro", path]
        elif os.path.lexists(path):
            args += ["--ro-bind", "/dev/null", path]
    if sync_fd is not None:
        args += ["--sync-fd", str(sync_fd)]
    args += ["--seccomp", str(seccomp_fd), "--die-with-parent", "--chdir", cwd, "--"]
    return args


def _pinned_parents(
    writable: Sequence[str], read_only: Sequence[str], gitdirs: Sequence[str]
) -> list[str]:
    """The folders between a writable root and each read-only path inside it: bound onto
    themselves (still writable) so that they become mount points, which cannot be renamed
    (``EBUSY``). Else ``mv scripts s2 && mkdir scripts`` would put a new, writable file
    where a read-only one was (a hook program, a module of the server's own code); the
    rename of a folder that merely *contains* a mount point succeeds."""
    out: list[str] = []
    done = set(gitdirs) | set(writable)
    for path in read_only:
        roots = [r for r in writable if _under(path, [r]) and path != r]
        if not roots:
            continue
        root = max(roots, key=len).rstrip("/")
        current = os.path.dirname(path)
        chain: list[str] = []
        while current.startswith(root + "/"):
            chain.append(current)
            current = os.path.dirname(current)
        for folder in reversed(chain):
            if folder in done or os.path.islink(folder) or not os.path.isdir(folder):
                continue
            done.add(folder)
            out.append(folder)
    return out


def _read_only_mount(path: str) -> str | None:
    """How :func:`bwrap_args` makes ``path`` (inside a writable root) read-only: ``bind``
    (it exists), ``tmpfs`` (a missing folder such as ``hooks``: nothing can be made in it)
    or ``None`` (a missing ``config``, ``config.worktree`` or ``commondir``: not covered)."""
    if os.path.lexists(path):
        return "bind"
    if os.path.basename(path) in ("config", "config.worktree", "commondir"):
        return None  # a file git reads only when the (protected) config says so
    return "tmpfs" if os.path.isdir(os.path.dirname(path)) else None


def read_only_mounts(writable: Sequence[str], read_only: Sequence[str]) -> list[str]:
    """The paths of ``read_only`` inside ``writable`` that :func:`bwrap_args` mounts
    read-only (what a command cannot have written: :mod:`._git_guard` does not blame it
    for changes there). Call with the same arguments, just before or after."""
    return [p for p in read_only if _under(p, writable) and _read_only_mount(p) is not None]
