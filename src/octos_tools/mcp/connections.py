"""How many TCP connections the HTTP transport holds, and for how long.

A connection is *pending* from the moment it is accepted until a request on it has passed
authentication (:class:`~octos_tools.mcp.http` calls :meth:`ConnectionGate.admit`); then it
is *admitted*. The rules, applied when a connection is accepted:

* pending connections are capped in total (``max_pending``) and per client address
  (``max_pending_per_client``); over a cap, the **oldest pending** connection is closed to
  make room, so a flood of half-open or slow-loris connections cannot lock out a client
  that sends its headers at once (it is admitted within a round trip);
* a pending connection that has not been admitted within ``header_timeout`` seconds is
  closed (slow-loris);
* all connections are capped in total (``max_connections``) and per client address
  (``max_per_client``); the total is kept below the process's file limit
  (``RLIMIT_NOFILE``), so ``accept`` never fails with ``EMFILE`` (which would stall every
  client, admitted ones included). Over a cap with no pending connection to close, the new
  connection gets ``503`` and is closed;
* an admitted connection idle between requests is closed after ``idle_timeout`` seconds
  (uvicorn's ``timeout_keep_alive``); a request's header block is limited to
  ``max_header_bytes`` (h11's ``max_incomplete_event_size``).

uvicorn's own ``limit_concurrency`` is not used: it answers ``503`` only once a request's
headers have arrived (a half-open connection is never refused), and it counts admitted
and pending connections alike, so a flood would turn authenticated clients away.
"""

from __future__ import annotations

import asyncio
import resource
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["ConnectionGate", "ConnectionLimits", "file_limit"]

_REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n"
    b"connection: close\r\ncontent-length: 21\r\n\r\ntoo many connections\n"
)


