"""The ``code_structure`` tool: parsers per language and the outline (the family's rules are in
:mod:`octos_tools.builtins.code_structure`).

``code_structure {path, language?}`` parses a file with tree-sitter and lists its functions
(and methods, with their class / impl / receiver), classes (and structs, enums, traits,
interfaces, type aliases), imports and constants, each with 1-based line numbers, as
readable text (:func:`render_outline`: per file ``path (language, N lines)``, then indented
``class Name (lines a-b)`` with its methods below it, ``function name (lines a-b)``, …);
``structured_metadata`` holds the same outline as JSON. A directory gives each supported
file under it (hidden folders, ``node_modules``, ``target``, ``__pycache__`` and
virtualenvs skipped; at most :data:`MAX_FILES` files and
about :data:`MAX_DIR_OUTPUT_BYTES` bytes of compact JSON outline (the text is shorter),
below the registry's 50 000-byte output cap, whose head+tail cut would lose the middle:
past the budget no more files are added, and ``truncated`` / ``left_out`` /
``left_out_folders`` (in the metadata, and in the text's last line) say how many were left
out and where, so the model can narrow ``path`` or set ``language``).

Grammars come from ``tree-sitter-language-pack==0.13.0``, whose wheel bundles compiled
grammars (the 1.x line downloads them at run time, which is not acceptable here). Supported:
Python, JavaScript (also JSX), TypeScript, TSX, Rust, Go; the language comes from the file
extension unless ``language`` is given.

The bodies of functions are not searched (nested helpers are implementation detail). Constants are
Python module-level ``UPPER_CASE`` assignments, JS/TS top-level ``const`` bindings that are
not functions, Rust ``const`` / ``static`` items and Go ``const`` specs.

Files are read through the :class:`~octos_tools.workspace.Workspace` (no symlink followed);
a file over 1 MiB is refused with ``file_too_large`` (octos's limit), a binary file (NUL bytes
or mostly control bytes, :func:`~octos_tools.workspace.text.is_binary`) with ``binary_file``
even when ``language`` is forced, and a symbolic link (to a file or a folder) with
``symlink_refused``; when walking a directory such files are skipped with a note.
"""

from __future__ import annotations

import importlib.util
import json
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import Field

from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...typed import ToolArgs
from ...workspace.text import is_binary
from .. import MISSING_EXTRAS
from .._base import WorkspaceTool

if TYPE_CHECKING:
    from ...config import Config
    from ...context import ToolContext
    from ...registry import ToolRegistry
    from ...workspace import Workspace


#: Largest file parsed, in bytes (octos's limit: 1 MiB).
MAX_FILE_BYTES = 1_048_576
#: Files listed at most for a directory.
MAX_FILES = 200
#: Bytes of compact JSON a directory outline may reach before no more files are added (ours:
#: leaves room under the registry's default 50 000-byte output cap for the rest of the answer).
MAX_DIR_OUTPUT_BYTES = 40_000
#: Left-out files counted at most after the budget is spent (the walk stops there).
_MAX_LEFT_OUT_COUNT = 10_000
#: Supported language names (tree-sitter-language-pack grammar names).
LANGUAGES = ("python", "javascript", "typescript", "tsx", "rust", "go")
_Language = Literal["python", "javascript", "typescript", "tsx", "rust", "go"]
#: File extension → language.
EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".rs": "rust",
    ".go": "go",
}
_SKIP_DIRS = frozenset(
    {"node_modules", "target", "__pycache__", "venv", "site-packages", "dist", "build"}
)
_PY_CONSTANT = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
_MAX_IMPORT_CHARS = 200


@dataclass
class _Outline:
    functions: list[JSONObject] = field(default_factory=list)
    classes: list[JSONObject] = field(default_factory=list)
    imports: list[JSONObject] = field(default_factory=list)
    constants: list[JSONObject] = field(default_factory=list)


def _name(node: Any) -> str | None:
    n = node.child_by_field_name("name")
    return None if n is None else str(n.text.decode("utf-8", "replace"))


def _line(node: Any) -> int:
    return int(node.start_point[0]) + 1


def _span(node: Any) -> JSONObject:
    return {"line": _line(node), "end_line": int(node.end_point[0]) + 1}


