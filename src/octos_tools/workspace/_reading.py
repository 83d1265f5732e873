"""Reading: regular files opened without following links, and ``lstat`` queries."""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable
from typing import BinaryIO

from ..errors import ErrorKind, PathError
from ._os_errors import kind_name, map_leaf_error, map_os_error
from ._paths import O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK, PathResolver

__all__ = ["Reading"]


class Reading(PathResolver):
    """The reading methods of :class:`~octos_tools.workspace.Workspace`."""

    def open_read(self, path: str | os.PathLike[str]) -> BinaryIO:
        """Open a regular file for binary reading, never following a symlink.

        The caller closes the returned file. Suited to ranged reads of huge files.

        Raises:
            PathError: ``not_found``, ``symlink_refused``, ``is_a_directory``,
                ``invalid_arguments`` (not a regular file: FIFO, device, socket), and the
                path kinds of :meth:`relpath`.
        """
        pfd, name, rel = self._parent(path)
        assert name is not None
        try:
            try:
                fd = os.open(name, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, dir_fd=pfd)
            except OSError as exc:
                raise map_leaf_error(exc, pfd, name, rel) from None
        finally:
            os.close(pfd)
        try:
            st = os.fstat(fd)
            if stat_mod.S_ISDIR(st.st_mode):
                raise PathError(ErrorKind.IS_A_DIRECTORY, f"{rel} is a directory, not a file")
            if not stat_mod.S_ISREG(st.st_mode):
                raise PathError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"{rel} is not a regular file ({kind_name(st.st_mode)}); refusing to read it",
                )
            if O_NONBLOCK:
                import fcntl

                flags = fcntl.fcntl(fd, fcntl.F_GETFL)
                fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~O_NONBLOCK)
            return open(fd, "rb", closefd=True)  # the caller closes it
        except BaseException:
            os.close(fd)
            raise

    def read_bytes(self, path: str | os.PathLike[str], *, max_bytes: int | None = None) -> bytes:
        """The whole content of a regular file.

        Args:
            path: user path of a regular file.
            max_bytes: refuse files larger than this many bytes (``None``: no limit).

        Raises:
            PathError: as :meth:`open_read`, plus ``file_too_large`` over ``max_bytes``.
        """
        with self.open_read(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if max_bytes is not None and size > max_bytes:
                raise PathError(
                    ErrorKind.FILE_TOO_LARGE,
                    f"{self.relpath(path)} is {size:,} bytes, over the limit of {max_bytes:,}",
                    size=size,
                )
            data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
            if max_bytes is not None and len(data) > max_bytes:
                raise PathError(
                    ErrorKind.FILE_TOO_LARGE,
                    f"{self.relpath(path)} grew over the limit of {max_bytes:,} bytes",
                )
            return data

    def stat(self, path: str | os.PathLike[str]) -> os.stat_result:
        """``lstat`` of ``path`` (a symlink leaf is reported, not followed).

        Raises:
            PathError: ``not_found``, ``symlink_refused`` (a symlink *before* the leaf),
                ``not_a_directory`` and the path kinds of :meth:`relpath`.
        """
        pfd, name, rel = self._parent(path, allow_root=True)
        try:
            if name is None:
                return os.fstat(pfd)
            try:
                return os.stat(name, dir_fd=pfd, follow_symlinks=False)
            except OSError as exc:
                raise map_os_error(exc, rel) from None
        finally:
            os.close(pfd)

    def exists(self, path: str | os.PathLike[str]) -> bool:
        """Whether something (even a dangling symlink) exists at ``path``.

        ``False`` when it or a parent is missing, or a parent is not a directory.

        Raises:
            PathError: ``invalid_arguments``, ``path_outside_workspace``, ``symlink_refused``
                (a symlinked parent), ``permission_denied``.
        """
        return self._stat_if_present(path) is not None

    def is_file(self, path: str | os.PathLike[str]) -> bool:
        """``True`` if ``path`` is a regular file (not a symlink to one)."""
        return self._is(path, stat_mod.S_ISREG)

    def is_dir(self, path: str | os.PathLike[str]) -> bool:
        """``True`` if ``path`` is a directory (not a symlink to one)."""
        return self._is(path, stat_mod.S_ISDIR)

    def _is(self, path: str | os.PathLike[str], test: Callable[[int], bool]) -> bool:
        st = self._stat_if_present(path)
        return st is not None and test(st.st_mode)

    def _stat_if_present(self, path: str | os.PathLike[str]) -> os.stat_result | None:
        """:meth:`stat`, or ``None`` when ``path`` or a parent is missing or a parent is not
        a directory; other failures raise."""
        try:
            return self.stat(path)
        except PathError as exc:
            if exc.kind in (ErrorKind.NOT_FOUND, ErrorKind.NOT_A_DIRECTORY):
                return None
            raise
