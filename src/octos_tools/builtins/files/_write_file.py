"""``write_file``: create or replace a whole file, atomically."""

from __future__ import annotations

import stat as stat_mod
from typing import TYPE_CHECKING

from pydantic import Field

from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...workspace import text as textcodec
from ._file_tool import MAX_EDIT_BYTES, PATH_DESCRIPTION, FileArgs, FileTool, links_note
from ._seen import seen_files

if TYPE_CHECKING:
    from ...context import ToolContext
    from ...workspace import Workspace
    from ._seen import SeenFiles

__all__ = ["WriteFileTool"]


class WriteFileTool(FileTool):
    """``write_file {path, content}``: create or replace a file atomically, as UTF-8.

    Missing parent directories are created. A replaced file keeps its permission bits; a new
    one gets the default (``0o666 & ~umask``). Reports the lines and bytes written and sets
    ``file_modified`` to the workspace-relative path; when the old file had other hard links
    the result names those that keep the old content. A full disk is ``disk_full`` and leaves
    the old file intact.

    Nothing changes silently: over an existing text file the new content keeps the file's
    byte-order mark (and its UTF-16/32 encoding) unless it starts with U+FEFF itself, and
    the file's CRLF line endings unless it has a CR of its own; the result says what was
    kept (``structured_metadata["kept"]``: ``"bom"``, ``"crlf"``). A file changed since this
    session last read or wrote it is ``stale_file`` (:mod:`._seen`). The file's writer lock
    is held from the read of the old file to the rename.

    Source: octos ``write_file``; the atomic replace and the kept BOM / line endings are
    ours.
    """

    name = "write_file"
    title = "Write file"
    description = (
        "Create a file or replace its whole content (UTF-8); parent folders are created. "
        "To change part of a file prefer edit_file."
    )
    concurrency_class = ConcurrencyClass.EXCLUSIVE

    class Args(FileArgs):
        path: str = Field(description=PATH_DESCRIPTION)
        content: str = Field(description="The complete new content.")

    async def run(self, args: WriteFileTool.Args, ctx: ToolContext | None) -> ToolResult:
        path, content = args.path, args.content
        ws, rel = self._write_target(ctx, path)
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"content holds a character that cannot be written as UTF-8 "
                f"(U+{ord(exc.object[exc.start]):04X} at position {exc.start})",
            ) from None
        meta: JSONObject = {"path": rel}
        seen = seen_files(ctx)

        def work() -> str:
            with ws.lock_paths([rel]):
                out, kept = _keep_format(ws, path, rel, content, data, seen)
                outcome = ws.write_bytes(path, out)
            if seen is not None:
                seen.note_written(rel, out)
            verb = "Created" if outcome.created else "Replaced"
            lines = 0 if not content else content.count("\n") + (not content.endswith("\n"))
            meta.update({"lines": lines, "bytes": len(out)})
            text = f"{verb} {rel}: wrote {lines:,} line(s), {len(out):,} bytes."
            if kept:
                meta["kept"] = kept
                names = {"bom": "byte-order mark", "crlf": "CRLF line endings"}
                what = " and ".join(names[k] for k in kept)
                text += f" Kept the file's {what} (the new content had none of its own)."
            note = links_note(ws, outcome, meta)
            return f"{text}\n{note}" if note else text

        text = await self._in_thread(work)
        return ToolResult.ok(text, file_modified=rel, structured_metadata=meta)


def _keep_format(
    ws: Workspace,
    path: str,
    rel: str,
    content: str,
    data: bytes,
    seen: SeenFiles | None,
) -> tuple[bytes, list[str]]:
    """The bytes to write over the existing file (BOM, encoding and CRLF kept unless the
    content decides) and what was kept; checks the session's stale state first."""
    try:
        st = ws.stat(path)
    except ToolError:
        return data, []
    if st.st_size > MAX_EDIT_BYTES or not stat_mod.S_ISREG(st.st_mode):
        return data, []
    try:
        old = ws.read_bytes(path, max_bytes=MAX_EDIT_BYTES)
    except ToolError:
        return data, []
    if textcodec.is_binary(old, whole=True):
        if seen is not None:
            seen.check_stale(rel, old, None)
        return data, []
    doc = textcodec.decode(old)
    if seen is not None:
        seen.check_stale(rel, old, doc.text)
    kept: list[str] = []
    text = content
    if "\r" not in text and "\n" in text and textcodec.eol_style(doc.text) == "crlf":
        text = text.replace("\n", "\r\n")
        kept.append("crlf")
    if doc.bom and not text.startswith("\ufeff") and doc.invalid_offset is None:
        try:
            encoded = doc.bom + text.encode(doc.codec)
        except UnicodeEncodeError:
            pass  # lone surrogates cannot go to UTF-16/32: written as UTF-8, as given
        else:
            return encoded, ["bom", *kept]
    return (text.encode("utf-8") if kept else data), kept
