"""The :class:`ToolRegistry`: where every tool call goes through (seed §6.2, reference §2).

Visible tools = registered − deferred − policy − context filter. :meth:`ToolRegistry.specs`
is cached and rebuilt only after a mutation; :meth:`ToolRegistry.execute` runs one call in
a fixed order (DESIGN.md §1):

1. policy (hard policies, the provider policy and ``require_tags``, then the call context's
   ``ToolPermissions.denied_tools`` / ``allowed_tools``, literal names) → ``policy_denied``
2. deferred auto-activation of the tool's first group (deferral saves tokens; it is not a
   permission)
3. argument size (1 MiB, checked on the raw string before parsing) → ``args_too_large``,
   ``invalid_json``
4. lookup → ``unknown_tool`` naming the closest registered names
5. JSON-Schema validation → ``invalid_arguments``
6. usage recorded for the LRU
7. spawn-only tools: a task-handle envelope is returned at once and the call runs in the
   :class:`~octos_tools.tasks.TaskSupervisor`
8. dispatch under the tool's timeout → ``timeout``; a raised
   :class:`~octos_tools.errors.ToolError` becomes its typed failure, any other exception
   ``internal_error`` (never a crash of the host)
9. output post-processing (head/tail cap, secret redaction)
"""

from __future__ import annotations

import difflib
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import anyio
from jsonschema import Draft202012Validator, SchemaError

from .arguments import MAX_ARGS_SIZE, compile_schema, parse_arguments, validate_arguments
from .context import ToolContext, use_context
from .errors import ErrorKind, ToolError
from .lifecycle import ToolLifecycle
from .output import DEFAULT_MAX_OUTPUT_BYTES, cap_output, redact_secrets, redact_value
from .policy import GROUPS, PolicyDecision, PolicyReason, ToolPolicy, first_group_of
from .tasks import TaskRecord, TaskSupervisor
from .tool import ConcurrencyClass, Tool, ToolResult, ToolSpec

if TYPE_CHECKING:
    from .workspace import Workspace

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "CatalogEntry",
    "ToolRegistry",
]

logger = logging.getLogger("octos_tools.registry")

DEFAULT_TOOL_TIMEOUT = 1800.0
"""Default per-call timeout in seconds (octos ``DEFAULT_REGISTRY_TOOL_TIMEOUT_SECS``)."""

_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

#: Names a provider policy also consults for a tool (reference §3.4): denying ``spawn``
#: also hides ``spawn_agent``; denying ``read_task_output`` also hides ``wait_agent``.
_EQUIVALENT_NAMES: dict[str, tuple[str, ...]] = {
    "spawn_agent": ("spawn_agent", "spawn"),
    "delegate": ("delegate", "spawn_agent", "spawn"),
    "wait_agent": ("wait_agent", "read_task_output"),
    "bash": ("bash", "exec_command"),
}
_DENY_ALIASES: dict[str, tuple[str, ...]] = {
    "bash": ("exec_command",),
    "delegate": ("spawn_agent",),
}
"""Tools that do exactly what another does (``bash`` is Codex's alias of ``exec_command``):
a hard policy whose deny entry names the original denies the alias too, so an alias is
never a way round a deny list (ours)."""

