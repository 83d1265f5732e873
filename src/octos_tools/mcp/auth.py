"""Who may talk to the HTTP server: the bearer token and the Host / Origin lists.

* **Loopback binds** get DNS-rebinding protection (the MCP transport specification: a server
  on localhost must validate ``Origin``): ``Host`` must name the loopback address the
  server is bound to, and a browser ``Origin`` must be a loopback one.
* **Remote binds** (``--allow-remote``) require a bearer token, checked on every request
  by the SDK's bearer middleware (``Authorization: Bearer <token>``, RFC 6750; a missing or
  wrong token gets ``401`` with ``WWW-Authenticate``). The token comes from the
  :data:`TOKEN_ENV` environment variable or from the file named by
  ``serve.auth_token_file`` in the config, never from the command line (where ``ps`` would
  show it). ``Host`` must be one of ``serve.allowed_hosts`` (or the bound address), and a
  browser ``Origin`` one of ``serve.allowed_origins``.
"""

from __future__ import annotations

import hmac
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.transport_security import TransportSecuritySettings

__all__ = [
    "LOOPBACK_HOSTS",
    "MIN_TOKEN_CHARS",
    "TOKEN_ENV",
    "StaticTokenVerifier",
    "is_loopback",
    "load_token",
    "transport_security",
]

TOKEN_ENV = "OCTOS_TOOLS_MCP_TOKEN"
"""The environment variable holding the bearer token of a remote ``serve``."""

MIN_TOKEN_CHARS = 16
"""A shorter token is refused: it could be guessed."""

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Hosts the HTTP transport binds without ``--allow-remote``."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names a loopback address (``127.0.0.0/8``, ``::1``, ``localhost``)."""
    import ipaddress

    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_token(token_file: str | None, *, environ: dict[str, str] | None = None) -> str | None:
    """The bearer token: :data:`TOKEN_ENV` if set, else the first line of ``token_file``.

    Args:
        token_file: the path from ``serve.auth_token_file``, or ``None``.
        environ: the environment to read (default ``os.environ``).

    Returns:
        The token, or ``None`` when neither source gives one.

    Raises:
        ConfigError: the file cannot be read, or the token is shorter than
            :data:`MIN_TOKEN_CHARS` characters or holds whitespace.
    """
    env = os.environ if environ is None else environ
    token = env.get(TOKEN_ENV, "").strip()
    source = f"${TOKEN_ENV}"
    if not token and token_file:
        path = Path(token_file).expanduser()
        try:
            if not path.is_file() or path.stat().st_size > 4096:
                raise ConfigError(f"serve.auth_token_file {path}: not a small regular file")
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"serve.auth_token_file {path}: cannot read it ({exc})") from None
        token = lines[0].strip() if lines else ""
        source = str(path)
    if not token:
        return None
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise ConfigError(
            f"the bearer token from {source} must be at least {MIN_TOKEN_CHARS} characters "
            "with no spaces (try: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


class StaticTokenVerifier:
    """The SDK's ``TokenVerifier`` for one shared secret (constant-time comparison)."""

    def __init__(self, token: str) -> None:
        self._token = token.encode("utf-8")

    async def verify_token(self, token: str) -> AccessToken | None:
        """An ``AccessToken`` for the right token, ``None`` for any other."""
        from mcp.server.auth.provider import AccessToken

        if hmac.compare_digest(token.encode("utf-8"), self._token):
            return AccessToken(token="bearer", client_id="octos-tools", scopes=[])
        return None


def _with_ports(names: set[str]) -> list[str]:
    return sorted(names | {f"{n}:*" for n in names if not _has_port(n)})


def transport_security(
    host: str,
    *,
    allowed_hosts: list[str] | tuple[str, ...] = (),
    allowed_origins: list[str] | tuple[str, ...] = (),
) -> TransportSecuritySettings:
    """The Host / Origin checks for a server bound to ``host``.

    Loopback: every spelling of loopback (``127.0.0.1``, ``localhost``, ``[::1]`` and the
    bound address), any port; origins ``http://`` those names. Remote: ``allowed_hosts``
    plus the bound address unless it is a wildcard (``0.0.0.0``, ``::``); origins
    ``allowed_origins`` only. A request without ``Origin`` (not a browser) passes the
    origin check; ``Host`` is always required.

    Raises:
        ConfigError: a remote wildcard bind with no ``allowed_hosts`` (we cannot know the
            names clients will use).
    """
    from mcp.server.transport_security import TransportSecuritySettings

    bare = host.strip("[]")
    shown = f"[{bare}]" if ":" in bare else bare
    if is_loopback(host):
        names = {"127.0.0.1", "localhost", "[::1]", shown}
        hosts = set(names) | set(allowed_hosts)
        origins = {f"http://{n}" for n in names}
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=_with_ports(hosts),
            allowed_origins=sorted(origins | {f"{o}:*" for o in origins} | set(allowed_origins)),
        )
    hosts = set(allowed_hosts)
    if bare not in ("0.0.0.0", "::", ""):
        hosts.add(shown)
    if not hosts:
        raise ConfigError(
            f"binding {host} accepts any Host name: list the names clients will use in "
            'serve.allowed_hosts of the config (e.g. ["myhost.example:8765"])'
        )
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted(hosts | {f"{h}:*" for h in hosts if not _has_port(h)}),
        allowed_origins=sorted(set(allowed_origins)),
    )


def _has_port(host: str) -> bool:
    return "]:" in host if host.startswith("[") else ":" in host
