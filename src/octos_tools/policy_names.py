"""Checking the names a configuration's policies use against the tools that exist.

A policy entry that names no tool denies or allows nothing, silently: ``deny = ["shel"]``
leaves ``shell`` allowed. :func:`check_policy_names` finds such entries once the registry
is built. An unknown name in a ``deny`` list is an error (``deny = ["exec_comand"]`` would
serve ``exec_command``), and so is an entry that differs from a real name only in case
(``"Shell"``); an unknown ``allow`` entry is a warning. Names of a configured MCP server's
tools (``<server>__<tool>``) are known only once it is mounted and are not checked. Each
problem carries the nearest known names (``difflib``), for a "did you mean" hint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import Config

__all__ = [
    "SAME_JOB",
    "NameProblem",
    "check_policy_names",
    "same_job_warnings",
    "suggest_names",
]

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
    def is_deny(self) -> bool:
        """The entry is in a ``deny`` list (an error: it would leave the tool served)."""
        return self.where.endswith(".deny")

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
        if self.is_deny:
            return (
                f"{self.where}: {self.entry!r} {what}, so it denies nothing{hint} (a mounted "
                "server's tool is <server>__<tool>; `octos-tools tools` lists the names)"
            )
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
                if entry.startswith("group:") or any(
                    entry.startswith(f"{server}__") for server in config.mcp_servers
                ):
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


#: Tools that do one job: denying some of a family while another stays leaves the job
#: doable (``deny = ["exec_*"]`` leaves ``shell``). Deny the group instead.
SAME_JOB: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("run commands", "group:runtime", ("exec_command", "shell", "bash", "write_stdin")),
    ("write files", "group:fs", ("write_file", "edit_file", "apply_patch")),
    ("fetch web pages", "group:web", ("web_fetch", "browser")),
)


def same_job_warnings(
    is_allowed: Callable[[str], bool], known: Iterable[str], *, commands_confined: bool = False
) -> list[str]:
    """One line per family of :data:`SAME_JOB` that a policy denies in part: some members
    denied, others still allowed. Also: the web denied while commands stay allowed and run
    unconfined (a command can ``curl``; in any sandbox mode a denied web turns the commands'
    network off, :func:`octos_tools.sandbox.settings_from_config`, so no warning then).

    Args:
        is_allowed: the registry's verdict for a name (``registry.evaluate(n).allowed``).
        known: the names registered (families are checked among these only).
        commands_confined: the command tools run in a sandbox (any mode but
            ``danger-full-access``).
    """
    names = set(known)
    out: list[str] = []
    for job, group, members in SAME_JOB:
        present = [m for m in members if m in names]
        denied = [m for m in present if not is_allowed(m)]
        left = [m for m in present if is_allowed(m)]
        if denied and left:
            out.append(
                f"{', '.join(denied)} denied but {', '.join(left)} can still {job}; deny "
                f"{group!r} to stop the job"
            )
    web = [m for m in ("web_fetch", "web_search", "browser") if m in names]
    runtime = [m for m in ("exec_command", "shell", "bash") if m in names and is_allowed(m)]
    if web and runtime and not commands_confined and not any(is_allowed(m) for m in web):
        out.append(
            f"the web tools are denied but {', '.join(runtime)} can still reach the network "
            "(curl, wget) in danger-full-access; deny 'group:runtime' or run commands in a "
            "sandbox mode (the network is then off)"
        )
    return out
