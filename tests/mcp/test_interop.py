"""``octos-tools serve`` driven by MCP clients nobody here wrote: the official TypeScript SDK
client (stdio and streamable HTTP) and the MCP Inspector's CLI.

Both come from npm, installed by ``.ci/run`` into a cache folder
(``$OCTOS_NODE_CACHE``, default ``~/.cache/octos-tools-ci/node``); nothing is downloaded
here. The tests skip only when ``node`` itself is absent. Scenario: list, read, a multi-file
``apply_patch``, ``exec_command`` exiting non-zero, a deferred tool called by name, a denied
tool, bad arguments, and concurrent HTTP sessions each keeping its own activations.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.http_serve import start_http
from tests.mcp.test_server_robustness import _stop

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

HERE = Path(__file__).parent / "interop"
NODE = shutil.which("node")
CACHE = Path(
    os.environ.get("OCTOS_NODE_CACHE", str(Path.home() / ".cache" / "octos-tools-ci" / "node"))
)
MODULES = CACHE / "node_modules"
INSPECTOR = MODULES / ".bin" / "mcp-inspector"
SERVE = [sys.executable, "-m", "octos_tools", "serve"]

PATCH = """*** Begin Patch
*** Update File: notes.md
@@
 first line
-second line
+second line, patched
*** Add File: src/new.txt
+brand new
*** End Patch
"""

# (call, check) pairs: what a stock host sends, in order.
CALLS: list[dict[str, Any]] = [
    {"name": "read_file", "arguments": {"path": "notes.md"}},
    {"name": "apply_patch", "arguments": {"patch": PATCH}},
    {"name": "exec_command", "arguments": {"cmd": "echo out-before-exit; exit 3"}},
    {"name": "shell", "arguments": {"command": "echo deferred-ok"}},
    {"name": "write_file", "arguments": {"path": "denied.txt", "content": "no"}},
    {"name": "read_file", "arguments": {"file": "notes.md"}},
]


@pytest.fixture(scope="module")
def node() -> str:
    if NODE is None:
        pytest.skip("node is not installed: the interop tests need Node.js 20+ (CI has it)")
    for package in ("@modelcontextprotocol/sdk", "@modelcontextprotocol/inspector-cli"):
        if not (MODULES / package).is_dir():
            pytest.fail(
                f"{package} is missing from {MODULES}: run the npm step of .ci/run "
                '(npm install --prefix "$OCTOS_NODE_CACHE" ...)'
            )
    return NODE


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "notes.md").write_text("first line\nsecond line\n")
    return ws


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "octos.toml"
    path.write_text('[tool_policy]\ndeny = ["write_file"]\n')
    return path


def _start_http(workspace: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    served = start_http(
        [*SERVE, "--workspace", str(workspace), "-t", "http", "--port", "0", *extra]
    )
    _TOKEN[0] = served.token or ""
    return served.proc, served.url


_TOKEN = [""]
"""The bearer token of the last :func:`_start_http` server (ts_client.cjs reads MCP_TOKEN)."""


def _env() -> dict[str, str]:
    return {**os.environ, "NODE_PATH": str(MODULES), "NO_COLOR": "1", "MCP_TOKEN": _TOKEN[0]}


def _ts_client(node: str, tmp_path: Path, *target: str, calls: list[dict[str, Any]]) -> Any:
    scenario = tmp_path / f"scenario-{len(list(tmp_path.iterdir()))}.json"
    scenario.write_text(json.dumps({"calls": calls}))
    done = subprocess.run(
        [node, str(HERE / "ts_client.cjs"), *target[:1], str(scenario), *target[1:]],
        capture_output=True,
        text=True,
        timeout=150,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _text(result: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in result.get("content", []))


def _check_scenario(report: dict[str, Any], workspace: Path) -> None:
    tools = report["tools"]
    assert "read_file" in tools and "apply_patch" in tools
    assert "write_file" not in tools  # denied: never listed
    assert "shell" not in tools  # deferred: not listed, yet callable (below)
    read, patch, command, deferred, denied, bad = report["results"]

    assert read["isError"] is False
    assert "second line" in _text(read)
    assert "structuredContent" not in read

    assert patch["isError"] is False, _text(patch)
    assert (workspace / "notes.md").read_text() == "first line\nsecond line, patched\n"
    assert (workspace / "src" / "new.txt").read_text() == "brand new\n"

    assert "out-before-exit" in _text(command)
    assert "3" in _text(command)
    assert command["isError"] is False, "a command that ran and exited is not a failed call"

    assert deferred["isError"] is False, _text(deferred)
    assert "deferred-ok" in _text(deferred)
    assert report["listChanged"] >= 1  # calling it loaded its group, and the host was told
    assert "shell" in report["afterList"]

    assert denied["isError"] is True
    assert _text(denied).startswith("Error [policy_denied]")
    assert not (workspace / "denied.txt").exists()

    assert bad["isError"] is True
    assert _text(bad).startswith("Error [invalid_arguments]")
    assert "path" in _text(bad)


def test_typescript_sdk_client_over_stdio(
    node: str, workspace: Path, config: Path, tmp_path: Path
) -> None:
    report = _ts_client(
        node,
        tmp_path,
        "stdio",
        *SERVE,
        "--workspace",
        str(workspace),
        "-c",
        str(config),
        calls=CALLS,
    )
    _check_scenario(report, workspace)


def test_typescript_sdk_client_over_http(
    node: str, workspace: Path, config: Path, tmp_path: Path
) -> None:
    proc, url = _start_http(workspace, "-c", str(config))
    try:
        report = _ts_client(node, tmp_path, "http", url, calls=CALLS)
        _check_scenario(report, workspace)
    finally:
        _stop(proc)


def test_concurrent_http_sessions_keep_their_own_activations(
    node: str, workspace: Path, tmp_path: Path
) -> None:
    proc, url = _start_http(workspace)
    try:
        procs = []
        for group in ("group:web", "group:runtime"):
            scenario = tmp_path / f"{group.split(':')[1]}.json"
            calls = [{"name": "activate_tools", "arguments": {"tools": [group]}}]
            scenario.write_text(json.dumps({"calls": calls}))
            procs.append(
                subprocess.Popen(
                    [node, str(HERE / "ts_client.cjs"), "http", str(scenario), url],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=_env(),
                )
            )
        web, runtime = (json.loads(p.communicate(timeout=150)[0].splitlines()[-1]) for p in procs)
        for report in (web, runtime):
            assert report["results"][0]["isError"] is False, _text(report["results"][0])
            assert "web_fetch" not in report["tools"] and "shell" not in report["tools"]
        assert "web_fetch" in web["afterList"] and "shell" not in web["afterList"]
        assert "shell" in runtime["afterList"] and "web_fetch" not in runtime["afterList"]
        assert web["listChanged"] >= 1 and runtime["listChanged"] >= 1
    finally:
        _stop(proc)


def _inspector(node: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [node, str(INSPECTOR), "--cli", *args],
        capture_output=True,
        text=True,
        timeout=150,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr + done.stdout
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_inspector_cli(node: str, workspace: Path, config: Path) -> None:
    server = [*SERVE, "--workspace", str(workspace), "-c", str(config)]
    listed = _inspector(node, *server, "--method", "tools/list")
    names = [t["name"] for t in listed["tools"]]
    assert "read_file" in names and "write_file" not in names
    read = _inspector(
        node, *server, "--method", "tools/call", "--tool-name", "read_file",
        "--tool-arg", "path=notes.md",
    )  # fmt: skip
    assert read["isError"] is False and "second line" in _text(read)
    patched = _inspector(
        node, *server, "--method", "tools/call", "--tool-name", "apply_patch",
        "--tool-arg", f"patch={PATCH}",
    )  # fmt: skip
    assert patched["isError"] is False, _text(patched)
    assert (workspace / "src" / "new.txt").read_text() == "brand new\n"
    # A deferred tool: not listed, called by name all the same (this Inspector version does
    # not check names against tools/list; hosts that do need --no-defer, see docs/mcp.md).
    assert "shell" not in names
    call_shell = ("--method", "tools/call", "--tool-name", "shell")
    deferred = _inspector(node, *server, *call_shell, "--tool-arg", "command=echo deferred-ok")
    assert "deferred-ok" in _text(deferred) and deferred["isError"] is False
    everything = _inspector(node, *server, "--no-defer", "--method", "tools/list")
    assert "shell" in [t["name"] for t in everything["tools"]]
    denied = _inspector(
        node, *server, "--method", "tools/call", "--tool-name", "write_file",
        "--tool-arg", "path=x.txt", "content=x",
    )  # fmt: skip
    assert denied["isError"] is True and "policy_denied" in _text(denied)
