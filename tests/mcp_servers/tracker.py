"""A small issue tracker and notebook served over MCP stdio: 14 realistic tools.

Used by the context-economy tests (mounted through ``mcp_servers`` beside every built-in)
and by ``bench/bench_tokens.py``. Written with the official ``mcp`` SDK v2 (``MCPServer``);
state lives in memory for the life of the process.

Run: ``python tests/mcp_servers/tracker.py`` (stdio).
"""

from __future__ import annotations

import itertools
from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("tracker")
READ = ToolAnnotations(read_only_hint=True)

_issues: dict[int, dict[str, object]] = {}
_comments: dict[int, list[str]] = {}
_notes: dict[int, dict[str, str]] = {}
_ids = itertools.count(1)
_note_ids = itertools.count(1)


def _issue(number: int) -> dict[str, object]:
    if number not in _issues:
        raise ValueError(f"no issue #{number}")
    return _issues[number]


def _line(number: int) -> str:
    issue = _issues[number]
    labels = ",".join(issue["labels"])  # type: ignore[arg-type]
    return f"#{number} [{issue['state']}] {issue['title']} ({labels or 'no labels'})"


@server.tool()
def create_issue(title: str, body: str = "", labels: list[str] | None = None) -> str:
    """Open a new issue (bug report or feature request) in the project tracker."""
    number = next(_ids)
    _issues[number] = {
        "title": title,
        "body": body,
        "labels": list(labels or []),
        "state": "open",
        "assignee": None,
    }
    _comments[number] = []
    return f"created {_line(number)}"


@server.tool(annotations=READ)
def get_issue(number: int) -> str:
    """Show one issue of the tracker: title, state, labels, assignee and description."""
    issue = _issue(number)
    return f"{_line(number)}\nassignee: {issue['assignee']}\n\n{issue['body']}"


@server.tool(annotations=READ)
def list_issues(state: Literal["open", "closed", "all"] = "open", label: str = "") -> str:
    """List the tracker's issues, filtered by state and label."""
    rows = [
        _line(n)
        for n, issue in _issues.items()
        if (state == "all" or issue["state"] == state) and (not label or label in issue["labels"])  # type: ignore[operator]
    ]
    return "\n".join(rows) or "no issues"


@server.tool()
def update_issue(number: int, title: str | None = None, body: str | None = None) -> str:
    """Edit the title or description of an existing issue."""
    issue = _issue(number)
    if title is not None:
        issue["title"] = title
    if body is not None:
        issue["body"] = body
    return f"updated {_line(number)}"


@server.tool()
def close_issue(number: int, reason: Literal["completed", "not_planned"] = "completed") -> str:
    """Close an issue as completed or not planned."""
    _issue(number)["state"] = "closed"
    return f"closed #{number} as {reason}"


@server.tool()
def reopen_issue(number: int) -> str:
    """Reopen a closed issue."""
    _issue(number)["state"] = "open"
    return f"reopened {_line(number)}"


@server.tool()
def comment_on_issue(number: int, body: str) -> str:
    """Add a comment to the discussion of an issue."""
    _issue(number)
    _comments[number].append(body)
    return f"commented on #{number} ({len(_comments[number])} comments)"


@server.tool(annotations=READ)
def list_issue_comments(number: int) -> str:
    """Read the discussion (all comments) of an issue."""
    _issue(number)
    return "\n---\n".join(_comments[number]) or "no comments"


@server.tool()
def label_issue(number: int, labels: list[str]) -> str:
    """Add labels (bug, enhancement, priority...) to an issue."""
    issue = _issue(number)
    issue["labels"] = sorted({*issue["labels"], *labels})  # type: ignore[misc]
    return f"labelled {_line(number)}"


@server.tool()
def assign_issue(number: int, assignee: str) -> str:
    """Assign an issue to a team member (their user name)."""
    _issue(number)["assignee"] = assignee
    return f"assigned #{number} to {assignee}"


@server.tool(annotations=READ)
def search_issues(query: str) -> str:
    """Full-text search over issue titles and descriptions in the tracker."""
    words = query.lower().split()
    hits = [
        _line(n)
        for n, issue in _issues.items()
        if all(w in f"{issue['title']} {issue['body']}".lower() for w in words)
    ]
    return "\n".join(hits) or "no matching issues"


@server.tool()
def create_note(title: str, text: str) -> str:
    """Save a note (meeting minutes, a decision, a reminder) in the team notebook."""
    note_id = next(_note_ids)
    _notes[note_id] = {"title": title, "text": text}
    return f"saved note {note_id}: {title}"


@server.tool(annotations=READ)
def list_notes() -> str:
    """List the notes of the team notebook with their ids and titles."""
    return "\n".join(f"{i}: {n['title']}" for i, n in _notes.items()) or "no notes"


@server.tool(annotations=READ)
def read_note(note_id: int) -> str:
    """Read one note of the team notebook in full."""
    if note_id not in _notes:
        raise ValueError(f"no note {note_id}")
    note = _notes[note_id]
    return f"{note['title']}\n\n{note['text']}"


if __name__ == "__main__":
    server.run()
