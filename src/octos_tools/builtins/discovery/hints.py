"""Search hints of the built-in tools: the words tasks use for each (never sent to a model).

A tool declares its own with :attr:`octos_tools.tool.Tool.search_hints`; this table holds
them for the built-ins whose modules do not (yet), keyed by tool name. :func:`hints_of`
prefers the tool's own. Hints are vocabulary, not sentences: the words a person uses for
what the tool does, which its description does not already say.
"""

from __future__ import annotations

from ...tool import Tool

__all__ = ["BUILTIN_HINTS", "hints_of"]

_COMMAND = (
    "run tests",
    "test suite",
    "build",
    "compile",
    "install dependencies",
    "script",
    "program",
    "process",
    "terminal",
    "bash",
    "make",
    "pytest",
    "npm",
    "failures",
)
_AGENT = ("sub-agent", "subagent", "helper", "parallel", "subtask")

BUILTIN_HINTS: dict[str, tuple[str, ...]] = {
    "exec_command": (*_COMMAND, "long-running", "interactive", "server"),
    "shell": _COMMAND,
    "bash": _COMMAND,
    "write_stdin": (
        "type",
        "keystrokes",
        "input",
        "answer",
        "interactive prompt",
        "password",
        "running program",
        "REPL",
        "poll output",
        "ctrl-c",
        "interrupt",
        "process",
        "new output",
        "printed",
        "still running",
    ),
    "update_plan": ("plan", "todo", "to-do list", "checklist", "steps", "progress", "track"),
    "request_user_input": (
        "ask the person",
        "human",
        "clarify",
        "confirm",
        "choose",
        "prefer",
        "decide",
        "opinion",
        "approval",
    ),
    "spawn_agent": (*_AGENT, "delegate", "hand off", "research", "background agent"),
    "delegate": (*_AGENT, "delegate", "hand off"),
    "send_input": (*_AGENT, "message", "tell", "instructions", "follow-up"),
    "resume_agent": (*_AGENT, "continue", "restart", "again"),
    "wait_agent": (*_AGENT, "result", "finish", "await"),
    "close_agent": (*_AGENT, "stop", "cancel", "kill", "shut down"),
    "read_file": ("open", "look at", "view", "show", "contents", "cat", "source code", "lines"),
    "diff_edit": ("unified diff", "hunk", "patch one file"),
    "edit_file": ("replace", "change", "modify", "fix", "typo", "string", "line", "in place"),
    "write_file": ("create", "new file", "save", "overwrite", "contents", "scaffold"),
    "apply_patch": (
        "several files",
        "multiple files",
        "atomic",
        "rename",
        "move file",
        "delete file",
        "refactor",
        "across files",
        "multi-file",
        "coordinated edits",
        "at once",
    ),
    "glob": (
        "find files",
        "file names",
        "filename",
        "extension",
        "wildcard",
        "matching",
        "all files of a type",
        "yaml",
        "json",
        "under",
    ),
    "grep": (
        "find text",
        "occurrences",
        "usages",
        "references",
        "where is",
        "called",
        "mentions",
        "regex",
        "string",
        "symbol",
        "every place",
        "used",
        "variable",
        "code",
        "TODO",
        "imported",
    ),
    "list_dir": ("folder", "directory", "contents", "ls", "tree", "entries", "what is in"),
    "web_search": ("internet", "online", "news", "latest", "recent", "lookup", "google"),
    "web_fetch": (
        "url",
        "download",
        "page",
        "website",
        "http",
        "https",
        "documentation page",
        "link",
        "html",
    ),
    "browser": (
        "click",
        "navigate",
        "screenshot",
        "javascript",
        "form",
        "log in",
        "interact with a page",
    ),
    "view_image": ("look at", "picture", "screenshot", "png", "jpeg", "see an image"),
    "git": (
        "commit",
        "changed",
        "changes",
        "diff",
        "history",
        "blame",
        "branch",
        "status",
        "log",
        "version control",
        "author",
        "modified",
        "since",
        "repository",
    ),
    "code_structure": (
        "outline",
        "classes",
        "functions",
        "methods",
        "definitions",
        "symbols",
        "defined",
        "module",
        "overview",
        "api",
    ),
    "read_task_output": ("background task", "log", "task output", "spawned"),
    "image_generation": ("picture", "draw", "illustration", "logo", "art", "photo", "make"),
}


def hints_of(tool: Tool) -> tuple[str, ...]:
    """The tool's own ``search_hints``, else :data:`BUILTIN_HINTS` for its name."""
    own = tuple(getattr(tool, "search_hints", ()) or ())
    return own or BUILTIN_HINTS.get(tool.name, ())
