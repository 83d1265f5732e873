"""The apply_patch grammar: operations, leniencies, errors naming the line."""

from __future__ import annotations

import pytest

from octos_tools.builtins.patch import (
    AddFile,
    DeleteFile,
    UpdateFile,
    parse_patch,
)
from octos_tools.errors import ErrorKind, ToolError

from ._patch_helpers import patch

# ----------------------------------------------------------------------------- grammar


def test_parse_all_operations() -> None:
    ops = parse_patch(
        patch(
            "*** Add File: a/new.txt",
            "+one",
            "+two",
            "*** Delete File: old.txt",
            "*** Update File: src/x.py",
            "*** Move to: src/y.py",
            "@@ def f():",
            " a",
            "-b",
            "+c",
            "*** End of File",
        )
    )
    assert isinstance(ops[0], AddFile) and ops[0].lines == ["one", "two"]
    assert isinstance(ops[1], DeleteFile) and ops[1].path == "old.txt"
    up = ops[2]
    assert isinstance(up, UpdateFile)
    assert up.move_to == "src/y.py"
    assert up.hunks[0].anchor == "def f():"
    assert up.hunks[0].lines == [(" ", "a"), ("-", "b"), ("+", "c")]
    assert up.hunks[0].eof


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("", 1, "empty"),
        ("*** Add File: a\n+x\n*** End Patch\n", 1, "must start with"),
        ("*** Begin Patch\n*** Add File: a\n+x\n", 3, "must end with"),
        ("*** Begin Patch\n*** End Patch\n", 2, "no file operations"),
        ("*** Begin Patch\n*** Frobnicate File: a\n*** End Patch\n", 2, "unrecognised"),
        ("*** Begin Patch\n*** Update File: a\n*** End Patch\n", 2, "no hunks"),
        ("*** Begin Patch\n*** Add File: a\nno plus\n*** End Patch\n", 3, "start with '+'"),
        ("*** Begin Patch\n*** Add File: \n*** End Patch\n", 2, "missing path"),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** Move to: b\n*** End Patch\n",
            5,
            "Move to",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** End of File\n+y\n*** End Patch\n",
            6,
            "End of File",
        ),
        ("*** Begin Patch\n*** Update File: a\n@@\nbogus\n*** End Patch\n", 4, "unexpected"),
        ("*** Begin Patch\nstray\n*** End Patch\n", 2, "outside"),
        ("*** End Patch\n*** Begin Patch\n*** Add File: s\n+x\n*** End Patch\n", 1, "start"),
        ("*** Begin Patch\n*** Add File: s\n+x\n*** End Patch\nmore\n", 5, "must end"),
        ("*** Begin Patch\n*** Update File: a\n@@\n*** End Patch\n", 3, "no lines"),
    ],
)
def test_grammar_errors_name_the_line(text: str, line: int, fragment: str) -> None:
    with pytest.raises(ToolError) as info:
        parse_patch(text)
    assert info.value.kind is ErrorKind.INVALID_PATCH
    assert info.value.message.startswith(f"line {line}:"), info.value.message
    assert fragment in info.value.message


def test_leniencies_crlf_padding_heredoc_and_classic_headers() -> None:
    crlf = "*** Begin Patch\r\n  *** Update File: a.txt\r\n@@ -1,2 +1,2 @@ def f\r\n-x\r\n+y\r\n"
    ops = parse_patch(" " + crlf + "*** End Patch \r\n\r\n")
    up = ops[0]
    assert isinstance(up, UpdateFile) and up.hunks[0].anchor == "def f"
    assert up.hunks[0].lines == [("-", "x"), ("+", "y")]
    heredoc = "<<'EOF'\n" + patch("*** Add File: h.txt", "+hi") + "EOF\n"
    assert isinstance(parse_patch(heredoc)[0], AddFile)
    # first hunk without @@, "\ No newline" ignored, bare blank line = empty context
    ops = parse_patch(patch("*** Update File: a", " a", "", "-b", "\\ No newline at end of file"))
    up = ops[0]
    assert isinstance(up, UpdateFile)
    assert up.hunks[0].lines == [(" ", "a"), (" ", ""), ("-", "b")]


def test_context_line_looking_like_end_marker_is_context() -> None:
    ops = parse_patch(patch("*** Update File: f", "@@", " *** End Patch", "-x", "+y"))
    up = ops[0]
    assert isinstance(up, UpdateFile)
    assert up.hunks[0].lines[0] == (" ", "*** End Patch")
