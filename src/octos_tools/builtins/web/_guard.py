"""The SSRF guard of the web tools: which addresses ``web_fetch`` and ``browser`` may reach.

* A host is resolved *once*; every address it resolves to must be public, or the request is
  refused (``network_refused``) before any connection is made. Refused: loopback, private
  (RFC 1918), shared (100.64/10), link-local (incl. the 169.254.169.254 metadata service),
  unspecified, multicast, broadcast, reserved and documentation ranges, IPv6 unique-local,
  site-local, link-local, the IETF-reserved ``::/8`` and Teredo, and every IPv6 address that
  embeds a refused IPv4 one: IPv4-mapped (``::ffff:a.b.c.d``), IPv4-translated
  (``::ffff:0:a.b.c.d``, RFC 2765), IPv4-compatible (``::a.b.c.d``), NAT64 (``64:ff9b::/96``,
  ``64:ff9b:1::/48``, RFC 6052 / 8215) and 6to4 (``2002::/16``, RFC 3056). The ranges are
  those of the IANA IPv4 and IPv6 Special-Purpose Address Registries.
* Numeric spellings (``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``) are read as
  the IPv4 address a C resolver (``inet_aton``) would make of them. ``localhost`` and
  ``*.localhost`` are refused by name.
* ``WebConfig.allow_private_hosts`` lifts the address check entirely;
  ``WebConfig.allowed_hosts`` opens only the listed host names, addresses and networks.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Sequence

import anyio

from ...errors import ErrorKind, ToolError

__all__ = ["HostAllowList", "IPAddress", "blocked_reason", "check_host", "parse_ip_literal"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_V4_BLOCKED: tuple[tuple[ipaddress.IPv4Network, str], ...] = tuple(
    (ipaddress.IPv4Network(net), why)
    for net, why in (
        ("0.0.0.0/8", "unspecified (this-network)"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared (carrier-grade NAT)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignment"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "6to4 relay"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved (broadcast)"),
    )
)

_V6_BLOCKED: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.IPv6Network(net), why)
    for net, why in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("100::/64", "discard-only"),
        ("2001::/32", "Teredo"),
        ("2001:db8::/32", "documentation"),
        ("2001:10::/28", "ORCHID"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_V4_COMPAT = ipaddress.IPv6Network("::/96")
_V4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_IETF_RESERVED = ipaddress.IPv6Network("::/8")


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries in a form that reaches it (mapped,
    translated, compatible, NAT64, 6to4), or ``None``."""
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _V4_TRANSLATED or any(ip in net for net in _NAT64):
        return low32
    if ip in _V4_COMPAT and int(ip) > 1:
        return low32
    return None


def _article(label: str) -> str:
    """``"a"`` or ``"an"`` for a label read aloud ("an IETF", "a unique-local", "a 6to4")."""
    low = label.lower()
    return "an" if low[:1] in ("a", "e", "i", "o") or (low[:1] == "u" and low[:3] != "uni") else "a"


def _address_phrase(reason: str) -> str:
    """The noun phrase for a :func:`blocked_reason` label in a refusal message:
    ``"loopback"`` → ``"a loopback address"``, ``"unspecified (this-network)"`` →
    ``"an unspecified (this-network) address"``, an embedding label → ``"an IPv6 address
    embedding a loopback IPv4 address"``."""
    if reason.startswith("IPv6 address embedding"):
        return f"an {reason} address"
    return f"{_article(reason)} {reason} address"


