"""A network namespace made for a bubblewrap command *before* ``bwrap`` starts, with the
egress proxy's listener already in it: the fast way of :mod:`._bridge`, no process started.

In the forked child, just before it ``exec``\\ s ``bwrap`` (``preexec_fn``, the slot the
Landlock engine uses for its own set-up), :func:`premade_netns` runs a few system calls:

1. ``unshare(CLONE_NEWNET)``: a network namespace of its own (a root server, which holds
   ``CAP_SYS_ADMIN``), or ``unshare(CLONE_NEWUSER | CLONE_NEWNET)`` (an unprivileged server:
   a user namespace mapping only its own uid and gid to themselves, ``setgroups`` denied,
   the same single mapping ``bwrap`` makes; ``bwrap`` then makes its own user namespace
   inside it, as it always does unprivileged);
2. the loopback interface up (``SIOCSIFFLAGS``: the kernel gives it ``127.0.0.1``;
   what ``bwrap --unshare-net`` does with netlink);
3. a TCP socket listening on ``127.0.0.1:PORT`` there, sent to the proxy over the socket
   pair (``SCM_RIGHTS``), then closed in the child; one byte on the proxy's wake-up socket
   (:meth:`._proxy.EgressProxy.queue`) makes the proxy take it, while the server waits
   for this child's ``exec`` (no round trip to the proxy's thread in the server).

``bwrap`` then runs *without* ``--unshare-net``: it and the command stay in that namespace,
which reaches nothing but its own loopback. Any failure raises in the child, so the spawn
fails (``sandbox_unavailable``) and nothing runs, never in the server's namespace.
Whether the kernel and ``bwrap`` allow this here (a user namespace inside another one, an
AppArmor-restricted ``unshare``...) is measured once per process by :func:`available`, with
a real ``bwrap`` start; where it fails, :mod:`._bridge` falls back to its Python bridge.

Measured (``bench/README.md``): nothing measurable per command over ``serve`` (whose
commands fork with a ``preexec_fn`` already), 3.6-6.6 ms over a bare ``bwrap`` start
(mostly that ``fork``), against 14-55 ms for the Python start it replaces. ``setns``
into ``bwrap``'s namespace instead (``--info-fd`` gives its pid) would need
``CAP_SYS_ADMIN`` in the server's own user namespace, so root only; ``pidfd_getfd`` would
still need a process in the sandbox to make the listener. Python 3.11 has no
``os.unshare``: :mod:`ctypes` (as :mod:`._landlock`).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import socket
import struct
import subprocess
import threading
from collections.abc import Callable

__all__ = ["available", "premade_netns"]

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
#: ``struct ifreq`` (40 bytes): the interface name, then ``ifr_flags``.
_LO_UP = struct.pack("16sh22x", b"lo", _IFF_UP)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.unshare.argtypes = [ctypes.c_int]
_libc.unshare.restype = ctypes.c_int


def _flags(user: bool) -> int:
    return _CLONE_NEWNET | (_CLONE_NEWUSER if user else 0)


def premade_netns(
    channel_fd: int, port: int, *, user: bool, wake_fd: int | None = None
) -> Callable[[], None]:
    """The child's set-up (``preexec_fn``) that makes the network namespace and sends its
    listener over ``channel_fd`` (see the module docstring).

    Args:
        channel_fd: the child's copy of the socket pair's end (not inherited by ``bwrap``:
            close-on-exec; the parent closes its own after the spawn).
        port: the TCP port to listen on (``127.0.0.1``) inside the namespace.
        user: make a user namespace too (an unprivileged server; see :func:`available`).
        wake_fd: a descriptor to write one byte to once the listener is sent (the proxy's
            wake-up, :meth:`._proxy.EgressProxy.queue`), or ``None``.

    The returned function raises :class:`OSError` in the child when a step fails.
    """
    flags = _flags(user)
    uid, gid = os.geteuid(), os.getegid()
    maps: tuple[tuple[str, bytes], ...] = ()
    if user:
        maps = (
            ("/proc/self/setgroups", b"deny"),
            ("/proc/self/uid_map", f"{uid} {uid} 1".encode()),
            ("/proc/self/gid_map", f"{gid} {gid} 1".encode()),
        )

    def run() -> None:  # pragma: no cover - runs in the child
        if _libc.unshare(flags) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"unshare: {os.strerror(err)}")
        for path, data in maps:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        channel = socket.socket(fileno=channel_fd)
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
                fcntl.ioctl(listener.fileno(), _SIOCSIFFLAGS, _LO_UP)
                listener.bind(("127.0.0.1", port))
                listener.listen(512)
                socket.send_fds(channel, [b"L"], [listener.fileno()])
        finally:
            channel.detach()  # closed on exec
        if wake_fd is not None:
            with contextlib.suppress(OSError):  # a full buffer: a wake-up is pending
                os.write(wake_fd, b"w")

    return run


_lock = threading.Lock()
_found: dict[str, bool | None] = {}


def available(bwrap: str) -> bool | None:
    """How :func:`premade_netns` works with ``bwrap`` here: ``False`` (a network namespace
    alone: a root server), ``True`` (with a user namespace) or ``None`` (neither: use the
    Python bridge). Measured once per process with a real ``bwrap`` start in the made
    namespace (its loopback listener received and checked); ``OCTOS_TOOLS_SANDBOX_BRIDGE=python``
    forces ``None``."""
    if os.environ.get("OCTOS_TOOLS_SANDBOX_BRIDGE") == "python":
        return None
    with _lock:
        if bwrap not in _found:
            _found[bwrap] = _measure(bwrap)
        return _found[bwrap]


def _measure(bwrap: str) -> bool | None:
    ways = [False, True] if os.geteuid() == 0 else [True]
    for user in ways:
        if _try(bwrap, user):
            return user
    return None


def _try(bwrap: str, user: bool) -> bool:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    args += ["--unshare-pid", "--cap-drop", "ALL", "--die-with-parent"]
    args += ["--", shutil.which("true") or "/bin/true"]
    try:
        done = subprocess.run(
            args,
            preexec_fn=premade_netns(theirs.fileno(), 0, user=user),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=30,
            check=False,
        )
        if done.returncode != 0:
            return False
        theirs.close()
        ours.settimeout(5)
        fds = socket.recv_fds(ours, 1, 1)[1]
        if not fds:
            return False
        with socket.socket(fileno=fds[0]) as got:
            return got.family == socket.AF_INET and got.getsockname()[0] == "127.0.0.1"
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        ours.close()
        theirs.close()
