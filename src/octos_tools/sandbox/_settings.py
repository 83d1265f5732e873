"""Sandbox modes and settings: what a command may do (Codex's mode names)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["ENGINES", "SandboxMode", "SandboxSettings"]

ENGINES = ("auto", "bubblewrap", "landlock")
"""``[sandbox] engine`` values: ``auto`` picks bubblewrap when it runs here, else Landlock."""


class SandboxMode(str, enum.Enum):
    """What a sandboxed command may do (Codex ``codex-rs/protocol``: ``SandboxPolicy``).

    * ``read-only``: read (less the protected paths), write only ``/dev/null`` and a private
      temp folder;
    * ``workspace-write``: also write the workspace and ``[sandbox] writable_roots``, less
      what makes git run code later and the server's own files;
    * ``danger-full-access``: no sandbox (the host user's full rights).
    """

    READ_ONLY = "read-only"
    WORKSPACE_WRITE = "workspace-write"
    DANGER_FULL_ACCESS = "danger-full-access"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: str) -> SandboxMode:
        """The mode named ``value``; ``_`` is accepted for ``-`` (``workspace_write``).

        Raises:
            ValueError: for any other name (the message lists the three).
        """
        try:
            return cls(value.strip().replace("_", "-"))
        except ValueError:
            names = ", ".join(m.value for m in cls)
            raise ValueError(f"unknown sandbox mode {value!r}; use one of {names}") from None

    def at_most(self, other: SandboxMode) -> SandboxMode:
        """The stricter of two modes."""
        order = list(SandboxMode)
        return self if order.index(self) <= order.index(other) else other


@dataclass(frozen=True)
class SandboxSettings:
    """The resolved sandbox of one host (``[sandbox]`` plus the policy and the flags).

    Attributes:
        mode: the mode commands run in.
        engine: ``auto`` | ``bubblewrap`` | ``landlock``.
        network: commands may open network connections (off: none, host loopback included).
        writable_roots: more absolute folders commands may write (workspace-write).
        deny_read: more paths commands may not read (``~`` expanded).
        read_only_paths: more paths that stay read-only (the server's config file); under
            Landlock, which cannot make a read-only hole in a writable root, the git guard
            puts them back after each command.
        append_only_paths: files the server appends to while commands run (the audit
            log): read-only under bubblewrap; not put back under Landlock (lines written
            meanwhile would be lost), so keep them outside the writable roots there.
        secret_paths: more paths commands may not read (state folder, token file).
        private_home: give the process a private writable ``HOME`` (mounted MCP servers).
        home: the home folder whose credential stores are hidden (``None``: the user's).
        allowed_hosts: ``[sandbox] allowed_hosts`` (``host`` or ``host:port``): with the
            network off, HTTP(S) egress to these through the proxy of :mod:`._proxy`
            (empty when the network is on or the policy denies the web).
        reason: why the mode is what it is (``"--read-only"``, ``"config"``), for messages.
    """

    mode: SandboxMode = SandboxMode.WORKSPACE_WRITE
    engine: str = "auto"
    network: bool = False
    writable_roots: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    read_only_paths: tuple[str, ...] = ()
    append_only_paths: tuple[str, ...] = ()
    secret_paths: tuple[str, ...] = ()
    private_home: bool = False
    home: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    reason: str = field(default="default", compare=False)

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"unknown sandbox engine {self.engine!r}; use one of {ENGINES}")
        if self.allowed_hosts:
            from ._egress import HostRules

            HostRules.parse(self.allowed_hosts)  # raises ValueError naming a bad entry

    @property
    def egress(self) -> bool:
        """Commands get HTTP(S) egress through the proxy only (``allowed_hosts`` set, the
        network off, a confined mode)."""
        return bool(self.allowed_hosts) and not self.network and self.confined

    @property
    def confined(self) -> bool:
        """Commands run in a sandbox (any mode but ``danger-full-access``)."""
        return self.mode is not SandboxMode.DANGER_FULL_ACCESS
