"""The Codex patch grammar: ``parse_patch`` turns patch text into operations.

Grammar (Codex ``codex-rs/apply-patch/apply_patch_tool_instructions.md`` and its
conformance scenarios)::

    *** Begin Patch
    *** Add File: path            every following line starts with "+"
    *** Delete File: path         a complete operation by itself
    *** Update File: path
    *** Move to: new/path         optional, directly after Update
    @@ [anchor]                   a hunk; "@@ -a,b +c,d @@ text" reduces to "text";
    @@ [anchor]                   stacked "@@" lines narrow the search step by step
                                  (class, then method), each found after the last
     context / -removed / +added  a bare empty line is an empty context line
    *** End of File               optional: the hunk sits at the end of the file
    *** End Patch

Leniencies, all from Codex: whitespace around the markers and before operation headers; CRLF
patch text; a ``<<'EOF'`` heredoc wrapper; the first hunk may omit its ``@@``; a
``\\ No newline at end of file`` line is ignored. The envelope is found by grammar: the first
non-blank line must be ``*** Begin Patch`` and the last ``*** End Patch``, so a context line
`` *** End Patch`` inside a hunk is ordinary text. Anything else is ``invalid_patch`` naming the
1-based line of the patch text.

Paths are kept as written (backslashes read as ``/``, empty and ``.`` components dropped);
whether they stay inside the workspace is decided when the patch is planned
(``path_outside_workspace``, as for every other tool).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...errors import ErrorKind, ToolError

__all__ = [
    "BEGIN",
    "END",
    "END_OF_FILE",
    "AddFile",
    "DeleteFile",
    "Hunk",
    "PatchOp",
    "UpdateFile",
    "parse_patch",
]

BEGIN = "*** Begin Patch"
END = "*** End Patch"
END_OF_FILE = "*** End of File"
_HEADERS = {
    "*** Add File:": "add",
    "*** Delete File:": "delete",
    "*** Update File:": "update",
    "*** Move to:": "move",
}
_HEREDOC = re.compile(r"""^(?:apply_patch\s+)?<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1\s*$""")
_CLASSIC_HUNK = re.compile(r"^@@\s+-\d+(?:,\d+)?\s+\+\d+(?:,\d+)?\s+@@\s?(.*)$")


@dataclass
class Hunk:
    """One ``@@`` hunk of an Update.

    Attributes:
        anchors: the ``@@ anchor`` texts of its stacked ``@@`` lines, in order: each is a
            line found after the one before (Codex ``UpdateFileChunk.context_lines``).
        lines: ``(op, text)`` pairs, op ``" "`` (context), ``"-"`` (remove), ``"+"`` (add).
        eof: ``*** End of File`` followed: the hunk should match at the end of the file.
        line: the 1-based patch line that opened the hunk.
    """

    anchors: list[str] = field(default_factory=list)
    lines: list[tuple[str, str]] = field(default_factory=list)
    eof: bool = False
    line: int = 0

    @property
    def anchor(self) -> str | None:
        """The innermost (last) anchor, or ``None``."""
        return self.anchors[-1] if self.anchors else None

    @property
    def old(self) -> list[str]:
        """Context and removed lines: what must be found in the file."""
        return [t for op, t in self.lines if op != "+"]


@dataclass
class AddFile:
    """``*** Add File``: create (or overwrite) ``path`` with ``lines`` and a final newline."""

    path: str
    lines: list[str]
    line: int


@dataclass
class DeleteFile:
    """``*** Delete File``: remove the regular file ``path``."""

    path: str
    line: int


@dataclass
class UpdateFile:
    """``*** Update File``: apply ``hunks`` to ``path``, then move it to ``move_to``."""

    path: str
    line: int
    move_to: str | None = None
    hunks: list[Hunk] = field(default_factory=list)


PatchOp = AddFile | DeleteFile | UpdateFile


def _bad(line: int, message: str) -> ToolError:
    return ToolError(ErrorKind.INVALID_PATCH, f"line {line}: {message}", line=line)


def _check_path(raw: str, line: int, directive: str) -> str:
    """A patch path tidied (``a//./b`` → ``a/b``, ``\\`` → ``/``); ``..`` and absolute paths
    are kept for the workspace to judge.

    Raises:
        ToolError: ``invalid_patch`` (no path, a NUL byte); ``path_outside_workspace`` for a
            Windows drive path such as ``C:\\x``.
    """
    path = raw.strip()
    if not path:
        raise _bad(line, f"missing path after '{directive}'")
    if "\x00" in path:
        raise _bad(line, "the path contains a NUL byte (\\x00)")
    if re.match(r"^[A-Za-z]:[\\/]", path):
        raise ToolError(
            ErrorKind.PATH_OUTSIDE_WORKSPACE,
            f"line {line}: {path!r} is outside the workspace; use a path relative to it",
            line=line,
        )
    parts = [p for p in re.split(r"[/\\]", path) if p not in ("", ".")]
    if not parts:
        raise _bad(line, f"{path!r} names the workspace root, not a file")
    return ("/" if path.startswith(("/", "\\")) else "") + "/".join(parts)


def _split_patch_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def parse_patch(text: str) -> list[PatchOp]:
    """Parse a Codex patch (grammar in the module docstring).

    Args:
        text: the whole patch, LF or CRLF.

    Returns:
        The operations in patch order. Paths are canonical workspace-relative POSIX paths.

    Raises:
        ToolError: ``invalid_patch`` whose message starts with ``line N:``.
    """
    lines = _split_patch_lines(text)
    nonblank = [i for i, ln in enumerate(lines) if ln.strip()]
    if not nonblank:
        raise _bad(1, f"the patch is empty; it must start with '{BEGIN}'")
    first, last = nonblank[0], nonblank[-1]
    heredoc = _HEREDOC.match(lines[first].strip())
    if heredoc and last > first and lines[last].strip() == heredoc.group(2):
        inner = [i for i in nonblank if first < i < last]
        if not inner:
            raise _bad(first + 1, f"the heredoc holds no patch; it must start with '{BEGIN}'")
        first, last = inner[0], inner[-1]
    if lines[first].strip() != BEGIN:
        raise _bad(first + 1, f"the patch must start with '{BEGIN}', found {lines[first]!r}")
    if last == first or lines[last].strip() != END:
        raise _bad(
            last + 1,
            f"the patch must end with '{END}' (found {lines[last]!r} as its last line)",
        )
    return _Parser(lines, first + 1, last).run()


class _Parser:
    def __init__(self, lines: list[str], start: int, stop: int) -> None:
        self.lines = lines
        self.start = start
        self.stop = stop
        self.ops: list[PatchOp] = []
        self.cur: PatchOp | None = None
        self.hunk: Hunk | None = None
        self.hunk_closed = False  # after *** End of File
        self.blanks = 0  # blank lines not yet known to be content

    def run(self) -> list[PatchOp]:
        for i in range(self.start, self.stop):
            self.line(self.lines[i], i + 1)
        self.finish(self.stop + 1)
        if not self.ops:
            raise _bad(self.stop + 1, "the patch contains no file operations")
        return self.ops

    def finish(self, lineno: int) -> None:
        self.blanks = 0
        cur = self.cur
        self.close_hunk(lineno)
        if isinstance(cur, UpdateFile) and not cur.hunks and cur.move_to is None:
            raise _bad(cur.line, f"'*** Update File: {cur.path}' has no hunks and no Move to")
        if cur is not None:
            self.ops.append(cur)
        self.cur = None

    def close_hunk(self, lineno: int) -> None:
        hunk = self.hunk
        if hunk is not None and not hunk.lines:
            raise _bad(hunk.line, "this hunk has no lines (' ' context, '-' or '+')")
        self.hunk = None
        self.hunk_closed = False

    def line(self, line: str, n: int) -> None:
        cur = self.cur
        stripped = line.strip()
        if not stripped:
            if isinstance(cur, AddFile) or (self.hunk is not None and not self.hunk_closed):
                self.blanks += 1
            return
        if isinstance(cur, UpdateFile) and line.startswith(" "):
            self.body(line, n)
            return
        if stripped.startswith("***"):
            self.directive(stripped, n)
            return
        if isinstance(cur, AddFile):
            if not line.startswith("+"):
                raise _bad(n, f"every line of an added file must start with '+', found {line!r}")
            cur.lines.extend([""] * self.blanks)
            self.blanks = 0
            cur.lines.append(line[1:])
            return
        if isinstance(cur, UpdateFile):
            self.body(line, n)
            return
        raise _bad(n, f"text outside a file operation: {line!r}")

    def directive(self, stripped: str, n: int) -> None:
        if stripped == END_OF_FILE:
            if not isinstance(self.cur, UpdateFile) or self.hunk is None or self.hunk_closed:
                raise _bad(n, f"'{END_OF_FILE}' must follow the lines of an Update hunk")
            self.hunk.eof = True
            self.hunk_closed = True
            self.blanks = 0
            return
        if stripped == END:
            raise _bad(n, f"'{END}' appears before the end of the patch")
        if stripped == BEGIN:
            raise _bad(n, f"a second '{BEGIN}' inside the patch")
        prefix = next((p for p in _HEADERS if stripped.startswith(p)), None)
        if prefix is None:
            raise _bad(n, f"unrecognised or malformed directive {stripped!r}")
        kind = _HEADERS[prefix]
        path = _check_path(stripped[len(prefix) :], n, prefix)
        if kind == "move":
            cur = self.cur
            if not isinstance(cur, UpdateFile) or cur.hunks or self.hunk is not None:
                raise _bad(n, "'*** Move to:' must come right after '*** Update File:'")
            if cur.move_to is not None:
                raise _bad(n, "a second '*** Move to:' for the same file")
            cur.move_to = path
            return
        self.finish(n)
        if kind == "add":
            self.cur = AddFile(path, [], n)
        elif kind == "delete":
            self.cur = DeleteFile(path, n)
        else:
            self.cur = UpdateFile(path, n)

    def body(self, line: str, n: int) -> None:
        cur = self.cur
        assert isinstance(cur, UpdateFile)
        if line.startswith("@@"):
            classic = _CLASSIC_HUNK.match(line.rstrip())
            anchor = (classic.group(1) if classic else line[2:]).strip()
            hunk = self.hunk
            if hunk is not None and not hunk.lines and not self.blanks:
                if anchor:  # a stacked "@@": one more step towards the hunk (Codex)
                    hunk.anchors.append(anchor)
                return
            self.close_hunk(n)
            self.blanks = 0
            self.hunk = Hunk(anchors=[anchor] if anchor else [], line=n)
            cur.hunks.append(self.hunk)
            return
        if line.startswith("\\"):
            return  # "\ No newline at end of file"
        if line[0] not in " -+":
            raise _bad(
                n,
                f"unexpected line in an Update hunk: {line!r}; hunk lines start with ' ' "
                "(context), '-' (remove) or '+' (add), and hunks with '@@'",
            )
        if self.hunk_closed:
            raise _bad(n, f"only '@@', blank lines or a new operation may follow '{END_OF_FILE}'")
        if self.hunk is None:
            if cur.hunks:
                raise _bad(n, "hunk line outside a hunk; start the hunk with '@@'")
            self.hunk = Hunk(line=n)
            cur.hunks.append(self.hunk)
        self.hunk.lines.extend([(" ", "")] * self.blanks)
        self.blanks = 0
        self.hunk.lines.append((line[0], line[1:]))
