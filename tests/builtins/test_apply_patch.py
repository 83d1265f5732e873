"""apply_patch: paths, encodings, atomicity, results and the Codex conformance folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins.patch import (
    ApplyPatchTool,
)
from octos_tools.context import ToolContext, ToolPermissions
from octos_tools.errors import ErrorKind, ToolError
from octos_tools.workspace import Workspace

from ._patch_helpers import (
    _ABSENT,
    _DIR,
    _GOOD_FIRST,
    _LINK,
    _TWO_CLASSES,
    _UPDATE_A,
    CONFORMANCE,
    DELIBERATE,
    FAILING,
    patch,
    run,
)


def _tree(root: Path) -> dict[str, tuple[str, str | bytes]]:
    """Every entry under ``root`` without following links: files by content, links by target."""
    out: dict[str, tuple[str, str | bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir", "")
            else:
                out[rel] = ("file", p.read_bytes())
    return out


@pytest.fixture
def linked_tree(tmp_path: Path) -> Path:
    """A workspace ``ws`` with a file, a folder, and links to a file and a folder outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.txt").write_text("secret\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a1\n")
    (ws / "adir").mkdir()
    (ws / "adir" / "keep.txt").write_text("keep\n")
    (ws / "link.txt").symlink_to(outside / "o.txt")
    (ws / "inner_link.txt").symlink_to("a.txt")
    (ws / "dangling").symlink_to(outside / "missing.txt")
    (ws / "linkdir").symlink_to(outside)
    return tmp_path


# ----------------------------------------------------------------------------- conformance


def _scenarios() -> list[Path]:
    if not CONFORMANCE.is_dir():
        return []
    return sorted(p for p in CONFORMANCE.iterdir() if (p / "patch.txt").is_file())


def _scenario_params() -> list[Any]:
    """One parameter per scenario, or one skipped parameter saying the folder is absent."""
    if not CONFORMANCE.is_dir():
        return [pytest.param(None, id="absent", marks=pytest.mark.skip(reason=_ABSENT))]
    return [pytest.param(p, id=p.name) for p in _scenarios()]


def _snapshot(root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for dirpath, _dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        out[rel] = None
        for name in filenames:
            out[os.path.join(rel, name)] = Path(dirpath, name).read_bytes()
    return out


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/etc/x", ErrorKind.PATH_OUTSIDE_WORKSPACE),
        ("a/../../x", ErrorKind.PATH_OUTSIDE_WORKSPACE),
        ("../outside/x", ErrorKind.PATH_OUTSIDE_WORKSPACE),
        ("C:\\x", ErrorKind.PATH_OUTSIDE_WORKSPACE),
        (".git/hooks/x", ErrorKind.INVALID_PATCH),
        ("sub/.GIT/config", ErrorKind.INVALID_PATCH),
        ("a/../.git/x", ErrorKind.INVALID_PATCH),
    ],
)
async def test_paths_leaving_the_workspace_are_path_outside_workspace(
    tmp_path: Path, path: str, kind: ErrorKind
) -> None:
    """The same fault gets the same kind as in write_file; .git stays refused."""
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    for text in (
        patch(f"*** Add File: {path}", "+x"),
        patch("*** Add File: ok.txt", "+x", f"*** Delete File: {path}"),
    ):
        res = await run(root, text)
        assert res.error_kind is kind, res.output
        assert "No file was changed" in res.output or "line" in res.output
    assert not list(root.iterdir()) and not list((tmp_path / "outside").iterdir())


@pytest.mark.anyio
async def test_paths_inside_the_workspace_may_be_absolute_or_use_dotdot(tmp_path: Path) -> None:
    res = await run(
        tmp_path, patch(f"*** Add File: {tmp_path}/a.txt", "+x", "*** Add File: d/../b.txt", "+y")
    )
    assert res.success, res.output
    assert (tmp_path / "a.txt").read_text() == "x\n" and (tmp_path / "b.txt").read_text() == "y\n"


