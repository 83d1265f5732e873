"""The ``octos-tools`` command (DESIGN.md §6), built with typer and rich.

* ``octos-tools call TOOL [ARGS] --workspace DIR [--config FILE] [--json]``: run one call;
  ``ARGS`` is the raw argument string as a model would send it (standard input when
  omitted). Exit 0 whenever the tool ran, 2 on a usage error.
* ``octos-tools tools [--json] [--tokens]``: the catalog.
* ``octos-tools policy explain TOOL [--provider P] [--model M]``: which rule decided.
* ``octos-tools contract``: the coding tool contract as JSON.
* ``octos-tools serve``: the MCP server (the main job).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import anyio
import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import __version__
from .config import Config, load_config
from .errors import ConfigError, OctosToolsError
from .policy import first_group_of, resolve_provider_policy

if TYPE_CHECKING:
    from .registry import ToolRegistry
    from .tool import ToolResult

__all__ = ["app", "main"]

app = typer.Typer(
    name="octos-tools",
    help="The tool runtime for LLM agents: run tools, inspect policy, serve them over MCP.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
policy_app = typer.Typer(help="Inspect tool policies.", no_args_is_help=True)
app.add_typer(policy_app, name="policy")

_err = Console(stderr=True)

WorkspaceOpt = Annotated[
    Path | None,
    typer.Option(
        "--workspace",
        "-w",
        help="Workspace root (default: the config's workspace, else the current directory).",
    ),
]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="Config file (JSON or TOML).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
ReadOnlyOpt = Annotated[
    bool, typer.Option("--read-only", help="Remove every tool that can modify anything.")
]


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"octos-tools {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Print the version."
        ),
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log to stderr.")] = False,
) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )


def _usage_error(message: str) -> NoReturn:
    _err.print(f"[red]error:[/red] {escape(message)}", highlight=False, markup=True)
    raise typer.Exit(2)


def _load(config: Path | None, read_only: bool = False) -> Config:
    try:
        cfg = load_config(config)
    except ConfigError as exc:
        _usage_error(str(exc))
    if read_only and not cfg.read_only:
        cfg = cfg.model_copy(update={"read_only": True})
    return cfg


def _registry(cfg: Config, workspace: Path | None) -> ToolRegistry:
    from .profile import build_registry

    root = workspace if workspace is not None else cfg.workspace
    if root is not None and not Path(root).is_dir():
        _usage_error(f"workspace {str(root)!r} is not an existing directory")
    try:
        return build_registry(cfg, root)
    except OctosToolsError as exc:
        _usage_error(str(exc))


def _read_stdin() -> bytes:
    if sys.stdin is None or sys.stdin.isatty():
        return b""
    return sys.stdin.buffer.read()


@app.command()
def call(
    tool: Annotated[str, typer.Argument(help="Tool name.")],
    args: Annotated[
        str | None,
        typer.Argument(help="Raw argument string (JSON object); read from stdin when omitted."),
    ] = None,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_output: JsonOpt = False,
    read_only: ReadOnlyOpt = False,
) -> None:
    """Run one tool call exactly as a model's call would run."""
    cfg = _load(config, read_only)
    raw: str | bytes = args if args is not None else _read_stdin()
    registry = _registry(cfg, workspace)
    # Start the configured MCP servers only when the call may be for one of their tools:
    # a built-in call should not pay for starting every mounted server.
    builtin = tool in registry or tool in registry.removed_by_policy()
    mounts = contextlib.nullcontext() if builtin else _mounted(registry, cfg)

    async def run() -> ToolResult:
        try:
            async with mounts:
                result: ToolResult = await _with_progress(
                    registry.execute(tool, raw), tool, json_output
                )
            return result
        finally:
            await registry.aclose()

    result = anyio.run(run)
    _note_closed_session(result)
    if json_output:
        payload = {
            "success": result.success,
            "output": result.output,
            "error": result.error if not result.success else None,
            "file_modified": result.file_modified,
            "structured_metadata": result.structured_metadata,
        }
        sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        return
    if result.success:
        sys.stdout.write(result.output)
        if result.output and not result.output.endswith("\n"):
            sys.stdout.write("\n")
    else:
        kind = result.error_kind.value if result.error_kind else "error"
        sys.stdout.write(result.output + "\n")
        _err.print(f"[red]{kind}[/red]", highlight=False)
    sys.stdout.flush()


