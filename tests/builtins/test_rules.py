"""One rule for which files exist: glob and grep (both engines) and `rg --files` agree."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins import search
from octos_tools.builtins.search._budget import Budget
from octos_tools.builtins.search._rules import RG_WALK_ARGS
from octos_tools.builtins.search._walk import walk
from octos_tools.config import Config
from octos_tools.workspace import Workspace

from .tool_helpers import call_in as call

pytestmark = pytest.mark.anyio

TREE: dict[str, str] = {
    ".gitignore": ".venv/\nbuild/\n*.log\n!keep.log\n/anchored.txt\nsub/**/gen_*.py\n",
    ".git/HEAD": "ref: refs/heads/main\n",
    ".git/config": "needle git\n",
    ".git/info/exclude": "excluded_by_info.txt\nlocal/\n",
    ".venv/lib/m1.py": "needle venv\n",
    "build/gen.py": "needle build\n",
    "src/app.py": "needle app\n",
    "src/anchored.txt": "needle not anchored here\n",
    "anchored.txt": "needle anchored\n",
    "x.log": "needle log\n",
    "logs/keep.log": "needle kept\n",
    "excluded_by_info.txt": "needle exclude\n",
    "local/notes.py": "needle local\n",
    ".github/workflows/ci.yml": "needle ci\n",
    ".env.example": "needle env\n",
    "sub/a/gen_x.py": "needle gen\n",
    "sub/a/keep_x.py": "needle keep sub\n",
    "sub/.gitignore": "*.tmp\n!important.tmp\n",
    "sub/junk.tmp": "needle tmp\n",
    "sub/important.tmp": "needle important\n",
    "nested_repo/.git/HEAD": "x\n",
    "nested_repo/x.log": "needle nested log (parent rules still apply)\n",
    "nested_repo/.gitignore": "ignored_here.txt\n",
    "nested_repo/ignored_here.txt": "needle nested ignored\n",
    ".octos-tmp-abc123": "needle temp\n",
    "src/.octos-tmp-x.py": "needle temp two\n",
    ".octos-tmp-state/journal.json": "needle journal\n",
}

EXPECTED = {
    ".gitignore",
    "src/app.py",
    "src/anchored.txt",
    "logs/keep.log",
    ".github/workflows/ci.yml",
    ".env.example",
    "sub/a/keep_x.py",
    "sub/.gitignore",
    "sub/important.tmp",
    "nested_repo/.gitignore",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    for rel, text in TREE.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def walked_files(ws: Workspace, start: str = ".") -> set[str]:
    return {f.rel for f in walk(ws, start, Budget()) if f.kind == "file"}


def test_python_walk_follows_the_rule(tree: Path) -> None:
    assert walked_files(Workspace(tree)) == EXPECTED


def test_rg_files_with_the_same_flags_agrees(tree: Path) -> None:
    rg = search.find_rg()
    assert rg is not None
    out = subprocess.run(
        [rg, "--files", "--no-config", *RG_WALK_ARGS, "./"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    assert {line.removeprefix("./") for line in out.splitlines()} == EXPECTED


async def test_glob_sees_what_grep_sees(tree: Path) -> None:
    ws = Workspace(tree)
    res = await call(search.GlobTool(ws), ws, {"pattern": "**/*", "limit": 1000})
    assert res.structured_metadata is not None
    globbed = {p for p in res.structured_metadata["paths"] if not p.endswith("/")}
    assert globbed == EXPECTED
    dirs = {p for p in res.structured_metadata["paths"] if p.endswith("/")}
    assert ".github/" in dirs and ".git/" not in dirs and ".venv/" not in dirs
    assert ".octos-tmp-state/" not in dirs
    for engine in ("rg", "python"):
        tool = search.GrepTool(ws, Config())
        tool.engine = engine
        res = await call(tool, ws, {"pattern": "needle", "limit": 1000})
        assert res.structured_metadata is not None
        grepped = {line.split(":", 1)[0] for line in res.output.splitlines()[2:] if line}
        assert grepped == EXPECTED - {".gitignore", "sub/.gitignore", "nested_repo/.gitignore"}
        assert "temp" not in res.output and "journal" not in res.output, engine


@pytest.mark.parametrize("start", ["sub", "sub/a", "nested_repo", "logs"])
async def test_a_search_below_the_root_keeps_the_rules_above(tree: Path, start: str) -> None:
    ws = Workspace(tree)
    inside = {p for p in EXPECTED if p.startswith(start + "/")}
    assert walked_files(ws, start) == inside
    outs = []
    for engine in ("rg", "python"):
        tool = search.GrepTool(ws, Config())
        tool.engine = engine
        res = await call(tool, ws, {"pattern": "needle", "path": start, "limit": 1000})
        outs.append(res.output)
        grepped = {line.split(":", 1)[0] for line in res.output.splitlines()[2:] if line}
        assert grepped == {p for p in inside if not p.endswith(".gitignore")}, engine
    assert outs[0] == outs[1]


async def test_bc39_a_virtualenv_does_not_hide_the_project(tree: Path) -> None:
    ws = Workspace(tree)
    for i in range(200):
        (tree / ".venv" / "lib" / f"m{i}.py").write_text("x\n")
    res = await call(search.GlobTool(ws), ws, {"pattern": "**/*.py", "limit": 5})
    assert res.success and "src/app.py" in res.output and ".venv" not in res.output
    res = await call(search.GlobTool(ws), ws, {"pattern": "**/config"})
    assert ".git/config" not in res.output
    res = await call(search.GlobTool(ws), ws, {"pattern": ".github/workflows/*.yml"})
    assert ".github/workflows/ci.yml" in res.output


async def test_internal_temp_files_are_never_listed(tree: Path) -> None:
    ws = Workspace(tree)
    res = await call(search.ListDirTool(ws), ws, {"path": "."})
    assert res.success and ".octos-tmp-" not in res.output and ".octos-tmp-state" not in res.output
    res = await call(search.ListDirTool(ws), ws, {"path": "src"})
    assert "app.py" in res.output and ".octos-tmp-" not in res.output
    res = await call(search.GlobTool(ws), ws, {"pattern": "**/.octos*"})
    assert "No files found" in res.output


async def test_explicit_path_inside_an_ignored_folder_is_searched(tree: Path) -> None:
    ws = Workspace(tree)
    for engine in ("rg", "python"):
        tool = search.GrepTool(ws, Config())
        tool.engine = engine
        res = await call(tool, ws, {"pattern": "needle", "path": "build"})
        assert "build/gen.py:1: needle build" in res.output, engine


def test_glob_matcher_is_polynomial_in_double_stars() -> None:
    from octos_tools.builtins.search._globmatch import GlobMatcher, components

    comps = components("/".join(["**/a*"] * 9) + "/z")
    deep = ["a"] * 40 + ["b"]
    # the recursive matcher took minutes here; the automaton carries at most 2·9+2 states
    m = GlobMatcher([comps])
    states = m.start()
    for part in deep:
        states = m.step(states, part)
        assert len(states) <= 2 * len(comps) + 2
    assert not m.accepts(states)
    assert m.match(["a"] * 9 + ["z"])
    assert not m.match(["a"] * 8 + ["z"])
    assert search.glob_match(["x", "a1", "y", "a2", "z"], components("**/a*/**/a*/z"))


@pytest.mark.parametrize(
    ("pattern", "path", "ok"),
    [
        ("**", "a", True),
        ("a/**", "a", False),
        ("a/**", "a/b/c", True),
        ("**/b", "b", True),
        ("**/b", "x/y/b", True),
        ("*.py", "x/a.py", False),
        ("*", ".hidden", True),
        ("[ab]?", "bz", True),
    ],
)
def test_glob_match_rules(pattern: str, path: str, ok: bool) -> None:
    from octos_tools.builtins.search._globmatch import components

    assert search.glob_match(path.split("/"), components(pattern)) is ok


def test_walk_never_enters_a_symlinked_folder(tmp_path: Path) -> None:
    root = tmp_path / "w"
    (root / "d").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "secret.txt").write_text("x")
    os.symlink(tmp_path / "out", root / "link")
    found = {f.rel: f.kind for f in walk(Workspace(root), ".", Budget())}
    assert found == {"d": "dir", "link": "symlink"}


async def test_names_that_are_not_utf8_are_shown_and_json_safe(tmp_path: Path) -> None:
    import json

    root = os.fsencode(tmp_path / "w")
    os.makedirs(root + b"/d\xe9")
    with open(root + b"/d\xe9/f\xff.txt", "wb") as fh:
        fh.write(b"needle here\n")
    with open(root + b"/bin\xfe.dat", "wb") as fh:
        fh.write(b"needle\x00x\n")
    ws = Workspace(tmp_path / "w")
    outs = []
    for engine in ("rg", "python"):
        tool = search.GrepTool(ws, Config())
        tool.engine = engine
        res = await call(tool, ws, {"pattern": "needle"})
        assert "dé/fÿ.txt:1: needle here" in res.output, engine
        json.dumps(res.structured_metadata, ensure_ascii=False).encode("utf-8")
        outs.append(res.output)
    assert outs[0] == outs[1]
    res = await call(search.GlobTool(ws), ws, {"pattern": "**/*.txt"})
    assert res.output.endswith("dé/fÿ.txt")
    json.dumps(res.structured_metadata, ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("file_pattern", ["*", ".*", "config", "*.{py,json}", ".octos*"])
async def test_a_file_pattern_never_lets_git_or_internal_files_in(
    tree: Path, file_pattern: str
) -> None:
    ws = Workspace(tree)
    for engine in ("rg", "python"):
        tool = search.GrepTool(ws, Config())
        tool.engine = engine
        res = await call(tool, ws, {"pattern": "needle", "file_pattern": file_pattern})
        assert res.success, res.output
        for bad in ("needle git", "needle temp", "needle journal"):
            assert bad not in res.output, (engine, file_pattern)


_NAMES = ["a", "b", "ab", "x.py", "y.log", "build", "src", ".hid", "a b", "k.tmp", "dir1"]
_LINES = [
    "*.py", "*.log", "!keep.log", "build/", "/a", "a/", "**/b", "src/**", "a/**/b", "!*.py",
    "*", "!b", "dir1/*", "/src/x.py", "?b", "[ab]", "**/", "a/b/", "!a/", ".hid", "!.hid/",
    "\\!x", "#c", "b ", "*.tmp", "!k.tmp", "/dir1/", "**/x.py", "src/*/b", "!src/", "*/",
]  # fmt: skip


def _random_tree(root: Path, rnd: Any, depth: int = 0) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name in rnd.sample(_NAMES, rnd.randint(1, 5)):
        if depth < 3 and rnd.random() < 0.4:
            _random_tree(root / name, rnd, depth + 1)
        elif not (root / name).exists():
            (root / name).write_text("needle\n")
    if rnd.random() < 0.5:
        (root / ".gitignore").write_text("\n".join(rnd.sample(_LINES, rnd.randint(1, 4))) + "\n")


@pytest.mark.parametrize("seed", range(24))
async def test_random_trees_walk_as_rg_walks(tmp_path: Path, seed: int) -> None:
    """Random trees and ignore files: the Python walk and `rg --files` (with the ignore
    lines of the folders above, for a walk below the root) list the same files, from every
    folder; grep's two engines agree."""
    import random

    from octos_tools.builtins.search._rules import rules_above

    rg = search.find_rg()
    assert rg is not None
    root = tmp_path / "w"
    _random_tree(root, random.Random(seed))
    ws = Workspace(root)
    starts = [".", *sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir())]
    for start in starts:
        cmd = [rg, "--files", "--no-config", *RG_WALK_ARGS]
        lines = rules_above(ws, start).rg_ignore_lines() if start != "." else []
        if lines:
            ignore = tmp_path / "ignore"
            ignore.write_text("\n".join(lines) + "\n")
            cmd += ["--ignore-file", str(ignore)]
        out = subprocess.run(
            [*cmd, "--", start if start != "." else "./"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        theirs = {line.removeprefix("./") for line in out.splitlines()}
        assert walked_files(ws, start) == theirs, start
    outs = []
    for engine in ("rg", "python"):
        tool = search.GrepTool(ws, Config())
        tool.engine = engine
        outs.append((await call(tool, ws, {"pattern": "needle", "limit": 1000})).output)
    assert outs[0] == outs[1]
