"""The command line contract of DESIGN.md §6. What the process boundary decides (``--version``
and a call with its exit status, ``python -m`` and the script, a call's sessions ending with
its process) runs as a separate process; the rest runs the same entry point in process
(``run_in_process``). tests/test_cli_usability.py and the README's shell block (in
tests/test_docs.py) run every subcommand as a process too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import octos_tools
from tests.cli_helpers import run_in_process

ROOT = Path(__file__).resolve().parents[1]


def run(
    *args: str, stdin: bytes | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "octos_tools", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        cwd=cwd,
        timeout=120,
    )


def call_json(
    ws: Path, tool: str, args: str | None, *, runner: Any = run, **kw: Any
) -> dict[str, Any]:
    argv = (
        ["call", tool] + ([args] if args is not None else []) + ["--workspace", str(ws), "--json"]
    )
    proc = runner(*argv, **kw)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode().strip().splitlines()
    assert len(lines) == 1, proc.stdout
    data: dict[str, Any] = json.loads(lines[0])
    assert set(data) == {"success", "output", "error", "file_modified", "structured_metadata"}
    return data


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    (w / "hello.txt").write_text("hello world\n")
    return w


def test_version() -> None:
    proc = run("--version")
    assert proc.returncode == 0 and octos_tools.__version__ in proc.stdout.decode()


def test_call_json_success_and_failure(ws: Path, tmp_path: Path) -> None:
    ok = call_json(ws, "read_file", '{"path": "hello.txt"}', cwd=tmp_path)
    assert ok["success"] is True and "hello world" in ok["output"] and ok["error"] is None
    bad = call_json(ws, "read_file", '{"path": "../x"}', cwd=tmp_path)
    assert bad["success"] is False
    assert bad["error"]["kind"] == "path_outside_workspace"
    unknown = call_json(ws, "no_such_tool", "{}")
    assert unknown["error"]["kind"] == "unknown_tool"


def test_call_reads_args_from_stdin(ws: Path) -> None:
    data = call_json(
        ws,
        "write_file",
        None,
        runner=run_in_process,
        stdin=b'{"path": "new.txt", "content": "from stdin"}',
    )
    assert data["success"] and data["file_modified"]
    assert (ws / "new.txt").read_text() == "from stdin"


def test_invalid_json_reaches_registry(ws: Path) -> None:
    data = call_json(ws, "write_file", '{"path": "a.txt", "content": "x",}', runner=run_in_process)
    assert data["error"]["kind"] == "invalid_json" and "write_file" in data["error"]["message"]
    assert not (ws / "a.txt").exists()


def test_plain_output(ws: Path) -> None:
    proc = run_in_process("call", "read_file", '{"path": "hello.txt"}', "--workspace", str(ws))
    assert proc.returncode == 0 and "hello world" in proc.stdout.decode()


def test_usage_errors_exit_2(ws: Path, tmp_path: Path) -> None:
    assert run_in_process("call").returncode == 2
    assert (
        run_in_process(
            "call", "read_file", "{}", "--workspace", str(tmp_path / "missing")
        ).returncode
        == 2
    )
    cfg = tmp_path / "bad.json"
    cfg.write_text('{"tool_polcy": {}}')
    proc = run_in_process("call", "read_file", "{}", "--workspace", str(ws), "--config", str(cfg))
    assert proc.returncode == 2 and "tool_polcy" in proc.stderr.decode()


def test_config_policy_applies(ws: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"tool_policy": {"deny": ["write_file"]}}))
    proc = run_in_process(
        "call",
        "write_file",
        '{"path": "w.txt", "content": "x"}',
        "--workspace",
        str(ws),
        "--config",
        str(cfg),
        "--json",
    )
    data = json.loads(proc.stdout)
    assert data["error"]["kind"] == "policy_denied" and not (ws / "w.txt").exists()


def test_read_only_flag(ws: Path) -> None:
    proc = run_in_process(
        "call",
        "write_file",
        '{"path": "w.txt", "content": "x"}',
        "--workspace",
        str(ws),
        "--json",
        "--read-only",
    )
    assert json.loads(proc.stdout)["error"]["kind"] == "policy_denied"
    assert not (ws / "w.txt").exists()


def test_tools_json(ws: Path) -> None:
    proc = run_in_process("tools", "--workspace", str(ws), "--json")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    by_name = {row["name"]: row for row in data["tools"]}
    assert by_name["read_file"]["state"] == "visible"
    assert by_name["read_file"]["group"] == "group:fs"
    assert by_name["exec_command"]["state"] == "visible"  # the default profile lists it
    assert by_name["shell"]["state"] == "deferred"
    assert data["first_request_tokens"] > 0 and "tokenizer" in data


def test_tools_no_defer_lists_only_what_can_work_and_says_why_the_rest_is_not(
    ws: Path,
) -> None:
    proc = run_in_process("tools", "--workspace", str(ws), "--no-defer", "--json")
    assert proc.returncode == 0, proc.stderr
    by_name = {row["name"]: row for row in json.loads(proc.stdout)["tools"]}
    assert by_name["shell"]["state"] == "visible" and by_name["shell"]["why"] is None
    for name in ("web_search", "image_generation", "spawn_agent", "close_agent"):
        assert by_name[name]["state"] == "unavailable", name
    assert "web.search_providers" in by_name["web_search"]["why"]
    assert "image backend" in by_name["image_generation"]["why"]
    assert "spawn delegate" in by_name["resume_agent"]["why"]
    text = run_in_process("tools", "--workspace", str(ws)).stdout.decode()
    assert "not listed: web_fetch: deferred" in text
    assert "not listed: image_generation: cannot work here: no image backend" in text


def test_tools_lists_web_search_once_a_provider_is_configured(ws: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "web.json"
    provider = {"kind": "searxng", "url": "http://127.0.0.1:9"}
    cfg.write_text(json.dumps({"web": {"search_providers": [provider]}}))
    proc = run_in_process("tools", "-w", str(ws), "-c", str(cfg), "--no-defer", "--json")
    by_name = {row["name"]: row for row in json.loads(proc.stdout)["tools"]}
    assert by_name["web_search"]["state"] == "visible"


def test_tools_says_why_a_denied_tool_is_not_listed(ws: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "deny.json"
    cfg.write_text(json.dumps({"tool_policy": {"deny": ["grep"]}}))
    text = run_in_process("tools", "-w", str(ws), "-c", str(cfg)).stdout.decode()
    assert "not listed: grep: " in text and "policy" in text


def test_policy_explain(tmp_path: Path) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text(
        json.dumps(
            {
                "tool_policy": {"allow": ["group:fs", "exec_command"], "deny": ["exec_*"]},
                "tool_policy_by_provider": {"gpt-x": {"deny": ["read_file"]}},
            }
        )
    )
    proc = run_in_process("policy", "explain", "exec_command", "--config", str(cfg), "--json")
    data = json.loads(proc.stdout)
    assert data["allowed"] is False
    assert data["steps"][0]["entry"] == "exec_*" and data["steps"][0]["reason"] == "policy_deny"
    proc = run_in_process(
        "policy", "explain", "read_file", "--config", str(cfg), "--model", "gpt-x", "--json"
    )
    data = json.loads(proc.stdout)
    assert data["allowed"] is False and data["steps"][1]["matched_by"] == "model id"
    proc = run_in_process("policy", "explain", "read_file", "--config", str(cfg))
    assert proc.returncode == 0 and "allowed" in proc.stdout.decode()


def test_python_dash_m_and_script_agree(ws: Path) -> None:
    script = Path(sys.executable).with_name("octos-tools")
    assert script.exists(), "pip install -e . puts the octos-tools script beside python"
    argv = ["call", "read_file", '{"path": "hello.txt"}', "-w", str(ws), "--json"]
    by_script = subprocess.run([str(script), *argv], capture_output=True, timeout=120)
    by_module = run(*argv)
    assert by_script.returncode == by_module.returncode == 0
    assert json.loads(by_script.stdout) == json.loads(by_module.stdout)
    assert json.loads(by_module.stdout)["success"] is True


def test_call_says_a_running_session_ends_with_the_call(ws: Path) -> None:
    # a one-shot call closes its sessions at exit: the CLI must not let "Process running
    # with session ID" stand alone as if write_stdin could reach it later
    data = call_json(ws, "exec_command", '{"cmd": "sleep 30", "yield_time_ms": 50}')
    assert data["structured_metadata"]["running"] is True
    proc = run("call", "exec_command", '{"cmd": "sleep 30", "yield_time_ms": 50}', "-w", str(ws))
    err = " ".join(proc.stderr.decode().split())
    assert proc.returncode == 0 and "still running" in err and "cannot reach it" in err
    quick = run("call", "exec_command", '{"cmd": "true"}', "-w", str(ws))
    assert "still running" not in quick.stderr.decode()


def test_unknown_denied_group_is_a_usage_error_not_a_tool(ws: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"tool_policy": {"deny": ["group:nope", "group:web"]}}))
    proc = run_in_process("tools", "--workspace", str(ws), "--config", str(cfg), "--json")
    assert proc.returncode == 2 and "group:nope" in proc.stderr.decode()
    cfg.write_text(json.dumps({"tool_policy": {"deny": ["group:web"]}}))
    proc = run_in_process("tools", "--workspace", str(ws), "--config", str(cfg), "--json")
    names = {row["name"]: row["state"] for row in json.loads(proc.stdout)["tools"]}
    assert names["web_fetch"] == "denied"


def test_policy_explain_without_provider_policies_says_so(tmp_path: Path) -> None:
    proc = run_in_process("policy", "explain", "shell", "--json")
    steps = json.loads(proc.stdout)["steps"]
    step = next(s for s in steps if s["policy"] == "tool_policy_by_provider")
    assert "None" not in step["detail"] and "none configured" in step["detail"]


def test_tools_table_never_cuts_a_name_at_80_columns(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    proc = run_in_process("tools", "--tokens", "--workspace", str(ws))
    out = proc.stdout.decode()
    assert proc.returncode == 0 and "…" not in out
    for name in ("request_user_input", "read_task_output", "code_structure", "activate_tools"):
        assert name in out


def test_tools_lists_wildcard_denied_tools_as_denied(ws: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"tool_policy": {"deny": ["exec_*"]}}))
    proc = run_in_process("tools", "--workspace", str(ws), "--config", str(cfg), "--json")
    rows = {row["name"]: row for row in json.loads(proc.stdout)["tools"]}
    assert rows["exec_command"]["state"] == "denied"
    assert rows["exec_command"]["class"] == "exclusive"


def test_policy_explain_read_only_unknown_and_visibility(ws: Path) -> None:
    data = json.loads(
        run_in_process(
            "policy", "explain", "write_file", "-w", str(ws), "--read-only", "--json"
        ).stdout
    )
    assert data["allowed"] is False and data["decided_by"] == "read-only mode"
    data = json.loads(
        run_in_process("policy", "explain", "no_such_tool", "-w", str(ws), "--json").stdout
    )
    assert data["allowed"] is False and data["steps"][-1]["policy"] == "registry"
    data = json.loads(run_in_process("policy", "explain", "shell", "-w", str(ws), "--json").stdout)
    assert data["allowed"] is True and "deferred" in data["steps"][-1]["detail"]
