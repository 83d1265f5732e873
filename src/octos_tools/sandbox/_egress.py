"""``[sandbox] allowed_hosts``: the hosts a sandboxed command may reach through the egress
proxy (:mod:`._proxy`), parsed once at config load, and the one spelling of a host that both
the allow-list and the SSRF guard see (:func:`canonical_host`).

An entry is ``host`` or ``host:port``:

* ``host``: a DNS name (matched exactly, case-insensitively, a trailing dot ignored), an IP
  address (``127.0.0.1``, ``[::1]``), or ``*.example.com`` (any name *below*
  ``example.com``, not ``example.com`` itself: list both to allow both);
* ``port``: 1-65535; without one, the entry allows ports 80 and 443 (plain HTTP and HTTPS).

Only an IP address entry opens a private address (loopback, RFC 1918, link-local...): a
listed *name* that resolves to a private address is still refused by web_fetch's SSRF guard
(:mod:`octos_tools.builtins.web._guard`), so DNS cannot turn an allowed name into a way to
the metadata service or the host's loopback.

A request's host is canonicalised once, by :func:`canonical_host`, before it is matched and
before the guard resolves it, so a listed entry matches every spelling of itself and an
unlisted host cannot pass by spelling: case, one trailing dot, percent-encoding
(RFC 3986 section 6.2.2.2) and the numeric IPv4 spellings a C resolver accepts
(``2130706433``, ``0x7f.1``, ``127.1``, as web_fetch reads them: WHATWG URL) are undone;
an IPv4-mapped IPv6 address (``[::ffff:127.0.0.1]``) is its IPv4 address; an IPv6 zone id
(``[fe80::1%25eth0]``, RFC 6874: an interface of the proxy's machine) and userinfo
(``user@host``: RFC 9110 section 4.2.4 says to treat it as an error) are refused;
a port is decimal digits (leading zeros allowed, RFC 3986 section 3.2.3).

Stdlib only: :mod:`octos_tools.config` imports this module to validate the entries.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import unquote_to_bytes

__all__ = [
    "DEFAULT_PORTS",
    "EgressRule",
    "HostRules",
    "canonical_host",
    "parse_allowed_host",
    "split_authority",
]

#: The ports an entry without a port allows: plain HTTP and HTTPS.
DEFAULT_PORTS = (80, 443)

_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
#: What a legacy numeric IPv4 spelling is made of (decimal, octal, hex parts).
_NUMERIC = re.compile(r"^[0-9a-fx.]+$")


def _canonical_ip(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def canonical_host(host: str) -> str:
    """The one spelling of a host that the allow-list and the SSRF guard see.

    Args:
        host: a URI's or an authority's host as written: a name, an IPv4 address in any
            spelling a C resolver's ``inet_aton`` accepts, or an IPv6 address in brackets
            (an ``allowed_hosts`` entry may also leave a bare IPv6 address unbracketed).

    Returns:
        A lower-case name without a trailing dot and with percent-encoding decoded, a
        dotted-quad IPv4 address (also for an IPv4-mapped IPv6 one), or a compressed IPv6
        address without brackets.

    Raises:
        ValueError: a one-line reason: an IPv6 zone id, a name that is not ASCII after
            decoding (send its IDNA ``xn--`` form), a character no host name has, an empty
            label, a numeric host that is no IPv4 address.
    """
    if host.startswith("["):
        if not host.endswith("]"):
            raise ValueError(f"host {host[:100]!r}: unclosed '['")
        inner = host[1:-1]
        if "%" in inner:
            raise ValueError(f"host {host[:100]!r}: an IPv6 zone id names a local interface")
        try:
            return _canonical_ip(ipaddress.IPv6Address(inner))
        except ValueError:
            raise ValueError(f"host {host[:100]!r} is not an IPv6 address") from None
    name = host
    if "%" in name:
        try:
            name = unquote_to_bytes(name).decode("ascii")
        except UnicodeDecodeError:
            raise ValueError(f"host {host[:100]!r} is not ASCII (send its IDNA form)") from None
    if not name.isascii():
        raise ValueError(f"host {host[:100]!r} is not ASCII (send its IDNA form)")
    name = name.lower()
    if name.endswith("."):
        name = name[:-1]
    if ":" in name:  # a bare IPv6 address (an allowed_hosts entry)
        if "%" in name:
            raise ValueError(f"host {host[:100]!r}: an IPv6 zone id names a local interface")
        try:
            return _canonical_ip(ipaddress.IPv6Address(name))
        except ValueError:
            raise ValueError(f"host {host[:100]!r} is not a host name or address") from None
    if _NUMERIC.match(name) and any(c.isdigit() for c in name):
        try:  # the C resolver's own reading: what getaddrinfo would connect to
            return str(ipaddress.IPv4Address(socket.inet_aton(name)))
        except OSError:
            pass  # a name such as 0ad.de, or no address at all (1.2.3.4.5): checked below
    labels = name.split(".")
    if not all(_LABEL.match(label) for label in labels) or labels[-1].isdigit():
        raise ValueError(f"host {host[:100]!r} is not a host name or an IP address")
    return name


def split_authority(authority: str, default_port: int | None) -> tuple[str, int]:
    """The canonical host and the port of a request's authority (``host[:port]``).

    Args:
        authority: a CONNECT target or an absolute URI's authority, as written.
        default_port: the port when none is written; ``None``: a port is required
            (CONNECT, RFC 9110 section 9.3.6).

    Raises:
        ValueError: a one-line reason: userinfo, no host, a port that is not 1-65535
            decimal digits, or a bad host (:func:`canonical_host`).
    """
    if "@" in authority:
        raise ValueError(f"userinfo in {authority[:100]!r} (RFC 9110 section 4.2.4)")
    if authority.startswith("["):
        end = authority.find("]")
        host, rest = authority[: end + 1], authority[end + 1 :] if end >= 0 else ""
        if end < 0 or (rest and not rest.startswith(":")):
            raise ValueError(f"bad authority {authority[:100]!r}")
        port_text: str | None = rest[1:] if rest else None
    else:
        host, sep, port_text = authority.rpartition(":")
        if not sep:
            host, port_text = authority, None
    if not host:
        raise ValueError(f"no host in {authority[:100]!r}")
    if not port_text:  # "host:" is the default port (RFC 3986 section 6.2.3)
        if default_port is None:
            raise ValueError(f"{authority[:100]!r}: CONNECT needs host:port")
        port = default_port
    elif port_text.isascii() and port_text.isdigit() and 1 <= int(port_text) <= 65535:
        port = int(port_text)
    else:
        raise ValueError(f"{authority[:100]!r}: the port must be 1-65535")
    return canonical_host(host), port


class EgressRule(NamedTuple):
    """One parsed ``allowed_hosts`` entry.

    Attributes:
        host: the canonical host (:func:`canonical_host`), or ``*.suffix``.
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
        host, rest = entry[: end + 1], entry[end + 1 :]
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
            a wildcard anywhere but the first label, an IP network, an address not in its
            standard spelling: ``2130706433`` is to be written ``127.0.0.1``).
    """
    text = entry.strip().lower()
    if not text or any(c.isspace() for c in text):
        raise ValueError(f"allowed host {entry!r} is empty or contains spaces")
    if "/" in text or "@" in text or "%" in text:
        raise ValueError(
            f"allowed host {entry!r}: write a host or host:port, not a URL or a network"
        )
    host, port = _split_port(text)
    ports = (port,) if port is not None else DEFAULT_PORTS
    wildcard = host.startswith("*.")
    try:
        name = canonical_host(host[2:] if wildcard else host)
    except ValueError:
        raise ValueError(
            f"allowed host {entry!r} is not a host name, an IP address or *.domain"
        ) from None
    try:
        ipaddress.ip_address(name)
    except ValueError:
        pass
    else:
        written = host.strip("[]").rstrip(".")
        if wildcard:
            raise ValueError(f"allowed host {entry!r}: a wildcard needs a domain name")
        try:
            standard = str(ipaddress.ip_address(written)) == name
        except ValueError:
            standard = False
        if not standard:
            raise ValueError(f"allowed host {entry!r}: write the address as {name}")
        return EgressRule(name, ports, True)
    if wildcard and "." not in name:
        raise ValueError(f"allowed host {entry!r}: a wildcard needs a domain (*.example.com)")
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
        """Whether ``host:port`` is listed; ``host`` is canonicalised here too
        (:func:`canonical_host`, idempotent), a host it refuses is not listed."""
        try:
            name = canonical_host(host)
        except ValueError:
            return False
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