SPAWN_ONLY_READ_MODES = ("head", "tail", "grep", "line_range", "file")


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One tool of the live catalog read by ``tool_search`` / ``tool_suggest``.

    Attributes:
        name: the tool name.
        description: its description.
        tags: its tags.
        group: the first policy group containing it, or ``None``.
        state: ``"active"`` (in specs), ``"deferred"`` (one call away) or ``"hidden"``
            (hidden by the context filter but callable).
        concurrency: ``"safe"`` or ``"exclusive"``.
        spawn_only: the tool runs in the background and returns a task handle.
    """

    name: str
    description: str
    tags: tuple[str, ...]
    group: str | None
    state: str
    concurrency: str
    spawn_only: bool


class ToolRegistry:
    """The central tool registry of one session.

    Args:
        workspace: the workspace cwd-bound tools are bound to (kept for hosts and
            :meth:`rebind_cwd`), or ``None``.
        lifecycle: LRU state; a default :class:`~octos_tools.lifecycle.ToolLifecycle`
            (15 active, idle 5) when ``None``.
        max_args_size: the argument limit in bytes (default 1 MiB).
        default_timeout: per-call timeout in seconds for tools that set none.
        max_output_bytes: default output cap in bytes for tools that set none.
        redact: redact credentials from every output.
        supervisor: the background task supervisor (a new one when ``None``).
        session_key: the session this registry serves (owner of its background tasks).

    Raises:
        ValueError: for a non-positive limit or timeout.
    """

    def __init__(
        self,
        workspace: Workspace | None = None,
        *,
        lifecycle: ToolLifecycle | None = None,
        max_args_size: int = MAX_ARGS_SIZE,
        default_timeout: float = DEFAULT_TOOL_TIMEOUT,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        redact: bool = True,
        supervisor: TaskSupervisor | None = None,
        session_key: str | None = None,
    ) -> None:
        if max_args_size < 1:
            raise ValueError("max_args_size must be positive")
        if default_timeout <= 0:
            raise ValueError("default_timeout must be positive (seconds)")
        if max_output_bytes < 256:
            raise ValueError("max_output_bytes must be at least 256")
        self.workspace = workspace
        self.lifecycle = lifecycle if lifecycle is not None else ToolLifecycle()
        self.max_args_size = max_args_size
        self.default_timeout = default_timeout
        self.max_output_bytes = max_output_bytes
        self.redact = redact
        self.supervisor = supervisor if supervisor is not None else TaskSupervisor()
        self.session_key = session_key
        self.output_dir_hint: str | None = None
        self._tools: dict[str, Tool] = {}
        # name -> (the schema object compiled, its validator); recompiled if a tool swaps
        # its schema object.
        self._validators: dict[str, tuple[Any, Draft202012Validator]] = {}
        self._deferred: set[str] = set()
        self._spawn_only: dict[str, str | None] = {}
        self._hard_policies: list[ToolPolicy] = []
        self._hard_sources: list[str] = []
        # name -> (class, tags) of tools a hard policy removed, for hosts' listings
        self._removed: dict[str, tuple[ConcurrencyClass, tuple[str, ...]]] = {}
        self._provider_policy: ToolPolicy | None = None
        self._context_filter: tuple[str, ...] = ()
        self._specs_cache: list[ToolSpec] | None = None
        self._catalog_cache: tuple[int, list[CatalogEntry]] | None = None
        self._version = 0
        self._listeners: list[Callable[[ToolRegistry], None]] = []

    # ------------------------------------------------------------------ registration

    def register(self, tool: Tool, *, check_schema: bool = False) -> None:
        """Register ``tool``; a tool of the same name is replaced (keeping its position).

        The input schema is compiled (and checked against the JSON Schema meta-schema) on
        the tool's first call, not here: checking every builtin's schema costs ~0.1 s at each
        start of a one-shot CLI call. Pass ``check_schema=True`` (or call
        :meth:`check_schemas`) to check at once, e.g. for schemas from another server.

        Args:
            tool: the tool.
            check_schema: validate the input schema against the meta-schema now.

        Raises:
            ValueError: if the name is not ``^[a-zA-Z0-9_-]{1,64}$`` or the input schema is
                not an object schema.
            jsonschema.SchemaError: with ``check_schema=True``, if the input schema is not
                valid JSON Schema.
        """
        if not isinstance(tool, Tool):
            raise TypeError(f"register() takes a Tool, got {type(tool).__name__}")
        if not _NAME_RE.match(tool.name or ""):
            raise ValueError(
                f"invalid tool name {tool.name!r}: use 1-64 letters, digits, '_' or '-' "
                "(the rule shared by OpenAI, Anthropic and MCP clients)"
            )
        schema = tool.input_schema
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            raise ValueError(f"tool {tool.name!r}: input_schema must be a JSON Schema object")
        if check_schema:
            self._validators[tool.name] = (schema, compile_schema(schema))
        else:
            self._validators.pop(tool.name, None)
        self._tools[tool.name] = tool
        self._mutated()

    def check_schemas(self) -> None:
        """Compile every registered tool's input schema now.

        Raises:
            jsonschema.SchemaError: naming the first tool whose schema is not valid JSON
                Schema (Draft 2020-12).
        """
        for tool in self._tools.values():
            self._validator_of(tool)

    def _validator_of(self, tool: Tool) -> Draft202012Validator:
        cached = self._validators.get(tool.name)
        if cached is None or cached[0] is not tool.input_schema:
            try:
                validator = compile_schema(tool.input_schema)
            except SchemaError as exc:
                raise SchemaError(
                    f"tool {tool.name!r} has an invalid input schema: {exc.message}"
                ) from exc
            cached = self._validators[tool.name] = (tool.input_schema, validator)
        return cached[1]

    def unregister(self, name: str) -> bool:
        """Remove a tool; ``False`` if it was not registered."""
        if name not in self._tools:
            return False
        del self._tools[name]
        self._prune_markers()
        self._mutated()
        return True

    def get(self, name: str) -> Tool | None:
        """The registered tool called ``name``, or ``None``."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Registered names in registration order."""
        return list(self._tools)

    def tools(self) -> list[Tool]:
        """Registered tools in registration order."""
        return list(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def concurrency_class(self, name: str) -> ConcurrencyClass:
        """The tool's class; unknown names report Safe (reference §0.4)."""
        tool = self._tools.get(name)
        return tool.concurrency_class if tool is not None else ConcurrencyClass.SAFE

    # ------------------------------------------------------------------ change tracking

    @property
    def version(self) -> int:
        """A number that changes on every mutation (catalog and spec cache key)."""
        return self._version

    def add_listener(self, callback: Callable[[ToolRegistry], None]) -> None:
        """Call ``callback(registry)`` after every mutation (hosts use it for MCP
        ``notifications/tools/list_changed``)."""
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[ToolRegistry], None]) -> None:
        """Undo :meth:`add_listener` (no error if absent)."""
        if callback in self._listeners:
            self._listeners.remove(callback)

    def _mutated(self) -> None:
        self._version += 1
        self._specs_cache = None
        self._catalog_cache = None
        for callback in list(self._listeners):
            try:
                callback(self)
            except Exception:
                logger.exception("registry listener failed")

    def _prune_markers(self) -> None:
        self._deferred &= set(self._tools)
        for name in [n for n in self._spawn_only if n not in self._tools]:
            del self._spawn_only[name]

    # ------------------------------------------------------------------ policy and filters

    def apply_policy(self, policy: ToolPolicy, *, source: str = "tool_policy") -> list[str]:
        """Hard filter: remove every tool the policy refuses by name (reference §2.2).

        The policy is also remembered: calling a removed tool later gives
        ``policy_denied`` (not ``unknown_tool``), and its ``require_tags`` rule is
        enforced at execute. Spawn-only and deferred markers of removed tools are pruned.

        Args:
            policy: the policy.
            source: how refusals name this policy (``"tool_policy"``, ``"read-only mode"``).

        Returns:
            The names removed.
        """
        if policy.is_empty():
            return []
        self._hard_policies.append(policy)
        self._hard_sources.append(source)
        removed = [n for n in self._tools if not _hard_verdict(policy, n, ()).allowed]
        for name in removed:
            tool = self._tools[name]
            self._removed[name] = (tool.concurrency_class, tuple(tool.tags))
            del self._tools[name]
        self._prune_markers()
        self._mutated()
        return removed

    def enforce_hard_policies(self) -> list[str]:
        """Apply the hard policies again to tools registered after them (mounted MCP tools,
        plugins): remove every tool one of them refuses. Returns the names removed."""
        removed: list[str] = []
        for policy in self._hard_policies:
            for name in [n for n in self._tools if not _hard_verdict(policy, n, ()).allowed]:
                tool = self._tools.pop(name)
                self._removed[name] = (tool.concurrency_class, tuple(tool.tags))
                removed.append(name)
        if removed:
            self._prune_markers()
            self._mutated()
        return removed

    def retain(self, predicate: Callable[[str], bool]) -> list[str]:
        """Keep only tools whose name passes ``predicate``; returns the names removed."""
        removed = [n for n in self._tools if not predicate(n)]
        if removed:
            for name in removed:
                del self._tools[name]
            self._prune_markers()
            self._mutated()
        return removed

    def set_provider_policy(self, policy: ToolPolicy | None) -> None:
        """Soft filter: hide refused tools from specs and refuse them at execute.

        ``None`` or an empty policy clears it (octos ignores an empty one; clearing is
        the less surprising rule).
        """
        self._provider_policy = None if policy is None or policy.is_empty() else policy
        self._mutated()

    @property
    def provider_policy(self) -> ToolPolicy | None:
        """The current provider (soft) policy, or ``None``."""
        return self._provider_policy

    def removed_by_policy(self) -> dict[str, tuple[ConcurrencyClass, tuple[str, ...]]]:
        """Tools :meth:`apply_policy` removed: ``name -> (concurrency class, tags)``, in
        removal order (hosts list them as denied)."""
        return dict(self._removed)

    @property
    def hard_policies(self) -> tuple[ToolPolicy, ...]:
        """The policies applied with :meth:`apply_policy`, oldest first."""
        return tuple(self._hard_policies)

    def set_context_filter(self, tags: Iterable[str] | None) -> None:
        """Show only tools with no tags or at least one of ``tags`` (a view, not a
        permission: hidden tools stay callable). Empty or ``None`` clears the filter."""
        self._context_filter = tuple(tags or ())
        self._mutated()

    @property
    def context_filter(self) -> tuple[str, ...]:
        """The current context filter tags (empty: none)."""
        return self._context_filter

    def evaluate(self, name: str) -> PolicyDecision:
        """The policy verdict for ``name`` as :meth:`execute` would reach it.

        Checks every hard policy (name and tags), then the provider policy with its
        equivalent names (reference §3.4) and ``require_tags``.
        """
        tool = self._tools.get(name)
        tags: Sequence[str] = tool.tags if tool is not None else ()
        for policy, source in zip(self._hard_policies, self._hard_sources, strict=True):
            decision = _hard_verdict(policy, name, tags)
            if not decision.allowed:
                return replace(decision, source=source)
        provider = self._provider_policy
        if provider is None:
            return PolicyDecision(True, PolicyReason.ALLOWED_NO_ALLOW_LIST, None, "no policy")
        policy = provider
        candidates = _EQUIVALENT_NAMES.get(name, (name,))
        label = "provider policy"
        for candidate in candidates:
            decision = policy.evaluate(candidate, check_tags=False)
            if decision.reason is PolicyReason.POLICY_DENY:
                return replace(decision, source=label)
        allowed = [policy.evaluate(c, check_tags=False) for c in candidates]
        verdict = next((d for d in allowed if d.allowed), allowed[0])
        if not verdict.allowed:
            return replace(verdict, source=label)
        tag_decision = policy.evaluate(name, tags)
        if tag_decision.reason is PolicyReason.MISSING_REQUIRED_TAG:
            return replace(tag_decision, source=label)
        return replace(verdict, source=label)

    def _passes_filter(self, tool: Tool) -> bool:
        if not self._context_filter or not tool.tags:
            return True
        return bool(set(tool.tags) & set(self._context_filter))

    def is_visible(self, name: str) -> bool:
        """Registered, not deferred, allowed by policy and shown by the context filter."""
        return name not in self._deferred and self.is_visible_post_activation(name)

    def is_visible_post_activation(self, name: str) -> bool:
        """Would be visible if it were not deferred."""
        tool = self._tools.get(name)
        return tool is not None and self._passes_filter(tool) and self.evaluate(name).allowed

    def visible_names(self) -> list[str]:
        """Names in :meth:`specs`, in registration order."""
        return [s.name for s in self.specs()]

    # ------------------------------------------------------------------ specs and catalog

    def specs(self) -> list[ToolSpec]:
        """The specs of visible tools, in registration order (cached until a mutation).

        The same list object is returned while nothing changes, so hosts can detect change
        with ``is``; treat it as read-only.
        """
        if self._specs_cache is None:
            self._specs_cache = [
                tool.spec_for(self) for name, tool in self._tools.items() if self.is_visible(name)
            ]
        return self._specs_cache

    def catalog(self) -> list[CatalogEntry]:
        """The live catalog: every tool a policy allows, deferred ones included, never a
        denied one. Rebuilt after each mutation (reference §2.2)."""
        if self._catalog_cache is not None and self._catalog_cache[0] == self._version:
            return self._catalog_cache[1]
        entries: list[CatalogEntry] = []
        for name, tool in self._tools.items():
            if not self.evaluate(name).allowed:
                continue
            if name in self._deferred:
                state = "deferred"
            elif not self._passes_filter(tool):
                state = "hidden"
            else:
                state = "active"
            entries.append(
                CatalogEntry(
                    name=name,
                    description=tool.description,
                    tags=tuple(tool.tags),
                    group=first_group_of(name),
                    state=state,
                    concurrency=tool.concurrency_class.value,
                    spawn_only=name in self._spawn_only,
                )
            )
        self._catalog_cache = (self._version, entries)
        return entries

    # ------------------------------------------------------------------ deferral and LRU

    def defer(self, names: Iterable[str]) -> list[str]:
        """Hide registered ``names`` from specs until used or activated (unknown names are
        skipped; spawn-only tools are never deferred). Returns the names deferred."""
        added = [
            n
            for n in dict.fromkeys(names)
            if n in self._tools and n not in self._deferred and n not in self._spawn_only
        ]
        if added:
            self._deferred.update(added)
            self._mutated()
        return added

    def defer_group(self, group: str) -> list[str]:
        """Defer the registered members of ``group`` (unknown group: nothing happens)."""
        return self.defer(GROUPS.get(group, ()))

    def activate(self, group_or_name: str) -> list[str]:
        """Un-defer a whole group, or a single name. Returns the names activated.

        Activated names count as used now, so the LRU does not evict them again at the very
        next request (each gets ``idle_threshold`` requests of grace, group siblings too).
        """
        members = GROUPS.get(group_or_name, (group_or_name,))
        activated = [n for n in members if n in self._deferred]
        if activated:
            for name in activated:
                self.lifecycle.record_use(name)
            self._deferred.difference_update(activated)
            self._mutated()
        return activated

    def deferred_names(self) -> list[str]:
        """Deferred tool names, sorted."""
        return sorted(self._deferred)

    def is_deferred(self, name: str) -> bool:
        """Whether ``name`` is deferred."""
        return name in self._deferred

    def set_base_tools(self, names: Iterable[str]) -> None:
        """Replace the LRU's base tools (never evicted)."""
        self.lifecycle.base_tools = set(names)

    def add_base_tools(self, names: Iterable[str]) -> None:
        """Add names to the LRU's base tools."""
        self.lifecycle.base_tools.update(names)

    def tick(self) -> int:
        """Advance the LRU iteration (call before every model request)."""
        return self.lifecycle.tick()

    def active_names(self) -> list[str]:
        """Registered − deferred − spawn-only, in registration order (the LRU's view)."""
        return [n for n in self._tools if n not in self._deferred and n not in self._spawn_only]

    def auto_evict(self) -> list[str]:
        """Move the idlest tools over ``max_active`` to the deferred set (seed §6.2.4).

        Base and spawn-only tools are never evicted. Returns the names evicted.
        """
        evicted = self.lifecycle.find_evictable(self.active_names())
        if evicted:
            self._deferred.update(evicted)
            self._mutated()
            logger.debug("evicted idle tools: %s", evicted)
        return evicted

    # ------------------------------------------------------------------ spawn-only

    def mark_spawn_only(self, name: str, message: str | None = None) -> None:
        """Run ``name`` in the background: a call returns a task-handle envelope at once.

        Spawn-only tools stay visible and are never evicted or deferred.

        Raises:
            KeyError: if ``name`` is not registered.
        """
        if name not in self._tools:
            raise KeyError(f"cannot mark unregistered tool {name!r} as spawn-only")
        self._spawn_only[name] = message
        if name in self._deferred:
            self._deferred.discard(name)
            self._mutated()

    def is_spawn_only(self, name: str) -> bool:
        """Whether ``name`` is spawn-only."""
        return name in self._spawn_only

    def clear_spawn_only(self) -> None:
        """Make every spawn-only tool an ordinary one (used in sub-agent registries)."""
        if self._spawn_only:
            self._spawn_only.clear()
            self._mutated()

    def spawn_only_names(self) -> list[str]:
        """Spawn-only tool names in registration order."""
        return [n for n in self._tools if n in self._spawn_only]

    # ------------------------------------------------------------------ derived registries

    def _clone(self, tools: dict[str, Tool]) -> ToolRegistry:
        new = ToolRegistry(
            self.workspace,
            lifecycle=self.lifecycle.copy_settings(),
            max_args_size=self.max_args_size,
            default_timeout=self.default_timeout,
            max_output_bytes=self.max_output_bytes,
            redact=self.redact,
        )
        new._tools = tools
        new._validators = {n: v for n, v in self._validators.items() if n in tools}
        new._deferred = set(self._deferred)
        new._spawn_only = {n: m for n, m in self._spawn_only.items() if n in tools}
        new._hard_policies = list(self._hard_policies)
        new._hard_sources = list(self._hard_sources)
        new._removed = dict(self._removed)
        new._provider_policy = self._provider_policy
        new._context_filter = self._context_filter
        new.output_dir_hint = self.output_dir_hint
        return new

    def snapshot_excluding(self, names: Iterable[str]) -> ToolRegistry:
        """A new registry sharing this one's tool objects, minus ``names`` (reference §2.8).

        Copied: policies, context filter, the whole deferred set, LRU settings and base
        tools (counters reset), spawn-only markers. Fresh: spec cache, catalog, task
        supervisor, session key, listeners.
        """
        excluded = set(names)
        return self._clone({n: t for n, t in self._tools.items() if n not in excluded})

    def rebind_cwd(self, workspace: Workspace) -> ToolRegistry:
        """A new registry for another workspace: cwd-bound tools are rebuilt with
        ``tool.with_workspace(workspace)``, every other tool object is shared, order kept.

        Deferred names survive (reference §8.2).
        """
        tools = {
            n: (t.with_workspace(workspace) if t.cwd_bound else t) for n, t in self._tools.items()
        }
        new = self._clone(tools)
        new.workspace = workspace
        return new

    # ------------------------------------------------------------------ execution

    async def execute(
        self,
        name: str,
        args: str | bytes | Mapping[str, Any] | None = None,
        ctx: ToolContext | None = None,
    ) -> ToolResult:
        """Run one tool call through the full pipeline (module docstring); never raises
        for a bad call: every failure is a :class:`~octos_tools.tool.ToolResult` with
        ``success=False`` and an error kind.

        Args:
            name: the tool name the model asked for.
            args: the raw argument string exactly as the model sent it, or parsed
                arguments, or ``None`` for none.
            ctx: the call's :class:`~octos_tools.context.ToolContext` (a fresh one with this
                registry's workspace when ``None``).
        """
        ctx = self._context_for(ctx)
        try:
            result = await self._execute(name, args, ctx)
        except ToolError as exc:
            result = ToolResult.from_error(exc)
        except Exception as exc:  # a bug before dispatch (e.g. in validation): never raise
            logger.exception("call of %r failed before it ran", name)
            result = ToolResult.failure(
                ErrorKind.INTERNAL_ERROR,
                f"the call of {name!r} failed before it ran: {type(exc).__name__}: {exc}",
            )
        return self._post_process(name, result)

    def _context_for(self, ctx: ToolContext | None) -> ToolContext:
        if ctx is None:
            return ToolContext(
                workspace=self.workspace, session_key=self.session_key, registry=self
            )
        if ctx.registry is not self or (ctx.workspace is None and self.workspace is not None):
            return replace(
                ctx,
                registry=self,
                workspace=ctx.workspace if ctx.workspace is not None else self.workspace,
                session_key=ctx.session_key if ctx.session_key is not None else self.session_key,
            )
        return ctx

    def check_policy(self, name: str) -> None:
        """Raise ``policy_denied`` if a policy refuses ``name``.

        Raises:
            ToolError: kind ``policy_denied``.
        """
        decision = self.evaluate(name)
        if not decision.allowed:
            raise ToolError(
                ErrorKind.POLICY_DENIED,
                f"tool {name!r} is not allowed by the {decision.source or 'tool policy'}: "
                f"{decision.detail}. Do not retry it; use another tool.",
                reason=decision.reason.value,
                entry=decision.entry,
                policy=decision.source,
            )

    def prepare_arguments(
        self, name: str, args: str | bytes | Mapping[str, Any] | None
    ) -> tuple[Tool, dict[str, Any]]:
        """Steps 3–5 of the pipeline: size, parse, lookup and validate.

        Raises:
            ToolError: ``args_too_large``, ``invalid_json``, ``unknown_tool`` or
                ``invalid_arguments``.
        """
        parsed = parse_arguments(args, tool_name=name, limit=self.max_args_size)
        tool = self._tools.get(name)
        if tool is None:
            raise self._unknown_tool(name)
        if tool.validate_arguments:
            try:
                validator = self._validator_of(tool)
            except SchemaError as exc:
                raise ToolError(ErrorKind.INTERNAL_ERROR, str(exc.message)) from None
            parsed = validate_arguments(
                parsed, tool.input_schema, tool_name=name, validator=validator
            )
        return tool, parsed

    async def _execute(
        self, name: str, args: str | bytes | Mapping[str, Any] | None, ctx: ToolContext
    ) -> ToolResult:
        self.check_policy(name)
        if not ctx.permissions.is_tool_allowed(name):
            raise ToolError(
                ErrorKind.POLICY_DENIED,
                f"tool {name!r} is not permitted in this context (its permissions deny it). "
                "Do not retry it; use another tool.",
                reason="context_permissions",
            )
        if name in self._deferred:
            group = first_group_of(name)
            activated = self.activate(group) if group is not None else []
            if name not in activated:
                self._deferred.discard(name)
                self._mutated()
        tool, parsed = self.prepare_arguments(name, args)
        self.lifecycle.record_use(name)
        if name in self._spawn_only:
            return self._spawn(tool, parsed, ctx)
        return await self.dispatch(tool, parsed, ctx)

    def _unknown_tool(self, name: str) -> ToolError:
        pool = [n for n in self._tools if self.evaluate(n).allowed]
        close = difflib.get_close_matches(name, pool, n=3, cutoff=0.5)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        if not close and pool:
            hint = f" Available tools: {', '.join(pool[:20])}{'…' if len(pool) > 20 else ''}."
        return ToolError(
            ErrorKind.UNKNOWN_TOOL,
            f"unknown tool {name!r}.{hint}",
            suggestions=close,
        )

    async def dispatch(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run ``tool`` with already-validated ``args`` under its timeout (step 8).

        A :class:`~octos_tools.errors.ToolError` becomes its typed failure, a timeout
        ``timeout``, any other exception ``internal_error``; cancellation propagates.
        """
        timeout = None if tool.blocks_on_human_input else (tool.timeout or self.default_timeout)
        try:
            with use_context(ctx):
                if timeout is None:
                    result = await tool.execute_with_context(ctx, args)
                else:
                    with anyio.fail_after(timeout):
                        result = await tool.execute_with_context(ctx, args)
        except ToolError as exc:
            return ToolResult.from_error(exc)
        except TimeoutError:
            return ToolResult.failure(
                ErrorKind.TIMEOUT,
                f"tool {tool.name!r} did not finish within {timeout:g} s and was stopped",
            )
        except Exception as exc:
            logger.exception("tool %r raised", tool.name)
            return ToolResult.failure(
                ErrorKind.INTERNAL_ERROR,
                f"tool {tool.name!r} failed with an internal error: {type(exc).__name__}: {exc}",
            )
        if not isinstance(result, ToolResult):
            return ToolResult.failure(
                ErrorKind.INTERNAL_ERROR,
                f"tool {tool.name!r} returned {type(result).__name__}, not a ToolResult",
            )
        return result

    def _spawn(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        async def run(record: TaskRecord) -> ToolResult:
            self.supervisor.append_output(
                record.id, f"[starting] tool={tool.name} task_id={record.id}\n"
            )
            result = self._post_process(tool.name, await self.dispatch(tool, args, ctx))
            record.output_files.extend(_declared_outputs(result))
            self.supervisor.append_output(record.id, result.output or "[no output]")
            if not result.output.endswith("\n"):
                self.supervisor.append_output(record.id, "\n")
            return result

        record = self.supervisor.spawn(
            run,
            tool_name=tool.name,
            tool_call_id=ctx.tool_call_id,
            session_key=ctx.session_key,
            args=args,
        )
        message = self._spawn_only.get(tool.name)
        summary = message or (
            f"Background work started for `{tool.name}`. Use read_task_output(task_handle, "
            "mode={kind: head|tail|grep|line_range|file}) to read its output without "
            "flooding the context."
        )
        envelope = {
            "ok": True,
            "task_handle": record.id,
            "summary": summary[:400],
            "expected_files": [],
            "output_dir": self.output_dir_hint or "skill-output/",
            "read_with": "read_task_output",
            "read_modes": list(SPAWN_ONLY_READ_MODES),
        }
        text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
        return ToolResult.ok(text, structured_metadata={"task": envelope})

    def _post_process(self, name: str, result: ToolResult) -> ToolResult:
        tool = self._tools.get(name)
        limit = (tool.max_output_bytes if tool is not None else None) or self.max_output_bytes
        output = cap_output(result.output, limit)
        if self.redact:
            output = redact_secrets(output)
            if result.structured_metadata:
                # The metadata reaches the model too (MCP structuredContent, CLI JSON).
                meta = redact_value(result.structured_metadata)
                if meta is not result.structured_metadata:
                    result = replace(result, structured_metadata=meta)
        if output is not result.output:
            result = replace(result, output=output)
        return result

    # ------------------------------------------------------------------ teardown

    async def aclose(self) -> None:
        """Close every tool (processes, sessions, connections) and the task supervisor."""
        seen: set[int] = set()
        for tool in list(self._tools.values()):
            if id(tool) in seen:
                continue
            seen.add(id(tool))
            try:
                await tool.aclose()
            except Exception:
                logger.exception("closing tool %r failed", tool.name)
        await self.supervisor.aclose()

    async def __aenter__(self) -> ToolRegistry:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _hard_verdict(policy: ToolPolicy, name: str, tags: Sequence[str]) -> PolicyDecision:
    """``policy.evaluate(name, tags)``, also denying an alias whose original the policy's
    deny list names (:data:`_DENY_ALIASES`)."""
    decision = policy.evaluate(name, tags)
    if not decision.allowed:
        return decision
    for original in _DENY_ALIASES.get(name, ()):
        other = policy.evaluate(original, check_tags=False)
        if other.reason is PolicyReason.POLICY_DENY:
            return PolicyDecision(
                False,
                PolicyReason.POLICY_DENY,
                other.entry,
                f"{name} is an alias of {original}, which is denied ({other.detail})",
            )
    return decision


def _declared_outputs(result: ToolResult) -> list[str]:
    files: list[str] = list(result.files_to_send)
    if result.file_modified:
        files.append(result.file_modified)
    meta = result.structured_metadata or {}
    extra = meta.get("output_files")
    if isinstance(extra, list):
        files.extend(str(x) for x in extra)
    return list(dict.fromkeys(files))
