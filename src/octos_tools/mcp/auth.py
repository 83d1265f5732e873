"""Who may talk to the HTTP server: the bearer token and the Host / Origin lists.

* **Every bind needs a bearer token** (the MCP transport specification: servers SHOULD
  authenticate all connections; any local user can reach a loopback port). It is checked
  on every request by :class:`RequireBearer`, the outermost layer of the app, before any
  other header or the body is read (``Authorization: Bearer <token>``, RFC 6750; a missing
  or wrong token gets ``401`` with ``WWW-Authenticate: Bearer``). The token comes from the
  :data:`TOKEN_ENV` environment variable or from the file named by
  ``serve.auth_token_file`` in the config, never from the command line (where ``ps`` would
  show it). A loopback ``serve`` with neither gets a fresh random token per start
  (:func:`issue_token`), in a ``0600`` file of the per-user state folder.
  ``--no-auth`` turns the check off, on loopback only.
* **Loopback binds** also get DNS-rebinding protection (a server on localhost must validate
  ``Origin``): ``Host`` must name the loopback address the server is bound to, and a
  browser ``Origin`` must be a loopback one.
* **Remote binds** (``--allow-remote``) refuse to start without a configured token;
  ``Host`` must be one of ``serve.allowed_hosts`` (or the bound address), and a browser
  ``Origin`` one of ``serve.allowed_origins``.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
import shlex
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.transport_security import TransportSecuritySettings

__all__ = [
    "LOOPBACK_HOSTS",
    "MIN_TOKEN_CHARS",
    "TOKEN_ENV",
    "RequireBearer",
    "StaticTokenVerifier",
    "is_loopback",
    "issue_token",
    "load_token",
    "token_file_path",
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
        ConfigError: the file cannot be read, other users may read or change it (any
            group or other permission bit, the rule OpenSSH applies to a private key:
            "UNPROTECTED PRIVATE KEY FILE", refused), or the token is shorter than
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
            mode = stat.S_IMODE(path.stat().st_mode)
            if mode & 0o077:
                raise ConfigError(
                    f"serve.auth_token_file {path}: other users can read or change it (mode "
                    f"{mode:04o}); refusing to start: run 'chmod 600 {shlex.quote(str(path))}'"
                )
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


def token_file_path(workspace: str | os.PathLike[str] | None, port: int) -> Path:
    """Where :func:`issue_token` writes the token of a ``serve`` on ``port``: the workspace's
    state folder (:func:`~octos_tools.state_dir.workspace_state_dir`), or the state root
    without a workspace; file ``mcp-http-<port>.token``."""
    from ..state_dir import state_root, workspace_state_dir

    folder = workspace_state_dir(workspace) if workspace is not None else state_root()
    return folder / f"mcp-http-{port}.token"


def issue_token(path: Path) -> str:
    """A fresh random token (32 bytes, URL-safe base64), written to ``path`` with mode
    ``0600`` (readable by this user only; an older file there is replaced).

    Raises:
        OSError: the file cannot be written.
    """
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, (token + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return token


class RequireBearer:
    """ASGI middleware: a request without ``Authorization: Bearer <token>`` gets ``401``
    before anything else happens (its body is never read; no other layer runs).

    Args:
        app: the ASGI app behind the check.
        token: the shared secret (compared in constant time), or ``None`` for no check.
        on_admit: called with the ASGI scope's ``client`` of every request that passes
            (:meth:`~octos_tools.mcp.connections.ConnectionGate.admit`).
    """

    def __init__(
        self,
        app: Any,
        token: str | None,
        on_admit: Callable[[Any], None] | None = None,
    ) -> None:
        self.app = app
        self._expected = f"bearer {token}".encode() if token is not None else None
        self._on_admit = on_admit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._expected is not None and not self._authorized(scope):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="octos-tools"'),
                    ],
                }
            )
            body = b'{"error": "invalid_token", "error_description": "bearer token required"}'
            await send({"type": "http.response.body", "body": body})
            return
        if self._on_admit is not None:
            self._on_admit(scope.get("client"))
        await self.app(scope, receive, send)

    def _authorized(self, scope: Any) -> bool:
        assert self._expected is not None
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, rest = bytes(value).partition(b" ")
                given = scheme.lower() + b" " + rest.strip()
                return hmac.compare_digest(given, self._expected)
        return False


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
