"""Path resolution: user paths checked lexically, then opened component by component.

* Pure checks before any system call: a NUL byte is ``invalid_arguments``; ``..`` that would
  climb above the root and absolute paths outside the root are ``path_outside_workspace``.
  Absolute paths are compared with the root component by component, never as string
  prefixes (``/ws_secret`` is not inside ``/ws``). On POSIX a backslash is an ordinary
  file-name character. A component over 255 bytes (``NAME_MAX``) is ``invalid_arguments``.
* Every component is opened with ``os.open(name, O_NOFOLLOW | O_DIRECTORY, dir_fd=parent)``
  starting from a descriptor of the root; a symlink anywhere is ``symlink_refused``. Nothing
  is resolved by path string, so there is no check-then-use race. (octos guards only the
  last component with ``O_NOFOLLOW``; we walk every component.)
* A component that does not exist as typed but whose Unicode NFC or NFD twin does (macOS
  writes names decomposed, a model types them composed; Linux file systems compare bytes)
  is replaced by the stored spelling, so every file tool reaches the file and every result
  names it as it is stored. Only components that are not plain (ASCII, or the same in
  both forms) cost a lookup; a typed spelling that exists always wins.
* A path at or below a credential store or the server's state folder that lies inside the
  root is ``permission_denied`` (:mod:`._off_limits`), for reading and writing alike.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from ..errors import ErrorKind, PathError
from ._off_limits import OffLimits
from ._os_errors import kind_name, map_os_error, map_subdir_error, show

__all__ = ["DIR_FLAGS", "NAME_MAX", "PATH_MAX", "PathResolver", "open_subdir"]

O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
DIR_FLAGS = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
NAME_MAX = 255
"""Longest file-name component in bytes on Linux/macOS file systems (``NAME_MAX``)."""
PATH_MAX = 4096
"""Longest absolute path in bytes, terminating NUL included (Linux ``PATH_MAX``): a file
whose path is longer cannot be named by most programs (``rg``, ``grep -r``, editors), so
writes refuse to create one."""


class PathResolver:
    """The lexical and descriptor-walking half of :class:`~octos_tools.workspace.Workspace`.

    Args:
        root: an existing directory, resolved once (``realpath``) into :attr:`root`.

    Raises:
        ValueError: ``root`` holds a NUL byte.
        FileNotFoundError: ``root`` does not exist.
        NotADirectoryError: ``root`` is not a directory.
    """

    durable_writes: bool = False
    """``fsync`` each new file, its folder and the parent of every folder a write creates
    (see :mod:`octos_tools.workspace._atomic` for what it adds)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        raw = os.fspath(root)
        if "\x00" in raw:
            raise ValueError("workspace root contains a NUL byte")
        real = os.path.realpath(raw)
        if not os.path.exists(real):
            raise FileNotFoundError(f"workspace root does not exist: {raw!r}")
        if not os.path.isdir(real):
            raise NotADirectoryError(f"workspace root is not a directory: {raw!r}")
        self.root: Path = Path(real)
        self._root_bytes = len(os.fsencode(real))
        # Absolute user paths may name the root by its real path or by the (normalised)
        # spelling it was given with; both are compared component by component.
        spellings = {real, os.path.normpath(os.path.abspath(raw))}
        self._root_spellings: tuple[tuple[str, ...], ...] = tuple(
            tuple(p for p in s.split("/") if p) for s in sorted(spellings)
        )
        self.off_limits: OffLimits = OffLimits(self.root)
        """What no file tool touches inside this root (:mod:`._off_limits`): credential
        stores, the state folder, ``deny_read`` (add with ``off_limits.protect``)."""
        self._protected: dict[str, str] = {}

    def protect_file(self, path: str | os.PathLike[str], what: str) -> None:
        """Make the file tools refuse to write, move or delete ``path`` (a file, or a folder
        and all it holds; ``permission_denied``), as the command sandbox keeps it read-only:
        the server's own config file, a hook's program, the server's own code.

        Args:
            path: absolute, or relative to the current folder; outside the root it is
                ignored (the file tools cannot reach it anyway).
            what: what it is, for the message (``"a hook's program"``).
        """
        real = os.path.realpath(os.path.expanduser(os.fspath(path)))
        if real.startswith(str(self.root).rstrip("/") + "/"):
            self._protected[real] = what

    # ------------------------------------------------------------------ pure checks

    def _parts(self, path: str | os.PathLike[str]) -> list[str]:
        """Normalised components of ``path`` below the root; no I/O.

        Raises:
            PathError: ``invalid_arguments`` (NUL byte, overlong name, not a string) or
                ``path_outside_workspace``.
        """
        try:
            text = os.fspath(path)
        except TypeError:
            raise PathError(
                ErrorKind.INVALID_ARGUMENTS, f"path must be a string, got {type(path).__name__}"
            ) from None
        if not isinstance(text, str):
            raise PathError(ErrorKind.INVALID_ARGUMENTS, "path must be a text string")
        if "\x00" in text:
            raise PathError(
                ErrorKind.INVALID_ARGUMENTS,
                f"path {show(text)} contains a NUL byte (\\x00); file names cannot hold it",
            )
        if text.startswith("/"):
            parts = _normalise(text.split("/"), text, absolute=True)
            for root in self._root_spellings:
                if tuple(parts[: len(root)]) == root:
                    rest = parts[len(root) :]
                    break
            else:
                raise PathError(
                    ErrorKind.PATH_OUTSIDE_WORKSPACE,
                    f"{show(text)} is outside the workspace {str(self.root)!r}; "
                    "use a path relative to the workspace root",
                )
        else:
            rest = _normalise(text.split("/"), text, absolute=False)
        for part in rest:
            if len(os.fsencode(part)) > NAME_MAX:
                raise PathError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"file name {show(part[:40] + '…')} in {show(text[:80])} is longer than "
                    f"{NAME_MAX} bytes",
                )
        if not all(_plain(p) for p in rest):
            rest = self._stored_spelling(rest)
        if self.off_limits:
            self.off_limits.check(rest, text)
        return rest

    def _stored_spelling(self, parts: list[str]) -> list[str]:
        """``parts`` with each component missing as typed replaced by its NFC or NFD twin
        when that exists (walked from the root, no link followed; the walk stops at the
        first folder it cannot open, whose error the caller's own open reports)."""
        out = list(parts)
        try:
            fd = os.open(self.root, DIR_FLAGS)
        except OSError:
            return out
        try:
            for i, part in enumerate(out):
                if not _plain(part) and not _exists_at(fd, part):
                    for form in ("NFC", "NFD"):
                        twin = unicodedata.normalize(form, part)
                        if twin != part and len(os.fsencode(twin)) <= NAME_MAX:
                            if _exists_at(fd, twin):
                                out[i] = twin
                                break
                if i == len(out) - 1:
                    break
                nxt = os.open(out[i], DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except OSError:
            pass
        finally:
            os.close(fd)
        return out

    def relpath(self, path: str | os.PathLike[str]) -> str:
        """The normalised workspace-relative POSIX form of ``path`` (``"."`` for the root),
        a component missing as typed spelled as its stored NFC/NFD twin.

        No file-system access except that twin lookup (only for components that are not
        plain ASCII), so symlinks are not detected here.

        Raises:
            PathError: ``invalid_arguments`` or ``path_outside_workspace``.
        """
        parts = self._parts(path)
        return "/".join(parts) if parts else "."

    def _check_writable_name(self, parts: Sequence[str], text: str) -> None:
        """Refuse to create or change a path other programs cannot name (over ``PATH_MAX``),
        one of our own temporary names, or anything inside a ``.git`` folder.

        ``.git`` is git's own: a line in ``.git/config`` (``core.fsmonitor``,
        ``core.hooksPath``) or a file in ``.git/hooks`` runs code at the user's next
        ``git status``, so a file tool writing there would be a way to run commands even
        with the command tools denied. Change a repository with git itself.

        Raises:
            PathError: ``invalid_arguments`` (length, reserved name), ``permission_denied``
                (inside ``.git``, or a path :meth:`_refuse_protected` refuses).
        """
        from ._tempnames import is_internal_temp_name

        if any(p.casefold() == ".git" for p in parts):
            raise PathError(
                ErrorKind.PERMISSION_DENIED,
                f"{show(text[:80])} is inside a .git folder: file tools never write there "
                "(an edit of .git/config or .git/hooks would run code at the next git "
                "command). Change the repository with git itself",
            )

        self._refuse_protected(parts, text)
        size = self._root_bytes + sum(len(os.fsencode(p)) + 1 for p in parts)
        if size >= PATH_MAX:
            raise PathError(
                ErrorKind.INVALID_ARGUMENTS,
                f"path {show(text[:80])} would be {size:,} bytes long as an absolute path; "
                f"paths must stay under {PATH_MAX:,} bytes (PATH_MAX) so that every program "
                "can open them. Use a shorter path",
            )
        for part in parts:
            if is_internal_temp_name(part):
                raise PathError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"{show(part)} is a name reserved for octos-tools' temporary files; "
                    "choose another name",
                )

    def _refuse_protected(self, parts: Sequence[str], text: str) -> None:
        """Refuse what the command sandbox keeps read-only for the same reason: a file of
        :meth:`protect_file`, a file in a ``core.hooksPath`` folder, a config file a
        repository includes (:func:`octos_tools._git_code.write_refusal`).

        Raises:
            PathError: ``permission_denied``, naming the rule.
        """
        from .. import _git_code

        if not parts:
            return
        full = os.path.join(str(self.root), *parts)
        for guarded, what in self._protected.items():  # a folder: all it holds, too
            if full == guarded or full.startswith(guarded + "/"):
                how = "is" if full == guarded else "is inside"
            elif guarded.startswith(full + "/"):  # moving or deleting it removes that
                how = "holds"
            else:
                continue
            raise PathError(
                ErrorKind.PERMISSION_DENIED,
                f"{show(text[:80])} {how} {what}: file tools never write it (commands "
                "may not either). A person changes it outside the agent",
            )
        why = _git_code.write_refusal(str(self.root), parts)
        if why is not None:
            raise PathError(
                ErrorKind.PERMISSION_DENIED,
                f"{show(text[:80])} {why}, so file tools never write it (commands may not "
                "either). A person changes it outside the agent",
            )

    # ------------------------------------------------------------------ descriptors

    def _open_root(self) -> int:
        try:
            return os.open(self.root, DIR_FLAGS)
        except OSError as exc:  # pragma: no cover - the root vanished or was swapped
            raise map_os_error(exc, ".", is_dir=True) from None

    def _open_dir(
        self,
        parts: Sequence[str],
        display: str,
        *,
        create: bool = False,
        created: list[str] | None = None,
    ) -> int:
        """Open the directory ``parts`` (each component no-follow); return its descriptor.

        With ``create``, missing components are created one at a time (``mkdirat``; their
        relative paths appended to ``created`` when given).
        """
        fd = self._open_root()
        try:
            for i, name in enumerate(parts):
                nxt = open_subdir(
                    fd,
                    name,
                    "/".join(parts[: i + 1]) or display,
                    create,
                    durable=self.durable_writes,
                    created=created,
                )
                os.close(fd)
                fd = nxt
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _parent(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = False,
        allow_root: bool = False,
        for_write: bool = False,
    ) -> tuple[int, str | None, str]:
        """``(parent_fd, leaf_name, relpath)``; ``leaf_name`` is ``None`` for the root.

        With ``for_write`` the path is first checked by :meth:`_check_writable_name`.
        """
        parts = self._parts(path)
        rel = "/".join(parts) if parts else "."
        if not parts:
            if not allow_root:
                raise PathError(
                    ErrorKind.IS_A_DIRECTORY, "the workspace root is a directory, not a file"
                )
            return self._open_root(), None, rel
        if for_write:
            self._check_writable_name(parts, os.fspath(path))
        pfd = self._open_dir(parts[:-1], rel, create=create)
        if _names_folder(path):
            try:
                _check_folder_leaf(pfd, parts[-1], rel)
            except BaseException:
                os.close(pfd)
                raise
        return pfd, parts[-1], rel


