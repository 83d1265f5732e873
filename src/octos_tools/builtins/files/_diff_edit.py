"""``diff_edit``: apply a unified diff to one file, all hunks or none."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import Field

from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...workspace import text as textcodec
from ._editing import commit_edit, encode_edit, load_for_edit
from ._file_tool import PATH_DESCRIPTION, FileArgs, FileTool, links_note, short_diff
from ._seen import SeenFiles, seen_files

if TYPE_CHECKING:
    from ...context import ToolContext
    from ...workspace import Workspace

__all__ = ["DiffEditTool", "parse_unified_diff"]


_HUNK_RE = re.compile(r"^@@\s*-(\d+)(?:,(\d+))?(?:\s+\+(\d+)(?:,(\d+))?)?\s*@@")
_FUZZ = (0, -1, 1, -2, 2, -3, 3)


@dataclass
class _Hunk:
    header: str
    old_start: int  # 1-based
    ops: list[tuple[str, str]]  # (" " | "-" | "+", text)

    @property
    def pattern(self) -> list[str]:
        return [t for op, t in self.ops if op != "+"]


def parse_unified_diff(diff: str) -> list[_Hunk]:
    """Hunks of a unified diff (lines before the first ``@@`` are ignored).

    Raises:
        ToolError: ``invalid_patch`` for a malformed hunk header or no hunk at all.
    """
    hunks: list[_Hunk] = []
    for line in textcodec.to_lf(diff).split("\n"):
        if line.startswith("@@"):
            m = _HUNK_RE.match(line)
            if not m:
                raise ToolError(
                    ErrorKind.INVALID_PATCH,
                    f"malformed hunk header {line[:80]!r}; expected '@@ -N,M +N,M @@'",
                )
            hunks.append(_Hunk(line, int(m.group(1)), []))
            continue
        if not hunks:
            continue
        if line.startswith(("\\", "diff ", "index ")):
            continue
        if line.startswith("-"):
            hunks[-1].ops.append(("-", line[1:]))
        elif line.startswith("+"):
            hunks[-1].ops.append(("+", line[1:]))
        elif line.startswith(" "):
            hunks[-1].ops.append((" ", line[1:]))
        else:
            hunks[-1].ops.append((" ", line))
    for h in hunks:  # a trailing empty line from the final "\n" is not context
        while h.ops and h.ops[-1] == (" ", ""):
            h.ops.pop()
    if not hunks:
        raise ToolError(
            ErrorKind.INVALID_PATCH, "the diff has no hunks; each starts with '@@ -N,M +N,M @@'"
        )
    return hunks


def _matches_at(lines: list[str], pattern: list[str], at: int) -> bool:
    if at < 0 or at + len(pattern) > len(lines):
        return False
    return all(lines[at + i].rstrip() == p.rstrip() for i, p in enumerate(pattern))


class DiffEditTool(FileTool):
    """``diff_edit {path, diff}``: apply a unified diff to one file, all hunks or none.

    Each hunk's context and removed lines are looked for at its ``-N`` line, then up to 3
    lines above and below (trailing whitespace ignored). Context lines keep the file's own
    bytes; added lines get the file's dominant line ending; the final newline is kept as it
    was, and so are the permission bits. Errors: ``invalid_patch`` (bad header, no hunks,
    overlapping hunks), ``patch_conflict`` (a hunk does not match), ``no_change``,
    ``binary_file``, ``disk_full``, path kinds.

    Source: octos ``diff_edit``, with line endings and encoding kept.
    """

    name = "diff_edit"
    title = "Apply unified diff"
    description = (
        "Apply a unified diff ('@@ -N,M +N,M @@' hunks) to one file. Hunks may be off by up "
        "to 3 lines. Every hunk applies or nothing changes."
    )
    concurrency_class = ConcurrencyClass.EXCLUSIVE

    class Args(FileArgs):
        path: str = Field(description=PATH_DESCRIPTION)
        diff: str = Field(description="Unified diff text for this file.")

    async def run(self, args: DiffEditTool.Args, ctx: ToolContext | None) -> ToolResult:
        path = args.path
        ws, rel = self._write_target(ctx, path)
        hunks = parse_unified_diff(args.diff)
        seen = seen_files(ctx)

        def locked() -> ToolResult:
            with ws.lock_paths([rel]):
                return self._apply(ws, path, rel, hunks, seen)

        return await self._in_thread(locked)

    def _apply(
        self, ws: Workspace, path: str, rel: str, hunks: list[_Hunk], seen: SeenFiles | None
    ) -> ToolResult:
        """Apply the hunks; the caller holds the file's writer lock."""
        loaded = load_for_edit(ws, path)
        if seen is not None:
            seen.check_stale(rel, loaded.data, loaded.doc.text)
        doc = loaded.doc
        lines = textcodec.split_lines(doc.text, keepends=True)
        eol = textcodec.dominant_eol(doc.text)
        located: list[tuple[int, int, int, _Hunk]] = []  # (at, length, index, hunk)
        notes: list[str] = []
        for k, h in enumerate(hunks, 1):
            pat = h.pattern
            if not pat:
                at = min(max(h.old_start, 0), len(lines))
                located.append((at, 0, k, h))
                continue
            target = max(h.old_start - 1, 0)
            for off in _FUZZ:
                if _matches_at(lines, pat, target + off):
                    if off:
                        where = "below" if off > 0 else "above"
                        notes.append(f"hunk {k} applied {abs(off)} line(s) {where} its header")
                    located.append((target + off, len(pat), k, h))
                    break
            else:
                want = "\n".join(f"  {x}" for x in pat[:3])
                lo = max(target - 1, 0)
                have = "\n".join(
                    f"  {i + 1}: {textcodec.display(lines[i]).rstrip()}"
                    for i in range(lo, min(lo + 3, len(lines)))
                )
                raise ToolError(
                    ErrorKind.PATCH_CONFLICT,
                    f"hunk {k} ({h.header[:60]}) does not match {rel} at line {h.old_start} "
                    f"or within 3 lines of it; nothing was changed. Expected:\n{want}\n"
                    f"The file has:\n{have or '  (end of file)'}",
                    hunk=k,
                )
        located.sort(key=lambda x: (x[0], x[2]))
        for (a_at, a_len, a_k, _), (b_at, _, b_k, _) in itertools.pairwise(located):
            if a_at + a_len > b_at:
                raise ToolError(
                    ErrorKind.INVALID_PATCH,
                    f"hunks {a_k} and {b_k} overlap in {rel}; nothing was changed",
                )
        out = list(lines)
        for at, length, _, h in sorted(located, key=lambda x: -x[0]):
            region = lines[at : at + length]
            repl: list[str] = []
            i = 0
            for op, t in h.ops:
                if op == "+":
                    repl.append(t + eol)
                elif op == " ":
                    repl.append(region[i])
                    i += 1
                else:
                    i += 1
            out[at : at + length] = repl
        for i in range(len(out) - 1):  # a line followed by another must end with a break
            if not out[i].endswith(("\n", "\r")):
                out[i] += eol
        new_text = "".join(out)
        had_final = doc.text.endswith(("\n", "\r"))
        if doc.text and not had_final and new_text.endswith(("\n", "\r")):
            new_text = new_text[: -2 if new_text.endswith("\r\n") else -1]
        elif had_final and new_text and not new_text.endswith(("\n", "\r")):
            new_text += eol
        new_data = encode_edit(rel, doc, new_text)
        if new_data == loaded.data:
            raise ToolError(ErrorKind.NO_CHANGE, f"the diff leaves {rel} unchanged")
        outcome = commit_edit(ws, path, loaded, new_data)
        if seen is not None:
            seen.note_written(rel, new_data, new_text)
        body = f"Applied {len(hunks)} hunk(s) to {rel}."
        if notes:
            body += " " + "; ".join(notes) + "."
        meta: JSONObject = {"path": rel, "hunks": len(hunks), "fuzz": notes}
        note = links_note(ws, outcome, meta)
        if note:
            body += f"\n{note}"
        return ToolResult.ok(
            body + "\n\n" + short_diff(rel, doc.text, new_text),
            file_modified=rel,
            structured_metadata=meta,
        )
