"""ToolRegistry: specs cache, filters, policies, deferral, LRU, execute pipeline."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from jsonschema import SchemaError

from octos_tools.context import ToolContext, current_context
from octos_tools.errors import ErrorKind
from octos_tools.function_tool import tool as tool_fn
from octos_tools.lifecycle import ToolLifecycle
from octos_tools.policy import ToolPolicy
from octos_tools.registry import ToolRegistry
from octos_tools.tool_types import JSONObject, Tool, ToolResult

from .helpers import EchoTool, tools


def make(*names: str, **kwargs: Any) -> ToolRegistry:
    registry = ToolRegistry(**kwargs)
    for t in tools(*names):
        registry.register(t)
    return registry


def test_register_replaces_same_name_in_place() -> None:
    r = make("a", "b", "c")
    replacement = EchoTool("b", description="new b")
    r.register(replacement)
    assert r.names() == ["a", "b", "c"]
    assert r.get("b") is replacement


def test_register_rejects_bad_names_and_schemas() -> None:
    r = ToolRegistry()
    with pytest.raises(ValueError, match="invalid tool name"):
        r.register(EchoTool("has space"))
    with pytest.raises(ValueError, match="invalid tool name"):
        r.register(EchoTool("x" * 65))
    bad = EchoTool("bad")
    bad.input_schema = {"type": "string"}
    with pytest.raises(ValueError, match="object"):
        r.register(bad)


def test_specs_cached_identity_and_invalidated_by_every_mutation() -> None:
    r = make("a", "b", "c", "d")
    first = r.specs()
    assert r.specs() is first
    assert [s.name for s in first] == ["a", "b", "c", "d"]
    mutations = [
        lambda: r.register(EchoTool("e")),
        lambda: r.defer(["a"]),
        lambda: r.activate("a"),
        lambda: r.set_context_filter(["x"]),
        lambda: r.set_context_filter(None),
        lambda: r.set_provider_policy(ToolPolicy(deny=["b"])),
        lambda: r.set_provider_policy(None),
        lambda: r.apply_policy(ToolPolicy(deny=["e"])),
        lambda: r.unregister("d"),
    ]
    previous = r.specs()
    version = r.version
    for mutate in mutations:
        mutate()
        assert r.version != version
        version = r.version
        current = r.specs()
        assert current is not previous
        assert r.specs() is current
        previous = current


def test_context_filter_keeps_untagged_tools() -> None:
    r = ToolRegistry()
    r.register(EchoTool("code_tool", tags=("code",)))
    r.register(EchoTool("web_tool", tags=("web",)))
    r.register(EchoTool("plain"))
    r.set_context_filter(["code"])
    assert r.visible_names() == ["code_tool", "plain"]
    r.set_context_filter([])
    assert r.visible_names() == ["code_tool", "web_tool", "plain"]


def test_apply_policy_is_hard_and_prunes_markers() -> None:
    r = make("read_file", "shell", "web_fetch")
    r.defer(["web_fetch"])
    r.mark_spawn_only("shell")
    removed = r.apply_policy(ToolPolicy(deny=["shell", "web_*"]))
    assert removed == ["shell", "web_fetch"]
    assert r.names() == ["read_file"]
    assert r.deferred_names() == [] and r.spawn_only_names() == []


@pytest.mark.anyio
async def test_hard_policy_call_is_policy_denied_not_unknown() -> None:
    r = make("read_file", "list_dir")
    r.apply_policy(ToolPolicy(allow=["group:fs"]))
    result = await r.execute("list_dir", '{"text": "x"}')
    assert not result.success and result.error_kind is ErrorKind.POLICY_DENIED


@pytest.mark.anyio
async def test_provider_policy_is_soft() -> None:
    r = make("read_file", "shell")
    r.set_provider_policy(ToolPolicy(deny=["shell"]))
    assert r.names() == ["read_file", "shell"]
    assert r.visible_names() == ["read_file"]
    result = await r.execute("shell", {})
    assert result.error_kind is ErrorKind.POLICY_DENIED
    assert result.structured_metadata and result.structured_metadata["entry"] == "shell"
    assert not r.is_visible("shell") and not r.is_visible("nope")


@pytest.mark.anyio
async def test_provider_policy_equivalent_names() -> None:
    r = make("spawn_agent", "wait_agent", "read_file")
    r.set_provider_policy(ToolPolicy(deny=["spawn"]))
    assert "spawn_agent" not in r.visible_names()
    assert (await r.execute("spawn_agent", {})).error_kind is ErrorKind.POLICY_DENIED
    r.set_provider_policy(ToolPolicy(allow=["spawn", "read_file"]))
    assert "spawn_agent" in r.visible_names()
    assert "wait_agent" not in r.visible_names()


@pytest.mark.anyio
async def test_require_tags_enforced_at_execute() -> None:
    r = ToolRegistry()
    r.register(EchoTool("coder", tags=("code",)))
    r.register(EchoTool("surfer", tags=("web",)))
    r.register(EchoTool("plain"))
    r.set_provider_policy(ToolPolicy(require_tags=["code"]))
    assert r.visible_names() == ["coder", "plain"]
    assert (await r.execute("surfer", {})).error_kind is ErrorKind.POLICY_DENIED
    assert (await r.execute("plain", {})).success
    assert (await r.execute("coder", {})).success


def test_defer_group_skips_unknown_names_and_groups() -> None:
    r = make("shell", "read_file")
    assert r.defer_group("group:runtime") == ["shell"]
    assert r.deferred_names() == ["shell"]
    version = r.version
    assert r.defer_group("group:nope") == []
    assert r.version == version
    assert r.visible_names() == ["read_file"]


@pytest.mark.anyio
async def test_executing_deferred_tool_activates_its_first_group() -> None:
    r = make("shell", "exec_command", "write_stdin", "read_file")
    r.defer_group("group:runtime")
    assert r.visible_names() == ["read_file"]
    result = await r.execute("exec_command", {"text": "hi"})
    assert result.success and result.output == "hi"
    assert r.visible_names() == ["shell", "exec_command", "write_stdin", "read_file"]


@pytest.mark.anyio
async def test_deferred_tool_outside_groups_activates_alone() -> None:
    r = make("custom", "other")
    r.defer(["custom", "other"])
    await r.execute("custom", {})
    assert r.deferred_names() == ["other"]


@pytest.mark.anyio
async def test_deferral_is_not_a_permission() -> None:
    r = make("shell", "read_file")
    r.defer_group("group:runtime")
    r.set_provider_policy(ToolPolicy(deny=["shell"]))
    result = await r.execute("shell", {})
    assert result.error_kind is ErrorKind.POLICY_DENIED
    assert r.is_deferred("shell")  # a denied call does not activate anything


def test_lru_eviction_through_registry_seed_flow() -> None:
    names = ["read_file", "write_file", "shell", "glob", "grep", "web_fetch"]
    r = make(*names, lifecycle=ToolLifecycle(3, 2, base_tools=["read_file", "write_file"]))
    for _ in range(3):
        r.tick()
    evicted = r.auto_evict()
    # excess 3; all four non-base tools idle 3 >= 2; ties broken by registration order
    assert evicted == ["shell", "glob", "grep"]
    assert r.visible_names() == ["read_file", "write_file", "web_fetch"]
    assert set(evicted) <= set(r.deferred_names())
    assert len(r.active_names()) <= 3


@pytest.mark.anyio
async def test_evicted_tool_reactivated_and_survives_next_eviction() -> None:
    r = make(
        "read_file",
        "write_file",
        "shell",
        "exec_command",
        "glob",
        lifecycle=ToolLifecycle(3, 2, base_tools=["read_file", "write_file"]),
    )
    for _ in range(3):
        r.tick()
    assert "shell" in r.auto_evict()
    r.tick()
    await r.execute("shell", {})  # re-activates group:runtime and records use
    assert "shell" in r.visible_names()
    r.tick()
    r.auto_evict()
    assert "shell" in r.visible_names()


def test_spawn_only_never_evicted() -> None:
    r = make("a", "b", "c", "bg", lifecycle=ToolLifecycle(1, 1))
    r.mark_spawn_only("bg")
    for _ in range(10):
        r.tick()
        r.auto_evict()
    assert "bg" in r.visible_names()
    assert len(r.active_names()) == 1


@pytest.mark.anyio
async def test_unknown_tool_names_closest() -> None:
    r = make("read_file", "write_file")
    result = await r.execute("read_fil", "{}")
    assert result.error_kind is ErrorKind.UNKNOWN_TOOL
    assert "read_file" in result.output


@pytest.mark.anyio
async def test_pipeline_order_size_before_lookup_and_json() -> None:
    r = make("a")
    too_big = '{"text":"' + "x" * 1_048_576 + '"}'
    assert (await r.execute("missing", too_big)).error_kind is ErrorKind.ARGS_TOO_LARGE
    assert (await r.execute("missing", "{bad")).error_kind is ErrorKind.INVALID_JSON
    assert (await r.execute("missing", "{}")).error_kind is ErrorKind.UNKNOWN_TOOL
    assert (await r.execute("a", '{"text": 1}')).error_kind is ErrorKind.INVALID_ARGUMENTS


class Raiser(Tool):
    name = "raiser"
    description = "raises"

    async def execute(self, args: JSONObject) -> ToolResult:
        raise ZeroDivisionError("oops")


class Sleeper(Tool):
    name = "sleeper"
    description = "sleeps"
    timeout = 0.2

    async def execute(self, args: JSONObject) -> ToolResult:
        await anyio.sleep(10)
        return ToolResult.ok("late")


class Wrong(Tool):
    name = "wrong"
    description = "returns a str"

    async def execute(self, args: JSONObject) -> ToolResult:
        return "oops"  # type: ignore[return-value]


@pytest.mark.anyio
async def test_tool_errors_never_crash_host() -> None:
    r = ToolRegistry()
    for t in (Raiser(), Sleeper(), Wrong()):
        r.register(t)
    res = await r.execute("raiser", {})
    assert res.error_kind is ErrorKind.INTERNAL_ERROR and "ZeroDivisionError" in res.output
    res = await r.execute("sleeper", {})
    assert res.error_kind is ErrorKind.TIMEOUT
    res = await r.execute("wrong", {})
    assert res.error_kind is ErrorKind.INTERNAL_ERROR


class CtxTool(Tool):
    name = "ctx"
    description = "reports its context"

    async def execute(self, args: JSONObject) -> ToolResult:
        ctx = current_context()
        return ToolResult.ok(json.dumps([ctx.tool_call_id, ctx.registry is not None]))


class CtxTool2(CtxTool):
    name = "ctx2"

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        return ToolResult.ok(ctx.tool_call_id)


@pytest.mark.anyio
async def test_context_reaches_legacy_and_new_tools() -> None:
    r = ToolRegistry()
    r.register(CtxTool())
    r.register(CtxTool2())
    res = await r.execute("ctx", {}, ToolContext(tool_call_id="call_1"))
    assert json.loads(res.output) == ["call_1", True]
    assert (await r.execute("ctx2", {}, ToolContext(tool_call_id="call_2"))).output == "call_2"
    assert (await r.execute("ctx2", {})).output == ""
    assert current_context().tool_call_id == ""  # reset after the call


class Big(Tool):
    name = "big"
    description = "prints a lot"

    async def execute(self, args: JSONObject) -> ToolResult:
        return ToolResult.ok("H" * 60_000 + " sk-" + "a" * 40 + " " + "T" * 30_000 + "LAST")


@pytest.mark.anyio
async def test_output_capped_head_and_tail_and_secrets_redacted() -> None:
    r = ToolRegistry()
    r.register(Big())
    res = await r.execute("big", {})
    assert len(res.output.encode()) <= 50_000
    assert res.output.startswith("HHHH") and res.output.endswith("LAST")
    assert "bytes omitted" in res.output
    r2 = ToolRegistry(max_output_bytes=200_000)
    r2.register(Big())
    out = (await r2.execute("big", {})).output
    assert "sk-" + "a" * 40 not in out and "credential-redacted" in out


def test_snapshot_excluding_shares_tools_and_copies_state() -> None:
    r = make("a", "b", "c", lifecycle=ToolLifecycle(5, 2, base_tools=["a"]))
    r.defer(["c"])
    r.set_provider_policy(ToolPolicy(deny=["b"]))
    snap = r.snapshot_excluding(["a"])
    assert snap.names() == ["b", "c"]
    assert snap.get("b") is r.get("b")
    assert snap.deferred_names() == ["c"]
    assert snap.provider_policy == r.provider_policy
    assert snap.lifecycle.base_tools == {"a"} and snap.lifecycle.iteration == 0
    assert snap.supervisor is not r.supervisor


def test_derived_registries_copy_every_public_setting_but_the_session_ones() -> None:
    r = make("a", session_key="s1")
    r.output_dir_hint = "out/"
    r.sandbox_mode = "read-only"  # type: ignore[attr-defined]  # a setting a host added
    for derived in (r.snapshot_excluding([]), r.rebind_cwd("ws")):  # type: ignore[arg-type]
        assert derived.output_dir_hint == "out/"
        assert derived.sandbox_mode == "read-only"  # type: ignore[attr-defined]
        assert derived.session_key is None and derived.supervisor is not r.supervisor
        assert derived.max_output_bytes == r.max_output_bytes and derived.redact is r.redact


class Bound(EchoTool):
    cwd_bound = True

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.workspace: Any = "old"


def test_rebind_cwd_rebuilds_only_cwd_bound_tools() -> None:
    r = ToolRegistry()
    bound, shared = Bound("read_file"), EchoTool("web_fetch")
    r.register(bound)
    r.register(shared)
    r.register(Bound("shell"))
    r.defer_group("group:runtime")
    new = r.rebind_cwd("new-ws")  # type: ignore[arg-type]
    assert new.names() == ["read_file", "web_fetch", "shell"]
    assert new.get("web_fetch") is shared
    rebound = new.get("read_file")
    assert rebound is not bound and rebound.workspace == "new-ws"  # type: ignore[union-attr]
    assert bound.workspace == "old"
    assert new.deferred_names() == ["shell"]
    assert new.workspace == "new-ws"


def test_catalog_live_and_never_denied() -> None:
    r = make("read_file", "shell", "web_fetch")
    r.defer_group("group:web")
    r.set_provider_policy(ToolPolicy(deny=["shell"]))
    states = {e.name: e.state for e in r.catalog()}
    assert states == {"read_file": "active", "web_fetch": "deferred"}
    r.register(EchoTool("later"))
    assert "later" in {e.name for e in r.catalog()}


def test_listeners_called_on_mutation() -> None:
    r = make("a")
    seen: list[int] = []
    r.add_listener(lambda reg: seen.append(reg.version))
    r.defer(["a"])
    r.activate("a")
    assert len(seen) == 2


@pytest.mark.anyio
async def test_spawn_only_envelope_and_task_output() -> None:
    r = make("bg")
    r.mark_spawn_only("bg")
    res = await r.execute("bg", {"text": "background hello"})
    assert res.success
    envelope = json.loads(res.output)
    assert len(res.output.encode()) < 1024
    assert envelope["ok"] is True and envelope["read_with"] == "read_task_output"
    assert envelope["read_modes"] == ["head", "tail", "grep", "line_range", "file"]
    records, timed_out = await r.supervisor.wait([envelope["task_handle"]], timeout=5)
    assert not timed_out
    record = records[envelope["task_handle"]]
    assert record.status.value == "completed"
    assert "background hello" in record.output_path.read_text()
    await r.aclose()


@pytest.mark.anyio
async def test_context_permissions_are_enforced_at_execute() -> None:
    """ToolPermissions.denied_tools / allowed_tools of the call's context refuse a tool
    before it runs (the documented meaning; octos consults them only in read_file)."""
    from octos_tools.context import ToolPermissions

    log: list[str] = []
    r = ToolRegistry()
    for name in ("a", "b"):
        r.register(EchoTool(name, log=log))
    denied = ToolContext(permissions=ToolPermissions(denied_tools=frozenset({"a"})))
    result = await r.execute("a", {}, denied)
    assert result.error_kind is ErrorKind.POLICY_DENIED, result.output
    assert (await r.execute("b", {}, denied)).success
    only_b = ToolContext(permissions=ToolPermissions(allowed_tools=frozenset({"b"})))
    assert (await r.execute("a", {}, only_b)).error_kind is ErrorKind.POLICY_DENIED
    assert (await r.execute("b", {}, only_b)).success
    assert log == ["start:b", "end:b", "start:b", "end:b"]


@pytest.mark.anyio
async def test_denying_exec_command_also_denies_its_bash_alias() -> None:
    """``bash`` is the Codex alias of ``exec_command`` (same action): a deny entry that
    names exec_command must not leave the alias as a way round it (hard and provider)."""
    log: list[str] = []
    r = ToolRegistry()
    for name in ("exec_command", "bash", "read_file"):
        r.register(EchoTool(name, log=log))
    removed = r.apply_policy(ToolPolicy(deny=["exec_command"]))
    assert set(removed) == {"exec_command", "bash"}
    assert (await r.execute("bash", {})).error_kind is ErrorKind.POLICY_DENIED

    soft = ToolRegistry()
    for name in ("exec_command", "bash", "read_file"):
        soft.register(EchoTool(name, log=log))
    soft.set_provider_policy(ToolPolicy(deny=["exec_command"]))
    assert (await soft.execute("bash", {})).error_kind is ErrorKind.POLICY_DENIED
    assert "bash" not in soft.visible_names()
    only_bash_denied = ToolRegistry()
    for name in ("exec_command", "bash"):
        only_bash_denied.register(EchoTool(name, log=log))
    only_bash_denied.apply_policy(ToolPolicy(deny=["bash"]))
    assert only_bash_denied.names() == ["exec_command"]
    assert log == []


class Leaky(Tool):
    name = "leaky"
    description = "puts a credential in its metadata and in an error"

    async def execute(self, args: JSONObject) -> ToolResult:
        key = "ghp_" + "b" * 36
        if args.get("fail"):
            from octos_tools.errors import ToolError

            raise ToolError(ErrorKind.NOT_FOUND, f"no such token {key}")
        return ToolResult.ok(
            "ok", structured_metadata={"diff": f"+TOKEN={key}", "files": [{"line": key}], "n": 3}
        )


@pytest.mark.anyio
async def test_secrets_redacted_in_structured_metadata_and_errors_too() -> None:
    """structured_metadata reaches the model as well (MCP structuredContent, the CLI's
    JSON): redaction covers every string in it, and the error message."""
    r = ToolRegistry()
    r.register(Leaky())
    res = await r.execute("leaky", {})
    dumped = json.dumps(res.to_dict())
    assert "b" * 36 not in dumped and "credential-redacted" in dumped
    assert res.structured_metadata is not None and res.structured_metadata["n"] == 3
    failed = await r.execute("leaky", {"fail": True})
    assert "b" * 36 not in json.dumps(failed.to_dict())
    assert failed.error_kind is ErrorKind.NOT_FOUND


def test_removed_by_policy_remembers_class_and_tags() -> None:
    r = ToolRegistry()
    r.register(EchoTool("exec_command", exclusive=True, tags=("runtime",)))
    r.register(EchoTool("read_file"))
    r.apply_policy(ToolPolicy(deny=["exec_*"]))
    removed = r.removed_by_policy()
    assert list(removed) == ["exec_command"]
    assert removed["exec_command"][0].value == "exclusive"
    assert removed["exec_command"][1] == ("runtime",)


@pytest.mark.anyio
async def test_policy_denied_names_the_policy_that_decided() -> None:
    r = make("read_file", "write_file", "shell")
    r.apply_policy(ToolPolicy(deny=["write_file"]), source="read-only mode")
    r.set_provider_policy(ToolPolicy(deny=["shell"]))
    res = await r.execute("write_file", {})
    assert "read-only mode" in res.output
    assert res.structured_metadata and res.structured_metadata["policy"] == "read-only mode"
    res = await r.execute("shell", {})
    assert "provider policy" in res.output
    assert r.evaluate("read_file").allowed


def test_enforce_hard_policies_covers_tools_registered_later() -> None:
    r = make("read_file")
    r.apply_policy(ToolPolicy(deny=["srv__*"]))
    r.register(EchoTool("srv__write"))
    r.register(EchoTool("srv__read"))
    assert r.enforce_hard_policies() == ["srv__write", "srv__read"]
    assert r.names() == ["read_file"]
    assert "srv__write" in r.removed_by_policy()


@pytest.mark.anyio
async def test_schema_checked_lazily_or_on_request() -> None:
    bad = EchoTool("bad")
    bad.input_schema = {"type": "object", "properties": {"x": {"type": "no-such-type"}}}
    r = ToolRegistry()
    with pytest.raises(SchemaError):
        r.register(bad, check_schema=True)
    r.register(bad)  # cheap by default: checked on first use
    with pytest.raises(SchemaError, match="'bad' has an invalid input schema"):
        r.check_schemas()
    res = await r.execute("bad", {"x": 1})
    assert res.error_kind is ErrorKind.INTERNAL_ERROR and "invalid input schema" in res.output


def test_every_builtin_schema_is_valid(tmp_path: Any) -> None:
    from octos_tools.profile import build_registry

    registry = build_registry(None, tmp_path)
    registry.check_schemas()  # raises on the first invalid schema
    assert len(registry) > 20


@pytest.mark.anyio
async def test_context_permissions_follow_the_alias_links() -> None:
    from octos_tools.context import ToolContext, ToolPermissions

    r = make("exec_command", "shell", "bash", "spawn_agent", "read_file")
    denied = ToolContext(
        permissions=ToolPermissions(denied_tools=frozenset({"exec_command", "shell"}))
    )
    for name in ("exec_command", "shell", "bash"):
        result = await r.execute(name, {}, denied)
        assert result.error_kind is ErrorKind.POLICY_DENIED, name
    assert (await r.execute("read_file", {}, denied)).success
    no_spawn = ToolContext(permissions=ToolPermissions(denied_tools=frozenset({"spawn"})))
    assert (await r.execute("spawn_agent", {}, no_spawn)).error_kind is ErrorKind.POLICY_DENIED
    only_exec = ToolContext(permissions=ToolPermissions(allowed_tools=frozenset({"exec_command"})))
    assert (await r.execute("bash", {}, only_exec)).success
    assert (await r.execute("shell", {}, only_exec)).error_kind is ErrorKind.POLICY_DENIED


def test_groups_belong_to_one_registry() -> None:
    from octos_tools.policy import GROUPS

    a, b = make("srv__x", "read_file"), make("srv__x", "read_file")
    a.add_group("group:mcp:srv", ["srv__x"], "a server")
    assert a.groups["group:mcp:srv"] == ("srv__x",) and "group:mcp:srv" not in b.groups
    assert "group:mcp:srv" not in GROUPS
    a.apply_policy(ToolPolicy(deny=["group:mcp:srv"]))
    b.apply_policy(ToolPolicy(deny=["group:mcp:srv"]))
    assert a.names() == ["read_file"] and b.names() == ["srv__x", "read_file"]
    a2 = make("srv__y")
    a2.add_group("group:mcp:srv", ["srv__y"])
    a2.defer_group("group:mcp:srv")
    assert a2.deferred_names() == ["srv__y"] and a2.group_of("srv__y") == "group:mcp:srv"
    with pytest.raises(ValueError):
        a2.add_group("group:fs", ["x"])
    with pytest.raises(ValueError):
        a2.add_group("fs", ["x"])


@pytest.mark.anyio
async def test_timeout_stops_a_tool_inside_its_own_scopes_and_task_groups() -> None:
    import time

    class Nested(Tool):
        name = "nested"
        description = "Waits inside its own cancel scope and task group."
        input_schema: JSONObject = {"type": "object", "properties": {}}  # noqa: RUF012
        timeout = 0.3

        async def execute(self, args: JSONObject) -> ToolResult:
            with anyio.CancelScope():
                async with anyio.create_task_group() as tg:
                    tg.start_soon(anyio.sleep, 30)
                    with anyio.fail_after(20):
                        await anyio.sleep(30)
            return ToolResult.ok("never")

    @tool_fn(timeout=0.3)
    def blocking() -> str:
        time.sleep(1.5)
        return "late"

    r = ToolRegistry()
    r.register(Nested())
    r.register(blocking)
    for name in ("nested", "blocking"):
        started = time.monotonic()
        result = await r.execute(name, "{}")
        assert result.error_kind is ErrorKind.TIMEOUT, (name, result.output)
        assert time.monotonic() - started < 1.2, name
    # the task is not left cancelled: scopes and sleeps still work afterwards
    with anyio.fail_after(5):
        await anyio.sleep(0.01)
    r.register(EchoTool("after"))
    assert (await r.execute("after", {"text": "ok"})).output == "ok"


# ------------------------------------------------------------------ availability


class _NeedsBackend(EchoTool):
    """A tool that can work only once ``backend`` is set."""

    backend: str | None = None

    def unavailable_reason(self) -> str | None:
        return None if self.backend else "no backend"


@pytest.mark.anyio
async def test_a_tool_that_cannot_work_is_not_listed_but_stays_callable() -> None:
    registry = ToolRegistry()
    tool = _NeedsBackend("render")
    registry.register(tool)
    registry.register(EchoTool("echo"))
    assert registry.visible_names() == ["echo"]
    assert registry.unavailable() == {"render": "no backend"}
    entry = next(e for e in registry.catalog() if e.name == "render")
    assert entry.unavailable == "no backend" and not entry.runnable
    result = await registry.execute("render", {"text": "hi"})
    assert result.success  # a call by name reaches the tool itself
    tool.backend = "ready"
    assert registry.visible_names() == ["echo"]  # cached until a mutation
    registry.refresh_availability()
    assert registry.visible_names() == ["render", "echo"]
    assert registry.unavailable() == {}