def _import(out: _Outline, node: Any) -> None:
    text = " ".join(node.text.decode("utf-8", "replace").split())
    if len(text) > _MAX_IMPORT_CHARS:
        text = text[: _MAX_IMPORT_CHARS - 3] + "..."
    out.imports.append({"line": _line(node), "text": text})


def _function(out: _Outline, node: Any, name: str | None, parent: str | None) -> None:
    if name is None:
        return
    entry: JSONObject = {"name": name, "kind": "method" if parent else "function", **_span(node)}
    if parent:
        entry["parent"] = parent
    out.functions.append(entry)


def _class(out: _Outline, node: Any, kind: str, parent: str | None = None) -> str | None:
    name = _name(node)
    if name is not None:
        entry: JSONObject = {"name": name, "kind": kind, **_span(node)}
        if parent:
            entry["parent"] = parent
        out.classes.append(entry)
    return name


# ------------------------------------------------------------------------------ Python


def _python(out: _Outline, node: Any, parent: str | None, top: bool) -> None:
    for child in node.named_children:
        kind = child.type
        target = child
        if kind == "decorated_definition":
            inner = child.child_by_field_name("definition")
            if inner is None:
                continue
            target, kind = inner, inner.type
        if kind == "function_definition":
            _function(out, target, _name(target), parent)
        elif kind == "class_definition":
            name = _class(out, target, "class", parent)
            body = target.child_by_field_name("body")
            if body is not None:
                _python(out, body, name, False)
        elif kind in ("import_statement", "import_from_statement", "future_import_statement"):
            _import(out, child)
        elif kind in ("expression_statement", "assignment") and top:
            for expr in [child] if kind == "assignment" else child.named_children:
                if expr.type == "assignment":
                    left = expr.child_by_field_name("left")
                    if left is not None and left.type == "identifier":
                        name = left.text.decode("utf-8", "replace")
                        if _PY_CONSTANT.match(name):
                            out.constants.append({"name": name, "line": _line(expr)})
        elif kind in ("if_statement", "try_statement", "block", "else_clause", "except_clause"):
            # Definitions under `if TYPE_CHECKING:` / `try: import …` are still module level.
            _python(out, child, parent, top)


# ---------------------------------------------------------------------- JavaScript / TS

_JS_FUNCTIONS = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_JS_CLASSES = {
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "class": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
}


def _javascript(out: _Outline, node: Any, parent: str | None) -> None:
    for child in node.named_children:
        kind = child.type
        if kind == "export_statement":
            _javascript(out, child, parent)
        elif kind in ("function_declaration", "generator_function_declaration"):
            _function(out, child, _name(child), parent)
        elif kind in _JS_CLASSES:
            name = _class(out, child, _JS_CLASSES[kind], parent)
            body = child.child_by_field_name("body")
            if body is not None and kind in ("class_declaration", "abstract_class_declaration"):
                _javascript(out, body, name)
        elif kind in ("method_definition", "method_signature", "abstract_method_signature"):
            _function(out, child, _name(child), parent)
        elif kind in ("public_field_definition", "field_definition") and parent:
            value = child.child_by_field_name("value")
            if value is not None and value.type in _JS_FUNCTIONS:
                key = child.child_by_field_name("name") or child.child_by_field_name("property")
                if key is not None:
                    _function(out, child, key.text.decode("utf-8", "replace"), parent)
        elif kind in ("lexical_declaration", "variable_declaration") and parent is None:
            is_const = child.children and child.children[0].type == "const"
            for decl in child.named_children:
                if decl.type != "variable_declarator":
                    continue
                name = _name(decl)
                value = decl.child_by_field_name("value")
                if value is not None and value.type in _JS_FUNCTIONS:
                    _function(out, decl, name, None)
                elif value is not None and value.type == "class":
                    _class(out, decl, "class")
                elif is_const and name is not None:
                    out.constants.append({"name": name, "line": _line(decl)})
        elif kind == "import_statement":
            _import(out, child)


# ------------------------------------------------------------------------------- Rust

_RUST_CLASSES = {
    "struct_item": "struct",
    "enum_item": "enum",
    "union_item": "union",
    "trait_item": "trait",
    "type_item": "type",
}


