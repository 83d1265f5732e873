"""Hook matchers, Claude Code's JSON output and the command runner (octos_tools.hooks)."""

from __future__ import annotations

import json

import pytest

from octos_tools.hooks import CommandHook, Hook, HookError, HookInput, HookOutput, compile_matcher


def test_matchers_follow_claude_code() -> None:
    assert compile_matcher("")("anything") and compile_matcher("*")("x")
    exact = compile_matcher("read_file|write_file")
    assert exact("read_file") and exact("write_file") and not exact("read_file_x")
    regex = compile_matcher("^mcp__.*")
    assert regex("mcp__files__read") and not regex("read_file")
    assert compile_matcher("file$")("edit_file")
    with pytest.raises(ValueError, match="not a valid regular expression"):
        compile_matcher("(")
    with pytest.raises(ValueError, match="unknown hook event"):
        Hook("BeforeCall", CommandHook("true"))


def test_json_output_fields() -> None:
    out = HookOutput.from_json(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "ask",
                "permissionDecisionReason": "check",
                "updatedInput": {"path": "a"},
                "additionalContext": "ctx",
            }
        }
    )
    assert out == HookOutput("ask", "check", {"path": "a"}, "ctx")
    legacy = HookOutput.from_json({"decision": "block", "reason": "no"})
    assert legacy.permission_decision == "deny" and legacy.reason == "no" and legacy.block
    for bad in (
        {"hookSpecificOutput": {"permissionDecision": "maybe"}},
        {"hookSpecificOutput": {"updatedInput": [1]}},
        {"hookSpecificOutput": "x"},
        {"decision": "later"},
    ):
        with pytest.raises(HookError):
            HookOutput.from_json(bad)


@pytest.mark.anyio
async def test_command_hook_environment_is_scrubbed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-should-not-leak-1234567890")
    context = json.dumps({"hookSpecificOutput": {"additionalContext": "x"}})
    hook = CommandHook(
        f"""printf '%s' "${{OPENAI_API_KEY:-unset}}|$CLAUDE_PROJECT_DIR" >&2; echo '{context}'""",
        cwd=str(tmp_path),
    )
    event = HookInput("PreToolUse", "read_file", {"path": "a"})
    assert (await hook(event)) == HookOutput(additional_context="x")
    failing = CommandHook(
        """printf '%s' "${OPENAI_API_KEY:-unset}|$CLAUDE_PROJECT_DIR" >&2; exit 2""",
        cwd=str(tmp_path),
    )
    blocked = await failing(event)
    assert blocked is not None and blocked.reason == f"unset|{tmp_path}"


@pytest.mark.anyio
async def test_command_hook_failures_raise_hook_error() -> None:
    event = HookInput("PreToolUse", "t", {})
    with pytest.raises(HookError, match="exited with status 3"):
        await CommandHook("exit 3")(event)
    with pytest.raises(HookError, match="invalid JSON"):
        await CommandHook("echo '{oops'")(event)
    with pytest.raises(HookError, match="was killed"):
        await CommandHook("sleep 20", timeout=0.3)(event)
    assert await CommandHook("echo plain text")(event) is None
