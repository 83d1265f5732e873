"""grep: the rg engine and the pure-Python fallback agree; limits, links, errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins import search
from octos_tools.config import Config
from octos_tools.workspace import Workspace

from ._search_helpers import ENGINES, PARITY, grep
from .tool_helpers import call_in as run
from .tool_helpers import kind

LINKED_ROOT = True  # the root fixture adds notes.txt and links out (conftest.py)

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------ grep


@pytest.fixture
def grep_tree(root: Path) -> Path:
    files: dict[str, bytes] = {
        "src/main.py": b"import os\n\ndef main():\n    print('Hello')\n    return 0\n",
        "src/util.py": b"def helper():\n    return 'hello world'\n",
        "src/app.ts": b"const hello = 1;\n",
        "README.md": b"# Hello\n\nhello again\n",
        ".hidden/conf.txt": b"hello from hidden\n",
        "build/out.txt": b"hello from build\n",
        "logs/x.log": b"hello log\n",
        "logs/keep.log": b"hello kept\n",
        "data.bin": b"PK\x03\x04\x00\x00hello\x00",
        "u16.txt": b"\xff\xfe" + "hello utf16\r\n".encode("utf-16-le"),
        "latin1.txt": b"caf\xe9 hello\n",
        ".git/config": b"hello git\n",
        "nested/.gitignore": b"*.tmp\n",
        "nested/a.tmp": b"hello tmp\n",
        "nested/b.txt": b"hello nested\n",
        "nested/deeper/z.tmp": b"hello deeper tmp\n",
        "nested/deeper/only.md": b"hello anchored\n",
        "nested/deeper/fine.md": b"hello fine\n",
    }
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    (root / ".gitignore").write_bytes(b"build/\n*.log\n!keep.log\n/nested/deeper/only.md\n")
    return root


@pytest.mark.parametrize("args", PARITY, ids=[str(a) for a in PARITY])
async def test_grep_engines_agree(grep_tree: Path, ws: Workspace, args: dict[str, Any]) -> None:
    a = await grep(ws, "rg", **args)
    b = await grep(ws, "python", **args)
    assert a.success and b.success, (a.output, b.output)
    assert a.output == b.output


@pytest.mark.parametrize("limit", [1, 3, 7])
async def test_grep_limit_shows_a_sorted_subset(grep_tree: Path, ws: Workspace, limit: int) -> None:
    full = await grep(ws, "python", pattern="hello", ignore_case=True)
    every = full.output.splitlines()[2:]
    for engine in ENGINES:
        res = await grep(ws, engine, pattern="hello", ignore_case=True, limit=limit)
        assert res.output.startswith(f"Found {limit} match(es) (limited to {limit}):")
        shown = res.output.splitlines()[2:]
        # which matches are shown may vary (rg searches in parallel and stops early), but
        # each is a real match and they come in path order
        assert len(shown) == limit and set(shown) <= set(every)
        assert shown == sorted(shown, key=every.index)
        assert res.structured_metadata is not None
        assert res.structured_metadata["truncated"] is True
        assert res.structured_metadata["matches"] == limit


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_semantics(grep_tree: Path, ws: Workspace, engine: str) -> None:
    res = await grep(ws, engine, pattern="hello", ignore_case=True)
    out = res.output
    assert "src/main.py:4:     print('Hello')" in out  # indentation kept
    assert ".hidden/conf.txt:1:" in out  # hidden files searched
    assert "keep.log" in out and "x.log" not in out  # .gitignore with negation
    assert "build/" not in out and "nested/a.tmp" not in out  # ignored dir, nested ignore
    assert ".git/" not in out
    assert "nested/deeper/fine.md" in out
    assert "only.md" not in out and "z.tmp" not in out
    assert "data.bin" not in out and "\x00" not in out  # binary skipped
    assert "u16.txt:1: hello utf16" in out  # UTF-16 transcoded
    assert "latin1.txt:1: café hello" in out
    assert "\ufffd" not in out
    res = await grep(ws, engine, pattern="hello", path="nested/deeper")
    assert "fine.md" in res.output and "only.md" not in res.output and "z.tmp" not in res.output
    res = await grep(ws, engine, pattern="print", context=1)
    assert "src/main.py:\n     3│ def main():\n>    4│     print('Hello')\n     5│" in res.output
    res = await grep(ws, engine, pattern="hello", limit=2)
    assert res.output.startswith("Found 2 match(es) (limited to 2)")
    assert res.structured_metadata is not None and res.structured_metadata["truncated"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_never_leaves_the_root(
    root: Path, ws: Workspace, tmp_path: Path, engine: str
) -> None:
    res = await grep(ws, engine, pattern="TOPSEC[R]ET", path=".")
    assert "TOPSECRET" not in res.output and "secret.txt" not in res.output
    for path, k in [
        (str(tmp_path / "ws_secret"), "path_outside_workspace"),
        ("../ws_secret", "path_outside_workspace"),
        ("linkdir", "symlink_refused"),
        ("leak", "symlink_refused"),
        ("rel/secret.txt", "symlink_refused"),
        ("a\x00b", "invalid_arguments"),
    ]:
        res = await grep(ws, engine, pattern="TOPSEC[R]ET", path=path)
        assert kind(res) == k, path
        assert "TOPSECRET" not in res.output
    res = await grep(ws, engine, pattern="x\x00")
    assert kind(res) == "invalid_arguments" and "NUL" in res.output


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_argument_errors(grep_tree: Path, ws: Workspace, engine: str) -> None:
    res = await grep(ws, engine, pattern="hel(lo")
    assert kind(res) == "invalid_arguments" and "regular expression" in res.output
    for fp in ["../*.py", "/abs/*.py", "src/*.py", "!*.py"]:
        res = await grep(ws, engine, pattern="x", file_pattern=fp)
        assert kind(res) == "invalid_arguments", fp


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_binary_file_given_directly(root: Path, ws: Workspace, engine: str) -> None:
    (root / "data.txt").write_bytes(b"PK\x03\x04\x14\x00" + bytes(range(256)) * 8)
    res = await grep(ws, engine, pattern="PK", path="data.txt")
    assert res.success and "\x00" not in res.output and "ABCDEFGHIJ" not in res.output
    res = await grep(ws, engine, pattern="PK")
    assert "\x00" not in res.output and "ABCDEFGHIJ" not in res.output


async def test_grep_falls_back_without_rg(
    grep_tree: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCTOS_TOOLS_NO_RG", "1")
    assert search.find_rg() is None
    res = await run(search.GrepTool(ws, Config()), ws, {"pattern": "hello"})
    assert res.success and res.structured_metadata is not None
    assert res.structured_metadata["engine"] == "python"


# ------------------------------------------------------------------ race


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_during_symlink_swaps_never_shows_outside_lines(
    tmp_path: Path, engine: str
) -> None:
    import threading
    import time

    root = tmp_path / "race"
    out = tmp_path / "race_out"
    (root / "d").mkdir(parents=True)
    out.mkdir()
    (root / "d" / "f.txt").write_text("needle inside\n")
    (out / "f.txt").write_text("needle TOPSECRET\n")
    ws = Workspace(root)
    stop = threading.Event()
    swaps = {"n": 0}

    def swapper() -> None:
        d, parked = root / "d", root / "parked"
        while not stop.is_set():
            os.rename(d, parked)
            os.symlink(out, d)
            time.sleep(0.0005)
            os.unlink(d)
            os.rename(parked, d)
            swaps["n"] += 1

    t = threading.Thread(target=swapper)
    t.start()
    seen_inside = 0
    try:
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            res = await grep(ws, engine, pattern="needle")
            assert "TOPSECRET" not in res.output
            seen_inside += "needle inside" in res.output
    finally:
        stop.set()
        t.join()
    assert swaps["n"] > 50 and seen_inside > 0


@pytest.mark.parametrize(
    "pattern",
    [r"^a", r"a$", r"\bab\b", r"b\B", r"^$", r"a\s*$", r"[^x]b", r"(?m)^b", r"a|^c$", r"\Bb$"],
)
def test_whole_text_filter_never_skips_a_matching_line(pattern: str) -> None:
    import regex

    from octos_tools.builtins.search._linematch import line_local

    texts = ["ab\nc\n", "x\nab", "c\n\nb", "ba b\n", "\n", "a \nb\n", "xb\nc"]
    assert line_local(pattern)
    whole = regex.compile(pattern, regex.MULTILINE)
    rx = regex.compile(pattern)
    for text in texts:
        if any(rx.search(line) for line in text.split("\n")[: text.count("\n") + 1]):
            assert whole.search(text), (pattern, text)
    for lookaround in [r"a(?!\n)", r"(?<=\n)b", r"\Aa", r"b\Z"]:
        assert not line_local(lookaround)


def test_rg_hits_are_checked_against_the_workspace(root: Path, ws: Workspace) -> None:
    from octos_tools.builtins.search._hits import FileHits, verified

    good = FileHits("notes.txt", {1: ("hello", True)})
    bad = FileHits("notes.txt", {1: ("TOPSECRET", True)})
    gone = FileHits("leak", {1: ("TOPSECRET", True)})
    assert verified(ws, good)
    assert not verified(ws, bad)
    assert not verified(ws, gone)


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_trailing_slash_on_a_file_is_not_a_directory(ws: Workspace, engine: str) -> None:
    result = await grep(ws, engine, pattern="hello", path="notes.txt/")
    assert kind(result) == "not_a_directory"
    listing = await run(search.ListDirTool(ws, Config()), ws, {"path": "notes.txt/"})
    assert kind(listing) == "not_a_directory"
