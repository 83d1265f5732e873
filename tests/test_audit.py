"""The audit log (octos_tools.audit): one whole JSON line per call, the layers' decisions,
the arguments' hash and never the arguments, lines of concurrent calls and processes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from octos_tools import ToolRegistry, ToolSession, tool
from octos_tools.audit import AuditLog, arguments_sha256
from octos_tools.config import load_config
from octos_tools.hooks import HookInput, HookOutput
from octos_tools.policy import ToolPolicy
from octos_tools.profile import build_registry

pytestmark = pytest.mark.anyio


async def add(a: int, b: int) -> int:
    """Add two integers."""
    await anyio.sleep(0)
    return a + b


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_line_per_call_with_decisions_and_hash(tmp_path: Path) -> None:
    log = tmp_path / "audit" / "calls.jsonl"
    registry = ToolRegistry(session_key="s1")
    registry.register(tool(add))
    registry.register(tool(add, name="sub"))
    registry.apply_policy(ToolPolicy(deny=["sub"]))
    registry.set_audit(AuditLog(log))

    async def deny_big(event: HookInput) -> HookOutput | None:
        if event.tool_input.get("a") == 99:
            return HookOutput(permission_decision="deny", reason="too big")
        return None

    session = ToolSession(registry)
    raw = '{"a":1,"b":2}'
    await session.call("add", raw, tool_call_id="c1")
    await session.call("sub", raw, tool_call_id="c2")
    registry.add_hook("PreToolUse", deny_big)
    await session.call("add", '{"a":99,"b":1}', tool_call_id="c3")
    await session.call("add", '{"a":"secret-value"}', tool_call_id="c4")
    lines = _lines(log)
    assert [line["call_id"] for line in lines] == ["c1", "c2", "c3", "c4"]
    first = lines[0]
    assert set(first) == {
        "time",
        "session",
        "call_id",
        "tool",
        "decisions",
        "outcome",
        "duration_ms",
        "args_sha256",
    }
    assert first["tool"] == "add" and first["session"] == "s1" and first["outcome"] == "ok"
    assert first["decisions"] == {"policy": "allow"}
    assert first["args_sha256"] == hashlib.sha256(raw.encode()).hexdigest()
    assert lines[1]["decisions"] == {"policy": "deny"} and lines[1]["outcome"] == "policy_denied"
    assert lines[2]["decisions"] == {"policy": "allow", "hooks": "deny"}
    assert lines[3]["outcome"] == "invalid_arguments"
    assert "secret-value" not in log.read_text()
    assert (log.stat().st_mode & 0o777) == 0o600


def test_hash_of_parsed_arguments_is_canonical() -> None:
    assert arguments_sha256({"b": 2, "a": 1}) == arguments_sha256('{"a":1,"b":2}')
    assert arguments_sha256(None) == hashlib.sha256(b"").hexdigest()


async def test_concurrent_calls_write_whole_lines(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    registry = ToolRegistry()
    registry.register(tool(add))
    registry.set_audit(AuditLog(log))
    session = ToolSession(registry)

    async def one(i: int) -> None:
        await session.call("add", f'{{"a":{i},"b":1}}', tool_call_id=f"c{i}")

    async with anyio.create_task_group() as tg:
        for i in range(200):
            tg.start_soon(one, i)
    lines = _lines(log)
    assert sorted(str(line["call_id"]) for line in lines) == sorted(f"c{i}" for i in range(200))


def test_processes_sharing_the_file_never_interleave(tmp_path: Path) -> None:
    log = tmp_path / "shared.jsonl"
    script = textwrap.dedent(
        f"""
        import sys
        from octos_tools.audit import AuditLog
        log = AuditLog({str(log)!r})
        for i in range(500):
            log.record(tool="t" * 60, call_id=sys.argv[1] + "-" + str(i), session="x" * 200,
                       decisions={{"policy": "allow"}}, outcome="ok", duration_ms=1.0,
                       args_sha256="0" * 64)
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, f"p{n}"]) for n in range(4)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    lines = _lines(log)
    assert len(lines) == 2000
    assert len({line["call_id"] for line in lines}) == 2000


async def test_config_audit_path_relative_to_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    config_file = tmp_path / "conf" / "octos.toml"
    config_file.write_text('[audit]\npath = "logs/audit.jsonl"\n')
    config = load_config(config_file)
    assert config.audit.path == str((tmp_path / "conf" / "logs" / "audit.jsonl").resolve())
    registry = build_registry(config, tmp_path)
    async with ToolSession(registry, owns_registry=True) as session:
        await session.call("list_dir", {"path": "."}, tool_call_id="c1")
    assert _lines(Path(config.audit.path))[0]["tool"] == "list_dir"


def test_a_replaced_or_removed_log_is_reopened_and_no_line_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    fields = dict(
        call_id="c",
        session="s",
        decisions={"policy": "allow"},
        outcome="ok",
        duration_ms=1.0,
        args_sha256="0" * 64,
    )
    log.record(tool="first", **fields)  # type: ignore[arg-type]
    replacement = tmp_path / "tmp.jsonl"
    replacement.write_text("forged\n")
    os.replace(replacement, path)  # an atomic write over the log, as write_file does
    log.record(tool="second", **fields)  # type: ignore[arg-type]
    lines = path.read_text().splitlines()
    assert lines[0] == "forged" and json.loads(lines[1])["tool"] == "second"
    path.rename(tmp_path / "audit.1.jsonl")  # rotated without copytruncate
    log.record(tool="third", **fields)  # type: ignore[arg-type]
    assert [json.loads(x)["tool"] for x in path.read_text().splitlines()] == ["third"]
    path.unlink()
    log.record(tool="fourth", **fields)  # type: ignore[arg-type]
    assert [json.loads(x)["tool"] for x in path.read_text().splitlines()] == ["fourth"]
    log.close()
