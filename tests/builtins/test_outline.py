"""code_structure on real files of this repository and on snippets of each language."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins.code_structure import CodeStructureTool, outline
from octos_tools.builtins.code_structure import _outline as code
from octos_tools.config import Config
from octos_tools.context import ToolContext
from octos_tools.errors import ToolError
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]


async def run(root: Path, **args: Any) -> ToolResult:
    tool = CodeStructureTool(Workspace(root))
    try:
        return await tool.execute_with_context(ToolContext(), args)
    except ToolError as exc:
        return ToolResult.from_error(exc)


def names(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(i["name"], i["line"], i.get("parent")) for i in items]


def ast_outline(source: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Functions and classes as our walker should see them, computed with ``ast``."""
    functions: list[tuple[Any, ...]] = []
    classes: list[tuple[Any, ...]] = []

    def walk(body: list[ast.stmt], parent: str | None) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions.append((node.name, node.lineno, parent))
            elif isinstance(node, ast.ClassDef):
                classes.append((node.name, node.lineno, parent))
                walk(node.body, node.name)
            elif isinstance(node, ast.If):
                walk(node.body, parent)
                walk(node.orelse, parent)
            elif isinstance(node, ast.Try):
                walk(node.body, parent)
                for handler in node.handlers:
                    walk(handler.body, parent)
                walk(node.orelse, parent)
                walk(node.finalbody, parent)

    walk(ast.parse(source).body, None)
    return functions, classes


REAL_FILES = [
    "src/octos_tools/builtins/code_structure/_outline.py",
    "src/octos_tools/builtins/vcs/_git_tool.py",
    "src/octos_tools/builtins/web/_web_fetch.py",
    "src/octos_tools/builtins/web/_guard.py",
    "src/octos_tools/tool_types.py",
    "src/octos_tools/errors.py",
    "src/octos_tools/config.py",
    "tests/builtins/test_outline.py",
]


