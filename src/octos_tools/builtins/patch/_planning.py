"""Planning a parsed patch in memory: every file change worked out before anything is
written.

Each path is resolved by the workspace (``path_outside_workspace`` for one that leaves it,
``..`` and absolute paths inside it accepted as for every other tool); nothing under ``.git``
is changed. An overlay tracks the workspace as the patch sees it, so later operations see
earlier ones. As in Codex, Add and Move overwrite an existing regular file (conformance
scenarios 010 and 011); the overwritten content is kept in :attr:`PlannedFile.replaced` so the
result can show it. A moved file keeps its permission bits; an added file over an existing
one keeps the existing file's bits; a new file gets the default.
"""

from __future__ import annotations

import stat as stat_mod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ...errors import ErrorKind, PathError, ToolError
from ...workspace import FileChange
from ...workspace import text as textcodec
from ._grammar import AddFile, DeleteFile, PatchOp, UpdateFile
from ._matching import apply_hunks

if TYPE_CHECKING:
    from ...workspace import Workspace

__all__ = ["PlannedFile", "plan_patch"]


@dataclass
class PlannedFile:
    """One file operation of the patch.

    Attributes:
        op: ``add``, ``update``, ``delete`` or ``move``.
        path: the path written or deleted (the destination of a move).
        source: the old path of a move, else ``None``.
        before / after: decoded text before and after (``None``: absent or deleted). For a
            move, ``before`` is the source's text.
        replaced: the text of a file that was at ``path`` and is overwritten by an Add or a
            Move (``None`` when nothing was overwritten; ``""`` for a binary file).
    """

    op: Literal["add", "update", "delete", "move"]
    path: str
    source: str | None
    before: str | None
    after: str | None
    replaced: str | None = None


class _Overlay:
    """The workspace as the patch sees it while it is planned (nothing is written)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.disk: dict[str, bytes | None] = {}
        self.now: dict[str, bytes | None] = {}
        self.modes: dict[str, int | None] = {}  # explicit bits for a written path

    def read(self, path: str) -> bytes | None:
        if path in self.now:
            return self.now[path]
        if path not in self.disk:
            try:
                self.disk[path] = self.ws.read_bytes(path)
            except PathError as exc:
                if exc.kind is not ErrorKind.NOT_FOUND:
                    raise
                self.disk[path] = None
        return self.disk[path]

    def mode(self, path: str) -> int | None:
        """The permission bits ``path`` has in the overlay (``None``: default bits)."""
        if path in self.modes:
            return self.modes[path]
        if path not in self.now and self.read(path) is not None:
            try:
                return stat_mod.S_IMODE(self.ws.stat(path).st_mode)
            except PathError:
                return None
        return None

    def write(self, path: str, data: bytes | None) -> None:
        self.read(path)
        self.now[path] = data
        if data is None:
            self.modes.pop(path, None)

    def changes(self) -> list[FileChange]:
        return [
            FileChange(p, d, self.modes.get(p))
            for p, d in self.now.items()
            if d != self.disk.get(p) or (d is not None and p in self.modes)
        ]


def _label(op: PatchOp) -> str:
    if isinstance(op, AddFile):
        return f"add {op.path}"
    if isinstance(op, DeleteFile):
        return f"delete {op.path}"
    return f"update {op.path}" + (f" -> {op.move_to}" if op.move_to else "")


def _decode(data: bytes, path: str) -> textcodec.DecodedText:
    if textcodec.is_binary(data):
        raise ToolError(
            ErrorKind.BINARY_FILE, f"{path} is a binary file ({len(data)} bytes); not patched"
        )
    return textcodec.decode(data)


def _resolve(ws: Workspace, path: str) -> str:
    """The workspace-relative form of a patch path.

    Raises:
        PathError: ``path_outside_workspace`` and the other path kinds.
        ToolError: ``invalid_patch`` for the root or anything under ``.git``.
    """
    rel = ws.relpath(path)
    if rel == ".":
        raise ToolError(ErrorKind.INVALID_PATCH, f"{path!r} names the workspace root, not a file")
    if any(p.casefold() == ".git" for p in rel.split("/")):
        raise ToolError(
            ErrorKind.INVALID_PATCH, f"apply_patch never changes anything under .git: {path!r}"
        )
    return rel


def plan_patch(ws: Workspace, ops: Sequence[PatchOp]) -> tuple[list[FileChange], list[PlannedFile]]:
    """Work out every file change of a parsed patch, in memory.

    Args:
        ws: the workspace (read only here).
        ops: the operations from :func:`parse_patch`; their paths are replaced by their
            workspace-relative forms.

    Returns:
        ``(changes for Workspace.apply_changes, per-operation summaries)``.

    Raises:
        ToolError: the first problem, as ``section N (label, patch line L): …``, with the
            kind of the problem (``path_outside_workspace`` for a path leaving the
            workspace); nothing is written.
    """
    overlay = _Overlay(ws)
    planned: list[PlannedFile] = []
    for n, op in enumerate(ops, 1):
        try:
            op.path = _resolve(ws, op.path)
            if isinstance(op, UpdateFile) and op.move_to is not None:
                op.move_to = _resolve(ws, op.move_to)
            planned.append(_plan_one(overlay, op))
        except ToolError as exc:
            raise ToolError(
                exc.kind,
                f"section {n} ({_label(op)}, patch line {op.line}): {exc.message}. "
                "No file was changed.",
                **exc.details,
            ) from None
    return overlay.changes(), planned


def _text_of(data: bytes | None) -> str | None:
    if data is None:
        return None
    return "" if textcodec.is_binary(data) else textcodec.display(textcodec.decode(data).text)


def _plan_one(overlay: _Overlay, op: PatchOp) -> PlannedFile:
    if isinstance(op, AddFile):
        old = overlay.read(op.path)
        new_text = "".join(line + "\n" for line in op.lines)
        overlay.write(op.path, new_text.encode("utf-8"))
        before = _text_of(old)
        return PlannedFile("add", op.path, None, before, new_text, replaced=before)
    if isinstance(op, DeleteFile):
        old = overlay.read(op.path)
        if old is None:
            raise ToolError(ErrorKind.NOT_FOUND, f"cannot delete {op.path}: no such file")
        overlay.write(op.path, None)
        return PlannedFile("delete", op.path, None, _text_of(old), None)
    old = overlay.read(op.path)
    if old is None:
        raise ToolError(ErrorKind.NOT_FOUND, f"cannot update {op.path}: no such file")
    doc = _decode(old, op.path)
    new_text = apply_hunks(doc.text, op.hunks, op.path) if op.hunks else doc.text
    try:
        new = doc.encode(new_text)
    except UnicodeEncodeError as exc:
        raise ToolError(
            ErrorKind.INVALID_PATCH,
            f"the new text of {op.path} cannot be written as {doc.label}: {exc.reason}",
        ) from None
    before = textcodec.display(doc.text)
    after = textcodec.display(new_text)
    if op.move_to is None or op.move_to == op.path:
        overlay.write(op.path, new)
        return PlannedFile("update", op.path, None, before, after)
    replaced = _text_of(overlay.read(op.move_to))  # raises for a directory, symlink, bad parent
    mode = overlay.mode(op.path)
    overlay.write(op.path, None)
    overlay.write(op.move_to, new)
    overlay.modes[op.move_to] = mode
    return PlannedFile("move", op.move_to, op.path, before, after, replaced=replaced)
