"""How an ``OSError`` met inside the workspace becomes a :class:`~octos_tools.errors.PathError`.

Each ``errno`` maps to the error kind a model can act on; messages name the workspace-relative
path and never an absolute path outside the workspace.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod

from ..errors import ErrorKind, PathError

__all__ = ["kind_name", "map_leaf_error", "map_os_error", "map_subdir_error", "show"]

_EDQUOT = getattr(errno, "EDQUOT", None)


def show(text: str) -> str:
    """A quoted, printable rendering of a user path for messages (cut after 200 chars)."""
    return repr(text if len(text) <= 200 else text[:200] + "…")


def kind_name(mode: int) -> str:
    """``"a FIFO"``, ``"a socket"``, ``"a device"`` or ``"not a regular file"``."""
    if stat_mod.S_ISFIFO(mode):
        return "a FIFO"
    if stat_mod.S_ISSOCK(mode):
        return "a socket"
    if stat_mod.S_ISCHR(mode) or stat_mod.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def map_os_error(exc: OSError, rel: str, *, is_dir: bool = False) -> PathError:
    """The :class:`PathError` for ``exc`` met while working on ``rel``.

    ``ENOSPC`` is ``disk_full``, ``EDQUOT`` ``quota_exceeded``, ``EFBIG``
    ``file_size_limit`` (``RLIMIT_FSIZE`` or the file system's largest file), ``EROFS``
    ``read_only_filesystem``; ``EACCES`` and ``EPERM`` are ``permission_denied``; unknown
    codes are ``internal_error`` with the system's message. The write-side kinds say
    that the file was left as it was: every write is staged and replaced atomically.
    """
    code = exc.errno
    if code == errno.ENOENT:
        return PathError(ErrorKind.NOT_FOUND, f"{rel} does not exist")
    if code == errno.ELOOP:
        return PathError(ErrorKind.SYMLINK_REFUSED, f"{rel} is a symbolic link; not followed")
    if code == errno.EISDIR:
        return PathError(ErrorKind.IS_A_DIRECTORY, f"{rel} is a directory")
    if code == errno.ENOTDIR:
        return PathError(ErrorKind.NOT_A_DIRECTORY, f"a parent of {rel} is not a directory")
    if code in (errno.EACCES, errno.EPERM):
        return PathError(ErrorKind.PERMISSION_DENIED, f"permission denied: {rel}")
    if code == errno.EEXIST:
        return PathError(ErrorKind.ALREADY_EXISTS, f"{rel} already exists")
    if code == errno.ENAMETOOLONG:
        return PathError(ErrorKind.INVALID_ARGUMENTS, f"a name in {rel} is too long")
    if code == errno.ENOTEMPTY:
        return PathError(ErrorKind.IS_A_DIRECTORY, f"{rel} is a non-empty directory")
    if code == errno.ENOSPC:
        return PathError(
            ErrorKind.DISK_FULL,
            f"cannot write {rel}: the disk is full (ENOSPC); the file was left as it was. "
            "Free some space and retry",
        )
    if code is not None and code == _EDQUOT:
        return PathError(
            ErrorKind.QUOTA_EXCEEDED,
            f"cannot write {rel}: the disk quota is exhausted (EDQUOT); the file was left as "
            "it was. Free some space within the quota and retry",
        )
    if code == errno.EFBIG:
        return PathError(
            ErrorKind.FILE_SIZE_LIMIT,
            f"cannot write {rel}: the file would pass the largest size this process may "
            "write (EFBIG: a 'ulimit -f' / RLIMIT_FSIZE limit or the file system's maximum); "
            "the file was left as it was. Write a smaller file",
        )
    if code == errno.EROFS:
        return PathError(
            ErrorKind.READ_ONLY_FILESYSTEM,
            f"cannot write {rel}: it is on a read-only file system (EROFS); nothing there can "
            "be changed",
        )
    return PathError(ErrorKind.INTERNAL_ERROR, f"cannot access {rel}: {exc.strerror or exc}")


def map_subdir_error(exc: OSError, pfd: int, name: str, rel: str) -> PathError:
    """Classify a failed no-follow ``O_DIRECTORY`` open of ``name`` under ``pfd``."""
    if exc.errno in (errno.ENOTDIR, errno.ELOOP):
        try:
            st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
        except OSError:
            return map_os_error(exc, rel)
        if stat_mod.S_ISLNK(st.st_mode):
            return PathError(
                ErrorKind.SYMLINK_REFUSED,
                f"{rel} is a symbolic link; links are not followed inside the workspace",
            )
        return PathError(ErrorKind.NOT_A_DIRECTORY, f"{rel} is not a directory")
    return map_os_error(exc, rel)


def map_leaf_error(exc: OSError, pfd: int, name: str, rel: str) -> PathError:
    """Classify a failed no-follow open of the leaf ``name`` (``ELOOP``: a symlink)."""
    if exc.errno == errno.ELOOP or exc.errno == errno.EMLINK:
        return PathError(
            ErrorKind.SYMLINK_REFUSED,
            f"{rel} is a symbolic link; links are not followed inside the workspace",
        )
    return map_os_error(exc, rel)
