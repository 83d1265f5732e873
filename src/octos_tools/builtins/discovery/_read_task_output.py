"""``read_task_output``: read a background (spawn-only) task's output in pieces.

Modes ``head``, ``tail``, ``grep``, ``line_range`` and ``file``: 1–500 lines, at most
:data:`MAX_OUTPUT_BYTES` bytes of UTF-8 (cut on a character boundary), ``tail`` read
backwards from the end so a huge log is never read whole, a handle of another session
refused, and ``file`` mode limited to the task's recorded output files, opened through the
:class:`~octos_tools.workspace.Workspace` (no symlink followed, nothing outside the root).
Limits follow octos's ``read_task_output`` (``crates/octos-agent/src/tools``: 50 lines by
default, 500 at most, 4 KiB per read, the last 1 MiB for ``tail``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, BinaryIO, ClassVar, Literal

from pydantic import Field, ValidationError

from ...context import ToolContext
from ...errors import ErrorKind, ToolError
from ...tasks import TaskRecord
from ...tool_types import ConcurrencyClass, ToolResult
from ...typed import ToolArgs, TypedTool, format_validation_error
from ._catalog_view import registry_of

__all__ = ["DEFAULT_LINES", "MAX_LINES", "MAX_OUTPUT_BYTES", "ReadTaskOutputTool"]

DEFAULT_LINES = 50
"""Lines returned by ``head`` / ``tail`` when ``lines`` is not given (octos)."""
MAX_LINES = 500
"""Most lines of one read (octos: ``lines`` and ``line_range`` span clamp at 500)."""
MAX_OUTPUT_BYTES = 4096
"""Output cap of one read, in UTF-8 bytes, marker included (octos: 4 KiB)."""
DEFAULT_MAX_MATCHES = 20
MAX_MATCHES = 100
_TRUNCATED = "\n…[truncated]"
_CHUNK = 64 * 1024
_MAX_LINE_SCAN = 64 * 1024
"""Bytes of one line kept for matching and display; the rest of a longer line is skipped."""
_MAX_TAIL_SCAN = 1024 * 1024
"""``tail`` reads at most this many bytes back from the end (octos: the last 1 MiB)."""
_READ_MODES = ("head", "tail", "grep", "line_range", "file")


def _cap(text: str, limit: int = MAX_OUTPUT_BYTES) -> tuple[str, bool]:
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text, False
    room = limit - len(_TRUNCATED.encode("utf-8"))
    return data[:room].decode("utf-8", "ignore") + _TRUNCATED, True


def _iter_lines(fh: BinaryIO) -> Iterator[bytes]:
    """Lines of ``fh`` without their ``\\n``, each cut to :data:`_MAX_LINE_SCAN` bytes,
    read in chunks so a huge line never sits in memory whole."""
    pending = bytearray()
    overflow = False
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            break
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            piece = chunk[start:] if nl < 0 else chunk[start:nl]
            if not overflow:
                pending += piece[: _MAX_LINE_SCAN - len(pending)]
                overflow = len(pending) >= _MAX_LINE_SCAN
            if nl < 0:
                break
            yield bytes(pending)
            pending.clear()
            overflow = False
            start = nl + 1
    if pending:
        yield bytes(pending)


def _decode(line: bytes) -> str:
    return line.decode("utf-8", "replace").rstrip("\r")


def _head(fh: BinaryIO, lines: int) -> str:
    out: list[str] = []
    size = 0
    for raw in _iter_lines(fh):
        out.append(_decode(raw))
        size += len(raw) + 1
        if len(out) >= lines or size > MAX_OUTPUT_BYTES:
            break
    return "\n".join(out)


def _tail(fh: BinaryIO, lines: int) -> str:
    """The last ``lines`` lines, reading backwards in chunks from the end (at most
    :data:`_MAX_TAIL_SCAN` bytes, and no more than needed for the lines or the cap)."""
    end = fh.seek(0, os.SEEK_END)
    if end == 0:
        return ""
    fh.seek(end - 1)
    trailing_newline = fh.read(1) == b"\n"
    stop = end - 1 if trailing_newline else end
    data = b""
    pos = stop
    budget = min(_MAX_TAIL_SCAN, MAX_OUTPUT_BYTES * 4 + _CHUNK)
    while pos > 0 and data.count(b"\n") < lines and stop - pos < budget:
        step = min(_CHUNK, pos)
        pos -= step
        fh.seek(pos)
        data = fh.read(step) + data
    parts = data.split(b"\n")
    if pos > 0 and len(parts) > lines:
        parts = parts[1:]  # first piece may be a partial line
    kept = parts[-lines:]
    text = "\n".join(_decode(p) for p in kept)
    data_bytes = text.encode("utf-8", "replace")
    if len(data_bytes) > MAX_OUTPUT_BYTES:
        # keep the end, which is what tail is for, cut on a character boundary
        room = MAX_OUTPUT_BYTES - len(_TRUNCATED.encode("utf-8"))
        text = "…[truncated]\n" + data_bytes[-(room):].decode("utf-8", "ignore")
    return text


def _grep(fh: BinaryIO, pattern: str, max_matches: int) -> str:
    needle = pattern.encode("utf-8")
    hits: list[str] = []
    for number, raw in enumerate(_iter_lines(fh), start=1):
        if needle in raw:
            hits.append(f"{number}:{_decode(raw)}")
            if len(hits) >= max_matches:
                break
    if not hits:
        return f'(no matches for "{pattern}")'
    return "\n".join(hits)


def _line_range(fh: BinaryIO, start: int, end: int) -> str:
    out: list[str] = []
    size = 0
    for number, raw in enumerate(_iter_lines(fh), start=1):
        if number < start:
            continue
        if number > end:
            break
        out.append(_decode(raw))
        size += len(raw) + 1
        if size > MAX_OUTPUT_BYTES:
            break
    return "\n".join(out)


_ReadMode = Literal["head", "tail", "grep", "line_range", "file"]


class _Mode(ToolArgs):
    kind: _ReadMode
    lines: int | None = Field(None, description="head/tail: 1-500 (default 50)")
    pattern: str | None = Field(None, description="grep: plain text")
    max_matches: int | None = Field(None, description="grep: 1-100 (default 20)")
    start: int | None = Field(None, description="line_range: 1-based")
    end: int | None = Field(None, description="line_range: inclusive")
    path: str | None = Field(None, description="file: a task output file")
    mode: dict[str, Any] | None = Field(
        None, description="file: how to read it (a non-file mode; default head)"
    )


class _LineMode(ToolArgs):
    """The inner mode of ``file``: a head / tail / grep / line_range mode."""

    kind: _ReadMode
    lines: int | None = None
    pattern: str | None = None
    max_matches: int | None = None
    start: int | None = None
    end: int | None = None


class _ReadArgs(ToolArgs):
    task_handle: str = Field(min_length=1, max_length=200, description="The task's handle.")
    mode: _Mode | None = Field(None, description="How to read it (default: the head).")


def _read_stream(fh: BinaryIO, mode: _Mode | _LineMode) -> str:
    """Apply a ``head`` / ``tail`` / ``grep`` / ``line_range`` mode to an open file.

    Raises:
        ToolError: ``invalid_arguments`` for a bad mode.
    """
    kind = mode.kind
    if kind in ("head", "tail"):
        count = DEFAULT_LINES if mode.lines is None else max(1, min(MAX_LINES, mode.lines))
        return _head(fh, count) if kind == "head" else _tail(fh, count)
    if kind == "grep":
        if not mode.pattern:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "grep mode needs a non-empty `pattern` string"
            )
        limit = mode.max_matches
        count = DEFAULT_MAX_MATCHES if limit is None else max(1, min(MAX_MATCHES, limit))
        return _grep(fh, mode.pattern, count)
    if kind == "line_range":
        start, end = mode.start, mode.end
        if start is None or end is None:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "line_range mode needs `start` and `end` (1-based)"
            )
        if start < 1 or end < 1:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "line numbers start at 1")
        if end < start:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, f"end line {end} is before start line {start}"
            )
        if end - start + 1 > MAX_LINES:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"line range {start}-{end} spans {end - start + 1} lines; read at most "
                f"{MAX_LINES} at a time",
            )
        return _line_range(fh, start, end)
    raise ToolError(
        ErrorKind.INVALID_ARGUMENTS,
        "file mode cannot be nested in file mode (the inner mode says how to read the file)",
    )


class ReadTaskOutputTool(TypedTool):
    """``read_task_output {task_handle, mode}`` (octos's tool of the same name).

    ``mode`` defaults to ``{"kind": "head", "lines": 50}``. Kinds: ``head`` / ``tail``
    (``lines`` 1–500), ``grep`` (plain substring ``pattern``, ``max_matches`` 1–100, hits
    as ``<line>:<text>``), ``line_range`` (``start``..``end`` inclusive, 1-based, at most
    500 lines) and ``file`` (``path`` of one of the task's recorded output files, read with
    an inner ``mode``, default head 50). Output is at most 4 KiB of UTF-8.

    Errors: ``not_found`` (unknown handle; file mode before the task recorded outputs),
    ``permission_denied`` (the task belongs to another session; a path that is not one of
    the task's output files), ``invalid_arguments`` (a bad mode), and the path kinds of the
    :class:`~octos_tools.workspace.Workspace` for ``file`` mode.
    """

    name = "read_task_output"
    title = "Read background task output"
    description = (
        "Read the output of a background task (the task_handle returned by a spawn-only "
        "tool) in small pieces: mode.kind head/tail (lines 1-500), grep (pattern), "
        "line_range (start, end) or file (path of one of the task's output files, with an "
        "inner mode). At most 4 KiB per read."
    )
    Args: ClassVar[type[ToolArgs]] = _ReadArgs
    tags = ("gateway",)
    concurrency_class = ConcurrencyClass.SAFE

    async def run(self, args: Any, ctx: ToolContext | None) -> ToolResult:
        """Read a piece of a task's output (see the class docstring).

        Raises:
            ToolError: as listed in the class docstring.
        """
        registry = registry_of(ctx)
        assert ctx is not None  # registry_of raised otherwise
        handle: str = args.task_handle
        record = registry.supervisor.get(handle)
        if record is None:
            raise ToolError(ErrorKind.NOT_FOUND, f"no task with handle {handle!r}")
        if record.session_key is not None and record.session_key != ctx.session_key:
            raise ToolError(
                ErrorKind.PERMISSION_DENIED,
                f"task {handle!r} belongs to another session and cannot be read from this one",
            )
        mode: _Mode = args.mode or _Mode.model_validate({"kind": "head", "lines": DEFAULT_LINES})
        if mode.kind == "file":
            text = self._read_file(ctx, record, mode)
        else:
            with record.output_path.open("rb") as fh:
                text = _read_stream(fh, mode)
        if not text:
            if not record.terminal:
                text = "(no output yet; the task is still running)"
            elif mode.kind == "line_range":
                text = "(no lines in that range; the output is shorter)"
            else:
                text = "(no output)"
        text, truncated = _cap(text)
        return ToolResult.ok(
            text,
            structured_metadata={
                "task_handle": record.id,
                "status": record.status.value,
                "mode": mode.kind,
                "truncated": truncated,
                "output_files": list(record.output_files),
            },
        )

    def _read_file(self, ctx: ToolContext, record: TaskRecord, mode: _Mode) -> str:
        workspace = ctx.workspace
        if workspace is None:
            raise ToolError(
                ErrorKind.NOT_CONFIGURED, "file mode needs a workspace and this call has none"
            )
        path = mode.path
        if not path:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "file mode needs a `path`")
        if not record.output_files:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                "this task has not recorded any output files (yet); read its log with "
                "head, tail or grep, or wait until it finishes",
            )
        allowed: dict[str, str] = {}
        for declared in record.output_files:
            try:
                allowed[workspace.relpath(declared)] = declared
            except ToolError:
                continue  # an output file outside the workspace is not readable here
        rel = workspace.relpath(path)
        if rel not in allowed:
            raise ToolError(
                ErrorKind.PERMISSION_DENIED,
                f"{path!r} is not one of the task's output files; allowed: "
                f"{', '.join(sorted(allowed)) or '(none inside the workspace)'}",
            )
        inner_raw = mode.mode or {"kind": "head", "lines": DEFAULT_LINES}
        try:
            inner = _LineMode.model_validate(inner_raw)
        except ValidationError as exc:
            error = format_validation_error(exc, self.name)
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, f"file mode's inner `mode`: {error}"
            ) from None
        with workspace.open_read(rel) as fh:
            return _read_stream(fh, inner)
