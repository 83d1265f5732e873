"""read_task_output: a background task's log by head, tail, grep, lines, file."""

from __future__ import annotations

import io
import json
import os
from typing import Any

import pytest

from octos_tools.builtins.discovery import (
    MAX_OUTPUT_BYTES,
)
from octos_tools.builtins.discovery import _read_task_output as task_output
from octos_tools.context import ToolContext
from octos_tools.errors import ErrorKind
from octos_tools.registry import ToolRegistry
from octos_tools.tasks import TaskRecord
from octos_tools.tool_types import JSONObject, Tool, ToolResult
from octos_tools.workspace import Workspace

from ._discovery_helpers import _call, _registry

# ------------------------------------------------------------------------------ fixtures


# ------------------------------------------------------------------------------ read_task_output


class ReportTool(Tool):
    """A spawn-only test tool: writes a report file and prints numbered lines."""

    name = "make_report"
    description = "Build a long report in the background."
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {"lines": {"type": "integer"}},
        "additionalProperties": False,
    }

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        assert ctx.workspace is not None
        count = int(args.get("lines", 30))
        ctx.workspace.write_bytes(
            "out/report.txt", "".join(f"report {i}\n" for i in range(1, 101)).encode()
        )
        body = "\n".join(f"line {i}" for i in range(1, count + 1))
        return ToolResult.ok(body, files_to_send=["out/report.txt"])


async def _spawned(registry: ToolRegistry, **args: Any) -> str:
    result = await _call(registry, "make_report", args)
    assert result.success
    assert len(result.output.encode()) < 1024
    envelope = json.loads(result.output)
    assert envelope["ok"] is True
    assert envelope["read_with"] == "read_task_output"
    assert envelope["read_modes"] == ["head", "tail", "grep", "line_range", "file"]
    assert envelope["expected_files"] == []
    assert "output_dir" in envelope and "summary" in envelope
    handle = envelope["task_handle"]
    records, timed_out = await registry.supervisor.wait([handle], timeout=30)
    assert not timed_out and records[handle].terminal
    return str(handle)


def _spawn_registry(workspace: Workspace) -> ToolRegistry:
    registry = _registry(workspace)
    registry.register(ReportTool())
    registry.mark_spawn_only("make_report")
    return registry


async def _read(registry: ToolRegistry, handle: str, mode: JSONObject, **ctx: Any) -> ToolResult:
    return await _call(registry, "read_task_output", {"task_handle": handle, "mode": mode}, **ctx)


async def _quiet(record: TaskRecord) -> ToolResult:
    return ToolResult.ok("")


