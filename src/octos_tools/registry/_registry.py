"""The :class:`ToolRegistry`: the store of tools, validators, policies and their verdicts,
groups, the configured deferral, spawn-only markers and listeners, shared by every session.

Visible tools = registered − deferred − policy − context filter. What one host session
changes by itself (activation, LRU eviction, hidden tools) lives in its
:class:`~octos_tools.session.ToolSession` and that session's
:class:`~octos_tools.view.ToolView`. The registry holds no per-session state: its
conveniences :meth:`execute`, :meth:`specs`, :meth:`activate`, ... act on a *default
session* (:attr:`default_session`, made on first use), for library users and
single-session hosts. Calls run through the one pipeline of :mod:`octos_tools.pipeline`,
which sits above the registry and uses its public methods only.
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .._listeners import Listeners
from ..arguments import (
    MAX_ARGS_SIZE,
    RawArguments,
    parse_arguments,
    typed_call_arguments,
    validate_arguments,
)
from ..context import ToolContext
from ..errors import ErrorKind, ToolError
from ..hooks import HookSet, HooksOwner
from ..lifecycle import ToolLifecycle
from ..output import DEFAULT_MAX_OUTPUT_BYTES
from ..policy import GROUP_DESCRIPTIONS, GROUPS, PolicyDecision, ToolPolicy
from ..tasks import TaskSupervisor
from ..tool_types import ConcurrencyClass, Tool, ToolResult, ToolSpec
from ..typed import ToolArgs, typed_model
from ._catalog import CatalogEntry
from ._verdicts import ALLOWED, hard_verdict, registry_verdict

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

    from ..audit import AuditLog
    from ..session import ToolSession
    from ..tracing import Tracing
    from ..view import ToolView
    from ..workspace import Workspace

__all__ = ["DEFAULT_TOOL_TIMEOUT", "ToolRegistry"]

logger = logging.getLogger("octos_tools.registry")

DEFAULT_TOOL_TIMEOUT = 1800.0
"""Default per-call timeout in seconds (octos ``DEFAULT_REGISTRY_TOOL_TIMEOUT_SECS``)."""

_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_FRESH_IN_CLONE = frozenset({"supervisor", "session_key"})
"""Public attributes a derived registry does not copy (octos: a snapshot gets an empty
task ledger and no session key)."""


class ToolRegistry(HooksOwner):
    """The tools, policies and groups a host serves, shared by all its sessions.

    Args:
        workspace: the workspace cwd-bound tools are bound to (kept for hosts and
            :meth:`rebind_cwd`), or ``None``.
        lifecycle: the LRU settings (and the default session's counters); a default
            :class:`~octos_tools.lifecycle.ToolLifecycle` (15 active, idle 5) when ``None``.
            Each :class:`~octos_tools.session.ToolSession` gets a copy of its settings.
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
        self.max_args_size = max_args_size
        self.default_timeout = default_timeout
        self.max_output_bytes = max_output_bytes
        self.redact = redact
        self.supervisor = supervisor if supervisor is not None else TaskSupervisor()
        self.session_key = session_key
        self.output_dir_hint: str | None = None
        self.injection_filter: str = "block"
        """What :func:`~octos_tools.pipeline.post_process` does to prompt-injection phrases
        in untrusted results: ``"block"``, ``"flag"`` or ``"off"`` (``[output]
        injection_filter``)."""
        self._tools: dict[str, Tool] = {}
        # name -> (the schema object compiled, its validator); recompiled if a tool swaps
        # its schema object.
        self._validators: dict[str, tuple[Any, Draft202012Validator]] = {}
        self._deferred: set[str] = set()  # the configured default; views overlay it
        self._spawn_only: dict[str, str | None] = {}
        self._hard_policies: list[ToolPolicy] = []
        self._hard_sources: list[str] = []
        # name -> (class, tags) of tools a hard policy removed, for hosts' listings
        self._removed: dict[str, tuple[ConcurrencyClass, tuple[str, ...]]] = {}
        self._provider_policy: ToolPolicy | None = None
        self._context_filter: tuple[str, ...] = ()
        self._groups: dict[str, tuple[str, ...]] = dict(GROUPS)
        self._group_descriptions: dict[str, str] = dict(GROUP_DESCRIPTIONS)
        self._group_of: dict[str, str | None] = {}
        self._verdicts: dict[str, PolicyDecision] = {}
        # name -> Tool.unavailable_reason() (None: it can work), dropped at every mutation
        self._unavailable: dict[str, str | None] = {}
        # name -> (tool, its typed Args model or None): what the pipeline validates into
        self._models: dict[str, tuple[Tool, type[ToolArgs] | None]] = {}
        self._version = 0
        self._tracing: Tracing | None = None
        self._audit: AuditLog | None = None
        self._listeners: Listeners[ToolRegistry] = Listeners(logger, "registry listener")
        self._lifecycle = lifecycle if lifecycle is not None else ToolLifecycle()
        self._session_views: weakref.WeakSet[ToolView] = weakref.WeakSet()
        self._default_session: ToolSession | None = None
        self._hooks = HookSet(self._stages_changed)

    # ------------------------------------------------------------------ registration

    def register(self, tool: Tool, *, check_schema: bool = False) -> None:
        """Register ``tool``; a tool of the same name is replaced (keeping its position).

        A JSON-schema tool's input schema is compiled (and checked against the JSON Schema
        meta-schema) on its first call, not here: checking every schema costs ~0.1 s at
        each start of a one-shot CLI call. Pass ``check_schema=True`` (or call
        :meth:`check_schemas`) to check at once, e.g. for schemas from another server.

        Args:
            tool: the tool.
            check_schema: validate the input schema against the meta-schema now.

        Raises:
            TypeError: if ``tool`` is not a :class:`~octos_tools.tool_types.Tool`.
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
        if tool.validate_arguments:  # typed tools' schemas are generated objects, lazily
            schema = tool.input_schema
            if not isinstance(schema, Mapping) or schema.get("type") != "object":
                raise ValueError(f"tool {tool.name!r}: input_schema must be a JSON Schema object")
        self._validators.pop(tool.name, None)
        self._tools[tool.name] = tool
        if check_schema:
            self.validator_of(tool)
        self._mutated()

    def check_schemas(self) -> None:
        """Compile every registered tool's input schema now.

        Raises:
            jsonschema.SchemaError: naming the first tool whose schema is not valid JSON
                Schema (Draft 2020-12).
        """
        for tool in self._tools.values():
            self.validator_of(tool)

    def validator_of(self, tool: Tool) -> Draft202012Validator:
        """The compiled Draft 2020-12 validator of ``tool``'s input schema (cached; imports
        ``jsonschema`` on first use).

        Raises:
            jsonschema.SchemaError: naming the tool, if its schema is not valid JSON Schema.
        """
        cached = self._validators.get(tool.name)
        if cached is None or cached[0] is not tool.input_schema:
            from jsonschema import SchemaError

            from ..arguments import compile_schema

            try:
                validator = compile_schema(tool.input_schema)
            except SchemaError as exc:
                raise SchemaError(
                    f"tool {tool.name!r} has an invalid input schema: {exc.message}"
                ) from exc
            cached = self._validators[tool.name] = (tool.input_schema, validator)
        return cached[1]

    def args_model(self, tool: Tool) -> type[ToolArgs] | None:
        """The ``Args`` model the pipeline validates ``tool``'s arguments into
        (:func:`~octos_tools.typed.typed_model`), or ``None`` for a JSON-schema tool;
        kept per name until the name is registered again."""
        cached = self._models.get(tool.name)
        if cached is not None and cached[0] is tool:
            return cached[1]
        model = typed_model(tool)
        self._models[tool.name] = (tool, model)
        return model

    def validated_arguments(self, name: str, raw: RawArguments) -> tuple[Tool, Any]:
        """Steps 3-5 of a call: size, lookup, parse and validate (the rules of
        :mod:`octos_tools.arguments`, one module for typed and JSON-schema tools).

        Returns:
            The tool and its arguments: an ``Args`` instance for a typed tool, else a
            ``dict``.

        Raises:
            ToolError: ``args_too_large``, ``invalid_json``, ``unknown_tool`` (naming the
                closest allowed names) or ``invalid_arguments``; ``internal_error`` for a
                tool whose schema is not valid JSON Schema.
        """
        limit = self.max_args_size
        tool = self._tools.get(name)
        if tool is None:
            parse_arguments(raw, tool_name=name, limit=limit)  # a bad argument string first
            raise self.unknown_tool_error(name)
        model = self.args_model(tool)
        if model is not None:
            return tool, typed_call_arguments(model, name, raw, limit)
        parsed = parse_arguments(raw, tool_name=name, limit=limit)
        if tool.validate_arguments:
            try:
                validator = self.validator_of(tool)
            except Exception as exc:  # noqa: BLE001 - jsonschema.SchemaError: the tool's fault
                raise ToolError(
                    ErrorKind.INTERNAL_ERROR, str(getattr(exc, "message", exc))
                ) from None
            parsed = validate_arguments(
                parsed, tool.input_schema, tool_name=name, validator=validator
            )
        return tool, parsed

    def unknown_tool_error(self, name: str) -> ToolError:
        """The ``unknown_tool`` error for ``name``, naming the closest allowed names (or,
        when none is close, the first 20 allowed ones)."""
        import difflib

        pool = [n for n in self._tools if self.evaluate(n).allowed]
        close = difflib.get_close_matches(name, pool, n=3, cutoff=0.5)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        if not close and pool:
            hint = f" Available tools: {', '.join(pool[:20])}{'…' if len(pool) > 20 else ''}."
        return ToolError(ErrorKind.UNKNOWN_TOOL, f"unknown tool {name!r}.{hint}", suggestions=close)

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
        """The tool's class; unknown names report Safe (they fail at lookup)."""
        tool = self._tools.get(name)
        return tool.concurrency_class if tool is not None else ConcurrencyClass.SAFE

    # ------------------------------------------------------------------ groups

    @property
    def groups(self) -> Mapping[str, tuple[str, ...]]:
        """This registry's group table (read-only): the octos table
        (:data:`~octos_tools.policy.GROUPS`) plus groups added with :meth:`add_group`.
        Order matters: a deferred tool's *first* group is what a call of it activates."""
        return MappingProxyType(self._groups)

    @property
    def group_descriptions(self) -> Mapping[str, str]:
        """One line per group of :attr:`groups` (read-only)."""
        return MappingProxyType(self._group_descriptions)

    def add_group(self, name: str, members: Iterable[str], description: str = "") -> None:
        """Add or replace a group of this registry only (e.g. ``group:mcp:<server>`` when an
        MCP server is mounted); other registries of the process do not see it.

        Args:
            name: the full group name, starting with ``group:``.
            members: the tool names in the group (order kept, duplicates dropped).
            description: a one-line description (default: the name).

        Raises:
            ValueError: if ``name`` does not start with ``group:`` or names a group of the
                octos table (:data:`~octos_tools.policy.GROUPS`).
        """
        if not name.startswith("group:"):
            raise ValueError(f"group names start with 'group:', got {name!r}")
        if name in GROUPS:
            raise ValueError(f"{name!r} is a built-in group of the octos table and cannot change")
        self._groups[name] = tuple(dict.fromkeys(members))
        self._group_descriptions[name] = description or name
        self._mutated()

    def group_members(self, group: str) -> tuple[str, ...]:
        """Members of ``group`` in this registry's table (``()`` for an unknown group)."""
        return self._groups.get(group, ())

    def group_of(self, name: str) -> str | None:
        """The first group of this registry's table containing ``name``, or ``None``."""
        try:
            return self._group_of[name]
        except KeyError:
            pass
        found = next((g for g, members in self._groups.items() if name in members), None)
        self._group_of[name] = found
        return found

    # ------------------------------------------------------------------ change tracking

    @property
    def revision(self) -> int:
        """A number that changes on every mutation of the store (registration, policy,
        group, deferral, spawn-only marker): what views key their caches by."""
        return self._version

    @property
    def version(self) -> int:
        """A number that changes on every mutation of the registry and every change of its
        default session (catalog and spec cache key)."""
        default = self._default_session
        return self._version + (default.view.version if default is not None else 0)

    def add_listener(self, callback: Callable[[ToolRegistry], None]) -> None:
        """Call ``callback(registry)`` after every mutation of the registry or change of its
        default session. Another session's own activations do not call it: use
        :meth:`~octos_tools.session.ToolSession.add_listener` for those."""
        self._listeners.add(callback)

    def remove_listener(self, callback: Callable[[ToolRegistry], None]) -> None:
        """Undo :meth:`add_listener` (no error if absent)."""
        self._listeners.remove(callback)

    def _fire(self) -> None:
        self._listeners.fire(self)

    def _mutated(self) -> None:
        self._version += 1
        self._verdicts.clear()
        self._unavailable.clear()
        self._group_of.clear()
        if self._default_session is None:
            self._fire()  # else the default session's view tells the listeners, once
        for view in list(self._session_views):
            view.registry_changed()

    def attach_view(self, view: ToolView) -> None:
        """Tell ``view`` (a :class:`~octos_tools.session.ToolSession`'s) of every mutation
        (:meth:`ToolView.registry_changed <octos_tools.view.ToolView.registry_changed>`)
        and stage change while it is alive (held weakly); its stages are set now."""
        self._session_views.add(view)
        view.refresh_stages()

    def detach_view(self, view: ToolView) -> None:
        """Stop telling ``view`` of mutations (a closed session)."""
        self._session_views.discard(view)

    @property
    def default_session(self) -> ToolSession:
        """The session the registry's conveniences (:meth:`execute`, :meth:`specs`,
        :meth:`activate`, ...) act on, made on first use: it shares the registry's
        :attr:`lifecycle` and tells the registry's listeners of its changes. Hosts with
        sessions of their own never need it."""
        session = self._default_session
        if session is None:
            from ..session import ToolSession  # the one upward edge: the conveniences

            session = ToolSession(self, lifecycle=self._lifecycle)
            session.add_listener(self._default_session_changed)
            self._default_session = session
        return session

    def _default_session_changed(self, session: ToolSession) -> None:
        self._fire()

    @property
    def default_view(self) -> ToolView:
        """The view of :attr:`default_session`."""
        return self.default_session.view

    def _prune_markers(self) -> None:
        self._deferred &= set(self._tools)
        for name in [n for n in self._spawn_only if n not in self._tools]:
            del self._spawn_only[name]

    # ------------------------------------------------------------------ stages

    @property
    def hooks(self) -> HookSet:
        """The hooks of every session's calls, in registration order (a
        :class:`~octos_tools.hooks.HookSet`: the one place hooks are added and removed)."""
        return self._hooks

    def set_tracing(self, tracing: Tracing | None) -> None:
        """Make an ``execute_tool`` span per call (:class:`~octos_tools.tracing.Tracing`),
        or stop (``None``)."""
        self._tracing = tracing
        self._stages_changed()

    @property
    def tracing(self) -> Tracing | None:
        """The tracing stage, or ``None``."""
        return self._tracing

    def set_audit(self, audit: AuditLog | None) -> None:
        """Append a line per call to ``audit`` (:class:`~octos_tools.audit.AuditLog`), or
        stop (``None``; the old log is not closed here)."""
        self._audit = audit
        self._stages_changed()

    @property
    def audit(self) -> AuditLog | None:
        """The audit log, or ``None``."""
        return self._audit

    def _stages_changed(self) -> None:
        for view in list(self._session_views):
            view.refresh_stages()

    # ------------------------------------------------------------------ policy and filters

    def apply_policy(self, policy: ToolPolicy, *, source: str = "tool_policy") -> list[str]:
        """Hard filter: remove every tool the policy refuses by name.

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
        groups = self._groups
        removed = [n for n in self._tools if not hard_verdict(policy, n, (), groups).allowed]
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
        groups = self._groups
        for policy in self._hard_policies:
            for name in [n for n in self._tools if not hard_verdict(policy, n, (), groups).allowed]:
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
        """The policy verdict for ``name`` as :meth:`execute` would reach it (cached until
        the next mutation).

        Checks every hard policy (name and tags), then the provider policy with its
        equivalent names (:data:`~octos_tools.policy.EQUIVALENT_NAMES`) and
        ``require_tags``.
        """
        try:
            return self._verdicts[name]
        except KeyError:
            pass
        if not self._hard_policies and self._provider_policy is None:
            decision = ALLOWED
        else:
            tool = self._tools.get(name)
            decision = registry_verdict(
                name,
                tool.tags if tool is not None else (),
                list(zip(self._hard_policies, self._hard_sources, strict=True)),
                self._provider_policy,
                self._groups,
            )
        if len(self._verdicts) < 4096:
            self._verdicts[name] = decision
        return decision

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

    def unavailable_reason(self, name: str) -> str | None:
        """Why the registered tool ``name`` cannot work here
        (:meth:`~octos_tools.tool_types.Tool.unavailable_reason`: no search provider, no
        Chromium, no image backend, no spawn delegate), or ``None`` when it can or is not
        registered. Cached until the next mutation. Such a tool is not listed, and the
        discovery tools do not offer it; a call by name still reaches it."""
        try:
            return self._unavailable[name]
        except KeyError:
            pass
        tool = self._tools.get(name)
        reason = tool.unavailable_reason() if tool is not None else None
        self._unavailable[name] = reason
        return reason

    def unavailable(self) -> dict[str, str]:
        """``name -> reason`` of every registered tool that cannot work here, in
        registration order (:meth:`unavailable_reason`)."""
        out: dict[str, str] = {}
        for name in self._tools:
            reason = self.unavailable_reason(name)
            if reason is not None:
                out[name] = reason
        return out

    def refresh_availability(self) -> None:
        """Ask every tool again whether it can work (after binding a spawn delegate, say):
        a mutation, so specs, catalogs and listeners follow."""
        self._mutated()

    def passes_filter(self, tool: Tool) -> bool:
        """Whether the context filter shows ``tool`` (untagged tools always pass)."""
        context = self._context_filter
        if not context or not tool.tags:
            return True
        return bool(set(tool.tags) & set(context))

    # ------------------------------------------------------------------ conveniences
    # Thin, documented conveniences over :attr:`default_session` (kept: library users and
    # single-session hosts call them). Hosts with sessions call the session instead.

    @property
    def lifecycle(self) -> ToolLifecycle:
        """The LRU settings every session copies, and the default session's counters."""
        return self._lifecycle

    @lifecycle.setter
    def lifecycle(self, value: ToolLifecycle) -> None:
        self._lifecycle = value
        if self._default_session is not None:
            self._default_session.view.lifecycle = value

    def is_visible(self, name: str) -> bool:
        """In the default session: registered, not deferred, allowed by policy, shown by
        the context filter and able to work here (:meth:`unavailable_reason`)."""
        return self.default_session.is_visible(name)

    def is_visible_post_activation(self, name: str) -> bool:
        """Would be visible in the default session if it were not deferred."""
        return self.default_session.is_visible_post_activation(name)

    def visible_names(self) -> list[str]:
        """Names in :meth:`specs`, in registration order."""
        return self.default_session.visible_names()

    def specs(self) -> list[ToolSpec]:
        """The default session's specs of visible tools, in registration order (cached:
        the same list object while nothing changes; treat it as read-only)."""
        return self.default_session.specs()

    def catalog(self) -> list[CatalogEntry]:
        """The default session's live catalog: every tool a policy allows, deferred ones
        included, never a denied one."""
        return self.default_session.catalog()

    def defer(self, names: Iterable[str]) -> list[str]:
        """Configure ``names`` as deferred: hidden from specs until used or activated.

        Changes the configured default (what each new session starts from) and the default
        session; another live session that activated one of them keeps it. Unknown names
        are skipped; spawn-only tools are never deferred.

        Returns:
            The names deferred.
        """
        default = self._default_session
        view = default.view if default is not None else None
        added = [
            n
            for n in dict.fromkeys(names)
            if n in self._tools
            and n not in self._spawn_only
            and (n not in self._deferred or (view is not None and not view.is_deferred(n)))
        ]
        if added:
            self._deferred.update(added)
            if view is not None:
                view.forget_activation(added)
            self._mutated()
        return added

    def defer_group(self, group: str) -> list[str]:
        """Defer the registered members of ``group`` (unknown group: nothing happens)."""
        return self.defer(self._groups.get(group, ()))

    def activate(self, group_or_name: str) -> list[str]:
        """Un-defer a whole group, or a single name, in the default session. Returns the
        names activated (see :meth:`ToolView.activate <octos_tools.view.ToolView.activate>`)."""
        return self.default_session.view.activate(group_or_name)

    def deferred_names(self) -> list[str]:
        """Deferred tool names of the default session, sorted."""
        return self.default_session.deferred_names()

    def is_deferred(self, name: str) -> bool:
        """Whether ``name`` is deferred in the default session."""
        return self.default_session.is_deferred(name)

    def is_configured_deferred(self, name: str) -> bool:
        """Whether ``name`` is in the configured deferred set every session starts from."""
        return name in self._deferred

    def configured_deferred(self) -> frozenset[str]:
        """The configured deferred set every new session starts from."""
        return frozenset(self._deferred)

    def set_base_tools(self, names: Iterable[str]) -> None:
        """Replace the LRU's base tools (never evicted; sessions created later copy them)."""
        self._lifecycle.base_tools = set(names)

    def add_base_tools(self, names: Iterable[str]) -> None:
        """Add names to the LRU's base tools."""
        self._lifecycle.base_tools.update(names)

    def tick(self) -> int:
        """Advance the default session's LRU iteration (call before every model request)."""
        return self.default_session.tick()

    def active_names(self) -> list[str]:
        """Registered − deferred − spawn-only in the default session, in registration
        order."""
        return self.default_session.view.active_names()

    def auto_evict(self) -> list[str]:
        """Defer the idlest tools over ``max_active`` in the default session (octos
        ``ToolLifecycle``). Base and spawn-only tools are never evicted. Returns the names
        evicted."""
        return self.default_session.auto_evict()

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
        self._deferred.discard(name)
        for view in list(self._session_views):
            view.forget_eviction((name,))
        self._mutated()

    def is_spawn_only(self, name: str) -> bool:
        """Whether ``name`` is spawn-only."""
        return name in self._spawn_only

    def spawn_only_message(self, name: str) -> str | None:
        """The summary a spawn-only tool's envelope carries, or ``None`` for the default."""
        return self._spawn_only.get(name)

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
        default = self._default_session
        new._deferred = (
            {n for n in tools if default.is_deferred(n)}
            if default is not None
            else self._deferred & set(tools)
        )
        new._spawn_only = {n: m for n, m in self._spawn_only.items() if n in tools}
        new._hard_policies = list(self._hard_policies)
        new._hard_sources = list(self._hard_sources)
        new._removed = dict(self._removed)
        new._provider_policy = self._provider_policy
        new._context_filter = self._context_filter
        new._groups = dict(self._groups)
        new._group_descriptions = dict(self._group_descriptions)
        for key, value in vars(self).items():  # every public setting, a host's or a branch's
            if not key.startswith("_") and key not in _FRESH_IN_CLONE:
                setattr(new, key, value)
        new.hooks.replace_all(self._hooks.as_tuple())  # a sub-agent's calls are hooked too
        new._tracing = self._tracing
        new._audit = self._audit
        new._stages_changed()
        return new

    def snapshot_excluding(self, names: Iterable[str]) -> ToolRegistry:
        """A new registry sharing this one's tool objects, minus ``names`` (octos
        ``ToolRegistry::snapshot_excluding``, used for sub-agents).

        Copied: policies, groups, context filter, the default view's deferred set, LRU
        settings and base tools (counters reset), spawn-only markers, and every public
        attribute (workspace, limits, ``output_dir_hint``, settings a host added). Fresh:
        spec cache, catalog, task supervisor, session key, listeners.
        """
        excluded = set(names)
        return self._clone({n: t for n, t in self._tools.items() if n not in excluded})

    def rebind_cwd(self, workspace: Workspace) -> ToolRegistry:
        """A new registry for another workspace: cwd-bound tools are rebuilt with
        ``tool.with_workspace(workspace)``, every other tool object is shared, order kept.

        Deferred names survive. A plugin tool rebuilt this way runs off the main event loop
        as the original does (:func:`~octos_tools._off_loop.wrap_off_loop`).
        """
        from .._off_loop import is_off_loop, wrap_off_loop

        tools: dict[str, Tool] = {}
        for n, t in self._tools.items():
            if t.cwd_bound:
                rebuilt = t.with_workspace(workspace)
                if is_off_loop(t):
                    wrap_off_loop(rebuilt)
                t = rebuilt
            tools[n] = t
        new = self._clone(tools)
        new.workspace = workspace
        return new

    # ------------------------------------------------------------------ execution

    def execute(
        self,
        name: str,
        args: str | bytes | Mapping[str, Any] | None = None,
        ctx: ToolContext | None = None,
    ) -> Coroutine[Any, Any, ToolResult]:
        """Run one tool call in the :attr:`default_session` (a documented convenience:
        :meth:`ToolSession.call <octos_tools.session.ToolSession.call>` through the
        pipeline of :mod:`octos_tools.pipeline`); never raises for a bad call: every
        failure is a :class:`~octos_tools.tool_types.ToolResult` with ``success=False`` and an
        error kind.

        Hosts with sessions (an MCP server, an agent loop) call their own
        :class:`~octos_tools.session.ToolSession` instead, so that activations and LRU
        state stay per session.

        Args:
            name: the tool name the model asked for.
            args: the raw argument string exactly as the model sent it, or parsed
                arguments, or ``None`` for none.
            ctx: the call's :class:`~octos_tools.context.ToolContext` (the default
                session's, with this registry's workspace, when ``None``).

        Returns:
            A coroutine (``await registry.execute(...)``) whose value is the result.
        """
        session = self._default_session
        if session is None:
            session = self.default_session
        if ctx is None:
            base = session.ctx
            if base.workspace is not self.workspace or base.session_key != self.session_key:
                session.ctx = self.context_for(None, session)  # the registry was re-pointed
            return session.call(name, args)
        return session.call(name, args, tool_call_id=ctx.tool_call_id, ctx=ctx)

    def context_for(self, ctx: ToolContext | None, session: Any = None) -> ToolContext:
        """``ctx`` completed for a call in this registry: ``registry`` set, and the
        registry's workspace and session key where ``ctx`` has none; ``session`` (a
        :class:`~octos_tools.session.ToolSession` or ``None``) set as ``ctx.session``."""
        if ctx is None:
            return ToolContext(
                workspace=self.workspace,
                session_key=self.session_key,
                registry=self,
                session=session,
            )
        if (
            ctx.registry is not self
            or ctx.session is not session
            or (ctx.workspace is None and self.workspace is not None)
            or (ctx.session_key is None and self.session_key is not None)
        ):
            from dataclasses import replace

            return replace(
                ctx,
                registry=self,
                session=session,
                workspace=ctx.workspace if ctx.workspace is not None else self.workspace,
                session_key=ctx.session_key if ctx.session_key is not None else self.session_key,
            )
        return ctx

    def prepare_arguments(
        self, name: str, args: str | bytes | Mapping[str, Any] | None
    ) -> tuple[Tool, dict[str, Any]]:
        """Size, parse, lookup and validate (:meth:`validated_arguments`) without running
        anything; typed tools' arguments come back as a plain dict of the validated model.

        Raises:
            ToolError: ``args_too_large``, ``invalid_json``, ``unknown_tool`` or
                ``invalid_arguments``.
        """
        tool, parsed = self.validated_arguments(name, args)
        if not isinstance(parsed, dict):
            parsed = parsed.model_dump()
        return tool, parsed

    async def dispatch(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run ``tool`` with already-validated ``args`` under its timeout (no policy, no
        lock, no post-processing: :func:`octos_tools.dispatch.dispatch`).

        A :class:`~octos_tools.errors.ToolError` becomes its typed failure, a timeout
        ``timeout``, any other exception ``internal_error``; cancellation propagates.
        """
        from ..dispatch import dispatch

        return await dispatch(tool, args, self.context_for(ctx), self.default_timeout)

    # ------------------------------------------------------------------ teardown

    async def aclose(self) -> None:
        """Close the default session (if made), every tool (processes, sessions,
        connections) and the task supervisor."""
        default, self._default_session = self._default_session, None
        if default is not None:
            await default.aclose()
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