@pytest.mark.anyio
async def test_stacked_anchors_through_the_tool(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(_TWO_CLASSES)
    res = await run(
        tmp_path,
        patch(
            "*** Update File: m.py",
            "@@ class B:",
            "@@     def run(self):",
            "-        return 1",
            "+        return 9",
        ),
    )
    assert res.success, res.output
    assert (tmp_path / "m.py").read_text() == _TWO_CLASSES.replace(
        "class B:\n    def run(self):\n        return 1",
        "class B:\n    def run(self):\n        return 9",
    )


# ----------------------------------------------------------------------------- the tool


@pytest.mark.anyio
async def test_crlf_file_keeps_crlf_with_lf_and_crlf_patches(tmp_path: Path) -> None:
    f = tmp_path / "w.txt"
    for text in (
        patch("*** Update File: w.txt", "@@", " foo", "-bar", "+qux"),
        patch("*** Update File: w.txt", "@@", " foo", "-bar", "+qux").replace("\n", "\r\n"),
    ):
        f.write_bytes(b"foo\r\nbar\r\nbaz\r\n")
        result = await run(tmp_path, text)
        assert result.success, result.output
        assert f.read_bytes() == b"foo\r\nqux\r\nbaz\r\n"
    result = await run(tmp_path, patch("*** Add File: n.txt", "+one", "+two"))
    assert (tmp_path / "n.txt").read_bytes() == b"one\ntwo\n"


@pytest.mark.anyio
async def test_unicode_bom_and_latin1_bytes_are_kept(tmp_path: Path) -> None:
    (tmp_path / "u.txt").write_bytes("\ufeffnaïve\ncafé ☕\nend\n".encode())
    result = await run(
        tmp_path, patch("*** Update File: u.txt", "@@", " naïve", "-café ☕", "+thé")
    )
    assert result.success, result.output
    assert (tmp_path / "u.txt").read_bytes() == "\ufeffnaïve\nthé\nend\n".encode()
    (tmp_path / "l.js").write_bytes(b"const x = 1;\n// caf\xe9 note\n")
    result = await run(tmp_path, patch("*** Update File: l.js", "@@", "-const x = 1;", "+x = 2;"))
    assert result.success, result.output
    assert (tmp_path / "l.js").read_bytes() == b"x = 2;\n// caf\xe9 note\n"
    (tmp_path / "w16.txt").write_bytes("\ufeffa\r\nb\r\n".encode("utf-16-le"))
    result = await run(tmp_path, patch("*** Update File: w16.txt", "@@", " a", "-b", "+c"))
    assert result.success, result.output
    assert (tmp_path / "w16.txt").read_bytes() == "\ufeffa\r\nc\r\n".encode("utf-16-le")


@pytest.mark.anyio
async def test_nfd_file_and_non_equivalent_text(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text("cafe\u0301 = 1\n")
    (tmp_path / "plain.txt").write_text("cafe = 1\n")
    ok = await run(tmp_path, patch("*** Update File: c.txt", "@@", "-café = 1", "+café = 2"))
    assert ok.success and (tmp_path / "c.txt").read_text() == "café = 2\n"
    bad = await run(tmp_path, patch("*** Update File: plain.txt", "@@", "-café = 1", "+x"))
    assert bad.error_kind is ErrorKind.PATCH_CONFLICT
    assert (tmp_path / "plain.txt").read_text() == "cafe = 1\n"


@pytest.mark.anyio
async def test_failing_third_file_leaves_first_two_untouched(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a1\n")
    (tmp_path / "b.txt").write_text("b1\n")
    (tmp_path / "c.txt").write_text("c1\n")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    text = patch(
        "*** Update File: a.txt",
        "@@",
        "-a1",
        "+a2",
        "*** Add File: new/b2.txt",
        "+b2",
        "*** Update File: c.txt",
        "@@",
        "-not there",
        "+c2",
    )
    result = await run(tmp_path, text)
    assert result.error_kind is ErrorKind.PATCH_CONFLICT
    assert "section 3" in result.output and "No file was changed" in result.output
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.anyio
async def test_write_failure_in_commit_rolls_back(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a1\n")
    (tmp_path / "blocker").write_text("a file, not a folder\n")
    text = patch("*** Update File: a.txt", "@@", "-a1", "+a2", "*** Add File: blocker/x.txt", "+x")
    result = await run(tmp_path, text)
    assert not result.success
    assert (tmp_path / "a.txt").read_text() == "a1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "blocker"]


@pytest.mark.anyio
async def test_symlinks_and_git_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "link.txt").symlink_to(outside)
    (ws / ".git").mkdir()
    result = await run(ws, patch("*** Update File: link.txt", "@@", "-secret", "+pwned"))
    assert result.error_kind is ErrorKind.SYMLINK_REFUSED
    result = await run(ws, patch("*** Delete File: link.txt"))
    assert result.error_kind is ErrorKind.SYMLINK_REFUSED
    result = await run(ws, patch("*** Add File: .git/hooks/pre-commit", "+evil"))
    assert result.error_kind is ErrorKind.INVALID_PATCH
    assert outside.read_text() == "secret\n"
    assert (ws / "link.txt").is_symlink()
    assert not (ws / ".git" / "hooks").exists()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("sections", "expected"),
    [
        pytest.param(("*** Add File: link.txt", "+x"), _LINK, id="add-onto-link-outside"),
        pytest.param(("*** Add File: inner_link.txt", "+x"), _LINK, id="add-onto-link-inside"),
        pytest.param(("*** Add File: dangling", "+x"), _LINK, id="add-onto-dangling-link"),
        pytest.param(("*** Add File: linkdir/new.txt", "+x"), _LINK, id="add-through-linked-dir"),
        pytest.param(
            ("*** Update File: a.txt", "*** Move to: linkdir/a.txt", *_UPDATE_A),
            _LINK,
            id="move-into-linked-dir",
        ),
        pytest.param(
            ("*** Update File: a.txt", "*** Move to: linkdir/sub/a.txt", *_UPDATE_A),
            _LINK,
            id="move-through-linked-dir",
        ),
        pytest.param(
            ("*** Update File: a.txt", "*** Move to: link.txt", *_UPDATE_A),
            _LINK,
            id="move-onto-link",
        ),
        pytest.param(
            ("*** Update File: a.txt", "*** Move to: dangling", *_UPDATE_A),
            _LINK,
            id="move-onto-dangling-link",
        ),
        pytest.param(("*** Add File: adir", "+x"), _DIR, id="add-onto-dir"),
        pytest.param(("*** Update File: adir", *_UPDATE_A), _DIR, id="update-dir"),
        pytest.param(
            ("*** Update File: a.txt", "*** Move to: adir", *_UPDATE_A), _DIR, id="move-onto-dir"
        ),
    ],
)
async def test_links_and_folders_as_targets_are_refused(
    linked_tree: Path, sections: tuple[str, ...], expected: ErrorKind
) -> None:
    before = _tree(linked_tree)
    result = await run(linked_tree / "ws", patch(*_GOOD_FIRST, *sections))
    assert result.error_kind is expected, result.output
    assert "section 2" in result.output and "No file was changed" in result.output
    assert _tree(linked_tree) == before


@pytest.mark.anyio
async def test_result_metadata_and_diff(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("one\ntwo\n")
    (tmp_path / "gone.txt").write_text("bye\n")
    text = patch(
        "*** Update File: m.txt",
        "*** Move to: moved/m.txt",
        "@@",
        " one",
        "-two",
        "+TWO",
        "*** Delete File: gone.txt",
        "*** Add File: hello.txt",
        "+hi",
    )
    result = await run(tmp_path, text)
    assert result.success, result.output
    meta = result.structured_metadata
    assert meta is not None
    assert meta["modified_paths"] == ["m.txt", "moved/m.txt", "gone.txt", "hello.txt"]
    ops = [(e["op"], e["path"]) for e in meta["diff_preview"]]
    assert ops == [("move", "moved/m.txt"), ("delete", "gone.txt"), ("add", "hello.txt")]
    assert meta["diff_preview"][0]["from"] == "m.txt"
    assert "+TWO" in meta["diff_preview"][0]["diff"] and "+TWO" in result.output
    assert result.file_modified == "m.txt"
    assert (tmp_path / "moved" / "m.txt").read_text() == "one\nTWO\n"
    assert not (tmp_path / "m.txt").exists() and not (tmp_path / "gone.txt").exists()


@pytest.mark.anyio
async def test_input_alias_read_only_and_missing_arguments(tmp_path: Path) -> None:
    tool = ApplyPatchTool(Workspace(tmp_path))
    result = await tool.execute_with_context(
        ToolContext(), {"input": patch("*** Add File: a.txt", "+a")}
    )
    assert result.success and (tmp_path / "a.txt").read_text() == "a\n"
    with pytest.raises(ToolError) as info:
        await tool.execute_with_context(
            ToolContext(permissions=ToolPermissions(read_only=True)),
            {"patch": patch("*** Add File: b.txt", "+b")},
        )
    assert info.value.kind is ErrorKind.POLICY_DENIED
    with pytest.raises(ToolError) as info:
        await tool.execute_with_context(ToolContext(), {})
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS
    with pytest.raises(ToolError) as info:  # no registry: no diff_edit to delegate to
        await tool.execute_with_context(ToolContext(), {"path": "a.txt", "diff": "@@\n-a\n+b\n"})
    assert info.value.kind is ErrorKind.UNAVAILABLE
    with pytest.raises(ToolError) as info:
        await tool.execute_with_context(ToolContext(), {})
    assert "missing required field 'patch'" in info.value.message
    with pytest.raises(ToolError) as info:
        await tool.execute_with_context(ToolContext(), {"input": 5})
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS


def test_aliases_are_accepted_but_not_advertised() -> None:
    schema = ApplyPatchTool(None).input_schema
    assert set(schema["properties"]) == {"patch"} and schema["required"] == ["patch"]
    assert schema["additionalProperties"] is False


@pytest.mark.anyio
async def test_path_diff_delegates_to_diff_edit(tmp_path: Path) -> None:
    from octos_tools.builtins import files
    from octos_tools.builtins import patch as patch_family
    from octos_tools.config import Config
    from octos_tools.registry import ToolRegistry

    ws = Workspace(tmp_path)
    registry = ToolRegistry(ws)
    files.register(registry, ws, Config())
    patch_family.register(registry, ws, Config())
    (tmp_path / "d.txt").write_text("line1\nline2\n")
    result = await registry.execute(
        "apply_patch", {"path": "d.txt", "diff": "@@ -1,2 +1,2 @@\n line1\n-line2\n+LINE2\n"}
    )
    assert result.success, result.output
    assert (tmp_path / "d.txt").read_text() == "line1\nLINE2\n"
    await registry.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("scenario", _scenario_params())
async def test_codex_conformance(scenario: Path, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    if (scenario / "input").is_dir():
        shutil.copytree(scenario / "input", root, dirs_exist_ok=True)
    before = _snapshot(root)
    result = await run(root, (scenario / "patch.txt").read_text(encoding="utf-8"))
    if DELIBERATE.get(scenario.name) == "unchanged":
        assert _snapshot(root) == before
    else:
        assert _snapshot(root) == _snapshot(scenario / "expected")
    assert result.success is (scenario.name[:3] not in FAILING), result.output
    if not result.success:
        assert result.error_kind not in (None, ErrorKind.INTERNAL_ERROR)


def test_conformance_folder_present_or_skipped() -> None:
    if not CONFORMANCE.is_dir():
        pytest.skip(_ABSENT)
    assert len(_scenarios()) >= 23
