"""``[sandbox] allowed_hosts``: the hosts a sandboxed command may reach through the egress
proxy (:mod:`._proxy`), parsed once at config load.

An entry is ``host`` or ``host:port``:

* ``host``: a DNS name (matched exactly, case-insensitively, a trailing dot ignored), an IP
  address (``127.0.0.1``, ``[::1]``), or ``*.example.com`` (any name *below*
  ``example.com``, not ``example.com`` itself: list both to allow both);
* ``port``: 1-65535; without one, the entry allows ports 80 and 443 (plain HTTP and HTTPS).

Only an IP address entry opens a private address (loopback, RFC 1918, link-local...): a
listed *name* that resolves to a private address is still refused by web_fetch's SSRF guard
(:mod:`octos_tools.builtins.web._guard`), so DNS cannot turn an allowed name into a way to
the metadata service or the host's loopback.

Stdlib only: :mod:`octos_tools.config` imports this module to validate the entries.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["DEFAULT_PORTS", "EgressRule", "HostRules", "parse_allowed_host"]

#: The ports an entry without a port allows: plain HTTP and HTTPS.
DEFAULT_PORTS = (80, 443)

_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


class EgressRule(NamedTuple):
    """One parsed ``allowed_hosts`` entry.

    Attributes:
        host: lower-case name without the trailing dot, ``*.suffix``, or a normalised IP.
        ports: the ports allowed (``DEFAULT_PORTS`` when the entry named none).
        address: the host is an IP address (it may be private: listing it opens it).
    """

    host: str
    ports: tuple[int, ...]
    address: bool


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        end = entry.find("]")
        if end < 0:
            raise ValueError(f"allowed host {entry!r}: unclosed '['")
        host, rest = entry[1:end], entry[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError(f"allowed host {entry!r}: text after ']'")
        port_text = rest[1:] if rest else None
    elif entry.count(":") == 1:
        host, port_text = entry.split(":")
    else:
        host, port_text = entry, None  # a bare IPv6 address has several ':'
    if port_text is None:
        return host, None
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"allowed host {entry!r}: the port must be 1-65535")
    return host, int(port_text)


def parse_allowed_host(entry: str) -> EgressRule:
    """Parse one ``allowed_hosts`` entry (see the module docstring).

    Raises:
        ValueError: a one-line reason naming the entry (empty, a URL, a bad name or port,
            a wildcard anywhere but the first label, an IP network).
    """
    text = entry.strip().lower()
    if not text or text != entry.strip().lower() or any(c.isspace() for c in text):
        raise ValueError(f"allowed host {entry!r} is empty or contains spaces")
    if "/" in text or "@" in text:
        raise ValueError(
            f"allowed host {entry!r}: write a host or host:port, not a URL or a network"
        )
    host, port = _split_port(text)
    host = host.rstrip(".")
    ports = (port,) if port is not None else DEFAULT_PORTS
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return EgressRule(str(ip), ports, True)
    labels = host.split(".")
    wildcard = labels[0] == "*"
    if wildcard:
        labels = labels[1:]
        if len(labels) < 2:
            raise ValueError(f"allowed host {entry!r}: a wildcard needs a domain (*.example.com)")
    if not labels or not all(_LABEL.match(label) for label in labels):
        raise ValueError(f"allowed host {entry!r} is not a host name, an IP address or *.domain")
    if labels[-1].isdigit():
        raise ValueError(f"allowed host {entry!r}: not an IP address nor a host name")
    name = ".".join(labels)
    return EgressRule(f"*.{name}" if wildcard else name, ports, False)


@dataclass(frozen=True)
class HostRules:
    """The parsed allow-list.

    Args:
        rules: the parsed entries (:func:`parse_allowed_host`).
    """

    rules: tuple[EgressRule, ...]

    @classmethod
    def parse(cls, entries: tuple[str, ...] | list[str]) -> HostRules:
        """Parse every entry.

        Raises:
            ValueError: the first bad entry (see :func:`parse_allowed_host`).
        """
        return cls(tuple(parse_allowed_host(e) for e in entries))

    def allows(self, host: str, port: int) -> bool:
        """Whether ``host:port`` (a name or an IP, as the client wrote it) is listed."""
        name = host.strip("[]").lower().rstrip(".")
        try:
            name = str(ipaddress.ip_address(name))
        except ValueError:
            pass
        for rule in self.rules:
            if port not in rule.ports:
                continue
            if rule.host.startswith("*."):
                if name.endswith(rule.host[1:]) and not rule.address:
                    return True
            elif rule.host == name:
                return True
        return False

    def addresses(self, port: int | None = None) -> list[str]:
        """The listed IP addresses: the private addresses the proxy may open (with ``port``:
        those listed for that port, so ``127.0.0.1:8000`` does not open ``127.0.0.1:80`` to a
        listed name that resolves to it)."""
        return [r.host for r in self.rules if r.address and (port is None or port in r.ports)]
