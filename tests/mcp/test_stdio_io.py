"""How ``serve`` moves bytes on stdio: pipes are served from the event loop (non-blocking),
regular files through the worker-thread fallback; both must give whole, ordered answers."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.test_server_robustness import INIT

pytestmark = [pytest.mark.timeout(90)]

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _call(rid: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def _serve(workspace: Path, **streams: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "octos_tools", "serve", "--workspace", str(workspace)],
        stderr=subprocess.DEVNULL,
        **streams,
    )


def test_regular_files_on_stdin_and_stdout_are_served(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.md").write_text("first line\nsecond line\n")
    requests = tmp_path / "in.jsonl"
    requests.write_text(
        "\n".join(
            json.dumps(m) for m in (INIT, INITIALIZED, _call(2, "read_file", {"path": "notes.md"}))
        )
        + "\n"
    )
    answers = tmp_path / "out.jsonl"
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        proc = _serve(ws, stdin=stdin, stdout=stdout)
        assert proc.wait(timeout=60) == 0
    by_id = {m["id"]: m for m in map(json.loads, answers.read_text().splitlines())}
    assert by_id[1]["result"]["serverInfo"]["name"]
    text = by_id[2]["result"]["content"][0]["text"]
    assert "first line" in text and "second line" in text


def test_answers_larger_than_the_pipe_arrive_whole_to_a_slow_reader(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = [f"line {i:06d} " + "x" * 60 for i in range(3000)]
    (ws / "big.txt").write_text("\n".join(lines) + "\n")
    proc = _serve(ws, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    ids = list(range(2, 10))  # 8 answers of ~40 KB each: several times a 64 KiB pipe
    try:
        messages = [INIT, INITIALIZED, *(_call(i, "read_file", {"path": "big.txt"}) for i in ids)]
        for message in messages:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        time.sleep(1.5)  # the server meets a full pipe and must wait, not fail or tear
        assert json.loads(proc.stdout.readline())["id"] == 1
        seen = []
        for _ in ids:
            answer = json.loads(proc.stdout.readline())  # a torn line would not parse
            seen.append(answer["id"])
            text = answer["result"]["content"][0]["text"]
            assert text.startswith("  1│ " + lines[0])
            assert "(showing lines 1-" in text
        assert sorted(seen) == ids
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_stdout_shared_with_stderr_keeps_working(tmp_path: Path) -> None:
    """``2>&1``: the wire is left blocking (stderr shares the pipe), answers still arrive."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.md").write_text("hello\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "octos_tools", "serve", "--workspace", str(ws)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for message in (INIT, INITIALIZED, _call(2, "read_file", {"path": "notes.md"})):
            proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.close()
        out = proc.stdout.read().decode()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # stderr's start-up line is mixed in: only the JSON lines are answers
    answers = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    assert [a["id"] for a in answers] == [1, 2]
    assert "hello" in answers[1]["result"]["content"][0]["text"]
