"""Reading a configuration file safely: what may be read, how it is parsed.

Only a regular file of at most :data:`MAX_CONFIG_BYTES` is read (a FIFO, a device such as
``/dev/zero`` or a folder is refused without blocking: the file is opened ``O_NONBLOCK`` and
checked with ``fstat`` before any read). Parsing never raises anything but
:class:`~octos_tools.errors.ConfigError`: integers too long for Python's conversion limit,
nesting deeper than :data:`MAX_NESTING`, NUL bytes in strings and invalid UTF-8 are each a
one-line error naming the file and, where there is one, the key path.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["MAX_CONFIG_BYTES", "MAX_NESTING", "check_values", "read_config_data"]

MAX_CONFIG_BYTES = 1_048_576
"""Largest configuration file read, in bytes (1 MiB)."""

MAX_NESTING = 32
"""Deepest nesting of tables/objects/arrays accepted in a configuration file."""

_MAX_STRING = 65_536


def _read_regular_file(path: Path) -> bytes:
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"cannot read config file {path}: {reason}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise ConfigError(f"config file {path} is {kind}; give a JSON or TOML file")
        if st.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"config file {path} is {st.st_size:,} bytes; the limit is "
                f"{MAX_CONFIG_BYTES:,} bytes"
            )
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, 65_536)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_CONFIG_BYTES:
                raise ConfigError(
                    f"config file {path} is larger than {MAX_CONFIG_BYTES:,} bytes (it grew "
                    "while being read)"
                )
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _nesting_ok(text: str) -> bool:
    """A cheap upper bound of the nesting depth before handing the text to a parser (the
    stdlib parsers recurse; 100,000 brackets would raise RecursionError deep inside)."""
    depth = 0
    worst = 0
    in_string: str | None = None
    escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\" and in_string == '"':
                escaped = True
            elif ch == in_string:
                in_string = None
            continue
        if ch in "\"'":
            in_string = ch
        elif ch in "[{":
            depth += 1
            worst = max(worst, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return worst <= MAX_NESTING


def read_config_data(path: Path) -> dict[str, Any]:
    """Read and parse a JSON (``.json``) or TOML (``.toml``, or anything else that parses
    as TOML) configuration file into a mapping.

    Raises:
        ConfigError: a one-line message naming ``path`` (and the key path when known).
    """
    raw = _read_regular_file(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text (byte {exc.start})") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise ConfigError(f"config file {path} contains a NUL byte (line {line})")
    if not _nesting_ok(text):
        raise ConfigError(f"config file {path} nests deeper than {MAX_NESTING} levels")
    is_json = path.suffix.lower() == ".json" or (
        path.suffix.lower() != ".toml" and text.lstrip()[:1] == "{"
    )
    data: Any
    try:
        if is_json:
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"config file {path} is not valid JSON: {exc}") from None
        else:
            import tomllib  # only for a TOML file: not on the path of a call without one

            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    except ValueError as exc:  # e.g. an integer longer than Python's conversion limit
        raise ConfigError(f"config file {path} holds a value that cannot be read: {exc}") from None
    except RecursionError:
        raise ConfigError(f"config file {path} nests too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold an object (a table) at the top level")
    return data  # its values are checked by Config.from_mapping (check_values)


def check_values(data: Any, source: str) -> None:
    """Refuse values no key of the configuration can take, before pydantic sees them:
    nesting deeper than :data:`MAX_NESTING`, strings with NUL bytes or over 64 KiB,
    integers of more than 18 digits, non-finite floats.

    Raises:
        ConfigError: one line naming ``source`` and the key path.
    """
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > MAX_NESTING:
            raise ConfigError(f"invalid configuration in {source}: {where}: nested too deeply")
        label = where or "(top level)"
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ConfigError(
                        f"invalid configuration in {source}: {label}: keys must be strings"
                    )
                stack.append((item, f"{where}.{key}" if where else key, depth + 1))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                stack.append((item, f"{where}[{i}]", depth + 1))
        elif isinstance(value, str):
            if "\x00" in value:
                raise ConfigError(
                    f"invalid configuration in {source}: {label}: contains a NUL byte"
                )
            if len(value) > _MAX_STRING:
                raise ConfigError(
                    f"invalid configuration in {source}: {label}: string of {len(value):,} "
                    f"characters (the limit is {_MAX_STRING:,})"
                )
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            if abs(value) >= 10**18:
                raise ConfigError(f"invalid configuration in {source}: {label}: number too large")
        elif isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"invalid configuration in {source}: {label}: not a finite number")
