"""Structure counts of ``src/octos_tools`` (not a timing: the figures do not depend on load).

Counts, per module:

* **private reads**: ``obj._name`` where ``obj`` is not ``self`` / ``cls`` and ``_name``
  (one leading underscore, not a dunder) is a private attribute some class of the package
  sets on ``self`` (or declares in ``__slots__``): another object's private state. Reads
  of the standard library's privates (``sys._getframe``) are not counted. Writes
  (``obj._name = ...``) are counted apart.
* **run-time imports from registry/ to the call path**: an ``import`` in
  ``registry/*.py`` (module level or inside a function, not under ``if TYPE_CHECKING``) of
  ``pipeline``, ``stages``, ``_call_plan``, ``session`` or ``execution``.

Usage: ``python bench/bench_structure.py [SRC_DIR] [--list]`` (default ``src/octos_tools``
next to this folder); ``--list`` prints every counted read with its line.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

CALL_PATH = {"pipeline", "stages", "_call_plan", "session", "execution"}


def _private_names(files: list[Path]) -> set[str]:
    names: set[str] = set()
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
                and _is_private(node.attr)
            ):
                names.add(node.attr)
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
            ):
                for const in ast.walk(node.value):
                    if isinstance(const, ast.Constant) and isinstance(const.value, str):
                        if _is_private(const.value):
                            names.add(const.value)
    return names


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                for inner in ast.walk(sub):
                    if hasattr(inner, "lineno"):
                        lines.add(inner.lineno)
    return lines


def _imported_call_path(node: ast.ImportFrom | ast.Import, package: list[str]) -> list[str]:
    found: list[str] = []
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package[: len(package) - node.level + 1]
            parts = base + (node.module.split(".") if node.module else [])
        else:
            parts = (node.module or "").split(".")
        if parts[:1] == ["octos_tools"] and len(parts) >= 2 and parts[1] in CALL_PATH:
            found.append(parts[1])
        elif parts == ["octos_tools"]:
            found.extend(a.name for a in node.names if a.name in CALL_PATH)
    else:
        for alias in node.names:
            parts = alias.name.split(".")
            if parts[:1] == ["octos_tools"] and len(parts) >= 2 and parts[1] in CALL_PATH:
                found.append(parts[1])
    return found


def main(argv: list[str]) -> int:
    listing = "--list" in argv
    args = [a for a in argv if not a.startswith("--")]
    src = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "src/octos_tools"
    files = sorted(src.rglob("*.py"))
    private = _private_names(files)
    reads: Counter[str] = Counter()
    writes: Counter[str] = Counter()
    imports: list[str] = []
    lines: list[str] = []
    for path in files:
        rel = path.relative_to(src).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in private
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                if isinstance(node.ctx, ast.Store):
                    writes[rel] += 1
                else:
                    reads[rel] += 1
                    lines.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
        if rel.startswith("registry/"):
            guarded = _type_checking_lines(tree)
            package = ["octos_tools", *rel.split("/")[:-1]]
            for node in ast.walk(tree):
                if isinstance(node, ast.Import | ast.ImportFrom) and node.lineno not in guarded:
                    for target in _imported_call_path(node, package):
                        imports.append(f"{rel}:{node.lineno}: {target}")
    print(f"private reads of another object: {sum(reads.values())} in {len(reads)} modules")
    for rel, count in reads.most_common():
        print(f"  {count:4d}  {rel}")
    print(f"private writes to another object: {sum(writes.values())} in {len(writes)} modules")
    for rel, count in writes.most_common():
        print(f"  {count:4d}  {rel}")
    print(f"run-time imports registry/ -> call path: {len(imports)}")
    for line in imports:
        print(f"  {line}")
    if listing:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
