"""The SSRF guard's address rules (web_fetch's and browser's)."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from octos_tools.builtins.web import (
    blocked_reason,
    parse_ip_literal,
)

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------------- test server

Route = tuple[int, dict[str, str], bytes]


# ------------------------------------------------------------------------ address rules


@pytest.mark.parametrize(
    ("address", "blocked"),
    [
        ("127.0.0.1", True),
        ("127.255.0.9", True),
        ("10.1.2.3", True),
        ("172.16.0.1", True),
        ("192.168.1.1", True),
        ("169.254.169.254", True),
        ("100.64.0.1", True),
        ("0.0.0.0", True),
        ("224.0.0.1", True),
        ("255.255.255.255", True),
        ("::1", True),
        ("::", True),
        ("fd00::1", True),
        ("fe80::1", True),
        ("fec0::1", True),
        ("ff02::1", True),
        ("::ffff:127.0.0.1", True),
        ("::ffff:10.0.0.1", True),
        ("::127.0.0.1", True),
        ("64:ff9b::7f00:1", True),
        ("2002:7f00:1::", True),
        ("2001:db8::1", True),
        # IPv4-translated (RFC 2765), NAT64 local-use, 6to4, Teredo, the rest of ::/8
        ("::ffff:0:127.0.0.1", True),
        ("::ffff:0:10.0.0.1", True),
        ("::ffff:0:169.254.169.254", True),
        ("64:ff9b:1::a00:1", True),
        ("2002:a00:1::1", True),
        ("2002:c0a8:101::", True),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", True),
        ("::ffff:0:0:7f00:1", True),
        ("::1:0:0:0:1", True),
        ("fe80::1%1", True),
        ("8.8.8.8", False),
        ("1.1.1.1", False),
        ("2606:4700:4700::1111", False),
        ("::ffff:8.8.8.8", False),
        ("64:ff9b::808:808", False),
        ("::ffff:0:8.8.8.8", False),
        ("2002:808:808::1", False),
    ],
)
def test_blocked_reason(address: str, blocked: bool) -> None:
    assert (blocked_reason(ipaddress.ip_address(address)) is not None) is blocked


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0X7F.0.0.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0177.0.0.01", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("10.0x10203", "10.1.2.3"),
        ("::1", "::1"),
        ("[::1]", "::1"),
        ("example.com", None),
        ("cafe", None),
        ("1.2.3.4.5", None),
        ("256.0.0.1", None),
        ("08.0.0.1", None),
        ("1e100.net", None),
    ],
)
def test_parse_ip_literal(host: str, expected: str | None) -> None:
    ip = parse_ip_literal(host)
    assert (str(ip) if ip is not None else None) == expected
    if expected is not None and ":" not in expected:
        # Our reading agrees with the C resolver's (glibc inet_aton).
        assert socket.inet_ntoa(socket.inet_aton(host)) == expected
