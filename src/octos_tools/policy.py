"""Tool policies: allow / deny / require_tags with deny-wins semantics (octos
``crates/octos-agent/src/tools/policy.rs``).

An entry of ``allow`` or ``deny`` is one of, tried in this order (octos ``policy.rs``):

1. ``group:NAME``: a group of the registry's group table, matching its members. The table
   starts as :data:`GROUPS` (the octos table, ``crates/octos-agent/src/tools/policy.rs``);
   each :class:`~octos_tools.registry.ToolRegistry` keeps its own copy, to which mounting
   an MCP server adds ``group:mcp:<server>`` (:meth:`~octos_tools.registry.ToolRegistry.add_group`).
   Nothing module-global changes after import.
2. ``prefix*``: every name starting with ``prefix`` (``*`` alone matches everything).
3. an exact tool name.

Unknown ``group:`` names fall through to exact matching and so never match a real tool.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = [
    "DENY_ALIASES",
    "EQUIVALENT_NAMES",
    "GROUPS",
    "GROUP_DESCRIPTIONS",
    "GroupTable",
    "PolicyDecision",
    "PolicyReason",
    "ToolPolicy",
    "entry_matches",
    "first_group_of",
    "group_members",
    "register_group",
    "resolve_provider_policy",
]

GroupTable = Mapping[str, Sequence[str]]
"""A group table: ``"group:NAME" -> member tool names`` (order matters, see :data:`GROUPS`)."""

#: The octos group table (``crates/octos-agent/src/tools/policy.rs``). Order matters: the
#: *first* group containing a tool is the one activated when a deferred tool is called.
GROUPS: dict[str, tuple[str, ...]] = {
    "group:fs": ("read_file", "write_file", "apply_patch", "edit_file", "diff_edit"),
    "group:runtime": ("shell", "exec_command", "write_stdin", "bash"),
    "group:web": ("web_search", "web_fetch", "browser"),
    "group:search": ("glob", "grep", "list_dir"),
    "group:sessions": (
        "spawn",
        "spawn_agent",
        "send_input",
        "resume_agent",
        "wait_agent",
        "close_agent",
        "delegate",
    ),
    "group:memory": ("recall_memory", "save_memory"),
    "group:research": ("search", "synthesize_research", "deep_crawl"),
    "group:admin": ("manage_skills", "configure_tool", "model_check"),
    "group:media": (
        "mofa_comic",
        "mofa_slides",
        "mofa_infographic",
        "mofa_cards",
        "fm_tts",
        "fm_voice_list",
        "image_generation",
    ),
    "group:delegated": (
        "delegate_task",
        "spawn",
        "send_message",
        "message",
        "save_memory",
        "execute_code",
    ),
}

#: One-line description of each group (used by ``activate_tools`` and ``octos-tools tools``).
GROUP_DESCRIPTIONS: dict[str, str] = {
    "group:fs": "File operations",
    "group:runtime": "Shell command execution",
    "group:web": "Web search, page fetching, and headless browser",
    "group:search": "File and content search",
    "group:sessions": "Spawn background subagents",
    "group:memory": "Long-term memory",
    "group:research": "Deep multi-round web research",
    "group:admin": "Skill management, tool configuration, model switching",
    "group:media": "Media generation",
    "group:delegated": "Delegated child deny list",
}


#: Names a policy also consults for a tool (octos ``policy.rs``): denying ``spawn`` also
#: refuses ``spawn_agent``; denying ``read_task_output`` also refuses ``wait_agent``; ``bash``
#: (Codex's name) is ``exec_command``.
EQUIVALENT_NAMES: Mapping[str, tuple[str, ...]] = {
    "spawn_agent": ("spawn_agent", "spawn"),
    "delegate": ("delegate", "spawn_agent", "spawn"),
    "wait_agent": ("wait_agent", "read_task_output"),
    "bash": ("bash", "exec_command"),
}

#: Tools that do exactly what another does (``bash`` is Codex's alias of ``exec_command``):
#: a deny entry naming the original denies the alias too, so an alias is never a way round
#: a deny list (hard policies, and a call context's ``ToolPermissions``).
DENY_ALIASES: Mapping[str, tuple[str, ...]] = {
    "bash": ("exec_command",),
    "delegate": ("spawn_agent",),
}


def register_group(name: str, members: Iterable[str], description: str = "") -> None:
    """Deprecated: add a group to the module-global :data:`GROUPS`.

    Use :meth:`octos_tools.registry.ToolRegistry.add_group`, which adds the group to one
    registry only (a mount in one registry must not change another's ``group:`` names).

    Args:
        name: the full group name, starting with ``group:``.
        members: the tool names in the group.
        description: a one-line description.

    Raises:
        ValueError: if ``name`` does not start with ``group:`` or names a group of the octos table.
    """
    if not name.startswith("group:"):
        raise ValueError(f"group names start with 'group:', got {name!r}")
    if name in _SEED_GROUPS:
        raise ValueError(f"{name!r} is a built-in group of the octos table and cannot change")
    warnings.warn(
        "policy.register_group changes every registry of the process; use ToolRegistry.add_group",
        DeprecationWarning,
        stacklevel=2,
    )
    GROUPS[name] = tuple(dict.fromkeys(members))
    GROUP_DESCRIPTIONS[name] = description or name


_SEED_GROUPS = frozenset(GROUPS)


def group_members(group: str, groups: GroupTable | None = None) -> tuple[str, ...]:
    """Members of ``group`` in ``groups`` (default :data:`GROUPS`); ``()`` when unknown."""
    return tuple((GROUPS if groups is None else groups).get(group, ()))


def first_group_of(name: str, groups: GroupTable | None = None) -> str | None:
    """The first group of ``groups`` (default :data:`GROUPS`) containing ``name``, or
    ``None``."""
    for group, members in (GROUPS if groups is None else groups).items():
        if name in members:
            return group
    return None


def entry_matches(entry: str, name: str, groups: GroupTable | None = None) -> bool:
    """Whether one policy entry matches a tool name (octos ``policy.rs`` order: group,
    prefix, exact name); ``groups`` is the group table (default :data:`GROUPS`)."""
    table = GROUPS if groups is None else groups
    if entry in table:
        return name in table[entry]
    if entry.endswith("*"):
        return name.startswith(entry[:-1])
    return entry == name


class PolicyReason(str, Enum):
    """Why a :class:`PolicyDecision` came out as it did."""

    ALLOWED_NO_ALLOW_LIST = "allowed_no_allow_list"
    ALLOWED_BY_ENTRY = "allowed_by_entry"
    POLICY_DENY = "policy_deny"
    """Matched a ``deny`` entry (octos's metric reason)."""
    NOT_IN_ALLOW_LIST = "not_in_allow_list"
    MISSING_REQUIRED_TAG = "missing_required_tag"


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """The outcome of :meth:`ToolPolicy.evaluate`.

    Attributes:
        allowed: the verdict.
        reason: a :class:`PolicyReason`.
        entry: the ``allow`` / ``deny`` entry that decided, or ``None``.
        detail: one sentence a person can read.
        source: which policy decided (``"tool_policy"``, ``"read-only mode"``,
            ``"provider policy"``, …), when the caller knows; ``None`` otherwise.
    """

    allowed: bool
    reason: PolicyReason
    entry: str | None
    detail: str
    source: str | None = None

    def __bool__(self) -> bool:
        return self.allowed


@dataclass(frozen=True)
class ToolPolicy:
    """Which tools may be used: ``allow``, ``deny`` and ``require_tags`` (octos ``policy.rs``).

    Rules: deny always wins; an empty ``allow`` list allows everything not denied;
    ``require_tags``: a tool passes if it has no tags or shares one with the list.

    Attributes:
        allow: entries a tool must match (when non-empty).
        deny: entries that refuse a tool whatever ``allow`` says.
        require_tags: tags of which a tagged tool must carry at least one.
    """

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    require_tags: tuple[str, ...] = field(default=())

    def __init__(
        self,
        allow: Iterable[str] = (),
        deny: Iterable[str] = (),
        require_tags: Iterable[str] = (),
    ) -> None:
        for label, value in (("allow", allow), ("deny", deny), ("require_tags", require_tags)):
            if isinstance(value, str):
                raise TypeError(f"ToolPolicy.{label} takes a list of strings, not a string")
        object.__setattr__(self, "allow", tuple(allow))
        object.__setattr__(self, "deny", tuple(deny))
        object.__setattr__(self, "require_tags", tuple(require_tags))

    def is_empty(self) -> bool:
        """``True`` when all three lists are empty (the policy allows everything)."""
        return not (self.allow or self.deny or self.require_tags)

    def evaluate(
        self,
        name: str,
        tags: Sequence[str] = (),
        *,
        check_tags: bool = True,
        groups: GroupTable | None = None,
    ) -> PolicyDecision:
        """Decide for one tool, with the reason and the entry that decided.

        Args:
            name: the tool name.
            tags: the tool's tags (for ``require_tags``).
            check_tags: apply ``require_tags`` (``False`` gives the name-only verdict).
            groups: the group table ``group:`` entries refer to (a registry passes its
                own; default :data:`GROUPS`).
        """
        for entry in self.deny:
            if entry_matches(entry, name, groups):
                return PolicyDecision(
                    False, PolicyReason.POLICY_DENY, entry, f"{name!r} matches deny entry {entry!r}"
                )
        if self.allow:
            for entry in self.allow:
                if entry_matches(entry, name, groups):
                    decision = PolicyDecision(
                        True,
                        PolicyReason.ALLOWED_BY_ENTRY,
                        entry,
                        f"{name!r} matches allow entry {entry!r}",
                    )
                    break
            else:
                return PolicyDecision(
                    False,
                    PolicyReason.NOT_IN_ALLOW_LIST,
                    None,
                    f"{name!r} matches no entry of the allow list {list(self.allow)}",
                )
        else:
            decision = PolicyDecision(
                True,
                PolicyReason.ALLOWED_NO_ALLOW_LIST,
                None,
                "no allow list: allowed unless denied",
            )
        if check_tags and self.require_tags and tags and not set(tags) & set(self.require_tags):
            return PolicyDecision(
                False,
                PolicyReason.MISSING_REQUIRED_TAG,
                None,
                f"{name!r} has tags {sorted(tags)} but the policy requires one of "
                f"{list(self.require_tags)}",
            )
        return decision

    def is_allowed(self, name: str) -> bool:
        """Name-only verdict: deny wins, then the allow list (``require_tags`` ignored)."""
        return self.evaluate(name, check_tags=False).allowed

    def is_allowed_with_tags(self, name: str, tags: Sequence[str]) -> bool:
        """:meth:`is_allowed` and the ``require_tags`` rule (untagged tools pass)."""
        return self.evaluate(name, tags).allowed

    def to_dict(self) -> dict[str, list[str]]:
        """The JSON shape ``{"allow": [...], "deny": [...], "require_tags": [...]}``."""
        return {
            "allow": list(self.allow),
            "deny": list(self.deny),
            "require_tags": list(self.require_tags),
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolPolicy:
        """Build from ``{"allow"?, "deny"?, "require_tags"?}``.

        Raises:
            ValueError: on an unknown key or a value that is not a list of strings.
        """
        unknown = set(data) - {"allow", "deny", "require_tags"}
        if unknown:
            raise ValueError(f"unknown tool policy key(s): {sorted(unknown)}")
        values: dict[str, list[str]] = {}
        for key in ("allow", "deny", "require_tags"):
            raw = data.get(key, [])
            if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
                raise ValueError(f"tool policy {key!r} must be a list of strings")
            values[key] = raw
        return cls(values["allow"], values["deny"], values["require_tags"])

    @classmethod
    def from_json(cls, text: str) -> ToolPolicy:
        """Parse :meth:`to_json` output (see :meth:`from_dict`)."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a tool policy is a JSON object")
        return cls.from_dict(data)


def resolve_provider_policy(
    by_provider: Mapping[str, ToolPolicy], provider: str | None, model: str | None
) -> tuple[str, ToolPolicy] | None:
    """Pick the provider policy for a model (octos ``crates/octos-cli/src/config.rs``).

    The key equal to the exact ``model`` id wins, then the key equal to ``provider``;
    no prefix matching.

    Returns:
        ``(matched_key, policy)``, or ``None`` when nothing matches.
    """
    if model and model in by_provider:
        return model, by_provider[model]
    if provider and provider in by_provider:
        return provider, by_provider[provider]
    return None
