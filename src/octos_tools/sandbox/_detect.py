"""Which engine can run here: a real ``bwrap`` start and the kernel's Landlock ABI, measured
once per process."""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass

from . import _landlock, _seccomp

__all__ = ["EngineStatus", "bubblewrap_status", "landlock_status"]

#: The minimal Landlock ABI the engine needs (1: filesystem rules).
MIN_LANDLOCK_ABI = 1


@dataclass(frozen=True)
class EngineStatus:
    """Whether an engine works on this machine.

    Attributes:
        name: ``bubblewrap`` or ``landlock``.
        usable: it can confine a command here.
        detail: its version (``bwrap`` path, ``ABI 7``) or why it cannot run.
        fix: what makes it usable (empty when usable).
    """

    name: str
    usable: bool
    detail: str
    fix: str = ""


def bubblewrap_status() -> EngineStatus:
    """The ``bwrap`` that :func:`octos_tools.trusted_programs.which` finds, started once
    with the namespaces the engine uses (cached per path). A ``bwrap`` on ``PATH`` that a
    command could have planted (in a writable root, or changeable by another user) is
    never used: the status names it."""
    from .. import trusted_programs

    if not _seccomp.supported():
        return EngineStatus("bubblewrap", False, "no seccomp filter for this architecture")
    path = trusted_programs.which("bwrap")
    if path is None:
        skipped = trusted_programs.untrusted_hits("bwrap")
        if skipped:
            hit, why = skipped[0]
            return EngineStatus(
                "bubblewrap",
                False,
                f"the only bwrap on PATH is not trusted: {why}",
                f"remove {hit} or take its folder off PATH, and install bubblewrap in a "
                "system folder (Debian/Ubuntu: apt-get install bubblewrap)",
            )
        return EngineStatus(
            "bubblewrap",
            False,
            "bwrap is not installed",
            "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)",
        )
    return _bubblewrap_probe(path)


@functools.cache
def _bubblewrap_probe(path: str) -> EngineStatus:
    probe = [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    probe += ["--unshare-pid", "--unshare-net", "--die-with-parent", "--", "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return EngineStatus("bubblewrap", False, f"bwrap could not start: {exc}")
    if done.returncode != 0:
        first = (done.stderr.decode(errors="replace").strip().splitlines() or ["?"])[0]
        return EngineStatus(
            "bubblewrap",
            False,
            f"bwrap cannot create its namespaces here ({first})",
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
            'or the AppArmor profile for bwrap), or use engine = "landlock"',
        )
    return EngineStatus("bubblewrap", True, path)


@functools.cache
def landlock_status() -> EngineStatus:
    """The kernel's Landlock ABI; cached."""
    if not _seccomp.supported() or os.uname().sysname != "Linux":
        return EngineStatus("landlock", False, "Landlock and seccomp need Linux on x86_64/aarch64")
    abi = _landlock.abi_version()
    if abi < MIN_LANDLOCK_ABI:
        return EngineStatus(
            "landlock",
            False,
            "the kernel has no Landlock (or it is not in the lsm= boot list)",
            "boot a kernel >= 5.13 with lsm=...,landlock, or install bubblewrap",
        )
    return EngineStatus("landlock", True, f"ABI {abi}")
