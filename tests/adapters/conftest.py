"""Shared set-up of the adapter tests: a workspace, the served registry, and a session whose
context denies ``write_file`` (so a call to it is refused with ``policy_denied``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from octos_tools.config import Config
from octos_tools.context import ToolContext, ToolPermissions
from octos_tools.policy import ToolPolicy
from octos_tools.profile import build_registry
from octos_tools.registry import ToolRegistry
from octos_tools.session import ToolSession

NOTES = b"alpha\r\nbeta\r\n"
"""The file every agent run reads and edits (CRLF line endings must survive the edit)."""

EDITED = b"alpha\r\ngamma\r\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_bytes(NOTES)
    return root


@pytest.fixture
async def registry(workspace: Path) -> AsyncIterator[ToolRegistry]:
    reg = build_registry(Config(), workspace)
    reg.set_provider_policy(ToolPolicy(deny=["grep"]))
    try:
        yield reg
    finally:
        await reg.aclose()


@pytest.fixture
def session(registry: ToolRegistry) -> ToolSession:
    ctx = ToolContext(
        workspace=registry.workspace,
        registry=registry,
        session_key=registry.session_key,
        permissions=ToolPermissions(denied_tools=frozenset({"write_file"})),
    )
    session = ToolSession(registry, ctx)
    ticks: list[int] = []
    before = session.before_model_request

    def counted() -> Any:
        ticks.append(1)
        return before()

    session.before_model_request = counted  # type: ignore[method-assign]
    session.ticks = ticks  # type: ignore[attr-defined]
    return session


SCRIPT: list[tuple[str, Any]] = [
    ("read_file", {"path": "notes.txt"}),
    ("edit_file", '{"path": "notes.txt", "old": "beta"'),  # not JSON
    ("edit_file", {"path": "notes.txt", "old": "beta"}),  # unknown field, missing ones
    ("edit_file", {"path": "notes.txt", "old_string": "beta", "new_string": "gamma"}),
    ("write_file", {"path": "notes.txt", "content": "overwritten"}),  # denied here
    ("shell", {"command": "cat notes.txt"}),  # deferred: activated by this call
]
"""The calls every scripted model makes, in order (the agent run of issue 13 item 4)."""


def expected_outcome(index: int) -> str:
    """A substring the model must have been shown after call ``index`` of :data:`SCRIPT`."""
    return [
        "beta",
        "[invalid_json]",
        "[invalid_arguments]",
        "replaced 1 occurrence",
        "[policy_denied]",
        "gamma",
    ][index]