class _CountingReader(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        self.bytes_read += len(data)
        return data


@pytest.mark.anyio
async def test_spawn_only_output_readable_in_all_five_modes(workspace: Workspace) -> None:
    registry = _spawn_registry(workspace)
    try:
        handle = await _spawned(registry)
        head = await _read(registry, handle, {"kind": "head", "lines": 2})
        assert head.output.splitlines()[1] == "line 1"
        assert head.output.startswith("[starting] tool=make_report")
        assert len(head.output.splitlines()) == 2
        tail = await _read(registry, handle, {"kind": "tail", "lines": 2})
        assert tail.output == "line 29\nline 30"
        grep = await _read(registry, handle, {"kind": "grep", "pattern": "line 2"})
        assert grep.output.splitlines()[0] == "3:line 2"
        assert "21:line 20" in grep.output
        rng = await _read(registry, handle, {"kind": "line_range", "start": 2, "end": 4})
        assert rng.output == "line 1\nline 2\nline 3"
        file = await _read(
            registry,
            handle,
            {"kind": "file", "path": "out/report.txt", "mode": {"kind": "tail", "lines": 1}},
        )
        assert file.output == "report 100"
        default = await _call(registry, "read_task_output", {"task_handle": handle})
        assert default.output.splitlines()[-1] == "line 30"
        assert default.structured_metadata is not None
        assert default.structured_metadata["status"] == "completed"
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_handle_of_another_session_and_unknown_handle_refused(
    workspace: Workspace,
) -> None:
    registry = _spawn_registry(workspace)
    try:
        handle = await _spawned(registry)
        other = await _read(registry, handle, {"kind": "head"}, session_key="someone-else")
        assert other.error_kind is ErrorKind.PERMISSION_DENIED
        assert "another session" in other.output
        mine = await _read(registry, handle, {"kind": "head"}, session_key="s1")
        assert mine.success
        unknown = await _read(registry, "no-such-task", {"kind": "head"})
        assert unknown.error_kind is ErrorKind.NOT_FOUND
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_mode_errors(workspace: Workspace) -> None:
    registry = _spawn_registry(workspace)
    try:
        handle = await _spawned(registry)
        cases: list[tuple[JSONObject, str]] = [
            ({"kind": "line_range", "start": 0, "end": 3}, "start at 1"),
            ({"kind": "line_range", "start": 5, "end": 3}, "before start"),
            ({"kind": "line_range", "start": 1, "end": 501}, "spans 501 lines"),
            ({"kind": "grep", "pattern": ""}, "non-empty"),
            ({"kind": "file", "path": "out/report.txt", "mode": {"kind": "file"}}, "nested"),
            ({"kind": "file", "path": "out/report.txt", "mode": {"kind": "head", "x": 1}}, "x"),
            ({"kind": "file", "path": "out/report.txt", "mode": {"kind": "nope"}}, "nope"),
            ({"kind": "head", "lines": "3"}, "lines"),
        ]
        for mode, text in cases:
            result = await _read(registry, handle, mode)
            assert result.error_kind is ErrorKind.INVALID_ARGUMENTS, mode
            assert text in result.output, (mode, result.output)
        clamped = await _read(registry, handle, {"kind": "head", "lines": 100000})
        assert clamped.success and len(clamped.output.splitlines()) == 31
        nomatch = await _read(registry, handle, {"kind": "grep", "pattern": "zzz"})
        assert nomatch.output == '(no matches for "zzz")'
        past = await _read(registry, handle, {"kind": "line_range", "start": 90, "end": 95})
        assert past.success and "no lines" in past.output
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_file_mode_only_for_recorded_output_files(workspace: Workspace) -> None:
    registry = _spawn_registry(workspace)
    try:
        handle = await _spawned(registry)
        workspace.write_bytes("secret.txt", b"secret\n")
        refused = await _read(registry, handle, {"kind": "file", "path": "secret.txt"})
        assert refused.error_kind is ErrorKind.PERMISSION_DENIED
        assert "out/report.txt" in refused.output
        basename = await _read(registry, handle, {"kind": "file", "path": "report.txt"})
        assert basename.error_kind is ErrorKind.PERMISSION_DENIED
        absolute = str(workspace.root / "out" / "report.txt")
        ok = await _read(registry, handle, {"kind": "file", "path": absolute})
        assert ok.output.splitlines()[0] == "report 1"
        outside = await _read(registry, handle, {"kind": "file", "path": "/etc/passwd"})
        assert outside.error_kind is ErrorKind.PATH_OUTSIDE_WORKSPACE
        nul = await _read(registry, handle, {"kind": "file", "path": "out/report.txt\x00.png"})
        assert nul.error_kind is ErrorKind.INVALID_ARGUMENTS
        # the recorded file replaced by a symlink: never followed
        os.unlink(workspace.root / "out" / "report.txt")
        os.symlink(workspace.root / "secret.txt", workspace.root / "out" / "report.txt")
        link = await _read(registry, handle, {"kind": "file", "path": "out/report.txt"})
        assert link.error_kind is ErrorKind.SYMLINK_REFUSED
        assert "secret" not in link.output
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_file_mode_refused_before_outputs_and_for_symlinked_parent(
    workspace: Workspace, tmp_path_factory: pytest.TempPathFactory
) -> None:
    registry = _registry(workspace)
    try:
        record = registry.supervisor.spawn(_quiet, tool_name="quiet", session_key="s1")
        await registry.supervisor.wait([record.id], timeout=30)
        before = await _read(registry, record.id, {"kind": "file", "path": "x.txt"})
        assert before.error_kind is ErrorKind.NOT_FOUND
        assert "not recorded any output files" in before.output
        outside = tmp_path_factory.mktemp("outside")
        (outside / "x.txt").write_text("outside data\n")
        os.symlink(outside, workspace.root / "linked")
        record.output_files.append("linked/x.txt")
        linked = await _read(registry, record.id, {"kind": "file", "path": "linked/x.txt"})
        assert linked.error_kind is ErrorKind.SYMLINK_REFUSED
        assert "outside data" not in linked.output
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_output_capped_at_4_kib_on_a_character_boundary(workspace: Workspace) -> None:
    registry = _registry(workspace)
    try:

        async def wide(record: TaskRecord) -> ToolResult:
            registry.supervisor.append_output(record.id, ("é€😀" * 300 + "\n") * 100)
            return ToolResult.ok("")

        record = registry.supervisor.spawn(wide, tool_name="wide", session_key="s1")
        await registry.supervisor.wait([record.id], timeout=30)
        for mode in (
            {"kind": "head", "lines": 500},
            {"kind": "tail", "lines": 500},
            {"kind": "grep", "pattern": "é", "max_matches": 100},
            {"kind": "line_range", "start": 1, "end": 100},
        ):
            result = await _read(registry, record.id, mode)
            assert result.success, result.output
            data = result.output.encode("utf-8")
            assert len(data) <= MAX_OUTPUT_BYTES, mode
            assert "…[truncated]" in result.output
            assert "\ufffd" not in result.output
    finally:
        await registry.aclose()


def test_tail_reads_only_the_end_of_a_large_log() -> None:
    log = b"".join(b"row %d\n" % i for i in range(1_000_000))  # about 10 MB
    fh = _CountingReader(log)
    text = task_output._tail(fh, 3)
    assert text == "row 999997\nrow 999998\nrow 999999"
    assert fh.bytes_read < 200_000
    fh = _CountingReader(b"no newline at all " * 1000)
    assert task_output._tail(fh, 5).endswith("all ")


def test_a_huge_line_is_cut_while_reading() -> None:
    fh = _CountingReader(b"x" * 5_000_000 + b"\nsecond\n")
    lines = list(task_output._iter_lines(fh))
    assert [len(x) for x in lines] == [task_output._MAX_LINE_SCAN, 6]
    assert lines[1] == b"second"