@pytest.mark.parametrize("rel", REAL_FILES)
async def test_real_python_files_match_ast(rel: str) -> None:
    result = await run(REPO, path=rel)
    assert result.success, result.output
    data = result.structured_metadata
    assert data["path"] == rel and data["language"] == "python"
    source = (REPO / rel).read_text()
    functions, classes = ast_outline(source)
    assert sorted(names(data["functions"])) == sorted(functions)
    assert sorted(names(data["classes"])) == sorted(classes)
    tree = ast.parse(source)
    imports = [n.lineno for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    assert set(imports) <= {i["line"] for i in data["imports"]}
    assert data["lines"] == len(source.splitlines())
    assert "parse_errors" not in data


async def test_this_module_outline() -> None:
    data = (
        await run(REPO, path="src/octos_tools/builtins/code_structure/_outline.py")
    ).structured_metadata
    funcs = {f["name"]: f for f in data["functions"]}
    assert funcs["outline"]["kind"] == "function"
    assert funcs["_outline_dir"]["parent"] == "CodeStructureTool"
    assert funcs["_outline_dir"]["kind"] == "method"
    assert funcs["register"]["end_line"] > funcs["register"]["line"]
    assert {"MAX_FILE_BYTES", "MAX_FILES", "LANGUAGES"} <= {c["name"] for c in data["constants"]}
    assert data["imports"][0]["text"] == "from __future__ import annotations"
    classes = [(c["name"], c.get("parent")) for c in data["classes"]]
    assert classes == [
        ("_Outline", None),
        ("CodeStructureTool", None),
        ("Args", "CodeStructureTool"),
    ]


JS = """import fs from "fs";
import { join } from "path";
const LIMIT = 10;
let counter = 0;
export function main(argv) { function inner() {} return inner; }
export const helper = (x) => x * 2;
const legacy = function () {};
export default class Widget extends Base {
  constructor() { super(); }
  render() { return 1; }
  static create() { return new Widget(); }
  onClick = () => {};
}
function* gen() {}
"""


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {i["name"]: i for i in items}


async def test_javascript(tmp_path: Path) -> None:
    (tmp_path / "app.js").write_text(JS)
    data = (await run(tmp_path, path="app.js")).structured_metadata
    assert data["language"] == "javascript"
    funcs = by_name(data["functions"])
    assert set(funcs) == {
        "main",
        "helper",
        "legacy",
        "constructor",
        "render",
        "create",
        "onClick",
        "gen",
    }
    assert funcs["main"]["line"] == 5 and funcs["main"]["kind"] == "function"
    assert funcs["render"]["parent"] == "Widget" and funcs["render"]["line"] == 10
    assert funcs["onClick"]["parent"] == "Widget"
    assert "inner" not in funcs  # inside a function body
    assert [(c["name"], c["line"]) for c in data["classes"]] == [("Widget", 8)]
    assert [i["line"] for i in data["imports"]] == [1, 2]
    assert [c["name"] for c in data["constants"]] == ["LIMIT"]


TS = """import type { Foo } from "./foo";
export interface Shape { area(): number; }
export type Id = string | number;
export enum Color { Red, Green }
export abstract class Base<T> implements Shape {
  abstract area(): number;
  describe(): string { return "base"; }
}
export const PI: number = 3.14;
export async function load(id: Id): Promise<void> {}
"""


async def test_typescript_and_tsx(tmp_path: Path) -> None:
    (tmp_path / "shapes.ts").write_text(TS)
    data = (await run(tmp_path, path="shapes.ts")).structured_metadata
    assert data["language"] == "typescript"
    kinds = {c["name"]: c["kind"] for c in data["classes"]}
    assert kinds == {"Shape": "interface", "Id": "type", "Color": "enum", "Base": "class"}
    funcs = by_name(data["functions"])
    assert funcs["describe"]["parent"] == "Base" and funcs["area"]["parent"] == "Base"
    assert funcs["load"]["line"] == 10
    assert [c["name"] for c in data["constants"]] == ["PI"]
    (tmp_path / "view.tsx").write_text(
        "import React from 'react';\n"
        "export function View(p: {n: number}) { return <div>{p.n}</div>; }\n"
        "export const Item = ({x}: {x: string}) => <li>{x}</li>;\n"
    )
    tsx = (await run(tmp_path, path="view.tsx")).structured_metadata
    assert tsx["language"] == "tsx" and "parse_errors" not in tsx
    assert [f["name"] for f in tsx["functions"]] == ["View", "Item"]


RUST = """use std::collections::HashMap;
use std::io::{self, Read};
extern crate alloc;

pub const MAX: usize = 10;
static GREETING: &str = "hi";

pub struct Point { x: i32, y: i32 }
enum Shape { Circle, Square }
pub trait Area { fn area(&self) -> f64; fn name(&self) -> String { String::new() } }
type Map = HashMap<String, i32>;

impl Point {
    pub fn new(x: i32, y: i32) -> Self { Point { x, y } }
    fn norm(&self) -> i32 { self.x + self.y }
}

impl Area for Point { fn area(&self) -> f64 { 0.0 } }

mod inner { pub fn helper() {} }

fn main() { fn nested() {} }
"""


async def test_rust(tmp_path: Path) -> None:
    (tmp_path / "lib.rs").write_text(RUST)
    data = (await run(tmp_path, path="lib.rs")).structured_metadata
    assert data["language"] == "rust"
    assert {c["name"]: c["kind"] for c in data["classes"]} == {
        "Point": "struct",
        "Shape": "enum",
        "Area": "trait",
        "Map": "type",
    }
    funcs = [(f["name"], f.get("parent"), f["line"]) for f in data["functions"]]
    assert funcs == [
        ("area", "Area", 10),
        ("name", "Area", 10),
        ("new", "Point", 14),
        ("norm", "Point", 15),
        ("area", "Point", 18),
        ("helper", None, 20),
        ("main", None, 22),
    ]
    assert [(c["name"], c["line"]) for c in data["constants"]] == [("MAX", 5), ("GREETING", 6)]
    assert [i["line"] for i in data["imports"]] == [1, 2, 3]
    assert data["imports"][1]["text"] == "use std::io::{self, Read};"


GO = """package shapes

import (
\t"fmt"
\tm "math"
)

const Pi, E = 3.14, 2.71
const Max = 10

type Point struct { X, Y float64 }
type Shape interface { Area() float64 }
type ID string

func (p *Point) Norm() float64 { return m.Sqrt(p.X*p.X + p.Y*p.Y) }
func (p Point) String() string { return fmt.Sprint(p.X) }
func New(x, y float64) *Point { return &Point{x, y} }
"""


async def test_go(tmp_path: Path) -> None:
    (tmp_path / "shapes.go").write_text(GO)
    data = (await run(tmp_path, path="shapes.go")).structured_metadata
    assert data["language"] == "go"
    assert {c["name"]: c["kind"] for c in data["classes"]} == {
        "Point": "struct",
        "Shape": "interface",
        "ID": "type",
    }
    assert [(f["name"], f.get("parent"), f["line"]) for f in data["functions"]] == [
        ("Norm", "Point", 15),
        ("String", "Point", 16),
        ("New", None, 17),
    ]
    assert [c["name"] for c in data["constants"]] == ["Pi", "E", "Max"]
    assert data["imports"][0]["line"] == 3 and '"fmt"' in data["imports"][0]["text"]


async def test_directory_walk(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("def a():\n    pass\n")
    (tmp_path / "pkg" / "sub").mkdir()
    (tmp_path / "pkg" / "sub" / "b.go").write_text("package sub\nfunc B() {}\n")
    (tmp_path / "z.rs").write_text("fn z() {}\n")
    (tmp_path / "notes.txt").write_text("def not_code(): pass\n")
    for skipped in ("node_modules", ".git", ".venv", "__pycache__"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "x.py").write_text("def hidden(): pass\n")
    (tmp_path / "big.py").write_bytes(b"x = 1\n" * 200_000)
    (tmp_path / "link.py").symlink_to(tmp_path / "pkg" / "a.py")
    result = await run(tmp_path, path=".")
    data = result.structured_metadata
    assert [f["path"] for f in data["files"]] == ["z.rs", "pkg/a.py", "pkg/sub/b.go"]
    assert data["skipped"][0]["path"] == "big.py" and "1 MiB" in data["skipped"][0]["reason"]
    assert "hidden" not in result.output
    only_go = (await run(tmp_path, path=".", language="go")).structured_metadata
    assert [f["path"] for f in only_go["files"]] == ["pkg/sub/b.go"]
    sub = (await run(tmp_path, path="pkg")).structured_metadata
    assert [f["path"] for f in sub["files"]] == ["pkg/a.py", "pkg/sub/b.go"]


async def test_directory_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(code, "MAX_FILES", 3)
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text(f"def f{i}(): pass\n")
    result = await run(tmp_path, path=".")
    data = result.structured_metadata
    assert len(data["files"]) == 3 and "stopped at 3 files" in data["truncated"]
    assert data["left_out"] == 2 and data["left_out_folders"] == ["."]
    blocks = result.output.split("\n\n")
    assert blocks[:3] == [f"m{i}.py (python, 1 line)\n  function f{i} (line 1)" for i in range(3)]
    assert blocks[3].startswith("[truncated: stopped at 3 files: 2 more source files")
    assert blocks[3].endswith("left_out: 2; left_out_folders: .]") and len(blocks) == 4


async def test_whole_folder_stays_under_the_output_cap_as_valid_json(tmp_path: Path) -> None:
    """A folder whose outline is far over the 50 000-byte cap: files stop at the byte budget,
    the JSON stays whole (through the registry's cap) and says what was left out."""
    from octos_tools.registry import ToolRegistry

    body = "".join(f"def function_number_{i}(argument):\n    return {i}\n" for i in range(60))
    for folder in ("alpha", "beta", "gamma"):
        (tmp_path / folder).mkdir()
        for i in range(20):
            (tmp_path / folder / f"module_{i:02}.py").write_text(body)
    ws = Workspace(tmp_path)
    reg = ToolRegistry(ws)
    code.register(reg, ws, Config())
    result = await reg.execute("code_structure", {"path": "."})
    assert result.success
    assert len(result.output.encode()) <= code.MAX_DIR_OUTPUT_BYTES
    data = result.structured_metadata
    assert "[truncated:" in result.output.splitlines()[-1]  # not cut by the registry
    assert f"left_out: {data['left_out']}" in result.output
    listed = len(data["files"])
    assert 0 < listed < 60 and data["left_out"] == 60 - listed
    assert "narrow 'path'" in data["truncated"] and f"{60 - listed} more" in data["truncated"]
    assert "gamma" in data["left_out_folders"]
    assert data["files"][0]["path"] == "alpha/module_00.py"


async def test_binary_file_refused_even_with_language(tmp_path: Path) -> None:
    (tmp_path / "blob").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 4)
    (tmp_path / "fake.py").write_bytes(b"def f():\x00\x00\x00 pass\n")
    forced = await run(tmp_path, path="blob", language="python")
    assert forced.error_kind == "binary_file", forced.output
    assert (await run(tmp_path, path="fake.py")).error_kind == "binary_file"
    (tmp_path / "ok.py").write_text("def g(): pass\n")
    folder = (await run(tmp_path, path=".")).structured_metadata
    assert [f["path"] for f in folder["files"]] == ["ok.py"]
    assert folder["skipped"][0]["path"] == "fake.py" and "binary" in folder["skipped"][0]["reason"]


async def test_symlinked_folder_refused_as_symlink(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "m.py").write_text("def f(): pass\n")
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    for args in ({}, {"language": "python"}):
        result = await run(tmp_path, path="linked", **args)
        assert result.error_kind == "symlink_refused", result.output
    assert (await run(tmp_path, path="linked/m.py")).error_kind == "symlink_refused"


async def test_refusals(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_bytes(b"#" * (1_048_576 + 1))
    (tmp_path / "exact.py").write_bytes(b"#" * 1_048_575 + b"\n")
    big = await run(tmp_path, path="big.py")
    assert big.error_kind == "file_too_large" and "1048577 bytes" in big.output
    assert (await run(tmp_path, path="exact.py")).success  # 1 MiB exactly is allowed
    (tmp_path / "script").write_text("def f(): pass\n")
    unknown = await run(tmp_path, path="script")
    assert unknown.error_kind == "invalid_arguments" and "language" in unknown.output
    forced = (await run(tmp_path, path="script", language="python")).structured_metadata
    assert forced["functions"][0]["name"] == "f"
    assert (await run(tmp_path, path="../x.py")).error_kind == "path_outside_workspace"
    assert (await run(tmp_path, path="missing.py")).error_kind == "not_found"
    (tmp_path / "ln.py").symlink_to(tmp_path / "exact.py")
    assert (await run(tmp_path, path="ln.py")).error_kind == "symlink_refused"


async def test_broken_source_is_flagged_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("def ok():\n    pass\n\ndef broken(:\n")
    data = (await run(tmp_path, path="bad.py")).structured_metadata
    assert data["parse_errors"] is True and data["functions"][0]["name"] == "ok"


def test_outline_rejects_unknown_language() -> None:
    with pytest.raises(ValueError):
        outline(b"", "cobol")


class FakeRegistry:
    def __init__(self) -> None:
        self.tools: list[Any] = []

    def register(self, tool: Any) -> None:
        self.tools.append(tool)


def test_register_without_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing: dict[str, str] = {}
    monkeypatch.setitem(sys.modules, "tree_sitter_language_pack", None)
    monkeypatch.setattr(code, "MISSING_EXTRAS", missing)
    reg = FakeRegistry()
    code.register(reg, Workspace(tmp_path), Config())  # type: ignore[arg-type]
    assert reg.tools == [] and missing == {"code_structure": "code"}


async def test_through_registry(tmp_path: Path) -> None:
    from octos_tools.registry import ToolRegistry

    (tmp_path / "m.py").write_text("import os\nX = 1\nclass A:\n    def m(self): ...\n")
    ws = Workspace(tmp_path)
    reg = ToolRegistry(ws)
    code.register(reg, ws, Config())
    tool = reg.get("code_structure")
    assert tool is not None and tool.cwd_bound and tool.tags == ("code", "search")
    ok = await reg.execute("code_structure", '{"path": "m.py"}')
    data = ok.structured_metadata
    assert data["functions"] == [
        {"name": "m", "kind": "method", "line": 4, "end_line": 4, "parent": "A"}
    ]
    bad = await reg.execute("code_structure", {"path": "m.py", "language": "cobol"})
    assert bad.error_kind == "invalid_arguments"


async def test_output_is_readable_text_with_json_in_metadata(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import os\nLIMIT = 3\n\nclass A:\n    def m(self):\n        pass\n\n"
        "    class B:\n        def n(self): ...\n\ndef f():\n    return 1\n"
    )
    (tmp_path / "b.py").write_text("def broken(:\n")
    (tmp_path / "s.rs").write_text(
        "struct P;\nimpl fmt::Display for Q {\n    fn fmt(&self) {}\n}\n"
    )
    result = await run(tmp_path, path="m.py")
    assert result.output == (
        "m.py (python, 12 lines)\n"
        "  imports (1):\n"
        "    import os (line 1)\n"
        "  const LIMIT (line 2)\n"
        "  class A (lines 4-9)\n"
        "    method m (lines 5-6)\n"
        "    class B (lines 8-9)\n"
        "      method n (line 9)\n"
        "  function f (lines 11-12)"
    )
    assert result.structured_metadata["classes"][1] == {
        "name": "B",
        "kind": "class",
        "line": 8,
        "end_line": 9,
        "parent": "A",
    }
    rust = await run(tmp_path, path="s.rs")
    assert rust.output.splitlines()[1:] == [
        "  struct P (line 1)",
        "  methods of Q:",
        "    method fmt (line 3)",
    ]
    broken = await run(tmp_path, path="b.py")
    assert "parse errors: outline may be incomplete" in broken.output.splitlines()[0]
    folder = await run(REPO, path="src/octos_tools/builtins")
    data = folder.structured_metadata
    assert len(data["files"]) > 5 and not folder.output.startswith("{")
    assert len(folder.output) < len(json.dumps(data, separators=(",", ":")))


async def test_trailing_slash_on_a_file_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f(): pass\n")
    assert (await run(tmp_path, path="m.py/")).error_kind == "not_a_directory"
    assert (await run(tmp_path, path="m.py")).success


async def test_arguments_are_typed(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    pass\n")
    bad = await run(tmp_path, path="m.py", language="cobol")
    assert bad.error_kind is not None and bad.error_kind.value == "invalid_arguments"
    assert "language" in bad.output
    missing = await run(tmp_path, file="m.py")
    assert missing.error_kind is not None and "missing required field 'path'" in missing.output
    as_null = await run(tmp_path, path="m.py", language=None)  # null = absent
    assert as_null.success and as_null.structured_metadata["functions"][0]["name"] == "f"
