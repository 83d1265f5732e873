"""``activate_tools {tools?, group?}``: load deferred tools by name or group.

Kept callable for hosts and models that know it (octos's ``activate_tools``); the default
profile does not list it, since ``tool_search`` finds tools and ``select:`` loads them. Its
description is fixed: it never lists the deferred names, so the first request does not grow
with the number of deferred or mounted tools.

* No arguments: lists the deferred tools the policy allows, by group.
* ``tools``: each name loads its whole first group (as octos does; a name in no group
  loads alone); a ``group:`` entry loads that group.
* ``group``: the older form, one group (or one name).

The result names what was loaded and what was already active; a policy-denied or unknown
name is never loaded nor listed (``no_match`` when nothing matched). Activation acts on the
caller's session when there is one, else on the registry.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, StringConstraints

from ...context import ToolContext
from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, ToolResult
from ...typed import ToolArgs, TypedTool
from ._catalog_view import View

__all__ = ["ActivateToolsTool"]

_Name = Annotated[str, StringConstraints(min_length=1, max_length=128)]


class _ActivateArgs(ToolArgs):
    tools: list[_Name] | None = Field(
        None, max_length=64, description="Tool names (or group:NAME) to load."
    )
    group: _Name | None = Field(None, description="A group to load, e.g. group:web (older form).")


class ActivateToolsTool(TypedTool):
    """``activate_tools {tools?: [names], group?: "group:NAME"}`` (module docstring).

    Activated tools count as used now, so the LRU gives them the full idle threshold
    before eviction. Safe, no tags.

    Errors: ``no_match`` when nothing matched; ``not_configured`` without a registry.
    """

    name = "activate_tools"
    title = "Load deferred tools"
    description = (
        "Load tools that are available but not yet in your tool list. Call with no "
        "arguments to list them; pass `tools` (names) to load them; a tool that belongs to "
        "a group loads its whole group. Calling a deferred tool directly also loads it."
    )
    Args: ClassVar[type[ToolArgs]] = _ActivateArgs
    tags = ()
    concurrency_class = ConcurrencyClass.SAFE
    search_hints = ("load", "enable", "deferred")

    async def run(self, args: Any, ctx: ToolContext | None) -> ToolResult:
        """Load or list deferred tools (see the class docstring).

        Raises:
            ToolError: ``no_match`` or ``not_configured``.
        """
        view = View(ctx)
        registry = view.registry
        requested: list[str] = list(args.tools or [])
        if args.group:
            requested.append(args.group)
        if not requested:
            return _list_deferred(view)
        loaded: set[str] = set()
        already: set[str] = set()
        unmatched: list[str] = []
        for item in dict.fromkeys(requested):
            members = _activation_members(view, item)
            if members is None:
                unmatched.append(item)
                continue
            loaded.update(view.activate(members))
            named = view.groups.get(item, (item,))
            already.update(n for n in named if n in registry and not view.is_deferred(n))
        listed = view.listed()
        loaded_list = sorted(
            n for n in loaded if view.is_loadable(n) and registry.unavailable_reason(n) is None
        )
        already_list = sorted(n for n in already - loaded if n in listed)
        if not loaded_list and not already_list:
            raise ToolError(
                ErrorKind.NO_MATCH,
                f"no loadable tool matched {', '.join(unmatched) or 'the request'}. Call "
                "activate_tools with no arguments to see what can be loaded, or tool_search "
                "to find a tool by what it does.",
            )
        parts: list[str] = []
        if loaded_list and not view.list_persists:
            parts.append(
                f"Call {', '.join(loaded_list)} by name: a call works, though your tool list "
                "does not change (this server answers each request on its own)."
            )
        elif loaded_list:
            parts.append(f"Loaded {len(loaded_list)} tool(s): {', '.join(loaded_list)}.")
        if already_list:
            parts.append(f"Already active: {', '.join(already_list)}.")
        if unmatched:
            parts.append(f"Not found: {', '.join(unmatched)}.")
        return ToolResult.ok(
            " ".join(parts),
            structured_metadata={
                "loaded": loaded_list,
                "already_active": already_list,
                "not_found": unmatched,
            },
        )


def _activation_members(view: View, item: str) -> list[str] | None:
    """The registered tool names one requested entry loads, or ``None`` (no match).

    A group loads its allowed members; a name loads its first group (or itself). A
    policy-denied or unregistered name matches nothing: it is neither loaded nor named.
    """
    groups = view.groups
    if item in groups:
        members = [n for n in groups[item] if view.allowed(n)]
        return members or None
    if not view.allowed(item):
        return None
    group = view.group_of(item)
    if group is None:
        return [item]
    return [n for n in groups[group] if view.allowed(n)]


def _list_deferred(view: View) -> ToolResult:
    names = view.loadable_deferred()
    if not names:
        return ToolResult.ok("All tools are already active.", structured_metadata={"deferred": []})
    by_group: dict[str, list[str]] = {}
    for name in names:
        by_group.setdefault(view.group_of(name) or "", []).append(name)
    lines = ["Available tools to load:"]
    for group, members in by_group.items():
        descriptions = view.registry.group_descriptions
        label = f"{group} ({descriptions.get(group, group)})" if group else "other"
        lines.append(f"- {label}: {', '.join(members)}")
    lines.append('Call activate_tools with {"tools": ["name", ...]} to load them.')
    return ToolResult.ok("\n".join(lines), structured_metadata={"deferred": names})