def file_limit() -> int:
    """The soft ``RLIMIT_NOFILE`` of this process (open files), or 1,024 when unlimited."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 1024 if soft == resource.RLIM_INFINITY or soft <= 0 else int(soft)


@dataclass(frozen=True)
class ConnectionLimits:
    """The connection caps and timeouts of the HTTP transport (see the module docstring).

    Args:
        max_connections: all connections at once (clamped to :meth:`effective_total`).
        max_per_client: connections from one client address.
        max_pending: connections not yet admitted, all addresses.
        max_pending_per_client: connections not yet admitted from one address.
        header_timeout: seconds a connection may stay unadmitted.
        idle_timeout: seconds an admitted connection may sit idle between requests
            (whole seconds: uvicorn's unit).
        max_header_bytes: the largest request header block, in bytes.
        reserved_files: file descriptors kept free for everything else the server opens
            (files, pipes of commands, mounted servers); at least a quarter of the limit.
        accept_batch: the listen backlog, which is also how many connections asyncio
            accepts in one wake-up before the gate sees any of them (kept well under
            ``reserved_files``).
    """

    max_connections: int = 1000
    max_per_client: int = 500
    max_pending: int = 256
    max_pending_per_client: int = 128
    header_timeout: float = 10.0
    idle_timeout: int = 5
    max_header_bytes: int = 64 * 1024
    reserved_files: int = 128
    accept_batch: int = 64

    def effective_total(self, files: int | None = None) -> int:
        """``max_connections`` kept below the file limit ``files`` (default: this
        process's), leaving ``reserved_files`` or a quarter of it, whichever is more."""
        limit = file_limit() if files is None else files
        room = limit - max(self.reserved_files, limit // 4)
        return max(8, min(self.max_connections, room))


@dataclass
class _Entry:
    protocol: _GatedProtocol
    client: str
    timer: asyncio.TimerHandle | None = None
    admitted: bool = False


@dataclass
class ConnectionGate:
    """The shared state of one server's connections (one per :func:`serve_http_app`).

    Args:
        limits: the caps and timeouts.

    Attributes:
        evicted: how many pending connections were closed to make room or timed out.
        refused: how many new connections got ``503`` because every slot was admitted.
    """

    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    evicted: int = 0
    refused: int = 0

    def __post_init__(self) -> None:
        self.total = self.limits.effective_total()
        self._pending: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
        self._all: dict[tuple[Any, ...], _Entry] = {}
        self._per_client: dict[str, int] = {}
        self._pending_per_client: dict[str, int] = {}

    # ------------------------------------------------------------------ counts

    @property
    def open_connections(self) -> int:
        """Connections held now (pending and admitted)."""
        return len(self._all)

    @property
    def pending_connections(self) -> int:
        """Connections not yet admitted."""
        return len(self._pending)

    # ------------------------------------------------------------------ transitions

    def accept(self, protocol: _GatedProtocol, key: tuple[Any, ...], client: str) -> bool:
        """A new connection: make room by closing old pending ones; ``False`` when it must
        be refused (every slot it could take is admitted)."""
        lim = self.limits
        if self._pending_per_client.get(client, 0) >= lim.max_pending_per_client:
            self._evict_oldest(client)
        if len(self._pending) >= lim.max_pending:
            self._evict_oldest(None)
        if self._per_client.get(client, 0) >= lim.max_per_client and not self._evict_oldest(client):
            self.refused += 1
            return False
        if len(self._all) >= self.total and not self._evict_oldest(None):
            self.refused += 1
            return False
        entry = _Entry(protocol, client)
        entry.timer = protocol.loop.call_later(lim.header_timeout, self._timed_out, key)
        self._all[key] = entry
        self._pending[key] = entry
        self._per_client[client] = self._per_client.get(client, 0) + 1
        self._pending_per_client[client] = self._pending_per_client.get(client, 0) + 1
        return True

    def admit(self, key: tuple[Any, ...] | None) -> None:
        """The connection ``key`` (the ASGI scope's ``client``) passed authentication."""
        if key is None:
            return
        entry = self._pending.pop(tuple(key), None)
        if entry is None:
            return
        entry.admitted = True
        if entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None
        self._dec(self._pending_per_client, entry.client)

    def release(self, key: tuple[Any, ...]) -> None:
        """The connection ``key`` is closed."""
        entry = self._all.pop(key, None)
        if entry is None:
            return
        if entry.timer is not None:
            entry.timer.cancel()
        self._dec(self._per_client, entry.client)
        if self._pending.pop(key, None) is not None:
            self._dec(self._pending_per_client, entry.client)

    def _timed_out(self, key: tuple[Any, ...]) -> None:
        entry = self._pending.get(key)
        if entry is not None:
            self.evicted += 1
            self._close(key, entry)

    def _evict_oldest(self, client: str | None) -> bool:
        for key, entry in self._pending.items():
            if client is None or entry.client == client:
                self.evicted += 1
                self._close(key, entry)
                return True
        return False

    def _close(self, key: tuple[Any, ...], entry: _Entry) -> None:
        self.release(key)
        entry.protocol.transport.abort()  # the descriptor is freed on the next loop turn

    @staticmethod
    def _dec(counts: dict[str, int], client: str) -> None:
        left = counts.get(client, 0) - 1
        if left > 0:
            counts[client] = left
        else:
            counts.pop(client, None)


class _GatedProtocol(H11Protocol):
    """uvicorn's h11 protocol, with each connection registered in a :class:`ConnectionGate`
    (set on the class by :func:`protocol_for`)."""

    gate: ConnectionGate

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._gate_key: tuple[Any, ...] | None = self.client
        if self.client is None:
            return
        if not self.gate.accept(self, self.client, str(self.client[0])):
            self._gate_key = None
            transport.write(_REFUSED)
            transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._gate_key is not None:
            self.gate.release(self._gate_key)
        super().connection_lost(exc)


def protocol_for(gate: ConnectionGate) -> type[asyncio.Protocol]:
    """A uvicorn ``http`` protocol class whose connections ``gate`` governs."""
    return type("GatedH11Protocol", (_GatedProtocol,), {"gate": gate})
