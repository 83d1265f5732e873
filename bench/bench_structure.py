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

Counts over the module tree (a module is a ``.py`` file other than ``__init__`` / ``__main__``,
or a package, by its folder name; a name is compared without its leading underscores):

* **name collisions**: names two or more modules in different packages share
  (``mcp/approval.py`` beside ``approval.py``; ``_settings.py`` beside ``settings.py``). A package's
  own main module (``registry/_registry.py``) is not counted. Listed, each with its modules.
* **test-named share**: the share of modules (``.py`` files) that have a test module named
  after them, ``test_<name>.py`` anywhere under the tests folder.

Usage: ``python bench/bench_structure.py [SRC_DIR] [--tests TESTS_DIR] [--list]`` (default
``src/octos_tools`` and ``tests`` next to this folder); ``--list`` prints every counted read
with its line and every module without a test module named after it.
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


def _modules(src: Path) -> list[tuple[str, Path]]:
    """(name without leading underscores, path relative to ``src``) of every module."""
    found: list[tuple[str, Path]] = []
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if "__pycache__" in rel.parts:
            continue
        if path.is_dir() and (path / "__init__.py").is_file():
            found.append((path.name.lstrip("_"), rel))
        elif path.suffix == ".py" and path.stem not in ("__init__", "__main__"):
            found.append((path.stem.lstrip("_"), rel))
    return found


def name_collisions(src: Path) -> dict[str, list[str]]:
    """Names shared by modules of different packages, each with the modules (POSIX paths)."""
    by_name: dict[str, list[Path]] = {}
    for name, rel in _modules(src):
        if rel.suffix == ".py" and rel.parent.name.lstrip("_") == name:
            continue  # the package's own main module: registry/_registry.py
        by_name.setdefault(name, []).append(rel)
    return {
        name: [p.as_posix() for p in paths]
        for name, paths in sorted(by_name.items())
        if len({p.parent for p in paths}) > 1
    }


def untested_by_name(src: Path, tests: Path) -> tuple[int, list[str]]:
    """(number of ``.py`` modules, those with no ``test_<name>.py`` under ``tests``)."""
    test_names = {p.stem.removeprefix("test_") for p in tests.rglob("test_*.py")}
    files = [(name, rel) for name, rel in _modules(src) if rel.suffix == ".py"]
    return len(files), [rel.as_posix() for name, rel in files if name not in test_names]


def main(argv: list[str]) -> int:
    listing = "--list" in argv
    tests_dir = argv[argv.index("--tests") + 1] if "--tests" in argv else None
    args = [a for a in argv if not a.startswith("--") and a != tests_dir]
    root = Path(__file__).resolve().parent.parent
    src = Path(args[0]) if args else root / "src/octos_tools"
    tests = Path(tests_dir) if tests_dir else root / "tests"
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
    collisions = name_collisions(src)
    print(f"module name collisions: {len(collisions)}")
    for name, paths in collisions.items():
        print(f"  {name}: {', '.join(paths)}")
    total, untested = untested_by_name(src, tests)
    named = total - len(untested)
    print(f"modules with a test module named after them: {named} of {total} ({named / total:.0%})")
    if listing:
        print("\n".join(lines))
        print("modules without a test module named after them:")
        print("\n".join(f"  {rel}" for rel in untested))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
