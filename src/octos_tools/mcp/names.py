"""Registry names of mounted MCP tools: ``<server>__<tool>``, made valid and unique."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container

__all__ = ["mounted_tool_name"]

_VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_CHAR = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LEN = 8
_MAX_NAME = 64


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_HASH_LEN]


def mounted_tool_name(server: str, tool: str, taken: Container[str] = ()) -> str:
    """The registry name of ``tool`` of MCP server ``server``.

    ``<server>__<tool>`` when that is already valid and free; otherwise invalid characters
    become ``_``, the base is cut to leave room for ``_<8 hex>`` (SHA-256 of the original
    name; on a collision with ``taken``, of the original plus ``#<n>``).

    Args:
        server: the configured server name.
        tool: the remote tool name (any string).
        taken: names already in use (a registry, a set).

    Returns:
        A name matching ``^[a-zA-Z0-9_-]{1,64}$`` not in ``taken``.
    """
    raw = f"{server}__{tool}"
    if _VALID.match(raw) and raw not in taken:
        return raw
    base = _INVALID_CHAR.sub("_", raw)[: _MAX_NAME - _HASH_LEN - 1]
    seed = raw
    attempt = 0
    while True:
        name = f"{base}_{_short_hash(seed)}"
        if name not in taken:
            return name
        attempt += 1
        seed = f"{raw}#{attempt}"
