"""The policy verdict of a registry for one tool name: hard policies, then the provider
policy with its equivalent names and ``require_tags``.

Rules from octos ``crates/octos-agent/src/tools/policy.rs``: deny wins; a provider policy
also consults a tool's equivalent names (:data:`~octos_tools.policy.EQUIVALENT_NAMES`); an
alias is denied with its original (:data:`~octos_tools.policy.DENY_ALIASES`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..policy import (
    DENY_ALIASES,
    EQUIVALENT_NAMES,
    GroupTable,
    PolicyDecision,
    PolicyReason,
    ToolPolicy,
)

__all__ = ["ALLOWED", "hard_verdict", "registry_verdict"]

ALLOWED = PolicyDecision(True, PolicyReason.ALLOWED_NO_ALLOW_LIST, None, "no policy")
"""The verdict when no policy applies."""


def hard_verdict(
    policy: ToolPolicy, name: str, tags: Sequence[str], groups: GroupTable
) -> PolicyDecision:
    """``policy.evaluate(name, tags)``, also denying an alias whose original the policy's
    deny list names (:data:`~octos_tools.policy.DENY_ALIASES`)."""
    decision = policy.evaluate(name, tags, groups=groups)
    if not decision.allowed:
        return decision
    for original in DENY_ALIASES.get(name, ()):
        other = policy.evaluate(original, check_tags=False, groups=groups)
        if other.reason is PolicyReason.POLICY_DENY:
            return PolicyDecision(
                False,
                PolicyReason.POLICY_DENY,
                other.entry,
                f"{name} is an alias of {original}, which is denied ({other.detail})",
            )
    return decision


def registry_verdict(
    name: str,
    tags: Sequence[str],
    hard: Sequence[tuple[ToolPolicy, str]],
    provider: ToolPolicy | None,
    groups: GroupTable,
) -> PolicyDecision:
    """The verdict a registry reaches for ``name``.

    Args:
        name: the tool name.
        tags: the tool's tags (``()`` for an unregistered name).
        hard: the hard policies with the label refusals name them by, oldest first.
        provider: the provider (soft) policy, or ``None``.
        groups: the registry's group table.
    """
    for policy, source in hard:
        decision = hard_verdict(policy, name, tags, groups)
        if not decision.allowed:
            return replace(decision, source=source)
    if provider is None:
        return ALLOWED
    candidates = EQUIVALENT_NAMES.get(name, (name,))
    label = "provider policy"
    for candidate in candidates:
        decision = provider.evaluate(candidate, check_tags=False, groups=groups)
        if decision.reason is PolicyReason.POLICY_DENY:
            return replace(decision, source=label)
    allowed = [provider.evaluate(c, check_tags=False, groups=groups) for c in candidates]
    verdict = next((d for d in allowed if d.allowed), allowed[0])
    if not verdict.allowed:
        return replace(verdict, source=label)
    tag_decision = provider.evaluate(name, tags, groups=groups)
    if tag_decision.reason is PolicyReason.MISSING_REQUIRED_TAG:
        return replace(tag_decision, source=label)
    return replace(verdict, source=label)
