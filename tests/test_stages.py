"""The pipeline's stages (octos_tools.stages): hooks before and after a call, as Python
callbacks and as real command processes, through real sessions and a real workspace."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import pytest

from octos_tools import ToolRegistry, ToolSession, tool
from octos_tools.config import Config
from octos_tools.context import ApprovalRequest, ToolContext
from octos_tools.errors import ConfigError, ErrorKind
from octos_tools.hooks import CommandHook, HookInput, HookOutput
from octos_tools.profile import build_registry

from .helpers import EchoTool

# The "Bash command validator" of Claude Code's hooks documentation, in the form users copy
# into ~/.claude/hooks: it reads tool_input.command and exits 2 with the reason on stderr.
CLAUDE_CODE_VALIDATOR = textwrap.dedent(
    """\
    #!/usr/bin/env python3
    import json
    import re
    import sys

    _VALIDATION_RULES = [
        (r"\\bgrep\\b(?!.*\\|)", "Use 'rg' (ripgrep) instead of 'grep' for better performance"),
        (r"\\bfind\\s+\\S+\\s+-name\\b", "Use 'rg --files -g pattern' instead of 'find -name'"),
    ]

    def validate_command(command: str) -> list[str]:
        issues = []
        for pattern, message in _VALIDATION_RULES:
            if re.search(pattern, command):
                issues.append(message)
        return issues

    try:
        input_data = json.load(sys.stdin)
    except json.JSONDecodeError as e:
        print(f"Error: Invalid JSON input: {e}", file=sys.stderr)
        sys.exit(1)

    tool_name = input_data.get("tool_name", "")
    tool_input = input_data.get("tool_input", {})
    command = tool_input.get("command", "")

    if tool_name != "shell" or not command:
        sys.exit(1)

    issues = validate_command(command)
    if issues:
        for message in issues:
            print(f"• {message}", file=sys.stderr)
        sys.exit(2)
    """
)


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _session() -> tuple[ToolRegistry, ToolSession]:
    registry = ToolRegistry()
    registry.register(tool(add))
    registry.register(EchoTool())
    return registry, ToolSession(registry)


def _script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(body)
    path.chmod(0o755)
    return str(path)


@pytest.mark.anyio
async def test_no_stage_configured_leaves_the_view_without_stages() -> None:
    registry, session = _session()
    assert session.view.stages is None and registry.default_view.stages is None
    hook = registry.add_hook("PreToolUse", _allow)
    assert session.view.stages is not None
    assert registry.remove_hook(hook)
    assert session.view.stages is None
    assert (await session.call("add", '{"a":1,"b":2}')).output == "3"


async def _allow(event: HookInput) -> HookOutput:
    return HookOutput(permission_decision="allow")


@pytest.mark.anyio
async def test_claude_code_validator_script_runs_unmodified(tmp_path: Path) -> None:
    script = _script(tmp_path, "bash_validator.py", CLAUDE_CODE_VALIDATOR)
    config = Config.from_mapping(
        {
            "hooks": {
                "PreToolUse": [
                    {
                        "matcher": "shell",
                        "hooks": [{"type": "command", "command": f"{sys.executable} {script}"}],
                    }
                ]
            }
        }
    )
    registry = build_registry(config, tmp_path)
    async with ToolSession(registry, owns_registry=True) as session:
        refused = await session.call("shell", {"command": "grep -r foo ."}, tool_call_id="t1")
        assert not refused.success
        assert refused.error_kind is ErrorKind.POLICY_DENIED
        assert "[HOOK DENIED] Tool 'shell' was blocked" in refused.output
        assert "Use 'rg' (ripgrep) instead of 'grep'" in refused.output
        assert refused.structured_metadata is not None
        assert refused.structured_metadata["reason"] == "hook"
        ran = await session.call("shell", {"command": "echo fine"})
        assert ran.success and "fine" in ran.output


@pytest.mark.anyio
async def test_hook_gets_claude_code_input_on_stdin(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    from octos_tools.workspace import Workspace

    registry = ToolRegistry(Workspace(tmp_path))
    registry.register(tool(add))
    session = ToolSession(registry)
    registry.add_hook("PreToolUse", CommandHook(f"cat > {seen}"), matcher="add|echo")
    session.ctx.session_key = "sess-1"
    assert (await session.call("add", '{"a":1,"b":2}', tool_call_id="call_7")).output == "3"
    data = json.loads(seen.read_text())
    assert data == {
        "session_id": "sess-1",
        "cwd": str(tmp_path.resolve()),
        "hook_event_name": "PreToolUse",
        "tool_name": "add",
        "tool_input": {"a": 1, "b": 2},
        "tool_use_id": "call_7",
    }


@pytest.mark.anyio
async def test_json_deny_and_the_policy_deny_wins_over_a_hook_allow(tmp_path: Path) -> None:
    deny = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "not today",
        }
    }
    registry, session = _session()
    registry.add_hook("PreToolUse", CommandHook(f"echo '{json.dumps(deny)}'"), matcher="add")
    calls: list[str] = []

    async def allow_all(event: HookInput) -> HookOutput:
        calls.append(event.tool_name)
        return HookOutput(permission_decision="allow")

    registry.add_hook("PreToolUse", allow_all)
    denied = await session.call("add", '{"a":1,"b":2}')
    assert denied.error_kind is ErrorKind.POLICY_DENIED
    assert "was blocked: not today. Do not retry." in denied.output
    from octos_tools.policy import ToolPolicy

    registry.apply_policy(ToolPolicy(deny=["echo"]))
    refused = await session.call("echo", {"text": "x"})
    assert refused.error_kind is ErrorKind.POLICY_DENIED
    assert "echo" not in calls  # hooks never see a call the policy refused


@pytest.mark.anyio
async def test_rewrite_is_validated_again() -> None:
    registry, session = _session()

    async def rewrite(event: HookInput) -> HookOutput:
        if event.tool_input.get("a") == 1:
            return HookOutput(updated_input={"a": 40, "b": 2})
        return HookOutput(updated_input={"a": "forty"})

    registry.add_hook("PreToolUse", rewrite, matcher="add")
    assert (await session.call("add", '{"a":1,"b":2}')).output == "42"
    bad = await session.call("add", '{"a":5,"b":2}')
    assert bad.error_kind is ErrorKind.INVALID_ARGUMENTS
    assert "a hook rewrote the arguments" in bad.output


@pytest.mark.anyio
async def test_ask_goes_to_the_approval_channel() -> None:
    registry, session = _session()

    async def ask(event: HookInput) -> HookOutput:
        return HookOutput(permission_decision="ask", reason="writes are reviewed")

    registry.add_hook("PreToolUse", ask, matcher="echo")
    missing = await session.call("echo", {"text": "hi"})
    assert missing.error_kind is ErrorKind.APPROVAL_REQUIRED
    assert "writes are reviewed" in missing.output

    asked: list[ApprovalRequest] = []
    answer = False

    async def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return answer

    ctx = ToolContext(approval=approve)
    declined = await session.call("echo", {"text": "hi"}, ctx=ctx)
    assert declined.error_kind is ErrorKind.APPROVAL_DENIED
    answer = True
    approved = await session.call("echo", {"text": "hi"}, ctx=ctx)
    assert approved.success and approved.output == "hi"
    assert asked[0].tool == "echo" and asked[0].reason == "writes are reviewed"


@pytest.mark.anyio
async def test_exit_2_blocks_with_stderr_and_other_codes_do_not_block() -> None:
    registry, session = _session()
    hook = registry.add_hook("PreToolUse", CommandHook("echo 'too risky' >&2; exit 2"))
    blocked = await session.call("add", '{"a":1,"b":2}')
    assert blocked.error_kind is ErrorKind.POLICY_DENIED and "too risky" in blocked.output
    registry.remove_hook(hook)
    registry.add_hook("PreToolUse", CommandHook("echo broken >&2; exit 1"))
    assert (await session.call("add", '{"a":1,"b":2}')).output == "3"


@pytest.mark.anyio
async def test_hanging_hook_is_killed_at_its_timeout(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    registry, session = _session()
    hook = registry.add_hook(
        "PreToolUse", CommandHook(f"echo $$ > {pidfile}; sleep 30", timeout=0.5)
    )
    start = time.monotonic()
    result = await session.call("add", '{"a":1,"b":2}')
    assert result.output == "3"  # not blocked
    assert time.monotonic() - start < 10
    import os

    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    registry.remove_hook(hook)
    registry.add_hook("PreToolUse", CommandHook("sleep 30", timeout=0.5), fail_closed=True)
    closed = await session.call("add", '{"a":1,"b":2}')
    assert closed.error_kind is ErrorKind.POLICY_DENIED
    assert "fail closed" in closed.output


@pytest.mark.anyio
async def test_invalid_json_is_logged_not_a_crash(caplog: pytest.LogCaptureFixture) -> None:
    registry, session = _session()
    registry.add_hook("PreToolUse", CommandHook("echo '{not json'"))
    with caplog.at_level("WARNING", logger="octos_tools.stages"):
        assert (await session.call("add", '{"a":1,"b":2}')).output == "3"
    assert "invalid JSON" in caplog.text


@pytest.mark.anyio
async def test_post_hooks_see_the_response_and_add_context(tmp_path: Path) -> None:
    seen = tmp_path / "post.json"
    context = {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "additionalContext": "run the tests next",
        }
    }
    registry, session = _session()
    registry.add_hook(
        "PostToolUse", CommandHook(f"cat > {seen}; echo '{json.dumps(context)}'"), matcher="echo"
    )
    failures: list[HookInput] = []

    async def on_failure(event: HookInput) -> None:
        failures.append(event)

    session.add_hook("PostToolUseFailure", on_failure)
    result = await session.call("echo", {"text": "hello"}, tool_call_id="c2")
    assert result.output.startswith("hello") and "run the tests next" in result.output
    data = json.loads(seen.read_text())
    assert data["hook_event_name"] == "PostToolUse"
    assert data["tool_response"]["output"] == "hello" and data["tool_response"]["success"]
    await session.call("add", '{"a":"x","b":2}')  # fails in validation: never ran
    assert failures == []
    registry.register(EchoTool("boom", fail=True))
    await session.call("boom", {"text": "x"})
    assert [f.tool_name for f in failures] == ["boom"] and failures[0].error


@pytest.mark.anyio
async def test_session_hooks_stay_in_their_session() -> None:
    registry, one = _session()
    other = ToolSession(registry)

    async def deny(event: HookInput) -> HookOutput:
        return HookOutput(permission_decision="deny")

    one.add_hook("PreToolUse", deny)
    assert (await one.call("add", '{"a":1,"b":2}')).error_kind is ErrorKind.POLICY_DENIED
    assert (await other.call("add", '{"a":1,"b":2}')).output == "3"
    assert (await registry.execute("add", '{"a":1,"b":2}')).output == "3"


def test_malformed_hooks_block_names_the_key() -> None:
    cases = [
        ({"PreToolUse": [{"matcher": "(", "hooks": []}]}, "hooks.PreToolUse.0.matcher"),
        (
            {"PreToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]},
            "hooks.PreToolUse.0.hooks.0.type",
        ),
        ({"PreToolUse": [{"hooks": [{"type": "command"}]}]}, "hooks.PreToolUse.0.hooks.0.command"),
        (
            {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": "9"}]}]},
            "hooks.PreToolUse.0.hooks.0.timeout",
        ),
        ({"PreTooluse": []}, "hooks.PreTooluse: unknown key"),
    ]
    for block, key in cases:
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            Config.from_mapping({"hooks": block})


@pytest.mark.anyio
async def test_a_sub_agent_registry_keeps_the_stages() -> None:
    registry, _ = _session()

    async def deny(event: HookInput) -> HookOutput:
        return HookOutput(permission_decision="deny", reason="child too")

    registry.add_hook("PreToolUse", deny, matcher="add")
    child = registry.snapshot_excluding(["echo"])
    assert child.hooks == registry.hooks
    denied = await ToolSession(child).call("add", '{"a":1,"b":2}')
    assert "child too" in denied.output


@pytest.mark.anyio
async def test_a_bash_validator_reading_command_sees_exec_commands_cmd(tmp_path: Path) -> None:
    body = CLAUDE_CODE_VALIDATOR.replace(
        'tool_name != "shell"', 'tool_name not in ("exec_command", "bash")'
    )
    script = _script(tmp_path, "bash_validator.py", body)
    hooks = [{"type": "command", "command": f"{sys.executable} {script}"}]
    config = Config.from_mapping(
        {"hooks": {"PreToolUse": [{"matcher": "exec_command|bash", "hooks": hooks}]}}
    )
    registry = build_registry(config, tmp_path)
    async with ToolSession(registry, owns_registry=True) as session:
        for name in ("exec_command", "bash"):
            refused = await session.call(name, {"cmd": "grep -r foo ."})
            assert not refused.success and "Use 'rg'" in refused.output, refused.output
        ran = await session.call("exec_command", {"cmd": "echo fine"})
        assert ran.success and "fine" in ran.output


@pytest.mark.anyio
async def test_an_updated_command_rewrites_cmd(tmp_path: Path) -> None:
    answer = json.dumps({"hookSpecificOutput": {"updatedInput": {"command": "echo rewritten"}}})
    hooks = [{"type": "command", "command": f"cat >/dev/null; echo '{answer}'"}]
    config = Config.from_mapping(
        {"hooks": {"PreToolUse": [{"matcher": "exec_command", "hooks": hooks}]}}
    )
    registry = build_registry(config, tmp_path)
    async with ToolSession(registry, owns_registry=True) as session:
        ran = await session.call("exec_command", {"cmd": "echo original"})
        assert ran.success and "rewritten" in ran.output and "original" not in ran.output


@pytest.mark.anyio
async def test_a_hook_whose_background_child_holds_stdout_answers_when_it_exits(
    tmp_path: Path,
) -> None:
    deny = json.dumps({"hookSpecificOutput": {"permissionDecision": "deny"}})
    hook = CommandHook(f"(sleep 30 &) ; echo '{deny}'", timeout=20, cwd=str(tmp_path))
    started = time.monotonic()
    answer = await hook(HookInput("PreToolUse", "read_file", {"path": "a"}))
    assert time.monotonic() - started < 15, "the hook's answer waited for its background child"
    assert answer is not None and answer.permission_decision == "deny"