def _rust(out: _Outline, node: Any, parent: str | None) -> None:
    for child in node.named_children:
        kind = child.type
        if kind in ("function_item", "function_signature_item"):
            _function(out, child, _name(child), parent)
        elif kind in _RUST_CLASSES:
            name = _class(out, child, _RUST_CLASSES[kind], parent)
            body = child.child_by_field_name("body")
            if kind == "trait_item" and body is not None:
                _rust(out, body, name)
        elif kind == "impl_item":
            type_node = child.child_by_field_name("type")
            owner = type_node.text.decode("utf-8", "replace") if type_node is not None else None
            body = child.child_by_field_name("body")
            if body is not None:
                _rust(out, body, owner)
        elif kind == "mod_item":
            body = child.child_by_field_name("body")
            if body is not None:
                _rust(out, body, parent)
        elif kind in ("use_declaration", "extern_crate_declaration"):
            _import(out, child)
        elif kind in ("const_item", "static_item"):
            name = _name(child)
            if name is not None:
                out.constants.append({"name": name, "line": _line(child)})


# --------------------------------------------------------------------------------- Go


def _go(out: _Outline, node: Any) -> None:
    for child in node.named_children:
        kind = child.type
        if kind == "function_declaration":
            _function(out, child, _name(child), None)
        elif kind == "method_declaration":
            receiver = child.child_by_field_name("receiver")
            owner = None
            if receiver is not None:
                idents = [
                    n.text.decode("utf-8", "replace")
                    for n in _descendants(receiver)
                    if n.type == "type_identifier"
                ]
                owner = idents[0] if idents else None
            _function(out, child, _name(child), owner)
        elif kind == "type_declaration":
            for spec in child.named_children:
                if spec.type not in ("type_spec", "type_alias"):
                    continue
                type_node = spec.child_by_field_name("type")
                sort = {"struct_type": "struct", "interface_type": "interface"}.get(
                    type_node.type if type_node is not None else "", "type"
                )
                _class(out, spec, sort)
        elif kind == "import_declaration":
            _import(out, child)
        elif kind == "const_declaration":
            for spec in child.named_children:
                if spec.type == "const_spec":
                    for i, sub in enumerate(spec.children):
                        if sub.type == "identifier" and spec.field_name_for_child(i) == "name":
                            out.constants.append(
                                {"name": sub.text.decode("utf-8", "replace"), "line": _line(sub)}
                            )


