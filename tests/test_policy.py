"""ToolPolicy: deny wins, groups, wildcards, require_tags, provider lookup (seed §6.3)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from octos_tools.policy import (
    GROUPS,
    PolicyReason,
    ToolPolicy,
    entry_matches,
    first_group_of,
    group_members,
    register_group,
    resolve_provider_policy,
)

NAMES = ["read_file", "write_file", "shell", "web_search", "web_fetch", "glob", "grep", "spawn"]


def test_empty_policy_allows_everything() -> None:
    p = ToolPolicy()
    assert p.is_empty()
    assert all(p.is_allowed(n) for n in NAMES)


def test_deny_wins_over_allow() -> None:
    p = ToolPolicy(allow=["shell", "read_file"], deny=["shell"])
    assert not p.is_allowed("shell")
    assert p.is_allowed("read_file")
    assert not p.is_allowed("grep")  # not in a non-empty allow list


def test_group_fs_allow() -> None:
    p = ToolPolicy(allow=["group:fs"])
    for name in ("read_file", "write_file", "edit_file", "diff_edit", "apply_patch"):
        assert p.is_allowed(name)
    assert not p.is_allowed("shell")
    assert not p.is_allowed("glob")


def test_wildcard_deny() -> None:
    p = ToolPolicy(deny=["web_*"])
    assert not p.is_allowed("web_search")
    assert not p.is_allowed("web_fetch")
    assert p.is_allowed("read_file")
    assert not ToolPolicy(deny=["*"]).is_allowed("anything")


def test_allow_fs_and_search() -> None:
    p = ToolPolicy(allow=["group:fs", "group:search"])
    assert p.is_allowed("read_file") and p.is_allowed("glob") and p.is_allowed("grep")
    assert not p.is_allowed("shell") and not p.is_allowed("spawn")
    assert not p.is_allowed("web_fetch")


def test_deny_runtime_group() -> None:
    p = ToolPolicy(deny=["group:runtime"])
    assert not p.is_allowed("shell") and not p.is_allowed("exec_command")
    assert p.is_allowed("read_file")


def test_group_delegated() -> None:
    p = ToolPolicy(deny=["group:delegated"])
    for name in ("delegate_task", "spawn", "send_message", "save_memory", "execute_code"):
        assert not p.is_allowed(name)
    assert p.is_allowed("read_file") and p.is_allowed("shell")


def test_unknown_group_matches_nothing() -> None:
    p = ToolPolicy(deny=["group:nope"])
    assert p.is_allowed("read_file")
    assert not entry_matches("group:nope", "nope")


def test_json_round_trip() -> None:
    p = ToolPolicy(allow=["group:fs", "web_*"], deny=["shell"], require_tags=["code"])
    again = ToolPolicy.from_json(p.to_json())
    assert again == p
    assert json.loads(p.to_json()) == {
        "allow": ["group:fs", "web_*"],
        "deny": ["shell"],
        "require_tags": ["code"],
    }
    with pytest.raises(ValueError, match="unknown"):
        ToolPolicy.from_dict({"allw": []})
    with pytest.raises(ValueError):
        ToolPolicy.from_dict({"allow": "shell"})
    with pytest.raises(TypeError):
        ToolPolicy(allow="shell")


def test_require_tags() -> None:
    p = ToolPolicy(require_tags=["code"])
    assert p.is_allowed_with_tags("read_file", ["fs", "code"])
    assert not p.is_allowed_with_tags("web_fetch", ["web"])
    assert p.is_allowed_with_tags("untagged", [])  # untagged tools are universal
    deny = ToolPolicy(deny=["read_file"], require_tags=["code"])
    assert not deny.is_allowed_with_tags("read_file", ["code"])
    assert ToolPolicy().is_allowed_with_tags("x", ["anything"])
    decision = p.evaluate("web_fetch", ["web"])
    assert decision.reason is PolicyReason.MISSING_REQUIRED_TAG


def test_evaluate_names_entry_and_reason() -> None:
    p = ToolPolicy(allow=["group:fs"], deny=["write_*"])
    d = p.evaluate("write_file")
    assert not d.allowed and d.entry == "write_*" and d.reason is PolicyReason.POLICY_DENY
    d = p.evaluate("read_file")
    assert d.allowed and d.entry == "group:fs" and d.reason is PolicyReason.ALLOWED_BY_ENTRY
    d = p.evaluate("shell")
    assert not d.allowed and d.entry is None and d.reason is PolicyReason.NOT_IN_ALLOW_LIST


def test_first_group_is_table_order() -> None:
    assert first_group_of("spawn") == "group:sessions"  # also in group:delegated
    assert first_group_of("save_memory") == "group:memory"
    assert first_group_of("nothing") is None


def test_register_group_is_deprecated() -> None:
    with pytest.warns(DeprecationWarning):
        register_group("group:mcp:test_srv", ["test_srv__a", "test_srv__b"], "test server")
    try:
        assert ToolPolicy(deny=["group:mcp:test_srv"]).is_allowed("read_file")
        assert not ToolPolicy(deny=["group:mcp:test_srv"]).is_allowed("test_srv__a")
        with pytest.raises(ValueError):
            register_group("group:fs", ["x"])
        with pytest.raises(ValueError):
            register_group("fs", ["x"])
    finally:
        GROUPS.pop("group:mcp:test_srv", None)


def test_policy_entries_read_the_given_group_table() -> None:
    table = {**GROUPS, "group:mcp:srv": ("srv__a",)}
    policy = ToolPolicy(deny=["group:mcp:srv"])
    assert not policy.evaluate("srv__a", groups=table).allowed
    assert policy.evaluate("srv__a").allowed  # the module table has no such group
    assert first_group_of("srv__a", table) == "group:mcp:srv"
    assert group_members("group:mcp:srv", table) == ("srv__a",)


def test_provider_policy_lookup_order() -> None:
    by = {
        "claude-sonnet-4": ToolPolicy(deny=["shell"]),
        "anthropic": ToolPolicy(deny=["web_*"]),
    }
    assert resolve_provider_policy(by, "anthropic", "claude-sonnet-4") == (
        "claude-sonnet-4",
        by["claude-sonnet-4"],
    )
    assert resolve_provider_policy(by, "anthropic", "claude-other") == (
        "anthropic",
        by["anthropic"],
    )
    assert resolve_provider_policy(by, "openai", "gpt") is None
    assert resolve_provider_policy({}, "anthropic", "claude-sonnet-4") is None
    # exact keys only: no prefix matching
    assert resolve_provider_policy(by, "anthro", "claude-sonnet") is None


_entry_names = st.sampled_from([*NAMES, "other", "web_x", "read_x"])


def _entries() -> st.SearchStrategy[str]:
    group = st.sampled_from(sorted(GROUPS))
    wildcard = st.sampled_from(["*", "web_*", "read_*", "s*", "gr*"])
    return st.one_of(_entry_names, group, wildcard)


@given(
    allow=st.lists(_entries(), max_size=5),
    deny=st.lists(_entries(), max_size=5),
    name=_entry_names,
    data=st.data(),
)
def test_deny_always_wins_property(
    allow: list[str], deny: list[str], name: str, data: st.DataObject
) -> None:
    policy = ToolPolicy(allow=allow, deny=deny)
    denied = any(entry_matches(e, name) for e in deny)
    if denied:
        assert not policy.is_allowed(name)
        # adding the same entry (or anything) to allow never changes the verdict
        extra = data.draw(st.lists(_entries(), max_size=3))
        assert not ToolPolicy(allow=[*allow, *deny, *extra, name], deny=deny).is_allowed(name)
    else:
        expected = not allow or any(entry_matches(e, name) for e in allow)
        assert policy.is_allowed(name) is expected
    # order of entries does not matter
    shuffled = ToolPolicy(allow=list(reversed(allow)), deny=list(reversed(deny)))
    assert shuffled.is_allowed(name) == policy.is_allowed(name)