def _plain(part: str) -> bool:
    """Whether ``part`` is spelled the same in NFC and NFD (ASCII always is)."""
    return part.isascii() or (
        unicodedata.is_normalized("NFC", part) and unicodedata.is_normalized("NFD", part)
    )


def _exists_at(fd: int, name: str) -> bool:
    """Whether ``name`` exists in the directory ``fd`` (a link counts; not followed).
    An error other than "no such file" counts as existing: the typed name is kept."""
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return True
    return True


def _normalise(raw_parts: list[str], text: str, *, absolute: bool) -> list[str]:
    out: list[str] = []
    for part in raw_parts:
        if part in ("", "."):
            continue
        if part == "..":
            if out:
                out.pop()
            elif not absolute:
                raise PathError(
                    ErrorKind.PATH_OUTSIDE_WORKSPACE,
                    f"{show(text)} leaves the workspace through '..'; "
                    "use a path inside the workspace",
                )
            continue
        out.append(part)
    return out


def _names_folder(path: str | os.PathLike[str]) -> bool:
    """Whether the user path ends with ``/`` (or ``/.``): POSIX then requires a directory
    (``open("file.txt/")`` is ``ENOTDIR``), a rule the lexical normalisation would drop."""
    text = os.fspath(path)
    return isinstance(text, str) and (text.endswith("/") or text.endswith("/."))