def _descendants(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def outline(source: bytes, language: str) -> JSONObject:
    """Parse ``source`` and return ``{language, lines, functions, classes, imports,
    constants[, parse_errors]}`` (lines are 1-based).

    Args:
        source: the file's bytes (any encoding; names are decoded as UTF-8 with
            replacement).
        language: one of :data:`LANGUAGES`.

    Raises:
        ValueError: for an unsupported ``language``.
    """
    if language not in LANGUAGES:
        raise ValueError(f"unsupported language {language!r}")
    from tree_sitter_language_pack import get_parser

    tree = get_parser(language).parse(source)  # type: ignore[arg-type, unused-ignore]
    root = tree.root_node
    out = _Outline()
    if language == "python":
        _python(out, root, None, True)
    elif language in ("javascript", "typescript", "tsx"):
        _javascript(out, root, None)
    elif language == "rust":
        _rust(out, root, None)
    else:
        _go(out, root)
    result: JSONObject = {
        "language": language,
        "lines": source.count(b"\n") + (0 if source.endswith(b"\n") or not source else 1),
        "functions": out.functions,
        "classes": out.classes,
        "imports": out.imports,
        "constants": out.constants,
    }
    if root.has_error:
        result["parse_errors"] = True
    return result


def _language_of(path: str) -> str | None:
    dot = path.rfind(".")
    return EXTENSIONS.get(path[dot:].lower()) if dot > path.rfind("/") else None


class CodeStructureTool(WorkspaceTool):
    """``code_structure {path, language?}`` (octos ``code_structure``).

    Args:
        workspace: where paths are resolved; ``None`` → the call's ``ctx.workspace``.
    """

    name = "code_structure"
    title = "Code structure"
    description = (
        "Outline source files: functions, classes, imports, constants with line "
        "numbers. Python, JS, TS, Rust, Go."
    )

    class Args(ToolArgs):
        path: str = Field(description="File or folder.")
        language: _Language | None = Field(None, description="Override the file extension.")

    tags = ("code", "search")
    concurrency_class = ConcurrencyClass.SAFE

    async def run(self, args: Args, ctx: ToolContext | None) -> ToolResult:
        ws = self.workspace_for(ctx)
        path = args.path
        language = args.language
        data = await anyio.to_thread.run_sync(self._outline_path, ws, path, language)
        # readable outline text for the model; the JSON outline stays in the metadata
        return ToolResult.ok(render_outline(data), structured_metadata=data)

    def _outline_path(self, ws: Workspace, path: str, language: str | None) -> JSONObject:
        rel = ws.relpath(path)
        if ws.is_dir(path):
            return self._outline_dir(ws, rel, language)
        # The user's path, not rel: "file.py/" is not_a_directory; not_found and a symlinked
        # parent raise here too.
        if stat.S_ISLNK(ws.stat(path).st_mode):
            raise ToolError(
                ErrorKind.SYMLINK_REFUSED,
                f"{rel!r} is a symbolic link; code_structure does not follow links: give the "
                "path of the real file or folder",
            )
        lang = language or _language_of(rel)
        if lang is None:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"cannot tell the language of {rel!r} from its extension; pass 'language' "
                f"(one of {', '.join(LANGUAGES)})",
            )
        return {"path": rel, **outline(_read(ws, rel), lang)}

    def _outline_dir(self, ws: Workspace, rel: str, language: str | None) -> JSONObject:
        files: list[JSONObject] = []
        skipped: list[JSONObject] = []
        size = 200  # the envelope and the truncation note
        left_out = 0
        left_folders: dict[str, None] = {}
        reason = ""
        for file_rel in _source_files(ws, rel):
            lang = _language_of(file_rel)
            if lang is None or (language is not None and _family(lang) != _family(language)):
                continue
            if reason:
                left_out += 1
                left_folders.setdefault(file_rel.rpartition("/")[0] or ".")
                if left_out >= _MAX_LEFT_OUT_COUNT:
                    break
                continue
            if len(files) >= MAX_FILES:
                reason = f"{MAX_FILES} files"
                left_out, left_folders[file_rel.rpartition("/")[0] or "."] = 1, None
                continue
            try:
                entry: JSONObject = {"path": file_rel, **outline(_read(ws, file_rel), lang)}
                target = files
            except ToolError as exc:
                entry, target = {"path": file_rel, "reason": exc.message}, skipped
            entry_size = len(_compact(entry).encode("utf-8")) + 1
            if size + entry_size > MAX_DIR_OUTPUT_BYTES:
                reason = f"about {MAX_DIR_OUTPUT_BYTES} bytes of output"
                left_out, left_folders[file_rel.rpartition("/")[0] or "."] = 1, None
                continue
            size += entry_size
            target.append(entry)
        data: JSONObject = {"path": rel, "files": files}
        if skipped:
            data["skipped"] = skipped
        if reason:
            more = f"{left_out}+" if left_out >= _MAX_LEFT_OUT_COUNT else str(left_out)
            data["truncated"] = (
                f"stopped at {reason}: {more} more source files were left out; narrow 'path' "
                "to one of left_out_folders (or a single file), or set 'language'"
            )
            data["left_out"] = left_out
            data["left_out_folders"] = list(left_folders)[:20]
        return data


def _lines(entry: JSONObject) -> str:
    line, end = entry.get("line"), entry.get("end_line", entry.get("line"))
    return f"(line {line})" if end == line else f"(lines {line}-{end})"


