"""``edit_file``: replace an exact string in a file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...workspace import text as textcodec
from ._editing import commit_edit, encode_edit, load_for_edit, no_match_hint
from ._file_tool import PATH_DESCRIPTION, FileArgs, FileTool, links_note, short_diff
from ._seen import SeenFiles, seen_files

if TYPE_CHECKING:
    from ...context import ToolContext
    from ...workspace import Workspace

__all__ = ["EditFileTool"]

_INLINE_EDIT_BYTES = 256 << 10
"""Without ``durable_writes``, files up to this size are edited on the event loop: read,
match, stage and rename take less than a worker-thread hop (an Exclusive call runs alone in
its session anyway). Bigger files, and every ``fsync``-ed write, go to a worker thread."""


def _small_and_unsynced(ws: Workspace, path: str) -> bool:
    if ws.durable_writes:
        return False
    try:
        return ws.stat(path).st_size <= _INLINE_EDIT_BYTES
    except (OSError, ToolError):
        return False  # the edit itself reports the problem, in a worker thread


class EditFileTool(FileTool):
    """``edit_file {path, old_string, new_string, replace_all=false}``: exact replacement.

    Occurrences are counted on the file as it is on disk at call time. A line break in
    ``old_string`` matches LF, CRLF or CR in the file; replacement lines get the line ending
    of the text they replace. The encoding, BOM and permission bits are kept and bytes
    outside the edit never change (a file that is not valid UTF-8 keeps its stray bytes; if
    ``old_string`` only matches the file read as Latin-1, the edit is made in Latin-1).

    Errors: ``invalid_arguments`` (empty ``old_string``), ``no_change`` (identical strings),
    ``no_match`` (with a hint saying what differs), ``ambiguous_match`` (count and line
    numbers), ``binary_file``, ``stale_file`` (changed since this session last read or
    wrote it, see :mod:`._seen`), ``disk_full``, and path kinds. The file's writer lock
    (:meth:`Workspace.lock_paths`) is held from the read to the rename, so a concurrent
    writer in another process cannot lose this edit or have its own lost.

    Source: octos ``edit_file``; ``replace_all`` and line-ending handling as in Codex and
    Claude Code style editors.
    """

    name = "edit_file"
    title = "Edit file"
    description = (
        "Replace exact text in a file; old_string must be unique unless replace_all. Keeps "
        "encoding and line endings."
    )
    concurrency_class = ConcurrencyClass.EXCLUSIVE

    class Args(FileArgs):
        path: str = Field(description=PATH_DESCRIPTION)
        old_string: str = Field(description="Exact text to replace.")
        new_string: str = Field(description="Replacement text.")
        replace_all: bool = Field(False, description="Replace all occurrences.")

    async def run(self, args: EditFileTool.Args, ctx: ToolContext | None) -> ToolResult:
        path, old, new = args.path, args.old_string, args.new_string
        ws, rel = self._write_target(ctx, path)
        if not old:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "old_string is empty; give the exact text to replace (use write_file to "
                "create or overwrite a whole file)",
            )
        replace_all = args.replace_all
        seen = seen_files(ctx)
        if _small_and_unsynced(ws, path):
            # on the event loop only when no other writer holds the file's lock
            with ws.lock_paths([rel], blocking=False) as free:
                if free:
                    return self._edit(ws, path, rel, old, new, replace_all, seen)

        def locked() -> ToolResult:
            with ws.lock_paths([rel]):
                return self._edit(ws, path, rel, old, new, replace_all, seen)

        return await self._in_thread(locked)

    def _edit(
        self,
        ws: Workspace,
        path: str,
        rel: str,
        old: str,
        new: str,
        replace_all: bool,
        seen: SeenFiles | None,
    ) -> ToolResult:
        """The edit; the caller holds the file's writer lock."""
        loaded = load_for_edit(ws, path)
        if seen is not None:
            seen.check_stale(rel, loaded.data, loaded.doc.text)
        if old == new:
            raise ToolError(
                ErrorKind.NO_CHANGE,
                "old_string and new_string are identical; the file was not changed",
            )
        doc = loaded.doc
        spans = textcodec.find(doc.text, old)
        if not spans and doc.invalid_offset is not None:
            alt = textcodec.latin1(loaded.data)
            alt_spans = textcodec.find(alt.text, old)
            if alt_spans:
                doc, spans = alt, alt_spans
        if not spans:
            raise ToolError(
                ErrorKind.NO_MATCH,
                f"old_string was not found in {rel}; {no_match_hint(doc.text, old)}",
            )
        if len(spans) > 1 and not replace_all:
            numbers = [textcodec.line_number_at(doc.text, s) for s, _ in spans]
            shown = ", ".join(map(str, numbers[:20])) + (", …" if len(numbers) > 20 else "")
            raise ToolError(
                ErrorKind.AMBIGUOUS_MATCH,
                f"old_string occurs {len(spans)} times in {rel} (lines {shown}); add "
                "surrounding lines to make it unique, or set replace_all to true to replace "
                "every occurrence",
                count=len(spans),
                lines=numbers[:100],
            )
        new_text = textcodec.replace_spans(doc.text, spans, new)
        new_data = encode_edit(rel, doc, new_text)
        if new_data == loaded.data:
            raise ToolError(
                ErrorKind.NO_CHANGE, f"the replacement leaves {rel} unchanged; nothing written"
            )
        outcome = commit_edit(ws, path, loaded, new_data)
        if seen is not None:
            seen.note_written(rel, new_data, new_text if doc is loaded.doc else None)
        n = len(spans)
        diff = short_diff(rel, doc.text, new_text)
        meta: JSONObject = {"path": rel, "replacements": n, "encoding": doc.label}
        note = links_note(ws, outcome, meta)
        head = f"Edited {rel}: replaced {n} occurrence{'s' if n != 1 else ''}."
        if note:
            head += f"\n{note}"
        return ToolResult.ok(f"{head}\n\n{diff}", file_modified=rel, structured_metadata=meta)
