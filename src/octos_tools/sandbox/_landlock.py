"""The Landlock engine: a ruleset built in the server, applied in the child before ``exec``
(``preexec_fn``), with the seccomp filter of :mod:`._seccomp`. No user namespace is needed,
so it works where bubblewrap cannot (containers, AppArmor-restricted hosts).

The system calls are made with :mod:`ctypes` (no maintained binding on PyPI covers ABI 6
scopes); numbers and structures from the kernel's ``include/uapi/linux/landlock.h`` and
``Documentation/userspace-api/landlock.rst``.

What it enforces:

* **reads**: everything but the unreadable paths (:mod:`._protected`) and ``/proc``.
  Landlock grants only add up and hold for all beneath a folder, so ``/`` is split around
  each unreadable path and ``/proc``: their ancestors get no right (not even listing: a
  listing right on ``~`` would list ``~/.ssh``), every other entry of those ancestors gets
  read rights (an entry created there later is not readable); in ``/proc``, only the
  system-wide entries of :data:`PROC_READS`;
* **writes**: the writable roots (workspace, private temp folder, ``writable_roots``) and
  ``/dev/null``, ``/dev/tty``, ``/dev/pts``; nothing else. A writable root that holds an
  unreadable path (a workspace that is the home folder) is split the same way: no right
  on the folders above that path (nothing can be created directly in them), every right
  on their other entries;
* **network** (off): TCP bind/connect denied (ABI 4), and every ``socket()`` refused by seccomp
  (UDP, raw and Unix sockets: there is no network namespace here); with
  ``allowed_hosts``, TCP connect is allowed to the egress proxy's port only (a
  ``LANDLOCK_RULE_NET_PORT`` rule: per port, on every address) and seccomp allows TCP
  sockets only;
* **processes**: Landlock denies ``ptrace`` of processes outside the sandbox (ABI 1), and
  with it the ptrace-checked ``/proc/<pid>/`` files (``environ``, ``maps``, ``mem``);
  the others (``cmdline``, ``stat``, ``status``) are refused because no pid folder is
  granted; signals and abstract Unix sockets are scoped to the sandbox (ABI 6);
* capabilities are dropped (a root server's commands keep uid 0 but no capability, as under
  bubblewrap), ``no_new_privs`` is set.

What it cannot make: a read-only hole inside a writable root. A right granted on a folder
holds for everything beneath it, and ``git commit`` needs to create files in ``.git``; so
``.git/hooks``, ``.git/config``, ``core.hooksPath`` and a config file inside the workspace
are writable *during* a command, and the git guard (:mod:`._git_guard`) puts them back after
it. What it cannot grant: a process's own ``/proc`` folder. Landlock has no pid-scoped
rule and a rule names a folder that exists when it is made: one made through
``/proc/self`` names the server's folder (measured: the server's ``cmdline`` becomes
readable, the command's ``/proc/self/status`` stays refused; ``/proc/thread-self`` alike).
So a command's processes cannot read their own ``/proc/self/*`` files nor list ``/proc``
(``ps``, ``top``, ``valgrind``, ``df`` without a path fail; links such as
``/proc/self/exe`` and ``/dev/fd/N`` work: Landlock checks what they point to), and the
folders above an unreadable path (``/``, ``~``) cannot be listed; ``octos-tools sandbox
check`` (:data:`._probe.TRADE_OFFS`) and docs/sandbox.md say so. The command's shell runs
below a subreaper launcher
(:func:`octos_tools.builtins.runtime._process_tree.reap_as_init`), forked before the
ruleset applies (it walks ``/proc``), that kills what the command leaves running, as
bubblewrap's pid namespace does.
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Callable, Iterable, Sequence

from . import _seccomp

__all__ = [
    "PROC",
    "PROC_READS",
    "LandlockRuleset",
    "abi_version",
    "child_setup",
    "split_grants",
    "split_reads",
]

_SYS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_RULE_NET_PORT = 2

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13
TRUNCATE = 1 << 14
IOCTL_DEV = 1 << 15
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
_ABI1_FS = (1 << 13) - 1

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_LAST = 63

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


class _NetPort(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64))


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def _numbers() -> tuple[int, int, int] | None:
    return _SYS.get(_seccomp._machine())


def abi_version() -> int:
    """The kernel's Landlock ABI version (0: Landlock is not available)."""
    nrs = _numbers()
    if nrs is None:
        return 0
    r = _libc.syscall(
        ctypes.c_long(nrs[0]), None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)
    )
    return int(r) if r > 0 else 0