def _check_folder_leaf(pfd: int, name: str, rel: str) -> None:
    """For a path ending with ``/``: the leaf must be a directory (not followed).

    Raises:
        PathError: ``not_a_directory`` (a file or other non-directory), ``symlink_refused``,
            ``not_found``.
    """
    try:
        mode = os.stat(name, dir_fd=pfd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        raise PathError(
            ErrorKind.NOT_FOUND,
            f"{rel}/ ends with '/', which names a folder, and there is no folder {rel}; "
            "for a file, drop the trailing '/'",
        ) from None
    except OSError as exc:
        raise map_os_error(exc, rel) from None
    if stat_mod.S_ISLNK(mode):
        raise PathError(ErrorKind.SYMLINK_REFUSED, f"{rel} is a symbolic link; not followed")
    if not stat_mod.S_ISDIR(mode):
        what = "a file" if stat_mod.S_ISREG(mode) else kind_name(mode)
        raise PathError(
            ErrorKind.NOT_A_DIRECTORY,
            f"{rel}/ ends with '/', but {rel} is {what}, not a folder; drop the trailing '/'",
        )


def open_subdir(
    fd: int,
    name: str,
    rel: str,
    create: bool,
    *,
    durable: bool = False,
    created: list[str] | None = None,
) -> int:
    """Open directory ``name`` under ``fd`` without following a link (creating it first
    with ``create``); return its descriptor. With ``durable``, a folder it creates is
    recorded in ``fd`` by an ``fsync`` (so a durable write into it survives a power cut);
    ``created``, when given, gets ``rel`` appended when this call made the folder.

    Raises:
        PathError: ``not_found``, ``symlink_refused``, ``not_a_directory``, mapped errors.
    """
    try:
        return os.open(name, DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise PathError(ErrorKind.NOT_FOUND, f"{rel} does not exist") from None
    except OSError as exc:
        raise map_subdir_error(exc, fd, name, rel) from None
    try:
        os.mkdir(name, 0o777, dir_fd=fd)
    except FileExistsError:
        pass
    except OSError as exc:
        raise map_os_error(exc, rel) from None
    else:
        if created is not None:
            created.append(rel)
        if durable:
            with contextlib.suppress(OSError):
                os.fsync(fd)
    try:
        return os.open(name, DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise map_subdir_error(exc, fd, name, rel) from None
