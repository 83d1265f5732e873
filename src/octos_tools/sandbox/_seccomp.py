"""The seccomp filter both engines install: a classic BPF program, built here (no libseccomp).

What it refuses (``EPERM``), in every sandboxed mode:

* ``socket(AF_UNIX, ...)``: a new Unix socket could connect to a host socket (the SSH agent,
  ``docker.sock``, D-Bus) that a read-only mount leaves connectable. ``socketpair`` stays
  allowed (pipes between the command's own processes). The same rule as Claude Code's
  sandbox-runtime (``vendor/seccomp-src``: it blocks ``socket(AF_UNIX)`` creation).
* ``ptrace``, ``process_vm_readv`` / ``process_vm_writev``: no reading or steering another
  process (Codex ``codex-rs/linux-sandbox``: ptrace is denied by its seccomp filter).
* ``io_uring_setup`` / ``_enter`` / ``_register``: io_uring runs file and socket operations
  that a filter on the classic system calls never sees.
* ``open_by_handle_at`` (opens a file by inode handle, around any path rule), ``keyctl`` /
  ``add_key`` / ``request_key`` (kernel keyrings hold credentials), ``bpf``,
  ``perf_event_open``, and ``ioctl(TIOCSTI)`` / ``ioctl(TIOCLINUX)`` (typing into a
  terminal).
* every system call of another ABI (i386 through ``int 0x80``, x32): the numbers above would
  not match there.

With ``deny_all_sockets`` (the Landlock engine with the network off: no network namespace
there) every ``socket()`` call is refused, whatever its family.

With ``inet_stream_only`` (``[sandbox] allowed_hosts``: the egress proxy is the only way out)
``socket()`` is allowed for ``AF_INET`` / ``AF_INET6`` TCP streams only (type
``SOCK_STREAM`` with any flags, protocol 0 or ``IPPROTO_TCP``: not SCTP or MPTCP, which
Landlock's TCP rules do not cover); UDP, raw, packet, netlink and Unix sockets stay refused.
Under bubblewrap the command's network namespace reaches only its own loopback; under
Landlock a TCP connect is allowed to the proxy's port only.
"""

from __future__ import annotations

import os
import platform
import struct

__all__ = ["filter_program", "supported"]

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_EPERM = 1
_ENOSYS = 38
_AF_UNIX = 1
_AF_INET = 2
_AF_INET6 = 10
_SOCK_STREAM = 1
_SOCK_TYPE_MASK = 0xF
_IPPROTO_TCP = 6
_ALU_AND_K = 0x54
_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C
_X32_BIT = 0x40000000

# (audit arch, {name: number}) per machine; numbers from the kernel's syscall tables
_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "socket": 41,
            "ioctl": 16,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "open_by_handle_at": 304,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "bpf": 321,
            "perf_event_open": 298,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "socket": 198,
            "ioctl": 29,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "open_by_handle_at": 265,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "bpf": 280,
            "perf_event_open": 241,
        },
    ),
}
_DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_by_handle_at",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
)
# offsets in struct seccomp_data: nr, arch, then args[6] as u64 from byte 16 (little endian)
_NR, _ARCH, _ARG0, _ARG1, _ARG2 = 0, 4, 16, 24, 32


def _machine() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def supported() -> bool:
    """Whether this machine's architecture has a filter (x86_64 and aarch64 Linux)."""
    return os.name == "posix" and _machine() in _ARCHES


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def _inet_stream_only(socket_nr: int) -> list[bytes]:
    """``socket()``: allowed for (AF_INET | AF_INET6, SOCK_STREAM | flags, 0 | IPPROTO_TCP)."""
    deny, allow = _ins(_RET_K, _ERRNO | _EPERM), _ins(_RET_K, _ALLOW)
    return [
        _ins(_JEQ_K, socket_nr, 0, 11),  # not socket(): on to the next rule
        _ins(_LD_W_ABS, _ARG0),
        _ins(_JEQ_K, _AF_INET, 1, 0),
        _ins(_JEQ_K, _AF_INET6, 0, 6),
        _ins(_LD_W_ABS, _ARG1),
        _ins(_ALU_AND_K, _SOCK_TYPE_MASK),
        _ins(_JEQ_K, _SOCK_STREAM, 0, 3),
        _ins(_LD_W_ABS, _ARG2),
        _ins(_JEQ_K, 0, 2, 0),
        _ins(_JEQ_K, _IPPROTO_TCP, 1, 0),
        deny,
        allow,
    ]


def filter_program(*, deny_all_sockets: bool = False, inet_stream_only: bool = False) -> bytes:
    """The filter as ``struct sock_filter[]`` bytes (8 bytes per instruction): what
    ``bwrap --seccomp FD`` reads and what ``PR_SET_SECCOMP`` takes (wrapped in a
    ``sock_fprog``).

    Args:
        deny_all_sockets: refuse every ``socket()`` call (else only ``AF_UNIX``).
        inet_stream_only: allow ``socket()`` for IPv4/IPv6 TCP only (``allowed_hosts``).

    Raises:
        RuntimeError: on an architecture without a table (see :func:`supported`).
    """
    machine = _machine()
    if machine not in _ARCHES:
        raise RuntimeError(f"no seccomp filter for the {machine} architecture")
    arch, nrs = _ARCHES[machine]
    deny = _ins(_RET_K, _ERRNO | _EPERM)
    prog = [
        _ins(_LD_W_ABS, _ARCH),
        _ins(_JEQ_K, arch, 1, 0),
        _ins(_RET_K, _ERRNO | _ENOSYS),
        _ins(_LD_W_ABS, _NR),
    ]
    if machine == "x86_64":
        prog += [_ins(_JGE_K, _X32_BIT, 0, 1), _ins(_RET_K, _ERRNO | _ENOSYS)]
    for name in _DENIED:
        prog += [_ins(_JEQ_K, nrs[name], 0, 1), deny]
    if inet_stream_only:
        prog += _inet_stream_only(nrs["socket"])
    elif deny_all_sockets:
        prog += [_ins(_JEQ_K, nrs["socket"], 0, 1), deny]
    else:
        prog += [
            _ins(_JEQ_K, nrs["socket"], 0, 4),
            _ins(_LD_W_ABS, _ARG0),
            _ins(_JEQ_K, _AF_UNIX, 0, 1),
            deny,
            _ins(_RET_K, _ALLOW),
        ]
    prog += [
        _ins(_JEQ_K, nrs["ioctl"], 0, 5),
        _ins(_LD_W_ABS, _ARG1),
        _ins(_JEQ_K, _TIOCSTI, 1, 0),
        _ins(_JEQ_K, _TIOCLINUX, 0, 1),
        deny,
        _ins(_RET_K, _ALLOW),
        _ins(_RET_K, _ALLOW),
    ]
    return b"".join(prog)