def _note_closed_session(result: ToolResult) -> None:
    """Warn on stderr when a result reports a session still running: the one-shot ``call``
    closes every session (and kills its processes) when it exits, so it cannot be resumed."""
    meta = result.structured_metadata or {}
    if meta.get("running") and meta.get("session_id") is not None:
        _err.print(
            f"note: session {meta['session_id']} was still running; this one-shot call has "
            "ended it (and killed its processes), so a later call cannot reach it. Keep "
            "sessions across calls with `octos-tools serve` or one ToolRegistry in a program.",
            highlight=False,
            markup=False,
        )


async def _with_progress(awaitable: Any, tool: str, quiet: bool) -> Any:
    """Await ``awaitable``, showing a spinner on an interactive terminal after 1 s."""
    if quiet or not _err.is_terminal:
        return await awaitable
    result: list[Any] = []

    async def runner() -> None:
        result.append(await awaitable)
        tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(runner)
        await anyio.sleep(1.0)
        started = time.monotonic()
        with _err.status(f"running {tool}…") as status:
            while True:
                await anyio.sleep(0.25)
                status.update(f"running {tool}… {time.monotonic() - started + 1:.0f}s")
    return result[0]


@app.command()
def tools(
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_output: JsonOpt = False,
    tokens: Annotated[
        bool, typer.Option("--tokens", help="Show the tokens of each visible spec and the total.")
    ] = False,
    read_only: ReadOnlyOpt = False,
) -> None:
    """List every tool: group, tags, class, state (visible, deferred, hidden, denied)."""
    from .builtins import MISSING_EXTRAS
    from .tokens import TOKENIZER_NAME, count_tokens

    cfg = _load(config, read_only)
    registry = _registry(cfg, workspace)
    if cfg.mcp_servers:

        async def mount_once() -> None:
            async with _mounted(registry, cfg):
                pass

        anyio.run(mount_once)
    rows: list[dict[str, Any]] = []
    total = 0
    visible_specs = {spec.name: spec for spec in registry.specs()}  # the request's own specs
    for name in registry.names():
        tool = registry.get(name)
        assert tool is not None
        decision = registry.evaluate(name)
        if not decision.allowed:
            state = "denied"
        elif registry.is_deferred(name):
            state = "deferred"
        elif name in visible_specs:
            state = "visible"
        else:
            state = "hidden"
        spec_tokens = None
        if state == "visible":
            spec = visible_specs[name]
            spec_tokens = count_tokens(json.dumps(spec.to_openai(), ensure_ascii=False))
            total += spec_tokens
        rows.append(
            {
                "name": name,
                "group": first_group_of(name),
                "tags": list(tool.tags),
                "class": tool.concurrency_class.value,
                "state": state,
                "spawn_only": registry.is_spawn_only(name),
                "tokens": spec_tokens,
            }
        )
    for name, (cls, tags) in registry.removed_by_policy().items():
        rows.append(
            {
                "name": name,
                "group": first_group_of(name),
                "tags": list(tags),
                "class": cls.value,
                "state": "denied",
                "spawn_only": False,
                "tokens": None,
            }
        )
    missing = [{"name": n, "extra": e} for n, e in sorted(MISSING_EXTRAS.items())]
    anyio.run(registry.aclose)
    if json_output:
        data: dict[str, Any] = {"tools": rows, "missing": missing}
        data["first_request_tokens"] = total
        data["tokenizer"] = TOKENIZER_NAME
        typer.echo(json.dumps(data, indent=2))
        return
    out = Console()
    table = Table(
        title=f"octos-tools: {len(registry)} tools registered",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for col in ("name", "group", "tags", "class", "state"):
        # never cut a name, group, class or state to fit 80 columns: tags wrap instead
        table.add_column(col, no_wrap=col != "tags")
    if tokens:
        table.add_column("tokens", justify="right")
    seen: set[str] = set()
    for row in rows:
        if row["name"] in seen:
            continue
        seen.add(row["name"])
        cells = [
            row["name"],
            row["group"] or "",
            ", ".join(row["tags"]),
            row["class"] or "",
            row["state"],
        ]
        if tokens:
            cells.append("" if row["tokens"] is None else str(row["tokens"]))
        table.add_row(*cells)
    out.print(table)
    if tokens:
        out.print(
            f"first request: {total} tokens in {len(registry.specs())} visible specs "
            f"(OpenAI tool format; tokenizer: {TOKENIZER_NAME})"
        )
    for item in missing:
        out.print(
            f"not installed: {item['name']} (pip install 'octos-tools[{item['extra']}]')",
            markup=False,  # the brackets are the extra, not rich markup
            highlight=False,
        )


@policy_app.command("explain")
def policy_explain(
    tool: Annotated[str, typer.Argument(help="Tool name.")],
    provider: Annotated[
        str | None, typer.Option("--provider", help="Provider name for tool_policy_by_provider.")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model id for tool_policy_by_provider.")
    ] = None,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_output: JsonOpt = False,
    read_only: ReadOnlyOpt = False,
) -> None:
    """Explain which rule of which policy allows or denies TOOL, and why.

    The verdict is the registry's own (the same check every call goes through); the steps
    show each policy in the order they apply, then whether the tool is shown to the model.
    """
    cfg = _load(config, read_only)
    if provider or model:
        cfg = cfg.model_copy(
            update={"provider": provider or cfg.provider, "model": model or cfg.model}
        )
    registry = _registry(cfg, workspace)
    steps: list[dict[str, Any]] = []
    known = tool in registry or tool in registry.removed_by_policy()
    tags = list(registry.get(tool).tags) if tool in registry else []  # type: ignore[union-attr]
    if cfg.read_only:
        removed = registry.removed_by_policy().get(tool)
        exclusive = removed is not None and removed[0].value == "exclusive"
        steps.append(
            {
                "policy": "read_only",
                "allowed": not exclusive,
                "detail": "read-only preset: "
                + ("this Exclusive tool is removed" if exclusive else "only Exclusive tools go"),
            }
        )
    hard = cfg.tool_policy.to_policy()
    d = hard.evaluate(tool, tags, check_tags=True)
    steps.append(
        {
            "policy": "tool_policy",
            "allowed": d.allowed,
            "reason": d.reason.value,
            "entry": d.entry,
            "detail": d.detail if not hard.is_empty() else "empty policy: allows everything",
        }
    )
    resolved = resolve_provider_policy(cfg.provider_policies(), cfg.provider, cfg.model)
    if resolved is None:
        if not cfg.tool_policy_by_provider:
            detail = "none configured"
        elif not (cfg.provider or cfg.model):
            detail = "no --provider or --model given (nor provider / model in the config)"
        else:
            detail = f"no entry matches model {cfg.model!r} or provider {cfg.provider!r}"
        steps.append({"policy": "tool_policy_by_provider", "allowed": True, "detail": detail})
    else:
        key, policy = resolved
        pd = registry.evaluate(tool) if registry.provider_policy is not None else None
        if pd is None or pd.source != "provider policy":
            pd = policy.evaluate(tool, tags)
        steps.append(
            {
                "policy": f"tool_policy_by_provider[{key!r}]",
                "allowed": pd.allowed,
                "reason": pd.reason.value,
                "entry": pd.entry,
                "detail": pd.detail,
                "matched_by": "model id" if key == cfg.model else "provider name",
            }
        )
    verdict_decision = registry.evaluate(tool)
    allowed = known and verdict_decision.allowed
    if not known:
        steps.append(
            {
                "policy": "registry",
                "allowed": False,
                "detail": "no tool of this name is registered (nor removed by a policy)",
            }
        )
    elif allowed:
        if registry.is_deferred(tool):
            shown = "deferred: not in the first request; calling it loads its group"
        elif registry.is_visible(tool):
            shown = "visible in the tool list"
        else:
            shown = f"hidden by context_filter {list(registry.context_filter)} (still callable)"
        steps.append({"policy": "visibility", "allowed": None, "detail": shown})
    anyio.run(registry.aclose)
    result = {
        "tool": tool,
        "allowed": allowed,
        "decided_by": None if allowed else (verdict_decision.source or "registry"),
        "group": first_group_of(tool),
        "steps": steps,
        "rule": "deny always wins; an empty allow list allows all not denied",
    }
    if json_output:
        typer.echo(json.dumps(result, indent=2))
        return
    out = Console()
    out.print(f"[bold]{tool}[/bold]: {'[green]allowed' if allowed else '[red]denied'}")
    for step in steps:
        mark = {True: "allow", False: "deny", None: "note"}[step["allowed"]]
        out.print(f"  {step['policy']}: {mark} - {step['detail']}", highlight=False, markup=False)


@app.command()
def contract(
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Print the coding tool contract (coding.tool_contract.v1) as JSON."""
    from .contract import build_contract

    cfg = _load(config)
    registry = _registry(cfg, workspace)
    doc = build_contract(registry)
    anyio.run(registry.aclose)
    typer.echo(json.dumps(doc, indent=2))


@asynccontextmanager
async def _mounted(registry: ToolRegistry, cfg: Config) -> AsyncIterator[None]:
    """Mount ``cfg.mcp_servers`` into ``registry`` for the block; servers that fail to
    start are logged (one warning on stderr) and skipped."""
    if not cfg.mcp_servers:  # keep start-up fast: the MCP SDK is only imported when needed
        yield
        return
    from .mcp.client import mount_mcp_servers

    async with mount_mcp_servers(registry, cfg):
        yield


@app.command()
def serve(
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    transport: Annotated[
        str, typer.Option("--transport", "-t", help="stdio (default) or http (streamable HTTP).")
    ] = "stdio",
    host: Annotated[str, typer.Option("--host", help="HTTP: address to bind.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", "-p", help="HTTP: TCP port (0 picks a free one).")
    ] = 8765,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            help="HTTP: allow a non-loopback address; needs a bearer token "
            "(OCTOS_TOOLS_MCP_TOKEN or serve.auth_token_file).",
        ),
    ] = False,
    no_defer: Annotated[
        bool,
        typer.Option("--no-defer", help="List every tool from the start (nothing deferred)."),
    ] = False,
    read_only: ReadOnlyOpt = False,
) -> None:
    """Serve the tools over MCP (stdio by default). Logs go to stderr only."""
    from .mcp.auth import TOKEN_ENV, is_loopback, load_token, transport_security
    from .mcp.http import bind_socket
    from .mcp.server import run_server

    def refuse(message: str) -> NoReturn:  # one line, never wrapped (clients log stderr)
        _err.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
        raise typer.Exit(2)

    if transport not in ("stdio", "http"):
        refuse(f"--transport must be 'stdio' or 'http', not {transport!r}")
    cfg = _load(config, read_only)
    if no_defer or not cfg.serve.defer:
        cfg = cfg.model_copy(
            update={"lifecycle": cfg.lifecycle.model_copy(update={"defer": False})}
        )
    token: str | None = None
    if transport == "http":
        if not 0 <= port <= 65535:
            refuse(f"--port must be between 0 and 65535, not {port}")
        if not is_loopback(host):
            if not allow_remote:
                refuse(
                    f"refusing to bind {host!r}: it is not a loopback address. Pass "
                    "--allow-remote (a bearer token is then required) to bind it anyway."
                )
            try:
                token = load_token(cfg.serve.auth_token_file)
            except ConfigError as exc:
                refuse(str(exc))
            if token is None:
                refuse(
                    f"refusing to bind {host!r} without authentication: set {TOKEN_ENV} "
                    "or serve.auth_token_file in the config."
                )
            try:
                transport_security(host, allowed_hosts=cfg.serve.allowed_hosts)
            except ConfigError as exc:
                refuse(str(exc))
    registry = _registry(cfg, workspace)
    sock = None
    if transport == "http":
        try:
            sock = bind_socket(host, port)
        except OSError as exc:
            refuse(f"cannot listen on {host}:{port}: {exc.strerror or exc}")

    async def run() -> None:
        try:
            async with _mounted(registry, cfg):
                await run_server(
                    registry,
                    transport=transport,
                    host=host,
                    port=port,
                    read_only=cfg.read_only,
                    sock=sock,
                    exit_on_signal=True,
                    evict=cfg.serve.evict,
                    token=token,
                    allowed_hosts=cfg.serve.allowed_hosts,
                    allowed_origins=cfg.serve.allowed_origins,
                    max_message_bytes=max(4 * 1024 * 1024, 2 * cfg.limits.max_args_bytes),
                )
        finally:
            with anyio.CancelScope(shield=True):
                await registry.aclose()

    try:
        anyio.run(run)
    except KeyboardInterrupt:
        pass


def main() -> None:
    """Entry point of the ``octos-tools`` script."""
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    try:
        app()
    except OctosToolsError as exc:  # a programmer-facing error that escaped a command
        _err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        sys.exit(2)
