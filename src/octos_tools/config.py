"""The configuration file model (JSON or TOML), validated with pydantic.

Every section has a default that is safe for a newcomer; an unknown key or a bad value is a
one-line :class:`~octos_tools.errors.ConfigError` naming the file and the key path. Values
are taken as written: ``read_only = "yes"`` is an error, not ``true`` (strict mode). How a
file is read (regular files of at most 1 MiB only) is in :mod:`octos_tools._config_io`.

Example (JSON)::

    {
      "workspace": ".",
      "tool_policy": {"deny": ["group:web"]},
      "tool_policy_by_provider": {"gemini": {"allow": ["group:fs", "group:search"]}},
      "context_filter": ["code"],
      "deferred_groups": ["group:admin", "group:sessions", "group:web", "group:runtime",
                          "group:media"],
      "lifecycle": {"max_active": 15, "idle_threshold": 5},
      "limits": {"max_args_bytes": 1048576, "max_output_bytes": 50000,
                 "tool_timeout_secs": 1800},
      "mcp_servers": {"files": {"command": "npx", "args": ["-y", "some-server"]}}
    }
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from ._config_io import check_values, read_config_data
from .errors import ConfigError
from .policy import GROUPS, ToolPolicy

__all__ = [
    "DEFAULT_BASE_TOOLS",
    "DEFAULT_DEFERRED_GROUPS",
    "AuditConfig",
    "Config",
    "FilesConfig",
    "HistoryConfig",
    "HookCommandConfig",
    "HookMatcherConfig",
    "HooksConfig",
    "ImageConfig",
    "LifecycleConfig",
    "LimitsConfig",
    "McpServerConfig",
    "PolicyConfig",
    "SandboxConfig",
    "ServeConfig",
    "ShellConfig",
    "TracingConfig",
    "WebConfig",
    "WebSearchProviderConfig",
    "default_config",
    "load_config",
]

#: Groups deferred when more than ``max_active`` tools are visible (as octos's
#: ``crates/octos-agent/src/tools/registry.rs``).
DEFAULT_DEFERRED_GROUPS: tuple[str, ...] = (
    "group:admin",
    "group:sessions",
    "group:web",
    "group:runtime",
    "group:media",
)

#: Tools never evicted by the LRU (the file and search tools, plus discovery helpers).
DEFAULT_BASE_TOOLS: tuple[str, ...] = (
    "read_file",
    "write_file",
    "edit_file",
    "diff_edit",
    "apply_patch",
    "glob",
    "grep",
    "list_dir",
    "activate_tools",
    "tool_search",
    "read_task_output",
)


class _Model(BaseModel):
    # defer_build: a validator is built when a model first validates (a config file, an
    # explicit ``Config(...)``), not at import; the defaults need none (:func:`default_config`)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


_M = TypeVar("_M", bound=_Model)

_ENTRY_RE = re.compile(r"^(group:[A-Za-z0-9_:.-]+|[A-Za-z0-9_.-]*\*?)$")
_MAX_PATH_BYTES = 4096


def _check_entries(entries: list[str], what: str) -> list[str]:
    for entry in entries:
        if entry != entry.strip():
            raise ValueError(
                f"{what} entry {entry!r} has surrounding spaces; write {entry.strip()!r}"
            )
        if not entry or not _ENTRY_RE.match(entry):
            raise ValueError(
                f"{what} entry {entry!r} is not a tool name, a 'prefix*' wildcard or a 'group:NAME'"
            )
    return entries


class PolicyConfig(_Model):
    """A :class:`~octos_tools.policy.ToolPolicy` in a config file.

    Entries are exact tool names (case-sensitive), ``prefix*`` wildcards or ``group:NAME``;
    an entry with spaces around it or any other shape is an error (it would match nothing).
    """

    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    require_tags: list[str] = Field(default_factory=list)

    @field_validator("allow", "deny")
    @classmethod
    def _entries(cls, v: list[str]) -> list[str]:
        return _check_entries(v, "policy")

    @field_validator("require_tags")
    @classmethod
    def _tags(cls, v: list[str]) -> list[str]:
        for tag in v:
            if not tag or tag != tag.strip():
                raise ValueError(f"tag {tag!r} is empty or has surrounding spaces")
        return v

    def to_policy(self) -> ToolPolicy:
        """The runtime :class:`ToolPolicy`."""
        return ToolPolicy(self.allow, self.deny, self.require_tags)


class LifecycleConfig(_Model):
    """LRU settings (octos ``tools/registry.rs``): at most ``max_active`` tools, evict after
    ``idle_threshold`` idle model requests. ``defer`` switches host deferral on or off."""

    max_active: int = Field(15, ge=1, le=1000)
    idle_threshold: int = Field(5, ge=1, le=10_000)
    defer: bool = True


class LimitsConfig(_Model):
    """Size and time limits.

    Attributes:
        max_args_bytes: the argument limit in bytes (1 MiB, as octos's ``tools/registry.rs``).
        max_output_bytes: the default per-call output cap in bytes (70 % head, 30 % tail).
        tool_timeout_secs: the default per-call timeout in seconds.
    """

    max_args_bytes: int = Field(1_048_576, ge=1, le=64 * 1_048_576)
    max_output_bytes: int = Field(50_000, ge=256, le=100_000_000)
    tool_timeout_secs: float = Field(1800.0, gt=0, le=86_400)


class OutputConfig(_Model):
    """What happens to tool results before the model reads them.

    Attributes:
        injection_filter: results of untrusted content (web, browser, mounted MCP
            servers): ``"block"`` replaces prompt-injection phrases with
            ``[injection-blocked:<kind>]``, ``"flag"`` keeps the text and lists them in the
            metadata, ``"off"`` does neither. File reads are only ever flagged
            (:mod:`octos_tools._injection`).
    """

    injection_filter: Literal["block", "flag", "off"] = "block"


class FilesConfig(_Model):
    """File tools' settings.

    Attributes:
        durable_writes: ``fsync`` every written file and its folder, so a finished write
            survives a power cut or kernel crash (off: atomic, not synced; see
            :mod:`octos_tools.workspace._atomic`).
        unchanged_reads: a ``read_file`` repeating, in one session, a read of unchanged
            content answers a short ``[FILE_UNCHANGED]`` line (octos's file-state cache;
            see :mod:`octos_tools.builtins.files._seen`). Off by default: the server cannot
            see a host's parallel calls or context compaction.
    """

    durable_writes: bool = False
    unchanged_reads: bool = False


class HistoryConfig(_Model):
    """Workspace history (docs/history.md).

    Attributes:
        enabled: record a checkpoint around every call that may change files.
        max_file_bytes: files larger than this are not recorded (listed as skipped).
        max_store_bytes: the store's size quota; over it the oldest checkpoints are
            collected.
    """

    enabled: bool = True
    max_file_bytes: int = Field(5_000_000, ge=0, le=1 << 40)
    max_store_bytes: int = Field(1 << 30, ge=1 << 16, le=1 << 50)


class McpServerConfig(_Model):
    """One MCP server to mount: stdio (``command``/``args``/``env``) or HTTP (``url``).

    Attributes:
        command: the program to start (stdio transport).
        args: its arguments.
        env: extra environment variables for it.
        cwd: its working directory (default: the workspace).
        url: a streamable-HTTP endpoint instead of a process.
        headers: HTTP headers for ``url``.
        timeout_secs: per-call timeout in seconds.
        startup_timeout_secs: how long starting and listing tools may take, in seconds.
        max_reply_bytes: the largest message accepted from a stdio server, in bytes
            (default 16 MiB); a longer one is a ``reply_too_large`` error and the
            connection is reset.
        defer: defer the server's tool group from the first request (its tools stay one
            call away; ``tool_search`` finds them). Unset: as ``lifecycle.defer`` (on by
            default), so mounting servers does not grow the first request.
        sandbox: the sandbox mode of a stdio server's process (``read-only`` by default,
            with a private writable home and temp folder so ``npx``/``uvx`` can cache;
            see docs/sandbox.md).
        network: the stdio server may use the network (on by default: most servers exist
            to reach a service).
    """

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_secs: float = Field(60.0, gt=0, le=3600)
    startup_timeout_secs: float = Field(30.0, gt=0, le=600)
    defer: bool | None = None
    max_reply_bytes: int = Field(16 * 1024 * 1024, ge=1024, le=1024 * 1024 * 1024)
    sandbox: Literal["read-only", "workspace-write", "danger-full-access"] = "read-only"
    network: bool = True

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        return v

    def model_post_init(self, __context: Any) -> None:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of 'command' (stdio) or 'url' (streamable HTTP)")


class ShellConfig(_Model):
    """Settings of ``shell`` and ``exec_command``.

    Attributes:
        default_timeout_secs: timeout when the call gives none (seconds, clamped 1–600).
        max_output_bytes: output cap of one call, in bytes.
        max_sessions: live ``exec_command`` sessions at most, all clients together.
        max_sessions_per_client: live sessions at most per host session (one MCP
            session); ``None``: a quarter of ``max_sessions``.
        safe_policy: apply the octos SafePolicy deny / ask patterns.
    """

    default_timeout_secs: float = Field(120.0, ge=1, le=600)
    max_output_bytes: int = Field(50_000, ge=256, le=10_000_000)
    max_sessions: int = Field(64, ge=1, le=1024)
    max_sessions_per_client: int | None = Field(None, ge=1, le=1024)
    safe_policy: bool = True


class WebSearchProviderConfig(_Model):
    """One ``web_search`` provider of the chain, tried in order.

    Attributes:
        kind: ``searxng`` (needs ``url``), ``brave`` / ``tavily`` (need ``api_key`` or
            ``api_key_env``), ``duckduckgo``.
        url: base URL (SearXNG, or to override a provider's endpoint).
        api_key: the key, inline.
        api_key_env: the name of an environment variable holding the key.
    """

    kind: Literal["searxng", "brave", "tavily", "duckduckgo"]
    url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None


class WebConfig(_Model):
    """Settings of ``web_fetch`` and ``web_search``.

    Attributes:
        allow_private_hosts: let ``web_fetch`` reach loopback / private addresses (off:
            the SSRF guard refuses them).
        max_body_bytes: response body cap while streaming, in bytes.
        timeout_secs: request timeout in seconds.
        search_providers: the ``web_search`` chain; the first provider with results wins.
        allowed_hosts: host names, IP addresses or networks (``"127.0.0.1"``,
            ``"10.0.0.0/8"``, ``"dev.internal"``) that ``web_fetch`` and ``browser`` may reach
            although they are private (a local dev server); everything else stays guarded.
    """

    allow_private_hosts: bool = False
    allowed_hosts: list[str] = Field(default_factory=list)
    max_body_bytes: int = Field(5_000_000, ge=1024, le=100_000_000)
    timeout_secs: float = Field(30.0, gt=0, le=600)
    search_providers: list[WebSearchProviderConfig] = Field(default_factory=list)


class ImageConfig(_Model):
    """Settings of ``view_image`` and ``browser`` screenshots.

    Attributes:
        max_side: longest side, in pixels, of an image sent to the model (larger ones are
            downscaled; 1568 is Anthropic's recommended maximum).
        max_bytes: encoded size budget of an image sent to the model, in bytes.
        max_file_bytes: larger image files are refused (``file_too_large``), in bytes.
    """

    max_side: int = Field(1568, ge=64, le=8192)
    max_bytes: int = Field(3_000_000, ge=10_000, le=20_000_000)
    max_file_bytes: int = Field(50_000_000, ge=1024, le=1_000_000_000)


class SandboxConfig(_Model):
    """``[sandbox]``: how commands are confined (see docs/sandbox.md).

    Attributes:
        mode: ``read-only`` | ``workspace-write`` | ``danger-full-access`` (Codex's names).
        engine: ``auto`` (bubblewrap when it runs here, else Landlock) | ``bubblewrap`` |
            ``landlock``.
        network: commands may use the network (always off when the policy denies the web).
        writable_roots: more folders commands may write (absolute, ``~`` expanded).
        deny_read: more paths commands may not read (absolute or relative to the home).
        allowed_hosts: ``host`` or ``host:port`` entries (``*.example.com`` for the names
            below a domain; no port: 80 and 443) commands may reach over HTTP(S) through
            the server's egress proxy while the network is off; an error with
            ``network = true``; ignored when the policy denies the web.
    """

    mode: Literal["read-only", "workspace-write", "danger-full-access"] = "workspace-write"
    engine: Literal["auto", "bubblewrap", "landlock"] = "auto"
    network: bool = False
    writable_roots: list[str] = Field(default_factory=list)
    deny_read: list[str] = Field(default_factory=list)
    allowed_hosts: list[str] = Field(default_factory=list)

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, v: list[str], info: ValidationInfo) -> list[str]:
        from .sandbox._egress import parse_allowed_host

        for entry in v:
            parse_allowed_host(entry)  # ValueError: one line naming the entry
        if v and info.data.get("network"):
            raise ValueError(
                "has no effect with network = true (commands have the full network): "
                "remove allowed_hosts, or set network = false to allow only these hosts"
            )
        return v

    @field_validator("writable_roots")
    @classmethod
    def _absolute(cls, v: list[str]) -> list[str]:
        for root in v:
            if not os.path.isabs(os.path.expanduser(root)):
                raise ValueError(f"writable root {root!r} is not an absolute path")
        return v

    @field_validator("deny_read")
    @classmethod
    def _non_empty(cls, v: list[str]) -> list[str]:
        for path in v:
            if not path or path != path.strip():
                raise ValueError(f"deny_read entry {path!r} is empty or has surrounding spaces")
        return v


# ---------------------------------------------------------------- serve (MCP server)
# Added by the mcp engineer (issue 11): settings of ``octos-tools serve`` only.


class ServeConfig(_Model):
    """Settings of ``octos-tools serve`` (the MCP server).

    Attributes:
        auth_token_file: a file whose first line is the bearer token a remote bind
            (``--allow-remote``) requires; the ``OCTOS_TOOLS_MCP_TOKEN`` environment variable
            wins over it. Never put the token itself in the config or on the command line.
        allowed_hosts: ``Host`` header values a remote bind accepts (``name`` or
            ``name:port``); the bound address is always accepted unless it is a wildcard.
        allowed_origins: browser ``Origin`` values accepted (e.g. ``https://app.example``);
            requests without ``Origin`` (not from a browser) are not affected.
        evict: let the LRU evict idle tools after calls (an MCP server sees no model turns,
            so by default nothing is evicted); never on a ``tools/list``.
        defer: defer the low-use groups from the first ``tools/list`` (``false`` is
            ``--no-defer``: everything listed).
    """

    auth_token_file: str | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    allowed_origins: list[str] = Field(default_factory=list)
    evict: bool = False
    defer: bool = True


class HookCommandConfig(_Model):
    """One command of a ``hooks`` matcher block (Claude Code's hook handler).

    Attributes:
        type: ``"command"`` (the only kind octos-tools runs).
        command: the command line, run by ``sh -c`` in the workspace.
        timeout: seconds before it is killed (default 60, as Claude Code).
        fail_closed: a failure of the hook (timeout, crash, invalid output) refuses the
            call instead of being ignored.
        statusMessage: accepted for Claude Code settings files; unused.
    """

    type: Literal["command"]
    command: str
    timeout: int | float = 60
    fail_closed: bool = False
    statusMessage: str | None = None

    @field_validator("command")
    @classmethod
    def _command(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("command is empty")
        return v

    @field_validator("timeout")
    @classmethod
    def _timeout(cls, v: float) -> float:
        if not 0 < v <= 86_400:
            raise ValueError("timeout must be between 0 and 86400 seconds")
        return v


class HookMatcherConfig(_Model):
    """One entry of ``hooks.PreToolUse`` (or another event): a matcher and its commands.

    Attributes:
        matcher: tool names (``"read_file|write_file"``), a regular expression, or ``""``
            / ``"*"`` for every tool (:func:`octos_tools.hooks.compile_matcher`).
        hooks: the commands, run concurrently for each matching call.
    """

    matcher: str = ""
    hooks: list[HookCommandConfig]

    @field_validator("matcher")
    @classmethod
    def _matcher(cls, v: str) -> str:
        from .hooks import compile_matcher

        compile_matcher(v)  # ValueError names the bad expression
        return v


class HooksConfig(_Model):
    """The ``hooks`` block, in Claude Code's shape (a block from its settings file works).

    Attributes:
        PreToolUse: before a call (allow, deny, ask, rewrite).
        PostToolUse: after a call that succeeded (observe, add context).
        PostToolUseFailure: after a call that ran and failed.
    """

    PreToolUse: list[HookMatcherConfig] = Field(default_factory=list)
    PostToolUse: list[HookMatcherConfig] = Field(default_factory=list)
    PostToolUseFailure: list[HookMatcherConfig] = Field(default_factory=list)


class AuditConfig(_Model):
    """The ``[audit]`` section.

    Attributes:
        path: the JSON-lines file a line per call is appended to (relative: to the config
            file's folder; ``~`` expanded); ``None``: no audit log.
    """

    path: str | None = None

    @field_validator("path")
    @classmethod
    def _path(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("path is empty; leave it out for no audit log")
        return v


class TracingConfig(_Model):
    """The ``[tracing]`` section (OpenTelemetry, :mod:`octos_tools.tracing`).

    Attributes:
        enabled: ``true`` (needs ``opentelemetry-api``), ``false``, or ``"auto"``: on when
            a tracer provider has been set up in the process (``opentelemetry-instrument``).
    """

    enabled: bool | Literal["auto"] = "auto"


# ---------------------------------------------------------------- the whole file


class Config(_Model):
    """The whole configuration file (see docs/configuration.md).

    Attributes:
        workspace: the workspace root; relative paths are taken from the config file's
            folder. ``None``: the ``--workspace`` flag or the current directory.
        read_only: the ``--read-only`` preset: remove every Exclusive tool but the commands,
            which run in the ``read-only`` sandbox.
        tool_policy: the hard policy (``apply_policy``: removes tools).
        tool_policy_by_provider: soft policies by exact model id or provider name.
        provider / model: which entry of ``tool_policy_by_provider`` applies.
        context_filter: tags; only tools with no tags or one of these are shown.
        deferred_groups: groups deferred when too many tools are visible.
        base_tools: tool names never evicted by the LRU.
        lifecycle, limits, files, history, output, shell, web: see their classes.
        mcp_servers: MCP servers to mount, by name.
        plugins: entry points of the ``octos_tools.tools`` group to load, by name, or
            ``["*"]`` for every installed one (see :mod:`octos_tools.plugins`).
        serve: settings of ``octos-tools serve`` (:class:`ServeConfig`).
        hooks: commands run around calls, Claude Code's ``hooks`` block (:class:`HooksConfig`).
        audit: the audit log (:class:`AuditConfig`).
        tracing: OpenTelemetry spans (:class:`TracingConfig`).
        sandbox: how commands are confined (:class:`SandboxConfig`).
        approval_policy: ``"on-request"`` (ask the host's approval channel when a command
            needs a person's yes) or ``"never"`` (refuse it as ``approval_required``);
            Codex's names, see docs/approvals.md.
    """

    workspace: str | None = None
    read_only: bool = False
    approval_policy: Literal["on-request", "never"] = "on-request"
    tool_policy: PolicyConfig = Field(default_factory=PolicyConfig)
    tool_policy_by_provider: dict[str, PolicyConfig] = Field(default_factory=dict)
    provider: str | None = None
    model: str | None = None
    context_filter: list[str] = Field(default_factory=list)
    deferred_groups: list[str] = Field(default_factory=lambda: list(DEFAULT_DEFERRED_GROUPS))
    base_tools: list[str] = Field(default_factory=lambda: list(DEFAULT_BASE_TOOLS))
    lifecycle: LifecycleConfig = Field(default_factory=LifecycleConfig)  # type: ignore[arg-type]
    limits: LimitsConfig = Field(default_factory=LimitsConfig)  # type: ignore[arg-type]
    files: FilesConfig = Field(default_factory=FilesConfig)  # type: ignore[arg-type]
    history: HistoryConfig = Field(default_factory=HistoryConfig)  # type: ignore[arg-type]
    output: OutputConfig = Field(default_factory=OutputConfig)  # type: ignore[arg-type]
    shell: ShellConfig = Field(default_factory=ShellConfig)  # type: ignore[arg-type]
    web: WebConfig = Field(default_factory=WebConfig)  # type: ignore[arg-type]
    image: ImageConfig = Field(default_factory=ImageConfig)  # type: ignore[arg-type]
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    plugins: list[str] = Field(default_factory=list)
    serve: ServeConfig = Field(default_factory=ServeConfig)  # type: ignore[arg-type]
    hooks: HooksConfig = Field(default_factory=HooksConfig)  # type: ignore[arg-type]
    audit: AuditConfig = Field(default_factory=AuditConfig)  # type: ignore[arg-type]
    tracing: TracingConfig = Field(default_factory=TracingConfig)  # type: ignore[arg-type]
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)  # type: ignore[arg-type]
    _source: str | None = PrivateAttr(None)

    @property
    def source_path(self) -> str | None:
        """The file this configuration was read from (``None``: built in code)."""
        return self._source

    def __eq__(self, other: object) -> bool:
        # the values decide; where they were read from does not (a JSON and a TOML file
        # with the same values are equal)
        if not isinstance(other, Config):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = _Model.__hash__

    @field_validator("workspace")
    @classmethod
    def _workspace_path(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if not v:
            raise ValueError("workspace is empty; leave it out to use --workspace or the cwd")
        if len(v.encode("utf-8", "surrogatepass")) > _MAX_PATH_BYTES:
            raise ValueError(f"workspace path is longer than {_MAX_PATH_BYTES} bytes")
        return v

    @field_validator("deferred_groups", "base_tools")
    @classmethod
    def _name_lists(cls, v: list[str]) -> list[str]:
        return _check_entries(v, "list")

    @field_validator("plugins")
    @classmethod
    def _plugin_names(cls, v: list[str]) -> list[str]:
        for name in v:
            if name != "*" and not re.match(r"^[A-Za-z0-9_.-]+$", name):
                raise ValueError(f'plugin {name!r} is not an entry-point name (or "*" for all)')
        return v

    @field_validator("mcp_servers")
    @classmethod
    def _server_names(cls, v: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in v:
            if not name or not all(c.isalnum() or c in "_-" for c in name):
                raise ValueError(f"MCP server name {name!r} may use only letters, digits, _ and -")
        return v

    def model_post_init(self, __context: Any) -> None:
        problems = self.unknown_groups()
        if problems:
            raise ValueError(
                "unknown group(s) in a policy: "
                + ", ".join(f"{where}: {entry!r}" for where, entry in problems)
                + f". Known groups: {', '.join(sorted(GROUPS))}, and group:mcp:<server> for "
                "each mcp_servers entry. A misspelt group would silently match nothing."
            )

    def unknown_groups(self) -> list[tuple[str, str]]:
        """``(key path, entry)`` of every ``group:`` entry that names no known group."""
        known = set(GROUPS) | {f"group:mcp:{name}" for name in self.mcp_servers}
        found: list[tuple[str, str]] = []
        policies = [("tool_policy", self.tool_policy)] + [
            (f"tool_policy_by_provider.{key}", p) for key, p in self.tool_policy_by_provider.items()
        ]
        for where, policy in policies:
            for field in ("allow", "deny"):
                for entry in getattr(policy, field):
                    if entry.startswith("group:") and entry not in known:
                        found.append((f"{where}.{field}", entry))
        for entry in self.deferred_groups:
            if entry not in known:
                found.append(("deferred_groups", entry))
        return found

    def provider_policies(self) -> dict[str, ToolPolicy]:
        """``tool_policy_by_provider`` as runtime policies."""
        return {k: v.to_policy() for k, v in self.tool_policy_by_provider.items()}

    @classmethod
    def from_mapping(cls, data: Any, *, source: str = "<config>") -> Config:
        """Validate a parsed mapping.

        Raises:
            ConfigError: naming ``source`` and the key path of every problem.
        """
        check_values(data, source)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_format_validation_error(exc, source)) from None
        except RecursionError:
            raise ConfigError(f"invalid configuration in {source}: nested too deeply") from None


def _format_validation_error(exc: ValidationError, source: str) -> str:
    """One line: ``invalid configuration in FILE: key.path: problem; other.key: problem``."""
    parts: list[str] = []
    for err in exc.errors(include_url=False):
        path = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        parts.append(f"{path}: {msg}")
    more = len(parts) - 5
    text = "; ".join(parts[:5]) + (f" (and {more} more)" if more > 0 else "")
    return f"invalid configuration in {source}: {text}"


def _construct_defaults(cls: type[_M]) -> _M:
    """``cls()`` without validation: every field at its default, sections built the same
    way (a default is valid by construction; ``tests/test_call_fast_path.py`` checks the
    result equals ``cls()``). Every value is passed, so pydantic inspects no factory."""
    values: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        factory = info.default_factory
        if factory is None:
            values[name] = info.default  # immutable: None, a number, a bool or a string
        elif isinstance(factory, type) and issubclass(factory, _Model):
            values[name] = _construct_defaults(factory)
        else:
            values[name] = factory()  # type: ignore[call-arg]
    return cls.model_construct(_fields_set=set(), **values)


def default_config() -> Config:
    """The default configuration, equal to ``Config()`` (same values, no field set), built
    without validating: no pydantic validator is generated for it, which keeps a process
    that reads no config file (``octos-tools call``) from building one for every section."""
    return _construct_defaults(Config)


def load_config(path: str | os.PathLike[str] | None) -> Config:
    """Read a JSON (``.json``) or TOML (``.toml``, or anything else that parses as TOML) file.

    A relative ``workspace`` is resolved against the file's folder. ``None`` gives defaults.
    Only a regular file of at most 1 MiB is read (a FIFO or a device is refused without
    blocking).

    Raises:
        ConfigError: one line naming the file and the key: the file is missing, not a
            regular file, too large, does not parse, or does not validate.
    """
    if path is None:
        return default_config()
    p = Path(path)
    data = read_config_data(p)
    config = Config.from_mapping(data, source=str(p))
    if config.workspace is not None and not os.path.isabs(config.workspace):
        try:
            ws = str((p.parent / config.workspace).resolve())
        except (OSError, RuntimeError) as exc:
            raise ConfigError(f"invalid configuration in {p}: workspace: {exc}") from None
        config = config.model_copy(update={"workspace": ws})
    audit = config.audit.path
    if audit is not None and not os.path.isabs(os.path.expanduser(audit)):
        audit_path = str(p.parent.resolve() / audit)
        config = config.model_copy(update={"audit": AuditConfig(path=audit_path)})
    config._source = str(p.absolute())
    return config
