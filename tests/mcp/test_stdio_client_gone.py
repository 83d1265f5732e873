"""A client that closes the server's stdout (its read end) is gone: answers are dropped, the
server neither crashes with a traceback nor waits for answers it cannot send, and it exits
0 at the end of its input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.mcp.test_server_robustness import INIT


def _line(message: dict[str, object]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def test_closed_stdout_drops_answers_and_exits_cleanly(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "octos_tools", "serve", "-w", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(_line(INIT))
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        proc.stdout.close()  # the client stops reading
        proc.stdin.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        for rid in range(2, 6):  # answers the server can no longer deliver
            proc.stdin.write(_line({"jsonrpc": "2.0", "id": rid, "method": "tools/list"}))
        proc.stdin.write(
            _line(
                {
                    "jsonrpc": "2.0",
                    "id": 6,
                    "method": "tools/call",
                    "params": {"name": "list_dir", "arguments": {"path": "."}},
                }
            )
        )
        proc.stdin.flush()
        proc.stdin.close()
        code = proc.wait(timeout=30)
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
