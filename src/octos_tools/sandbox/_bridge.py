r"""The bridge that puts the egress proxy (:mod:`._proxy`) inside a bubblewrap sandbox.

The command runs in a network namespace of its own, loopback only, in which a TCP socket
listens on ``127.0.0.1:``:data:`BRIDGE_PORT` (allowed by the seccomp filter: ``AF_INET``
stream sockets only, and this namespace reaches nothing but its own loopback). That
listening socket is sent over an ``AF_UNIX`` socket pair to the proxy (``SCM_RIGHTS``: no
``AF_UNIX`` socket is created in the sandbox, which seccomp refuses); the proxy, outside,
accepts on it, so connections made in the namespace arrive at it and nowhere else. The
command's ``HTTP_PROXY`` and friends name that port. Two ways to get there, one chosen
per process (:func:`._netns.available`):

* **the pre-made namespace** (:mod:`._netns`, where it works: a root server, or an
  unprivileged one whose kernel allows a user namespace inside another): the forked child
  makes the namespace and the listener, sends it, then ``exec``\ s ``bwrap`` without
  ``--unshare-net``. No process is started: nothing measurable over ``serve``;
* **the Python bridge** (the fallback): ``bwrap --unshare-net``, and a one-shot program
  runs first in the sandbox, before the command: it makes the listener, sends it over the
  inherited end of the pair, closes its copies and ``exec``\ s the command. Python without
  ``site`` (``-I -S``) importing only ``_socket``: 15-35 ms here.

Claude Code's sandbox-runtime bridges with ``socat`` (a unix socket bound into the
sandbox, a forwarder listening on loopback inside); passing the listening socket instead
needs no process that stays, and no unix socket in the sandbox. In both ways ``bwrap``
keeps a copy of the pair's end open until the sandbox ends (``--sync-fd``): the proxy's
end-of-sandbox signal.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "BRIDGE_PORT",
    "BubblewrapBridge",
    "bridge_argv",
    "bubblewrap_way",
    "for_bubblewrap",
    "for_landlock",
    "no_proxy",
    "proxy_env",
]

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


@dataclass
class BubblewrapBridge:
    """How one bubblewrap command is bridged to the proxy (:func:`for_bubblewrap`).

    Attributes:
        argv: the command to put after ``bwrap ... --`` (through the Python bridge when
            that is the way here, else the command itself).
        channel: the parent's copy of the socket pair's end (close it after the spawn).
        pass_fds: what the child must inherit for the bridge (the channel for the Python
            bridge; nothing for the pre-made namespace, whose child set-up uses it
            before ``exec``).
        preexec: the child's set-up before ``exec`` (:func:`._netns.premade_netns`), or
            ``None`` (the Python bridge).
        unshare_net: ``bwrap`` must make the network namespace (``--unshare-net``): the
            Python bridge; with ``preexec`` the namespace exists before ``bwrap`` starts.
    """

    argv: list[str]
    channel: int
    pass_fds: tuple[int, ...]
    preexec: Callable[[], None] | None
    unshare_net: bool


def bubblewrap_way() -> str:
    """How :func:`for_bubblewrap` bridges here: ``pre-made namespace`` or ``python bridge``
    (measured once per process by :func:`._netns.available`)."""
    from .. import trusted_programs
    from . import _netns

    return (
        "pre-made namespace"
        if _netns.available(trusted_programs.which("bwrap") or "bwrap") is not None
        else "python bridge"
    )


def for_bubblewrap(
    argv: list[str], env: dict[str, str], allowed_hosts: tuple[str, ...], bwrap: str
) -> BubblewrapBridge:
    """Bridge one bubblewrap command to the proxy; ``env`` gets the proxy variables.

    The pre-made network namespace of :mod:`._netns` (no process started) where
    :func:`._netns.available` found it works with ``bwrap`` here, else the Python bridge
    of this module (``bwrap --unshare-net``, then :data:`_CODE` before the command).
    """
    import socket

    from . import _netns
    from ._egress import HostRules
    from ._proxy import egress_proxy

    user = _netns.available(bwrap)
    rules = HostRules.parse(allowed_hosts)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    wake = None
    try:
        if user is None:
            egress_proxy().attach(ours, rules)
        else:  # the child wakes the proxy once the listener is sent
            wake = egress_proxy().queue(ours, rules)
    except BaseException:
        ours.close()
        theirs.close()
        raise
    env.update(proxy_env(BRIDGE_PORT, no_proxy(allowed_hosts)))
    fd = theirs.detach()
    if user is None:
        return BubblewrapBridge(bridge_argv(fd, argv), fd, (fd,), None, True)
    child = _netns.premade_netns(fd, BRIDGE_PORT, user=user, wake_fd=wake)
    return BubblewrapBridge(argv, fd, (), child, False)


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
