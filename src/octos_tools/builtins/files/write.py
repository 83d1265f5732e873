"""``write_file``: create or replace a whole file, atomically."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from ...errors import ErrorKind, ToolError
from ...tool import ConcurrencyClass, JSONObject, ToolResult
from ._common import PATH_DESCRIPTION, FileArgs, FileTool, links_note

if TYPE_CHECKING:
    from ...context import ToolContext

__all__ = ["WriteFileTool"]


class WriteFileTool(FileTool):
    """``write_file {path, content}``: create or replace a file atomically, as UTF-8.

    Missing parent directories are created. A replaced file keeps its permission bits; a new
    one gets the default (``0o666 & ~umask``). Reports the lines and bytes written and sets
    ``file_modified`` to the workspace-relative path; when the old file had other hard links
    the result names those that keep the old content. A full disk is ``disk_full`` and leaves
    the old file intact.

    Source: octos ``write_file``; the atomic replace is ours.
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

        def work() -> str:
            outcome = ws.write_bytes(path, data)
            verb = "Created" if outcome.created else "Replaced"
            lines = 0 if not content else content.count("\n") + (not content.endswith("\n"))
            meta.update({"lines": lines, "bytes": len(data)})
            text = f"{verb} {rel}: wrote {lines:,} line(s), {len(data):,} bytes."
            note = links_note(ws, outcome, meta)
            return f"{text}\n{note}" if note else text

        text = await self._in_thread(work)
        return ToolResult.ok(text, file_modified=rel, structured_metadata=meta)
