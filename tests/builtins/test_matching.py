"""Finding hunks: seek levels, anchors narrowing step by step, order, file ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from octos_tools.builtins.patch import (
    UpdateFile,
    apply_hunks,
    parse_patch,
    seek_sequence,
)
from octos_tools.errors import ErrorKind, ToolError

from ._patch_helpers import _TWO_CLASSES, patch, run

# ----------------------------------------------------------------------------- matching


def test_seek_sequence_levels_and_preference() -> None:
    lines = ["a  ", "  b", "top\u2011level", "a"]
    assert seek_sequence(lines, ["a"], 0) == (3, "exact")  # exact further on beats fuzzy
    assert seek_sequence(lines, ["b"], 0) == (1, "surrounding whitespace ignored")
    assert seek_sequence(lines, ["top-level"], 0) == (2, "typographic punctuation normalised")
    assert seek_sequence(lines, ["zzz"], 0) is None
    with pytest.raises(ToolError) as info:
        seek_sequence(["x ", "x  "], ["x"], 0)
    assert info.value.kind is ErrorKind.AMBIGUOUS_MATCH


def test_seek_sequence_trailing_whitespace_level() -> None:
    assert seek_sequence(["a  "], ["a"], 0) == (0, "trailing whitespace ignored")
    assert seek_sequence(["x", "a \t", "b"], ["a", "b  "], 0) == (1, "trailing whitespace ignored")
    # Leading whitespace is not covered by this level: the next level finds it.
    assert seek_sequence([" a "], ["a"], 0) == (0, "surrounding whitespace ignored")


def test_apply_hunks_keeps_file_bytes_for_context_and_endings() -> None:
    [op] = parse_patch(patch("*** Update File: u", "@@", " top-level", "-v = 1", "+v = 2"))
    assert isinstance(op, UpdateFile)
    assert apply_hunks("top\u2011level\r\nv = 1\r\n", op.hunks) == "top\u2011level\r\nv = 2\r\n"
    # no final newline stays without one
    assert apply_hunks("top-level\nv = 1", op.hunks) == "top-level\nv = 2"


def test_sequential_hunks_on_repeated_blocks() -> None:
    text = "x\nsame\nx\nsame\n"
    [op] = parse_patch(patch("*** Update File: f", "@@", "-same", "+one", "@@", "-same", "+two"))
    assert isinstance(op, UpdateFile)
    assert apply_hunks(text, op.hunks) == "x\none\nx\ntwo\n"


def test_anchor_and_pure_insertion() -> None:
    text = "class A:\n    pass\nclass B:\n    pass\n"
    [op] = parse_patch(patch("*** Update File: f", "@@ class B:", "+    x = 1"))
    assert isinstance(op, UpdateFile)
    assert apply_hunks(text, op.hunks) == "class A:\n    pass\nclass B:\n    x = 1\n    pass\n"
    [op] = parse_patch(patch("*** Update File: f", "@@", "+tail"))
    assert isinstance(op, UpdateFile)
    assert apply_hunks(text, op.hunks).endswith("    pass\ntail\n")
    assert apply_hunks("", op.hunks) == "tail\n"


def test_stacked_anchors_narrow_step_by_step() -> None:
    """Codex: consecutive '@@' lines are searched one after the other (class, then method)."""
    [op] = parse_patch(
        patch(
            "*** Update File: f",
            "@@ class B:",
            "@@     def stop(self):",
            "-        return 1",
            "+        return 2",
            "@@ class B:",  # a later hunk may stack again; each searched after the last
            "@@",
            "+# end",
        )
    )
    assert isinstance(op, UpdateFile) and len(op.hunks) == 2
    assert op.hunks[0].anchors == ["class B:", "def stop(self):"]
    assert op.hunks[0].anchor == "def stop(self):"
    out = apply_hunks(_TWO_CLASSES, op.hunks[:1])
    assert out == _TWO_CLASSES[: _TWO_CLASSES.rindex("return 1")] + "return 2\n"
    # three levels, classic headers stacked, and a blank '@@' among them
    [op] = parse_patch(
        patch(
            "*** Update File: f",
            "@@ -1,3 +1,3 @@ class B:",
            "@@",
            "@@     def run(self):",
            "-        return 1",
            "+        return 3",
        )
    )
    assert isinstance(op, UpdateFile) and op.hunks[0].anchors == ["class B:", "def run(self):"]
    assert "class B:\n    def run(self):\n        return 3\n" in apply_hunks(_TWO_CLASSES, op.hunks)
    assert apply_hunks(_TWO_CLASSES, op.hunks).startswith(
        "class A:\n    def run(self):\n        return 1"
    )


def test_stacked_anchor_missing_names_it() -> None:
    [op] = parse_patch(
        patch("*** Update File: f", "@@ class B:", "@@     def nope(self):", "-        return 1")
    )
    assert isinstance(op, UpdateFile)
    with pytest.raises(ToolError) as err:
        apply_hunks(_TWO_CLASSES, op.hunks, "f")
    assert err.value.kind is ErrorKind.PATCH_CONFLICT
    assert "'def nope(self):' not found (searched from line 9)" in err.value.message


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        # the second hunk's lines are only above the first hunk's match
        (
            ["@@", " e", "-f", "+F", "@@", " a", "-b", "+B"],
            "hunk 2 of o.txt (patch line 7): its lines are found only at line 1, before the "
            "previous hunk, which matched lines 5-6",
        ),
        (
            ["@@", "-d", "+D", "@@", "-c", "+C"],
            "hunk 2 of o.txt (patch line 6): its lines are found only at line 3, before the "
            "previous hunk, which matched lines 4-4",
        ),
        # an anchor above the previous hunk
        (
            ["@@", "-e", "+E", "@@ b", "-c", "+C"],
            "hunk 2 of o.txt (patch line 6): the anchor lines 'b' are found only at line 2, "
            "before the previous hunk, which matched lines 5-5",
        ),
    ],
)
async def test_out_of_order_hunk_says_so_with_its_lines(
    tmp_path: Path, body: list[str], fragment: str
) -> None:
    (tmp_path / "o.txt").write_text("a\nb\nc\nd\ne\nf\n")
    res = await run(tmp_path, patch("*** Update File: o.txt", *body))
    assert res.error_kind is ErrorKind.PATCH_CONFLICT
    assert fragment in res.output, res.output
    assert "hunks must follow the file's order" in res.output
    assert (tmp_path / "o.txt").read_text() == "a\nb\nc\nd\ne\nf\n"


@pytest.mark.anyio
async def test_missing_hunk_that_is_nowhere_keeps_the_plain_message(tmp_path: Path) -> None:
    (tmp_path / "o.txt").write_text("a\nb\nc\n")
    res = await run(tmp_path, patch("*** Update File: o.txt", "@@", "-b", "+B", "@@", "-zzz", "+y"))
    assert res.error_kind is ErrorKind.PATCH_CONFLICT
    assert "these lines were not found (searched from line 3)" in res.output
    assert "out of order" not in res.output and "found only" not in res.output


def test_end_of_file_hunk_prefers_the_end() -> None:
    [op] = parse_patch(patch("*** Update File: f", "@@", "-x", "+y", "*** End of File"))
    assert isinstance(op, UpdateFile)
    assert apply_hunks("x\nmid\nx\n", op.hunks) == "x\nmid\ny\n"
