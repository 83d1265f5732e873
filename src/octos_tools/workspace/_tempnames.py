"""Names of octos-tools' own temporary files, recognisable by one rule.

Every temporary file or folder the workspace creates has a name starting with
``.octos-tmp-``: staged new contents and backups live in the hidden folder
:data:`STATE_DIR_NAME` at the workspace root (``.octos-tmp-state``), or, where a folder sits
on another file system than the root, beside their target as ``.octos-tmp-<hex>``.
:func:`is_internal_temp_name` is the test listing and search tools use to hide them.
"""

from __future__ import annotations

import os

__all__ = ["STATE_DIR_NAME", "TMP_PREFIX", "is_internal_temp_name", "new_temp_name"]

TMP_PREFIX = ".octos-tmp-"
"""Prefix of every temporary name the workspace creates."""
STATE_DIR_NAME = TMP_PREFIX + "state"
"""The hidden folder at the workspace root holding staged files, backups and journals."""


def is_internal_temp_name(name: str) -> bool:
    """Whether ``name`` (one path component, not a path) is an octos-tools temporary file or
    folder, which listings and searches should never show.

    >>> is_internal_temp_name(".octos-tmp-3f2a9c0d1e4b5a6f"), is_internal_temp_name("a.py")
    (True, False)
    """
    return name.startswith(TMP_PREFIX)


def new_temp_name(suffix: str = "") -> str:
    """A fresh random temporary name (``.octos-tmp-`` + 16 hex digits + ``suffix``)."""
    return f"{TMP_PREFIX}{os.urandom(8).hex()}{suffix}"