def _render_file(data: JSONObject) -> list[str]:
    """One file's outline: a ``path (language, N lines)`` header, then imports, constants,
    classes with their methods indented below them, and functions, in line order."""
    note = ", parse errors: outline may be incomplete" if data.get("parse_errors") else ""
    count = f"{data['lines']} line" + ("" if data["lines"] == 1 else "s")
    out = [f"{data['path']} ({data['language']}, {count}{note})"]
    imports = _list(data.get("imports"))
    if imports:
        out.append(f"  imports ({len(imports)}):")
        out += [f"    {e['text']} {_lines(e)}" for e in imports]
    items: list[JSONObject] = [{**e, "kind": "const"} for e in _list(data.get("constants"))]
    items += _list(data.get("classes")) + _list(data.get("functions"))
    children: dict[str, list[JSONObject]] = {}
    top: list[JSONObject] = []
    class_names = {str(e["name"]) for e in _list(data.get("classes"))}
    for e in items:
        parent = e.get("parent")
        if parent is None:
            top.append(e)
        else:
            children.setdefault(str(parent), []).append(e)
    for owner, members in children.items():  # methods of a type declared elsewhere
        if owner not in class_names:
            first = min(int(m["line"]) for m in members)
            top.append({"kind": "impl", "name": owner, "line": first, "end_line": first})
    shown: set[str] = set()

    def emit(entries: list[JSONObject], depth: int) -> None:
        for e in sorted(entries, key=lambda x: int(x["line"])):
            name = str(e["name"])
            if e["kind"] == "impl":
                out.append(f"{'  ' * depth}methods of {name}:")
            else:
                out.append(f"{'  ' * depth}{e['kind']} {name} {_lines(e)}")
            if e["kind"] != "const" and e["kind"] not in ("function", "method"):
                if name in children and name not in shown:
                    shown.add(name)
                    emit(children[name], depth + 1)

    emit(top, 1)
    return out


def _list(value: Any) -> list[JSONObject]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def render_outline(data: JSONObject) -> str:
    """The text ``code_structure`` answers with, from its JSON outline (one file's
    :func:`outline` plus ``path``, or a folder's ``{path, files, skipped?, truncated?,
    left_out?, left_out_folders?}``): per file a ``path (language, N lines)`` line, then
    indented ``imports``, ``const NAME (line n)``, ``class Name (lines a-b)`` with its
    methods one level deeper, ``function name (lines a-b)``."""
    if "files" not in data:
        return "\n".join(_render_file(data))
    files = _list(data.get("files"))
    blocks = ["\n".join(_render_file(f)) for f in files]
    if not files:
        blocks.append(f"{data['path']}: no supported source files")
    skipped = _list(data.get("skipped"))
    if skipped:
        blocks.append("skipped:\n" + "\n".join(f"  {e['path']}: {e['reason']}" for e in skipped))
    if data.get("truncated"):
        folders = ", ".join(str(f) for f in data.get("left_out_folders") or [])
        blocks.append(
            f"[truncated: {data['truncated']}; left_out: {data.get('left_out')}; "
            f"left_out_folders: {folders}]"
        )
    return "\n\n".join(blocks)


def _compact(data: JSONObject) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _family(language: str) -> str:
    return "typescript" if language == "tsx" else language


def _read(ws: Workspace, rel: str) -> bytes:
    size = ws.stat(rel).st_size
    if size > MAX_FILE_BYTES:
        raise ToolError(
            ErrorKind.FILE_TOO_LARGE,
            f"{rel}: file too large to parse: {size} bytes (limit {MAX_FILE_BYTES} bytes, 1 MiB)",
        )
    data = ws.read_bytes(rel, max_bytes=MAX_FILE_BYTES)
    if is_binary(data):
        raise ToolError(
            ErrorKind.BINARY_FILE,
            f"{rel}: binary file (NUL or control bytes), not source code; nothing to outline",
        )
    return data


def _source_files(ws: Workspace, rel: str) -> Iterator[str]:
    """Files under ``rel`` in sorted depth-first order, pruning skipped and hidden folders
    and never following symlinks."""
    stack = [rel]
    while stack:
        folder = stack.pop()
        subdirs: list[str] = []
        for entry in ws.list_dir(folder):
            child = entry.name if folder == "." else f"{folder}/{entry.name}"
            if entry.kind == "file":
                yield child
            elif entry.kind == "dir" and not (
                entry.name.startswith(".")
                or entry.name in _SKIP_DIRS
                or entry.name.endswith("venv")
            ):
                subdirs.append(child)
        stack.extend(reversed(subdirs))


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``code_structure``, or record it in ``MISSING_EXTRAS`` as needing the
    ``code`` extra when ``tree_sitter_language_pack`` cannot be imported."""
    try:
        found = importlib.util.find_spec("tree_sitter_language_pack") is not None
    except (ImportError, ValueError):
        found = False
    if not found:  # found without importing: the grammars load on first use
        MISSING_EXTRAS["code_structure"] = "code"
        return
    registry.register(CodeStructureTool(workspace))
