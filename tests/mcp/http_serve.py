"""Start ``octos-tools serve --transport http`` as a real process and learn its URL and the
bearer token it wrote (the path of the token file is on stderr, the token in the file)."""

from __future__ import annotations

import os
import re
import selectors
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TOKEN_LINE = re.compile(r"bearer token in (\S+) \(")


@dataclass
class HttpServe:
    """A running HTTP ``serve``: its process, endpoint URL, token and token file."""

    proc: subprocess.Popen[bytes]
    url: str
    token: str | None
    token_file: Path | None
    stderr_lines: list[str] = field(default_factory=list)

    @property
    def auth(self) -> dict[str, str]:
        """The ``Authorization`` header (empty under ``--no-auth``)."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


def start_http(argv: list[str], *, timeout: float = 90, **popen: object) -> HttpServe:
    """Run ``argv`` (an HTTP serve command) until it prints its ``listening on`` line.

    Raises:
        AssertionError: it did not start within ``timeout`` seconds.
    """
    proc = subprocess.Popen(  # type: ignore[call-overload]
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,
    )
    assert proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    token_file: Path | None = None
    lines: list[str] = []
    buf = b""
    # our own line buffer over os.read: a buffered readline may take in several lines at
    # once, and select() then never fires for the ones already read (a start seen late)
    while time.monotonic() < deadline:
        if b"\n" not in buf:
            if not sel.select(max(0.1, deadline - time.monotonic())):
                continue
            chunk = os.read(proc.stderr.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            continue
        raw, _, buf = buf.partition(b"\n")
        line = raw.decode() + "\n"
        lines.append(line)
        found = _TOKEN_LINE.search(line)
        if found:
            token_file = Path(found.group(1))
        if "listening on " in line:
            url = line.split("listening on ", 1)[1].split()[0]
            token = token_file.read_text().splitlines()[0] if token_file is not None else None
            return HttpServe(proc, url, token, token_file, lines)
    proc.kill()
    proc.wait(10)
    raise AssertionError("the HTTP server did not start: " + "".join(lines))


def transport(url: str, token: str | None) -> Any:
    """A streamable-HTTP client transport for the SDK's ``Client`` that sends ``token``
    (``Client(url)`` would send none). One per ``Client``."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