def blocked_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` may not be fetched by default, or ``None`` when it is a public address.

    Args:
        ip: an IPv4 or IPv6 address (a scope id is ignored).

    Returns:
        A short label (``"loopback"``, ``"private"``, ``"link-local"``, …) or ``None``.

    Source: octos's ``web_fetch`` block list, extended with the IANA IPv4 / IPv6
    Special-Purpose Address Registries.
    """
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
        embedded = _embedded_v4(ip)
        if embedded is not None:
            inner = blocked_reason(embedded)
            return f"IPv6 address embedding {_article(inner)} {inner} IPv4" if inner else None
        for net6, why in _V6_BLOCKED:
            if ip in net6:
                return why
        if ip in _IETF_RESERVED:
            return "IETF-reserved (::/8)"
    else:
        for net4, why in _V4_BLOCKED:
            if ip in net4:
                return why
    if ip.is_multicast:
        return "multicast"
    if not ip.is_global:
        return "not globally routable"
    return None


_NUMERIC_HOST = re.compile(r"^[0-9a-fx.]+$", re.IGNORECASE)


def parse_ip_literal(host: str) -> IPAddress | None:
    """The IP address a host string denotes literally, or ``None`` for a name.

    Accepts dotted quads, IPv6 (with or without brackets) and the legacy numeric spellings a C
    resolver (``inet_aton``) accepts: one to four parts, each decimal, octal (leading ``0``)
    or hex (``0x``), e.g. ``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``.
    """
    h = host.strip("[]")
    try:
        return ipaddress.ip_address(h)
    except ValueError:
        pass
    if not _NUMERIC_HOST.match(h) or not any(c.isdigit() for c in h):
        return None
    parts = h.split(".")
    if len(parts) > 4 or any(p == "" for p in parts):
        return None
    values: list[int] = []
    for part in parts:
        try:
            if part.lower().startswith("0x"):
                values.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part.startswith("0"):
                values.append(int(part, 8))
            else:
                values.append(int(part, 10))
        except ValueError:
            return None
    # inet_aton: the last part fills all remaining bytes.
    limits = [0xFF] * (len(parts) - 1) + [0xFFFFFFFF >> (8 * (len(parts) - 1))]
    if any(v > lim for v, lim in zip(values, limits, strict=True)):
        return None
    number = 0
    for v in values[:-1]:
        number = (number << 8) | v
    number = (number << (8 * (5 - len(parts)))) | values[-1]
    return ipaddress.IPv4Address(number)


class HostAllowList:
    """Hosts opened although private (``WebConfig.allowed_hosts``).

    Args:
        entries: host names (matched exactly, case-insensitively, trailing dot ignored), IP
            addresses and networks in CIDR notation (``"127.0.0.1"``, ``"10.0.0.0/8"``,
            ``"::1"``).

    Raises:
        ValueError: an entry that is empty.
    """

    def __init__(self, entries: Sequence[str] = ()) -> None:
        self.names: set[str] = set()
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in entries:
            text = entry.strip().lower().rstrip(".")
            if not text:
                raise ValueError("an allowed host may not be empty")
            try:
                self.networks.append(ipaddress.ip_network(text.strip("[]"), strict=False))
            except ValueError:
                self.names.add(text)

    def __bool__(self) -> bool:
        return bool(self.names or self.networks)

    def allows_name(self, name: str) -> bool:
        """Whether the host name ``name`` is listed."""
        return name.lower().rstrip(".") in self.names

    def allows_address(self, ip: IPAddress) -> bool:
        """Whether ``ip`` lies in a listed address or network."""
        return any(ip.version == net.version and ip in net for net in self.networks)


async def check_host(
    host: str, port: int, *, allow_private: bool, allowed: HostAllowList | None = None
) -> str:
    """Resolve ``host`` once, check every address, and return the one to connect to.

    Args:
        host: the URL's host (ASCII; IDNA already applied; IPv6 without brackets).
        port: the TCP port (used for the lookup only).
        allow_private: skip the address check (``WebConfig.allow_private_hosts``).
        allowed: hosts and networks opened although private (``WebConfig.allowed_hosts``).

    Returns:
        The IP address, as a string, the connection must be pinned to.

    Raises:
        ToolError: ``network_refused`` if any address is refused (or the name is
            ``localhost``); ``unavailable`` if the name does not resolve.
    """
    name = host.lower().rstrip(".")
    if allowed is not None and allowed.allows_name(name):
        allow_private = True
    literal = parse_ip_literal(name)
    addresses: list[IPAddress]
    if literal is not None:
        addresses = [literal]
    else:
        if not allow_private and (name == "localhost" or name.endswith(".localhost")):
            raise ToolError(
                ErrorKind.NETWORK_REFUSED,
                f"refusing to fetch from {host!r}: it names this machine (loopback); "
                "set web.allow_private_hosts in the configuration to allow local hosts",
                host=host,
            )
        try:
            infos = await anyio.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError, OSError) as exc:
            raise ToolError(
                ErrorKind.UNAVAILABLE, f"cannot resolve host {host!r}: {exc}", host=host
            ) from None
        addresses = []
        for info in infos:
            raw = str(info[4][0]).split("%", 1)[0]
            ip = ipaddress.ip_address(raw)
            if ip not in addresses:
                addresses.append(ip)
        if not addresses:
            raise ToolError(ErrorKind.UNAVAILABLE, f"host {host!r} has no address", host=host)
    if not allow_private:
        for ip in addresses:
            reason = blocked_reason(ip)
            if reason is not None and not (allowed is not None and allowed.allows_address(ip)):
                if literal is None:
                    shown = f" it resolves to {ip},"
                else:  # a literal written another way (2130706433, ::ffff:127.0.0.1)
                    shown = "" if str(ip) == name else f" it is {ip},"
                raise ToolError(
                    ErrorKind.NETWORK_REFUSED,
                    f"refusing to fetch from {host!r}:{shown} {_address_phrase(reason)}; "
                    "only public addresses are allowed (list the host in web.allowed_hosts in the "
                    "configuration to allow it)",
                    host=host,
                    address=str(ip),
                    reason=reason,
                )
    return str(addresses[0])
