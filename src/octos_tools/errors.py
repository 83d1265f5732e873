"""Error kinds and exceptions of octos-tools.

Two outcomes, two channels (octos ``tools/mod.rs``: ``ToolInputError`` vs a failed result):

* A failure the *model* can act on is a :class:`~octos_tools.tool_types.ToolResult` with
  ``success=False`` and ``structured_metadata["error"] = {"kind", "message"}``.
  Inside a tool the easiest way to produce one is to ``raise ToolError(kind, message)``:
  the registry turns it into that result.
* A mistake by the *programmer* (registering two tools badly, passing a bad config)
  raises an ordinary exception with a message.

Exception tree::

    OctosToolsError                 base of everything raised by this package
    ├── ToolError                   a typed failure meant for the model (has .kind)
    │   ├── PathError               a path was refused or not usable (workspace)
    │   └── ArgumentError           arguments were too large, not JSON or invalid
    └── ConfigError                 a configuration file or value is wrong
"""

from __future__ import annotations

from enum import Enum
from typing import Any

__all__ = [
    "ArgumentError",
    "ConfigError",
    "ErrorKind",
    "OctosToolsError",
    "PathError",
    "ToolError",
]


class ErrorKind(str, Enum):
    """Machine-readable kind of a failed tool call (the ``kind`` hosts and models read).

    The value is the wire string placed in ``structured_metadata["error"]["kind"]``.
    A kind is never reused for a different meaning; add a new one when none fits.
    """

    UNKNOWN_TOOL = "unknown_tool"
    POLICY_DENIED = "policy_denied"
    ARGS_TOO_LARGE = "args_too_large"
    INVALID_JSON = "invalid_json"
    INVALID_ARGUMENTS = "invalid_arguments"
    PATH_OUTSIDE_WORKSPACE = "path_outside_workspace"
    SYMLINK_REFUSED = "symlink_refused"
    NOT_FOUND = "not_found"
    IS_A_DIRECTORY = "is_a_directory"
    NOT_A_DIRECTORY = "not_a_directory"
    ALREADY_EXISTS = "already_exists"
    BINARY_FILE = "binary_file"
    FILE_TOO_LARGE = "file_too_large"
    AMBIGUOUS_MATCH = "ambiguous_match"
    NO_MATCH = "no_match"
    NO_CHANGE = "no_change"
    STALE_FILE = "stale_file"
    INVALID_PATCH = "invalid_patch"
    PATCH_CONFLICT = "patch_conflict"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    PROCESS_FAILED = "process_failed"
    NETWORK_REFUSED = "network_refused"
    HTTP_ERROR = "http_error"
    APPROVAL_REQUIRED = "approval_required"
    APPROVAL_DENIED = "approval_denied"
    CODING_TOOL_UNSUPPORTED = "coding_tool_unsupported"
    UNKNOWN_SESSION = "unknown_session"
    INTERNAL_ERROR = "internal_error"
    # Added where no kind above fits:
    NOT_CONFIGURED = "not_configured"
    """A tool needs configuration it does not have (e.g. ``web_search`` with no provider)."""
    PERMISSION_DENIED = "permission_denied"
    """The operating system refused access (EACCES / EPERM) to a path inside the workspace,
    or the path is inside a ``.git`` folder, which file tools never write."""
    UNAVAILABLE = "unavailable"
    """A dependency of the tool (a binary, a remote MCP server) is missing or not reachable."""
    REMOTE_ERROR = "remote_error"
    """A mounted MCP server's tool answered ``isError: true`` (its own failure, reported as
    it said it)."""
    REPLY_TOO_LARGE = "reply_too_large"
    """A mounted MCP server sent a message over ``[mcp_servers.NAME] max_reply_bytes``; the
    connection was reset (the server is restarted on the next call)."""
    DISK_FULL = "disk_full"
    """The file system is full (ENOSPC); nothing was changed."""
    UNSUPPORTED_MEDIA = "unsupported_media"
    """A file is not in a media format the tool reads (``view_image`` of a non-image)."""
    HISTORY_UNAVAILABLE = "history_unavailable"
    """The workspace history store cannot be used (off, git missing, corrupt, full or
    unwritable); the message says why. Writes are never blocked by it."""
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"
    """A command should run in a sandbox mode that nothing on this machine can enforce; it
    was not run (the message names the cause and the fix: ``octos-tools sandbox check``)."""
    FILE_SIZE_LIMIT = "file_size_limit"
    """A write would pass the largest file this process may write (EFBIG: the
    ``RLIMIT_FSIZE`` resource limit, ``ulimit -f``, or the file system's maximum file
    size); nothing was changed."""
    QUOTA_EXCEEDED = "quota_exceeded"
    """The user's disk quota (blocks or inodes) is used up (EDQUOT); nothing was changed."""
    READ_ONLY_FILESYSTEM = "read_only_filesystem"
    """The path is on a file system mounted read-only (EROFS); nothing can be written
    there whatever the permission bits say."""

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value


class OctosToolsError(Exception):
    """Base class of every exception raised by octos-tools."""


class ToolError(OctosToolsError):
    """A typed failure of a tool call, meant for the model.

    Raised inside a tool (or by the registry's own checks); the registry converts it into a
    ``ToolResult(success=False)`` whose ``structured_metadata["error"]`` is
    ``{"kind": kind.value, "message": message}`` plus any ``details``.

    Args:
        kind: the :class:`ErrorKind` (or its wire string).
        message: a sentence for the model: what went wrong and, when known, how to fix it.
        details: optional JSON-serialisable extras merged into ``structured_metadata``.
    """

    def __init__(self, kind: ErrorKind | str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.kind = ErrorKind(kind)
        self.message = message
        self.details = details

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind.value!r}, {self.message!r})"


class PathError(ToolError):
    """A path was refused (outside the workspace, a symlink, NUL byte) or is unusable."""


class ArgumentError(ToolError):
    """Tool arguments were too large, not valid JSON, or did not match the schema.

    Argument errors never cancel sibling calls in a batch (:mod:`octos_tools.execution`).
    """


class ConfigError(OctosToolsError):
    """A configuration file or value is invalid; the message names the file and the path."""
