"""The coding tool contract ``coding.tool_contract.v1`` (octos ``api/coding_tool_contract.rs``).

A coding agent trained on Codex expects ten tools (the P0 set). :func:`build_contract` looks at
a live :class:`~octos_tools.registry.ToolRegistry` and reports, for each, whether the model can
use it and under which name:

* ``disabled_by_policy``: a policy (or the context filter) refuses the tool;
* ``available``: registered, allowed, not deferred;
* ``deferred``: registered and allowed but deferred (it loads on first use);
* ``aliased``: missing, but an allowed alias serves it (``spawn_agent`` via ``spawn``,
  ``wait_agent`` via ``read_task_output``);
* ``unimplemented``: missing; an alias exists but does not have the Codex semantics;
* ``missing``: nothing serves it.

The contract is ``ready`` when every P0 tool is available, aliased or deferred, else
``incomplete`` with ``missing_required_tools``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .registry import ToolRegistry
    from .sandbox import SandboxSettings

__all__ = [
    "CONTRACT_ID",
    "CONTRACT_VERSION",
    "FEATURE",
    "P0_TOOLS",
    "RequiredTool",
    "build_contract",
]

FEATURE = "coding.tool_contract.v1"
CONTRACT_ID = "codex-compatible-coding-v1"
CONTRACT_VERSION = 1
MODEL_TOOLSET = "coding"
POLICY_ID = "coding-v1"

#: Error kinds a host may report against the contract (octos's names).
CONTRACT_ERROR_KINDS = (
    "tool_contract_unavailable",
    "coding_tool_denied",
    "coding_tool_missing",
    "exec_session_unknown",
    "coding_tool_unsupported",
)
STATUSES = ("available", "aliased", "disabled_by_policy", "deferred", "missing", "unimplemented")


@dataclass(frozen=True, slots=True)
class RequiredTool:
    """One P0 tool of the contract.

    Attributes:
        name: the Codex tool name.
        category: edit, runtime, plan, user_input or subagent.
        capability: the capability id it belongs to.
        aliases: other tool names that can stand in for it.
        alias_is_compatible: an alias gives ``aliased`` (else ``unimplemented``).
        approval: ``allowed`` or ``approval_gated``.
    """

    name: str
    category: str
    capability: str
    aliases: tuple[str, ...] = ()
    alias_is_compatible: bool = False
    approval: str = "allowed"


P0_TOOLS: tuple[RequiredTool, ...] = (
    RequiredTool("apply_patch", "edit", "coding.patch_tool.v1", ("diff_edit", "edit_file")),
    RequiredTool(
        "exec_command", "runtime", "coding.exec_session.v1", ("shell",), approval="approval_gated"
    ),
    RequiredTool("write_stdin", "runtime", "coding.exec_session.v1", approval="approval_gated"),
    RequiredTool("update_plan", "plan", "coding.plan_tool.v1"),
    RequiredTool("request_user_input", "user_input", "coding.user_input_tool.v1"),
    RequiredTool(
        "spawn_agent",
        "subagent",
        "coding.subagent_aliases.v1",
        ("spawn",),
        alias_is_compatible=True,
    ),
    RequiredTool("send_input", "subagent", "coding.subagent_aliases.v1"),
    RequiredTool("resume_agent", "subagent", "coding.subagent_aliases.v1"),
    RequiredTool(
        "wait_agent",
        "subagent",
        "coding.subagent_aliases.v1",
        ("read_task_output",),
        alias_is_compatible=True,
    ),
    RequiredTool("close_agent", "subagent", "coding.subagent_aliases.v1"),
)

#: Optional capabilities: advertised when all their tools are usable.
OPTIONAL_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "coding.image_view.v1": ("view_image",),
    "coding.dynamic_tool_search.v1": ("tool_search",),
    "coding.bash.v1": ("bash",),
    "coding.delegate.v1": ("delegate",),
    "coding.browser.v1": ("browser",),
}

_CATEGORY_OF: dict[str, str] = {
    **{t.name: t.category for t in P0_TOOLS},
    "diff_edit": "edit",
    "edit_file": "edit",
    "write_file": "edit",
    "read_file": "read",
    "view_image": "read",
    "list_dir": "search",
    "glob": "search",
    "grep": "search",
    "shell": "runtime",
    "bash": "runtime",
    "spawn": "subagent",
    "delegate": "subagent",
    "read_task_output": "subagent",
    "tool_search": "discovery",
    "tool_suggest": "discovery",
    "activate_tools": "discovery",
    "web_search": "web",
    "web_fetch": "web",
    "browser": "web",
    "git": "repository",
    "code_structure": "repository",
    "image_generation": "media",
}


def _state(registry: ToolRegistry, name: str) -> str:
    """``disabled_by_policy`` / ``available`` / ``deferred`` / ``absent`` for one name."""
    if not registry.evaluate(name).allowed:
        return "disabled_by_policy"
    if registry.get(name) is None:
        return "absent"
    if not registry.is_visible_post_activation(name):
        return "disabled_by_policy"
    return "deferred" if registry.is_deferred(name) else "available"


def _required_entry(registry: ToolRegistry, req: RequiredTool) -> dict[str, Any]:
    state = _state(registry, req.name)
    backend: str | None = req.name
    if state == "absent":
        backend = None
        status = "missing"
        for alias in req.aliases:
            alias_state = _state(registry, alias)
            if alias_state == "available":
                status = "aliased" if req.alias_is_compatible else "unimplemented"
                backend = alias
                break
            if alias_state == "deferred":
                status = "deferred"
                backend = alias
                break
    else:
        status = state
        if status == "disabled_by_policy":
            backend = None
    return {
        "name": req.name,
        "category": req.category,
        "capability": req.capability,
        "status": status,
        "backend_tool": backend,
        "aliases": list(req.aliases),
        "approval": req.approval,
    }


def build_contract(
    registry: ToolRegistry,
    *,
    sandbox_mode: str | None = None,
    approval_policy: str = "on-request",
    sandbox: SandboxSettings | None = None,
) -> dict[str, Any]:
    """The ``coding.tool_contract.v1`` document for a live registry.

    Args:
        registry: the registry whose tools, policies and deferrals are inspected.
        sandbox_mode: the ``policy.sandbox_mode`` to report (default: that of ``sandbox``).
        sandbox: the commands' sandbox settings (default: those of the registry's
            ``exec_command``, else the defaults); the
            policy also reports the engine that enforces them here (``null`` when none
            can: commands answer ``sandbox_unavailable``), whether the network is on and
            the hosts commands reach through the egress proxy (``sandbox_allowed_hosts``).
        approval_policy: the ``policy.approval_policy`` to report.

    Returns:
        A JSON-serialisable dict: ``feature``, ``contract_id``, ``version``, ``status``
        (``ready`` / ``incomplete``), ``required_tool_names``, ``required_tools`` (one entry
        per P0 tool with its ``status`` and ``backend_tool``), ``missing_required_tools``,
        ``capabilities``, ``deferred_model_tools``, ``tools`` (every registered tool with a
        category and state) and ``policy``.

    Source: octos ``crates/octos-cli/src/api/coding_tool_contract.rs``
    (https://github.com/octos-org/octos).
    """
    from .errors import ToolError
    from .sandbox import SandboxSettings, resolve_engine

    if sandbox is None:
        found = getattr(registry.get("exec_command"), "sandbox", None)
        sandbox = found if isinstance(found, SandboxSettings) else SandboxSettings()
    box = sandbox
    try:
        engine: str | None = resolve_engine(box)
    except ToolError:
        engine = None
    required = [_required_entry(registry, req) for req in P0_TOOLS]
    not_ready = [
        e["name"] for e in required if e["status"] not in ("available", "aliased", "deferred")
    ]
    capabilities: list[dict[str, Any]] = []
    for cap in dict.fromkeys(req.capability for req in P0_TOOLS):
        members = [e for e in required if e["capability"] == cap]
        usable = all(e["status"] in ("available", "aliased", "deferred") for e in members)
        capabilities.append(
            {
                "id": cap,
                "required": True,
                "tools": [e["name"] for e in members],
                "status": "available" if usable else "unavailable",
            }
        )
    for cap, names in OPTIONAL_CAPABILITIES.items():
        states = [_state(registry, n) for n in names]
        if all(s in ("available", "deferred") for s in states):
            capabilities.append(
                {"id": cap, "required": False, "tools": list(names), "status": "available"}
            )
    tools = []
    for name in sorted(registry.names()):
        state = _state(registry, name)
        tools.append(
            {
                "name": name,
                "category": _CATEGORY_OF.get(name, "custom"),
                "status": state,
            }
        )
    return {
        "feature": FEATURE,
        "contract_id": CONTRACT_ID,
        "version": CONTRACT_VERSION,
        "model_toolset": MODEL_TOOLSET,
        "status": "ready" if not not_ready else "incomplete",
        "required_tool_names": [req.name for req in P0_TOOLS],
        "required_tools": required,
        "missing_required_tools": not_ready,
        "capabilities": capabilities,
        "dynamic_discovery": "enabled"
        if _state(registry, "tool_search")
        in (
            "available",
            "deferred",
        )
        else "disabled",
        "deferred_model_tools": sorted(registry.deferred_names()),
        "tools": tools,
        "tool_statuses": list(STATUSES),
        "error_kinds": list(CONTRACT_ERROR_KINDS),
        "policy": {
            "tool_policy_id": POLICY_ID,
            "sandbox_mode": sandbox_mode or str(box.mode),
            "sandbox_engine": engine,
            "sandbox_network": box.network or not box.confined,
            "sandbox_allowed_hosts": list(box.allowed_hosts) if box.egress else [],
            "approval_policy": approval_policy,
        },
    }
