"""Checking the names a configuration's policies use against the tools that exist.

A policy entry that names no tool denies or allows nothing, silently: ``deny = ["shel"]``
leaves ``shell`` allowed. :func:`check_policy_names` finds such entries once the registry
is built. An entry that differs from a real name only in case (``"Shell"``) is an error
(tool names are case-sensitive, and it can only be a mistake); any other unknown name is a
warning, since a plugin or a mounted MCP server may add that tool later. Each problem
carries the nearest known names (``difflib``), for a "did you mean" hint.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import Config

__all__ = ["NameProblem", "check_policy_names", "suggest_names"]

#: Names octos uses for tools we register under another name; policies may name them.
_LEGACY_NAMES = frozenset({"spawn", "read_task_output", "delegate"})


@dataclass(frozen=True, slots=True)
class NameProblem:
    """One policy entry that matches no known tool.

    Attributes:
        where: the key path, e.g. ``"tool_policy.deny"``.
        entry: the entry as written.
        suggestions: the nearest known names (at most three).
        case_only: the entry matches a known name when case is ignored (an error).
    """

    where: str
    entry: str
    suggestions: tuple[str, ...]
    case_only: bool

    @property
    def message(self) -> str:
        """One line for a person: what is wrong and, when known, what was meant."""
        if self.case_only:
            return (
                f"{self.where}: {self.entry!r} names no tool; tool names are case-sensitive: "
                f"did you mean {self.suggestions[0]!r}?"
            )
        hint = ""
        if self.suggestions:
            hint = "; did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        what = "matches no tool" if self.entry.endswith("*") else "names no known tool"
        return f"{self.where}: {self.entry!r} {what} (a plugin or MCP server may add it){hint}"


def suggest_names(name: str, known: Iterable[str], *, limit: int = 3) -> tuple[str, ...]:
    """The known names nearest ``name``: an exact case-insensitive match first, then
    ``difflib`` close matches (cutoff 0.6)."""
    import difflib  # only when a name is unknown: not on the path of every call

    pool = sorted(set(known))
    lowered = [k for k in pool if k.lower() == name.lower() and k != name]
    close = difflib.get_close_matches(name, pool, n=limit, cutoff=0.6)
    out = list(dict.fromkeys([*lowered, *close]))
    return tuple(o for o in out if o != name)[:limit]


def check_policy_names(config: Config, known: Iterable[str]) -> list[NameProblem]:
    """Every ``allow`` / ``deny`` entry of ``config``'s policies that matches no name of
    ``known`` (exact names; ``prefix*`` entries must match at least one; ``group:`` entries
    are checked by the configuration itself).

    Args:
        config: the configuration.
        known: every tool name the registry knows (registered, removed by a policy, or
            missing only for want of an extra).
    """
    names = set(known) | _LEGACY_NAMES
    policies = [("tool_policy", config.tool_policy)] + [
        (f"tool_policy_by_provider.{key}", p) for key, p in config.tool_policy_by_provider.items()
    ]
    problems: list[NameProblem] = []
    for where, policy in policies:
        for field in ("allow", "deny"):
            for entry in getattr(policy, field):
                if entry.startswith("group:"):
                    continue
                if entry.endswith("*"):
                    prefix = entry[:-1]
                    if any(n.startswith(prefix) for n in names):
                        continue
                    hits = tuple(sorted(n for n in names if n.lower().startswith(prefix.lower())))
                    problems.append(NameProblem(f"{where}.{field}", entry, hits[:3], bool(hits)))
                    continue
                if entry in names:
                    continue
                suggestions = suggest_names(entry, names)
                case_only = bool(suggestions) and suggestions[0].lower() == entry.lower()
                problems.append(NameProblem(f"{where}.{field}", entry, suggestions, case_only))
    return problems