def handled_fs(abi: int) -> int:
    """Every filesystem right of ABI ``abi`` (all are handled: what is not granted is denied)."""
    rights = _ABI1_FS
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class LandlockRuleset:
    """A Landlock ruleset (an open file descriptor) ready to be applied in a child.

    Args:
        abi: the kernel's ABI version (>= 1).
        grants: ``(path, rights)`` pairs; rights outside the ABI, or folder rights on a file,
            are dropped; a path that cannot be opened is skipped.
        network: leave the network unhandled (off: TCP bind and connect denied, ABI >= 4).
        connect_ports: with the network off, TCP ports a connect is allowed to (the
            egress proxy's); needs ABI >= 4.

    Raises:
        OSError: the ruleset cannot be created, or a port rule cannot be added.
    """

    def __init__(
        self,
        abi: int,
        grants: Iterable[tuple[str, int]],
        *,
        network: bool,
        connect_ports: Sequence[int] = (),
    ) -> None:
        nrs = _numbers()
        if nrs is None or abi < 1:
            raise OSError("Landlock is not available on this machine")
        self.abi = abi
        self.handled = handled_fs(abi)
        attr = _RulesetAttr(self.handled, 0, 0)
        size = 8
        if abi >= 4:
            size = 16
            attr.handled_access_net = 0 if network else NET_BIND_TCP | NET_CONNECT_TCP
        if abi >= 6:
            size = 24
            attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        fd = _libc.syscall(ctypes.c_long(nrs[0]), ctypes.byref(attr), ctypes.c_size_t(size), 0)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"landlock_create_ruleset: {os.strerror(err)}")
        self.fd = int(fd)
        self.rules = 0
        for path, rights in grants:
            self._add(nrs[1], path, rights)
        for port in connect_ports if not network else ():
            rule = _NetPort(NET_CONNECT_TCP, port)
            if abi < 4 or _libc.syscall(
                ctypes.c_long(nrs[1]), self.fd, _RULE_NET_PORT, ctypes.byref(rule), 0
            ):
                err = ctypes.get_errno() if abi >= 4 else 95
                self.close()
                raise OSError(err, f"landlock_add_rule(port {port}): {os.strerror(err)}")

    def _add(self, nr: int, path: str, rights: int) -> None:
        try:
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if not stat.S_ISDIR(os.fstat(pfd).st_mode):
                rights &= _FILE_RIGHTS
            rights &= self.handled
            if not rights:
                return
            rule = _PathBeneath(rights, pfd)
            if (
                _libc.syscall(ctypes.c_long(nr), self.fd, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)
                == 0
            ):
                self.rules += 1
        finally:
            os.close(pfd)

    def close(self) -> None:
        """Close the ruleset's descriptor."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


#: The procfs mount: never granted as a whole (see :data:`PROC_READS`).
PROC = "/proc"

#: The entries of ``/proc`` a command may read: system-wide figures, none about one
#: process. Measured (``strace -f`` of bash, python3, pytest, node, npm, git, make, cc):
#: node reads ``meminfo``, ``stat``, ``cpuinfo`` and ``sys/vm/overcommit_memory``; the
#: rest are what ``free``, ``uptime``, ``nproc``-like code, libselinux (``filesystems``)
#: and ``sysctl`` read. Not granted: the pid folders (a host process's ``cmdline`` has no
#: ptrace check), the links into one (``self``, ``thread-self``, ``mounts``, ``net``: a
#: rule set through them names the server's own folder, not the command's), and the
#: entries that list other processes (``locks``, ``sysvipc``, ``timer_list``,
#: ``sched_debug``) or are the kernel's (``kmsg``, ``kcore``, ``kallsyms``, ``kpage*``).
PROC_READS: tuple[str, ...] = (
    "buddyinfo",
    "cgroups",
    "cmdline",
    "cpuinfo",
    "crypto",
    "devices",
    "diskstats",
    "filesystems",
    "interrupts",
    "loadavg",
    "meminfo",
    "misc",
    "partitions",
    "pressure",
    "softirqs",
    "stat",
    "swaps",
    "sys",
    "uptime",
    "version",
    "vmstat",
    "zoneinfo",
)


def split_reads(denied: Sequence[str], rights: int = READ) -> list[tuple[str, int]]:
    """Read grants covering ``/`` except ``denied`` (absolute, normalised) and ``/proc``
    (:data:`PROC_READS` only).

    A right granted on a folder holds for all beneath it, so the ancestors of a denied
    path (and of ``/proc``: ``/`` always) get no rule at all: they cannot be listed (a
    listing right on ``~`` would list ``~/.ssh`` too); each of their other entries gets
    ``rights``."""
    return split_grants("/", denied, rights)


def split_grants(root: str, denied: Sequence[str], rights: int) -> list[tuple[str, int]]:
    """Grants of ``rights`` covering ``root`` except ``denied`` and ``/proc`` (only
    :data:`PROC_READS`, read rights only), split as :func:`split_reads` does: a writable
    root that holds an unreadable path (a workspace that is the home folder) gets no right
    on the folders above that path, each of their other entries gets ``rights``."""
    out: list[tuple[str, int]] = []
    _split(root, rights, (*denied, PROC), out)
    return out


def _split(root: str, rights: int, denied: tuple[str, ...], out: list[tuple[str, int]]) -> None:
    if root == PROC:
        out.extend((f"{PROC}/{name}", rights & READ) for name in PROC_READS)
        return
    prefix = root.rstrip("/") + "/"
    inside = [d for d in denied if d == root or d.startswith(prefix)]
    if not inside:
        out.append((root, rights))
        return
    if root in denied:
        return
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if is_dir:
            _split(entry.path, rights, denied, out)
        elif entry.is_symlink():
            # a rule is set on what the link points to: never on a folder that holds a
            # denied path (it is reached, and split, by its own path), nor on a denied
            # path or what it holds (``~/key -> .ssh/id_rsa``, ``x -> /proc/self``)
            real = os.path.realpath(entry.path)
            if not any(_within(d, real) or _within(real, d) for d in denied):
                out.append((entry.path, rights))
        elif entry.path not in denied:
            out.append((entry.path, rights))


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def child_setup(ruleset_fd: int, seccomp_filter: bytes) -> Callable[[], None]:
    """The code the child runs before ``exec``: drop capabilities, set ``no_new_privs``,
    apply the ruleset, install the seccomp filter. Any failure raises, so the command does
    not start (``subprocess`` reports the exception; it never runs unconfined)."""
    nrs = _numbers()
    assert nrs is not None
    buf = ctypes.create_string_buffer(seccomp_filter, len(seccomp_filter))
    prog = _SockFprog(len(seccomp_filter) // 8, ctypes.cast(buf, ctypes.c_void_p))
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    restrict_nr = nrs[2]

    def run() -> None:  # pragma: no cover - runs in the child
        for cap in range(_CAP_LAST + 1):
            if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:
                break  # EINVAL: past the last capability of this kernel
        _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        if _libc.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
            raise OSError(ctypes.get_errno(), "capset")
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
        if _libc.syscall(ctypes.c_long(restrict_nr), ruleset_fd, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
        if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "seccomp")

    run.keep = (buf, prog, header, data)  # type: ignore[attr-defined]
    return run
