"""The bridge that puts the egress proxy (:mod:`._proxy`) inside a bubblewrap sandbox.

The command runs with ``--unshare-net``: a network namespace of its own, loopback only. A
one-shot program runs first in the sandbox, before the command:

1. it creates a TCP socket listening on ``127.0.0.1:``:data:`BRIDGE_PORT` *inside* the
   namespace (allowed by the seccomp filter: ``AF_INET`` stream sockets only, and this
   namespace reaches nothing but its own loopback);
2. it sends that listening socket over an inherited ``AF_UNIX`` socket pair to the proxy
   (``SCM_RIGHTS``: no ``AF_UNIX`` socket is created in the sandbox, which seccomp
   refuses), closes its copies of both;
3. it ``exec``\\ s the command, whose ``HTTP_PROXY`` and friends name that port.

The proxy, outside, accepts on the socket: connections made in the namespace arrive at it
and nowhere else. Claude Code's sandbox-runtime bridges the same way with ``socat``
(a unix socket bound into the sandbox, a forwarder listening on loopback inside); passing
the listening socket instead needs no process that stays, and no unix socket in the
sandbox. The program is Python without ``site`` (``-I -S``) importing only ``_socket``:
about 15-25 ms here, paid only by commands with ``allowed_hosts``.
"""

from __future__ import annotations

import os
import sys

__all__ = ["BRIDGE_PORT", "bridge_argv", "for_bubblewrap", "for_landlock", "no_proxy", "proxy_env"]

#: The port the bridge listens on inside the sandbox's own network namespace.
BRIDGE_PORT = 3128

_CODE = (
    "import _socket as S,os,sys\n"
    "a=sys.argv\n"
    "try:\n"
    " c=S.socket(fileno=int(a[1]))\n"
    " s=S.socket(S.AF_INET,S.SOCK_STREAM)\n"
    " s.bind(('127.0.0.1',int(a[2])))\n"
    " s.listen(512)\n"
    " c.sendmsg([b'L'],[(S.SOL_SOCKET,S.SCM_RIGHTS,s.fileno().to_bytes(4,sys.byteorder))])\n"
    " c.close()\n"
    " s.close()\n"
    "except OSError as e:\n"
    " sys.stderr.write('octos-tools sandbox: the egress bridge did not start: %s\\n'%e)\n"
    " sys.exit(126)\n"
    "os.execvp(a[3],a[3:])\n"
)


def interpreter() -> str:
    """The Python that runs the bridge: the real file behind ``sys.executable`` (a
    virtual environment's ``python`` is a link to it; ``-I -S`` needs no venv)."""
    return os.path.realpath(sys.executable)


def bridge_argv(channel_fd: int, argv: list[str]) -> list[str]:
    """The argument list that runs the bridge, then ``argv``.

    Args:
        channel_fd: the inherited end of the socket pair whose other end the proxy reads.
        argv: the command (``["/bin/sh", "-c", CMD]``).
    """
    return [interpreter(), "-I", "-S", "-c", _CODE, str(channel_fd), str(BRIDGE_PORT), *argv]


def proxy_env(port: int, no_proxy: str) -> dict[str, str]:
    """The variables that send a command's HTTP(S) clients through the proxy on
    ``127.0.0.1:port`` (both spellings: curl reads ``http_proxy`` in lower case only,
    Python and Go read either)."""
    url = f"http://127.0.0.1:{port}"
    env: dict[str, str] = {}
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        env[name] = env[name.upper()] = url
    env["no_proxy"] = env["NO_PROXY"] = no_proxy
    return env


_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def no_proxy(allowed_hosts: tuple[str, ...]) -> str:
    """``NO_PROXY``: the loopback names (a server the command starts itself, in its own
    network namespace under bubblewrap), less a loopback address ``allowed_hosts`` lists
    (that one is the *host's*, reached through the proxy)."""
    from ._egress import HostRules

    listed = {r.host for r in HostRules.parse(allowed_hosts).rules}
    if "127.0.0.1" in listed:
        listed.add("localhost")
    return ",".join(n for n in _LOOPBACK_NAMES if n not in listed)


def for_bubblewrap(
    argv: list[str], env: dict[str, str], allowed_hosts: tuple[str, ...]
) -> tuple[list[str], int]:
    """Bridge one bubblewrap command to the proxy: ``(argv run through the bridge, the
    descriptor the child must inherit)``; ``env`` gets the proxy variables. The parent
    closes its copy of the descriptor after the spawn (``SandboxSpawn.close``)."""
    import socket

    from ._egress import HostRules
    from ._proxy import egress_proxy

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        egress_proxy().attach(ours, HostRules.parse(allowed_hosts))
    except BaseException:
        ours.close()
        theirs.close()
        raise
    env.update(proxy_env(BRIDGE_PORT, no_proxy(allowed_hosts)))
    return bridge_argv(theirs.fileno(), argv), theirs.detach()


def for_landlock(env: dict[str, str], allowed_hosts: tuple[str, ...]) -> int:
    """The proxy's host port for a Landlock command (the only port it may connect to);
    ``env`` gets the proxy variables.

    Raises:
        ToolError: ``sandbox_unavailable`` when Landlock is older than ABI 4 (no TCP rules:
            the command could connect anywhere).
    """
    from ..errors import ErrorKind, ToolError
    from . import _landlock
    from ._egress import HostRules
    from ._proxy import egress_proxy

    abi = _landlock.abi_version()
    if abi < 4:
        raise ToolError(
            ErrorKind.SANDBOX_UNAVAILABLE,
            f"[sandbox] allowed_hosts needs Landlock ABI 4 (TCP rules); this kernel has ABI "
            f"{abi}, so the command was not run. Fix: use the bubblewrap engine, or remove "
            "allowed_hosts (network off)",
        )
    port = egress_proxy().tcp_port(HostRules.parse(allowed_hosts))
    env.update(proxy_env(port, no_proxy(allowed_hosts)))
    return port
