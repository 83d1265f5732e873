"""Searches that must not say "nothing" when something is there (glob, grep, both engines).

Folders whose names hold glob syntax (Next.js routes), symbolic links to folders, paths
named explicitly under ignored folders, indentation, and lines cut for length.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins import search
from octos_tools.builtins.files import ReadFileTool
from octos_tools.builtins.search import MAX_GREP_LINE_CHARS
from octos_tools.builtins.search._globmatch import GlobMatcher, components, glob_patterns
from octos_tools.config import Config
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace

from .tool_helpers import call_in as run

pytestmark = pytest.mark.anyio

ENGINES = ["rg", "python"]

ROUTES = [
    "app/[id]/page.tsx",
    "app/[...slug]/page.tsx",
    "app/[[...opt]]/page.tsx",
    "app/(auth)/login/page.tsx",
    "app/(auth)/[team]/[id]/page.tsx",
    "app/@modal/(.)photo/page.tsx",
    "lib/{a,b}/x.ts",
    "lib/st*r/y.ts",
    "lib/q?/z.ts",
    "lib/a/x.ts",
]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    for rel in ROUTES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"// {rel}\n")
    return Workspace(root)


async def glob(ws: Workspace, pattern: str) -> ToolResult:
    return await run(search.GlobTool(ws), ws, {"pattern": pattern})


def paths(res: ToolResult) -> list[str]:
    assert res.success, res.output
    meta = res.structured_metadata or {}
    return list(meta.get("paths", []))


@pytest.mark.parametrize("rel", ROUTES)
async def test_every_literal_path_finds_itself(ws: Workspace, rel: str) -> None:
    got = paths(await glob(ws, rel))
    assert rel in got
    assert got == [rel] or "{" in rel  # braces also expand: lib/a/x.ts exists too


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("app/[id]/*.tsx", ["app/[id]/page.tsx"]),
        (
            "app/(auth)/**/page.tsx",
            ["app/(auth)/[team]/[id]/page.tsx", "app/(auth)/login/page.tsx"],
        ),
        ("app/(auth)/[team]/*/page.tsx", ["app/(auth)/[team]/[id]/page.tsx"]),
        # the same spelling still works as glob syntax where names fit it
        ("lib/[ab]/x.ts", ["lib/a/x.ts"]),
        # both: braces expand (lib/a, lib/b) and the folder named "{a,b}" matches
        ("lib/{a,b}/x.ts", ["lib/a/x.ts", "lib/{a,b}/x.ts"]),
        ("lib/st*r/*", ["lib/st*r/y.ts"]),
        ("**/[...slug]/*", ["app/[...slug]/page.tsx"]),
    ],
)
async def test_literal_segments_with_wildcards(
    ws: Workspace, pattern: str, expected: list[str]
) -> None:
    assert sorted(paths(await glob(ws, pattern))) == sorted(expected)


def test_matcher_literal_name_rule() -> None:
    m = GlobMatcher([components(p) for p in glob_patterns("x/[id]")])
    assert m.match(["x", "[id]"]) and m.match(["x", "i"]) and not m.match(["x", "id"])
    assert glob_patterns("*.{ts,tsx}") == ["*.ts", "*.tsx", "*.{ts,tsx}"]
    assert glob_patterns("plain") == ["plain"]


async def test_symlinked_folder_is_named_with_its_reason(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "real" / "deep").mkdir(parents=True)
    (root / "real" / "deep" / "z.py").write_text("z\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "hidden.py").write_text("h\n")
    (root / "linked").symlink_to("real")
    (root / "outlink").symlink_to(tmp_path / "out")
    (root / "filelink").symlink_to("real/deep/z.py")
    ws = Workspace(root)

    res = await glob(ws, "linked/**/*.py")
    assert res.success and "No files found" in res.output
    assert "linked (a link to real/: use that path)" in res.output
    meta = res.structured_metadata or {}
    assert meta["links_not_followed"] == [
        {"path": "linked", "reason": "a link to real/: use that path"}
    ]
    assert paths(await glob(ws, "real/**/*.py")) == ["real/deep/z.py"]

    res = await glob(ws, "outlink/*.py")
    assert "outlink (a link to a folder outside the workspace)" in res.output
    assert str(tmp_path / "out") not in res.output and "hidden" not in res.output

    # a pattern that would not enter the link does not mention it; a file link never
    res = await glob(ws, "real/*")
    assert "links_not_followed" not in (res.structured_metadata or {})
    res = await glob(ws, "**/*.py")
    linked = [e["path"] for e in (res.structured_metadata or {})["links_not_followed"]]
    assert linked == ["linked", "outlink"]


# grep


@pytest.fixture
def ignored(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    for rel in ["build/out.txt", "build/sub/deep.txt", "src/gen/g.py", "src/k.py", "logs/a.log"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("needle\n")
    return Workspace(root)


async def grep(ws: Workspace, engine: str, **args: Any) -> ToolResult:
    tool = search.GrepTool(ws, Config())
    tool.engine = engine
    return await run(tool, ws, args)


def files(res: ToolResult) -> set[str]:
    assert res.success, res.output
    return {line.split(":", 1)[0] for line in res.output.splitlines() if ":1:" in line}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("rule", ["build/", "build/**", "/build", "build/*", "**/sub/**"])
async def test_grep_named_path_under_an_ignored_folder(
    ignored: Workspace, engine: str, rule: str
) -> None:
    (ignored.root / ".gitignore").write_text(rule + "\n")
    whole = await grep(ignored, engine, pattern="needle")
    assert "build/sub/deep.txt" not in files(whole)  # hidden in a walk from the root
    res = await grep(ignored, engine, pattern="needle", path="build/sub")
    assert files(res) == {"build/sub/deep.txt"}
    assert (res.structured_metadata or {})["ignored_path"] in ("build", "build/sub")
    assert "searched because path names it" in res.output
    res = await grep(ignored, engine, pattern="needle", path="build/sub/deep.txt")
    assert files(res) == {"build/sub/deep.txt"}


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_named_ignored_folder_keeps_its_own_rules(
    ignored: Workspace, engine: str
) -> None:
    (ignored.root / ".gitignore").write_text("src/gen/\n")
    (ignored.root / "src" / "gen" / ".gitignore").write_text("skip.py\n")
    (ignored.root / "src" / "gen" / "skip.py").write_text("needle\n")
    res = await grep(ignored, engine, pattern="needle", path="src/gen")
    assert files(res) == {"src/gen/g.py"}  # its own .gitignore still holds
    # a folder that is not itself hidden keeps every rule: src/gen stays out
    res = await grep(ignored, engine, pattern="needle", path="src")
    assert files(res) == {"src/k.py"}
    assert "ignored_path" not in (res.structured_metadata or {})


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_keeps_indentation_and_cuts_lines_honestly(tmp_path: Path, engine: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    long_line = "\t    x = 'needle" + "y" * 1000 + "'"
    (root / "a.py").write_text("def f():\n    return needle\n\tneedle_tab = 1\n" + long_line)
    ws = Workspace(root)
    res = await grep(ws, engine, pattern="needle")
    lines = res.output.splitlines()
    assert "a.py:2:     return needle" in lines
    assert "a.py:3: \tneedle_tab = 1" in lines
    cut = next(x for x in lines if x.startswith("a.py:4: "))
    assert cut.startswith("a.py:4: " + long_line[:MAX_GREP_LINE_CHARS] + " … [")
    assert f"it is {len(long_line):,} characters long" in cut
    assert (
        f"read_file path='a.py', start_line=4, end_line=4, "
        f"start_column={MAX_GREP_LINE_CHARS + 1}" in cut
    )
    # the call it names shows the rest
    more = await run(
        ReadFileTool(ws),
        ws,
        {"path": "a.py", "start_line": 4, "end_line": 4, "start_column": MAX_GREP_LINE_CHARS + 1},
    )
    assert long_line[MAX_GREP_LINE_CHARS : MAX_GREP_LINE_CHARS + 100] in more.output
    ctx = await grep(ws, engine, pattern="return", context=1)
    assert ">    2│     return needle" in ctx.output


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_file_pattern_spelled_literally(tmp_path: Path, engine: str) -> None:
    root = tmp_path / "ws"
    (root / "app").mkdir(parents=True)
    (root / "app" / "[id].tsx").write_text("needle\n")
    (root / "app" / "i.tsx").write_text("needle\n")
    ws = Workspace(root)
    res = await grep(ws, engine, pattern="needle", file_pattern="[id].tsx")
    assert files(res) == {"app/[id].tsx", "app/i.tsx"}
    res = await grep(ws, engine, pattern="needle", file_pattern="[[]id].tsx")
    assert files(res) == {"app/[id].tsx"}
