"""The ``octos-tools`` command, built with typer (and rich for tables on a terminal).

* ``octos-tools call TOOL [ARGS] --workspace DIR [--config FILE] [--json] [--exit-code]``:
  run one call; ``ARGS`` is the raw argument string as a model would send it (standard
  input when omitted).
* ``octos-tools tools [--json] [--tokens]``: the catalog.
* ``octos-tools policy explain TOOL [--provider P] [--model M]``: which rule decided.
* ``octos-tools contract``: the coding tool contract as JSON.
* ``octos-tools serve``: the MCP server (the main job).

Exit codes (every command): 0 the command ran (for ``call``: the tool ran, whether its
result is a success or a failure, unless ``--exit-code``); 1 ``call --exit-code`` and the
result has ``success: false``; 2 a usage error (bad option, unreadable config, missing
workspace); 130 interrupted (Ctrl-C); 141 standard output closed early (``| head``), quietly.

Messages go to standard error as one plain line each (``error: ...``, ``warning: ...``),
never wrapped; colours only on a terminal. ``-v`` / ``--verbose`` (before or after the
command) logs the workspace, the config file, the tools loaded and each call's outcome
and time.
"""

from __future__ import annotations

import contextlib
import copy
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

from ._version import __version__
from .errors import ConfigError, OctosToolsError

if TYPE_CHECKING:
    from .config import Config
    from .registry import ToolRegistry
    from .tokens import TokenReport
    from .tool_types import ToolResult, ToolSpec

__all__ = ["app", "main"]

app = typer.Typer(
    name="octos-tools",
    help="The tool runtime for LLM agents: run tools, inspect policy, serve them over MCP.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
policy_app = typer.Typer(help="Inspect tool policies.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(policy_app, name="policy")
history_app = typer.Typer(
    help="Workspace history: list, diff and restore checkpoints (docs/history.md).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(history_app, name="history")
sandbox_app = typer.Typer(
    help="Inspect the commands' sandbox.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(sandbox_app, name="sandbox")

logger = logging.getLogger("octos_tools.cli")

EXIT_TOOL_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


def _stderr_line(label: str, message: str, color: str) -> None:
    """One unwrapped line on stderr: ``label: message`` (the label coloured on a tty)."""
    stream = sys.stderr
    if stream is None:
        return
    tty = stream.isatty() and "NO_COLOR" not in os.environ
    head = f"\033[{color}m{label}:\033[0m" if tty else f"{label}:"
    try:
        stream.write(f"{head} {' '.join(message.splitlines())}\n")
        stream.flush()
    except (BrokenPipeError, ValueError):
        pass


def _warn(message: str) -> None:
    _stderr_line("warning", message, "33")


def _note(message: str) -> None:
    _stderr_line("note", message, "36")


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
    bool,
    typer.Option(
        "--read-only",
        help="Remove every tool that can modify anything; commands run in the read-only sandbox.",
    ),
]
SandboxOpt = Annotated[
    str | None,
    typer.Option(
        "--sandbox",
        help=(
            "Commands' sandbox: read-only, workspace-write (default) or danger-full-access. "
            "It confines commands only; --read-only also removes the file writers."
        ),
    ),
]


def _verbose_callback(value: bool) -> bool:
    if value:
        _setup_logging(True)
    return value


VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        callback=_verbose_callback,
        help="Say what happens on stderr: workspace, config, tools loaded, each call and its time.",
    ),
]

_logging_ready = False


def _setup_logging(verbose: bool) -> None:
    """Log octos-tools' own messages to stderr: INFO with ``-v``, else WARNING. Other
    libraries (asyncio, httpx, the MCP SDK) stay at WARNING either way."""
    global _logging_ready
    root = logging.getLogger("octos_tools")
    if not _logging_ready:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_LowerLevelFormatter("%(levelname)s: %(message)s"))
        root.addHandler(handler)
        root.propagate = False
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
        _logging_ready = True
    root.setLevel(logging.INFO if verbose else logging.WARNING)


class _LowerLevelFormatter(logging.Formatter):
    """``warning: ...`` / ``info: ...``: the same shape as the command's own messages."""

    def format(self, record: logging.LogRecord) -> str:
        record.levelname = record.levelname.lower()
        return " ".join(super().format(record).splitlines())


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
    verbose: VerboseOpt = False,
) -> None:
    _setup_logging(verbose or logging.getLogger("octos_tools").level == logging.INFO)


def _usage_error(message: str) -> NoReturn:
    _stderr_line("error", message, "31")
    raise typer.Exit(EXIT_USAGE)


def _load(config: Path | None, read_only: bool = False, sandbox: str | None = None) -> Config:
    from .config import load_config  # pydantic: not for --version or --help

    try:
        cfg = load_config(config)
    except ConfigError as exc:
        _usage_error(str(exc))
    logger.info("config: %s", config.resolve() if config is not None else "(none: defaults)")
    if read_only and not cfg.read_only:
        cfg = cfg.model_copy(update={"read_only": True})
    if sandbox is not None:
        from .sandbox import SandboxMode

        try:
            mode = SandboxMode.parse(sandbox)
        except ValueError as exc:
            _usage_error(f"--sandbox: {exc}")
        cfg = cfg.model_copy(
            update={"sandbox": cfg.sandbox.model_copy(update={"mode": mode.value})}
        )
    return cfg


def _sandbox_line(cfg: Config, workspace: Path | None = None) -> None:
    """One stderr line saying how commands are confined (``serve``'s start): a warning
    when the mode cannot be enforced here (each command then answers
    ``sandbox_unavailable``), and one when the workspace holds the server's own code
    (bubblewrap keeps it read-only for commands, Landlock cannot, so
    commands are refused there)."""
    from .errors import ToolError
    from .sandbox import resolve_engine, settings_from_config
    from .sandbox._own_code import own_code_inside

    box = settings_from_config(cfg, config_path=cfg.source_path)
    try:
        engine = resolve_engine(box)
    except ToolError as exc:
        _warn(f"commands will not run: {exc.message}")
        return
    if engine == "none":
        _note("commands run unconfined (sandbox danger-full-access)")
        return
    roots = [str(workspace)] if workspace is not None else []
    roots += [os.path.realpath(os.path.expanduser(r)) for r in cfg.sandbox.writable_roots]
    code = own_code_inside(roots) if box.mode.value == "workspace-write" else []
    if code:
        how = (
            "bubblewrap keeps it read-only for commands"
            if engine == "bubblewrap"
            else "Landlock cannot keep it read-only, so every command will answer "
            "sandbox_unavailable"
        )
        _warn(
            f"the workspace contains the server's own code ({code[0]}): {how}; the file "
            "tools refuse to write it. Serve another folder than the server's own clone "
            "and virtual environment"
        )
    net = "on" if box.network else "off"
    logger.info("commands run in the %s sandbox (%s, network %s)", box.mode, engine, net)


def _off_limits_line(registry: ToolRegistry, *, serving: bool = False) -> None:
    """A stderr warning (``serve`` and ``call`` start) when the workspace holds the home
    folder's credential stores or the server's state folder: the file tools and the
    history leave them out (:mod:`octos_tools.workspace._off_limits`), but a project folder
    is what should be served. ``serving``: the server's own start warning already names a
    workspace holding the home folder, so only the state folder elsewhere is told here."""
    ws = registry.workspace
    off = getattr(ws, "off_limits", None)
    if ws is None or not off:
        return
    home = Path(os.path.realpath(Path.home()))
    root = ws.root
    holds_home = root == home or root in home.parents
    holds_state = off.STATE_RULE in off.rules.values()
    if (holds_home and serving) or not (holds_home or holds_state):
        return  # a deny_read entry inside the project: what the user asked for
    what = "the home folder" if holds_home else "the octos-tools state folder"
    state = [p for p in off.paths if off.rule_for(p.split("/")) == off.STATE_RULE]
    present = [p for p in off.paths if os.path.lexists(os.path.join(root, p))]
    shown = list(dict.fromkeys(state + present))
    listed = ", ".join(shown[:6]) + (" …" if len(shown) > 6 else "")
    left_out = "its credential stores and the state folder" if holds_home else "it"
    _warn(
        f"the workspace {str(root)!r} contains {what}: file tools and the history leave "
        f"out {left_out} ({listed}); serve a project folder instead"
    )


def _registry(cfg: Config, workspace: Path | None, *, call: str | None = None) -> ToolRegistry:
    """The registry of a command; for ``call`` (``call`` names the tool), only what that
    call needs (:func:`~octos_tools.profile.build_call_registry`)."""
    from .profile import build_call_registry, build_registry

    root = workspace if workspace is not None else cfg.workspace
    if root is not None and not Path(root).is_dir():
        _usage_error(f"workspace {str(root)!r} is not an existing directory")
    try:
        if call is not None:
            registry = build_call_registry(call, cfg, root)
        else:
            registry = build_registry(cfg, root)
    except OctosToolsError as exc:
        _usage_error(str(exc))
    if cfg.plugins:
        _report_plugins(registry)
    _check_policy_names(registry, cfg)
    if logger.isEnabledFor(logging.INFO):  # listing builds every spec: only when asked
        where = os.path.abspath(root) if root is not None else os.getcwd()
        if call is not None:
            logger.info(
                "workspace: %s; %d tools loaded for this call (the families %s needs)",
                where,
                len(registry),
                call,
            )
        else:
            logger.info(
                "workspace: %s; %d tools registered, %d listed",
                where,
                len(registry),
                len(registry.specs()),
            )
    return registry


def _known_names(registry: ToolRegistry) -> set[str]:
    """Every tool name a policy may mean: registered, removed by a policy, missing its
    extra, or built in (a call's registry holds only the families the call needs)."""
    from .builtins import BUILTIN_TOOLS, MISSING_EXTRAS

    names = set(registry.names()) | set(registry.removed_by_policy()) | set(MISSING_EXTRAS)
    return names | BUILTIN_TOOLS


def _check_policy_names(registry: ToolRegistry, cfg: Config) -> None:
    """Policy entries naming no tool: a ``deny`` entry (or a case-only mismatch anywhere)
    is a configuration error, since a misspelt deny serves the tool it meant to stop
    (``deny = ["exec_comand"]``); an unknown ``allow`` entry is a warning."""
    from .policy_names import check_policy_names

    problems = check_policy_names(cfg, _known_names(registry))
    for problem in problems:
        if problem.case_only or problem.is_deny:
            _usage_error(problem.message)
    for problem in problems:
        _warn(problem.message)
    _check_hook_matchers(cfg, _known_names(registry))
    entries = cfg.tool_policy_by_provider
    if cfg.model in entries and cfg.provider in entries and cfg.model != cfg.provider:
        _warn(
            f"tool_policy_by_provider: the entry for model {cfg.model!r} replaces the entry "
            f"for provider {cfg.provider!r} (they are not combined)"
        )


#: Claude Code's tool names, and ours for the same job (a copied hook block names theirs).
_CLAUDE_CODE_TOOLS = {
    "Bash": "exec_command|bash|shell",
    "Write": "write_file",
    "Edit": "edit_file|apply_patch",
    "MultiEdit": "edit_file|apply_patch",
    "Read": "read_file",
    "Glob": "glob",
    "Grep": "grep",
    "WebFetch": "web_fetch",
    "WebSearch": "web_search",
}


def _check_hook_matchers(cfg: Config, known: set[str]) -> None:
    """A hook block whose matcher matches no tool is a warning naming ours (a block copied
    from a Claude Code settings file says ``Bash`` or ``Write|Edit``)."""
    from .hooks import compile_matcher

    for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        for i, block in enumerate(getattr(cfg.hooks, event)):
            try:
                test = compile_matcher(block.matcher)
            except ValueError:
                continue  # the config check reports it
            if any(test(name) for name in known):
                continue
            ours = [
                _CLAUDE_CODE_TOOLS[p] for p in block.matcher.split("|") if p in _CLAUDE_CODE_TOOLS
            ]
            hint = f"; for Claude Code's names use {'|'.join(ours)!r}" if ours else ""
            _warn(f"hooks.{event}.{i}.matcher {block.matcher!r} matches no tool{hint}")


def _report_plugins(registry: ToolRegistry) -> None:
    from .plugins import plugin_report

    report = plugin_report(registry)  # failures were logged as warnings when they happened
    for name, tools in report.loaded.items():
        logger.info("plugin %r: %s", name, ", ".join(tools) or "(no tools)")


def _read_stdin() -> bytes:
    if sys.stdin is None or sys.stdin.isatty():
        return b""
    return sys.stdin.buffer.read()


@app.command()
def call(
    tool: Annotated[str, typer.Argument(metavar="TOOL", help="Tool name.")],
    args: Annotated[
        str | None,
        typer.Argument(
            metavar="[ARGS]",
            help="Raw argument string (a JSON object); read from stdin when omitted.",
        ),
    ] = None,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_output: JsonOpt = False,
    read_only: ReadOnlyOpt = False,
    sandbox: SandboxOpt = None,
    exit_code: Annotated[
        bool,
        typer.Option(
            "--exit-code",
            help="Exit 1 when the result has success: false (default: 0 whenever the tool ran).",
        ),
    ] = False,
    verbose: VerboseOpt = False,
) -> None:
    """Run one tool call exactly as a model's call would run.

    Prints the result's text (or, with --json, one JSON object) on stdout; a failed result
    also prints "error: KIND: MESSAGE" on stderr. Exit codes: 0 the tool ran (success or
    not); 1 with --exit-code when success is false; 2 usage error (bad option, config or
    workspace); 130 interrupted; 141 stdout closed early (e.g. piped into head).
    """
    cfg = _load(config, read_only, sandbox)
    raw: str | bytes = args if args is not None else _read_stdin()
    registry = _registry(cfg, workspace, call=tool)
    _off_limits_line(registry)
    # Start the configured MCP servers only when the call may be for one of their tools:
    # a built-in call should not pay for starting every mounted server.
    builtin = tool in registry or tool in registry.removed_by_policy()
    mounts = contextlib.nullcontext() if builtin else _mounted(registry, cfg)

    async def run() -> ToolResult:
        from .approval import terminal_approval
        from .context import ToolContext
        from .session import ToolSession

        # a person at a terminal is the approval channel; piped, nobody is asked
        approve = terminal_approval()
        ctx = ToolContext(approval=approve) if approve is not None else None
        session = ToolSession(registry, ctx, owns_registry=True)  # the one call path of hosts
        try:
            async with mounts:
                result: ToolResult = await _with_progress(
                    session.call(tool, raw), tool, json_output
                )
            return result
        finally:
            await session.aclose()

    started = time.perf_counter()
    try:
        result = anyio.run(run)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    elapsed_ms = (time.perf_counter() - started) * 1000
    outcome = "ok" if result.success else (result.error_kind or "failed")
    logger.info("call %s: %s in %.1f ms", tool, outcome, elapsed_ms)
    _note_closed_session(result)
    if json_output:
        full = result.to_dict()
        # the command-line contract: these five keys, plus "content" when the result
        # carries images or other non-text content
        keys = ("success", "output", "error", "file_modified", "structured_metadata")
        payload = {key: full[key] for key in keys}
        if result.content:
            payload["content"] = full["content"]
        _write_stdout(json.dumps(payload, ensure_ascii=False) + "\n")
    else:
        text = result.output
        _write_stdout(text + ("\n" if text and not text.endswith("\n") else ""))
    if not result.success:
        err = result.error or {}
        kind = err.get("kind") or "error"
        message = str(err.get("message") or "").strip()
        _stderr_line("error", f"{kind}: {message}" if message else str(kind), "31")
        if exit_code:
            _leave_abandoned_threads(code=EXIT_TOOL_FAILED)
            raise typer.Exit(EXIT_TOOL_FAILED)
    _leave_abandoned_threads()


def _history_call(
    tool: str, args: dict[str, Any], workspace: Path | None, config: Path | None, js: bool
) -> None:
    """One call of a history tool, as ``octos-tools call`` runs it (exit 1 when it fails);
    with ``[history] enabled = false`` a usage error saying so (not "unknown tool")."""
    if not _load(config).history.enabled:
        _usage_error(
            "workspace history is off in this config ([history] enabled = false); turn it "
            "on to list, diff or restore checkpoints"
        )
    given = {k: v for k, v in args.items() if v is not None}
    call(tool, json.dumps(given), workspace, config, js, exit_code=True)


@history_app.command("log")
def history_log(
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many checkpoints.")] = 20,
    project: Annotated[str | None, typer.Option(help="Only this subfolder.")] = None,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """List the workspace's checkpoints, newest first (the workspace_log tool)."""
    _history_call(
        "workspace_log", {"limit": limit, "project": project}, workspace, config, json_output
    )


@history_app.command("diff")
def history_diff(
    from_commit: Annotated[str, typer.Argument(help="Older checkpoint id.")],
    to_commit: Annotated[str | None, typer.Argument(help="Newer checkpoint (newest).")] = None,
    file: Annotated[str | None, typer.Option("--file", help="Only this file.")] = None,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Show a unified diff between two checkpoints (the workspace_diff tool)."""
    args = {"from_commit": from_commit, "to_commit": to_commit, "file": file}
    _history_call("workspace_diff", args, workspace, config, json_output)


@history_app.command("restore")
def history_restore(
    commit: Annotated[str, typer.Argument(help="Checkpoint id.")],
    file: Annotated[str | None, typer.Option("--file", help="Only this file.")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite files changed outside the history.")
    ] = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Restore one file or the whole workspace to a checkpoint (the workspace_restore
    tool); the restore is itself a checkpoint."""
    args = {"commit": commit, "file": file, "force": force or None}
    _history_call("workspace_restore", args, workspace, config, json_output)


def _write_stdout(text: str) -> None:
    """Write ``text`` to stdout; a closed pipe (``| head``) exits quietly with 141."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_broken_pipe()


def _note_closed_session(result: ToolResult) -> None:
    """Warn on stderr when a result reports a session still running: the one-shot ``call``
    closes every session (and kills its processes) when it exits, so it cannot be resumed."""
    meta = result.structured_metadata or {}
    if meta.get("running") and meta.get("session_id") is not None:
        _note(
            f"session {meta['session_id']} was still running; this one-shot call has "
            "ended it (and killed its processes), so a later call cannot reach it. Keep "
            "sessions across calls with `octos-tools serve` or one ToolRegistry in a program."
        )


async def _with_progress(awaitable: Any, tool: str, quiet: bool) -> Any:
    """Await ``awaitable``, showing a spinner on an interactive terminal after 1 s."""
    if quiet or sys.stderr is None or not sys.stderr.isatty():
        return await awaitable
    from rich.console import Console

    _err = Console(stderr=True)
    result: list[Any] = []

    async def runner() -> None:
        result.append(await awaitable)
        tg.cancel_scope.cancel()

    from .approval import prompt_open

    async with anyio.create_task_group() as tg:
        tg.start_soon(runner)
        await anyio.sleep(1.0)
        started = time.monotonic()
        while True:
            while prompt_open():  # an approval prompt owns the terminal
                await anyio.sleep(0.1)
            with _err.status(f"running {tool}…") as status:
                while not prompt_open():
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
    encoding: Annotated[
        str,
        typer.Option(
            "--encoding", help="Vocabulary of the token counts: o200k_base or cl100k_base."
        ),
    ] = "o200k_base",
    no_defer: Annotated[
        bool,
        typer.Option("--no-defer", help="As `serve --no-defer`: nothing deferred."),
    ] = False,
    read_only: ReadOnlyOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """List every tool: group, tags, class, state (visible, deferred, hidden, unavailable,
    denied), and why each unlisted tool is not listed.

    Token counts are of what a host forwards (compact JSON of name, description and
    parameters), exact with the ``tokens`` extra, else an estimate labelled as one.
    """
    from .builtins import MISSING_EXTRAS
    from .plugins import tool_origins
    from .tokens import ENCODINGS

    if encoding not in ENCODINGS:
        _usage_error(f"--encoding must be one of {', '.join(ENCODINGS)}, not {encoding!r}")
    cfg = _load(config, read_only)
    if no_defer:
        cfg = cfg.model_copy(
            update={"lifecycle": cfg.lifecycle.model_copy(update={"defer": False})}
        )
    registry = _registry(cfg, workspace)
    if cfg.mcp_servers:

        async def mount_once() -> None:
            async with _mounted(registry, cfg):
                pass

        anyio.run(mount_once)
    specs = registry.specs()  # the request's own specs, in request order
    report = _token_report(specs, encoding) if tokens or json_output else None
    rows = _tool_rows(registry, {s.name for s in specs}, report)
    missing = [{"name": n, "extra": e} for n, e in sorted(MISSING_EXTRAS.items())]
    anyio.run(registry.aclose)
    if json_output:
        assert report is not None
        data: dict[str, Any] = {"tools": rows, "missing": missing}
        data["first_request_tokens"] = report.total
        data["tokenizer"] = report.label
        data["encoding"] = report.encoding
        data["exact"] = report.exact
        _write_stdout(json.dumps(data, indent=2) + "\n")
        return
    origins = tool_origins(registry)
    headers = ["name", "group", "tags", "class", "state"]
    if origins:
        headers.append("plugin")
    if tokens:
        headers.append("tokens")
    body: list[list[str]] = []
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
        if origins:
            cells.append(origins.get(row["name"], ""))
        if tokens:
            cells.append("" if row["tokens"] is None else str(row["tokens"]))
        body.append(cells)
    title = f"octos-tools: {len(registry)} tools registered"
    footer: list[str] = []
    if tokens and report is not None:
        footer.append(
            f"first request: {report.total} tokens in {len(specs)} visible specs "
            f"(compact JSON of name, description, parameters; tokenizer: {report.label})"
        )
        asks = next((r for r in rows if r["name"] == "request_user_input"), None)
        if asks is not None and asks["tokens"] is not None:
            footer.append(
                f"serve lists request_user_input only to clients with MCP elicitation: "
                f"{report.total - asks['tokens']} tokens in {len(specs) - 1} specs for the others"
            )
    for row in rows:
        if row["state"] != "visible" and row.get("why"):
            footer.append(f"not listed: {row['name']}: {row['why']}")
    for item in missing:
        footer.append(f"not installed: {item['name']} (pip install 'octos-tools[{item['extra']}]')")
    _print_table(title, headers, body, footer, right_align={"tokens"})


def _print_table(
    title: str,
    headers: list[str],
    body: list[list[str]],
    footer: list[str],
    *,
    right_align: set[str] = frozenset(),  # type: ignore[assignment]
) -> None:
    """A table on stdout: rich on a terminal; plain aligned columns, never wrapped,
    when stdout is a pipe or a file."""
    if sys.stdout.isatty():
        from rich import box
        from rich.console import Console
        from rich.table import Table

        out = Console()
        table = Table(
            title=title,
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
        )
        for col in headers:
            table.add_column(
                col, no_wrap=col != "tags", justify="right" if col in right_align else "left"
            )
        for cells in body:
            table.add_row(*cells)
        out.print(table)
        for line in footer:
            out.print(line, markup=False, highlight=False)
        return
    widths = [
        max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(headers)
    ]
    lines = [title]
    for cells in [headers, *body]:
        parts = [
            c.rjust(w) if h in right_align else c.ljust(w)
            for c, w, h in zip(cells, widths, headers, strict=True)
        ]
        lines.append("  ".join(parts).rstrip())
    lines.extend(footer)
    _write_stdout("\n".join(lines) + "\n")


def _token_report(specs: list[ToolSpec], encoding: str) -> TokenReport:
    from .tokens import measure_specs

    return measure_specs(specs, encoding)


def _tool_rows(
    registry: ToolRegistry, visible: set[str], report: TokenReport | None
) -> list[dict[str, Any]]:
    """One row per registered tool, then one per tool a hard policy removed; ``why`` says
    why a tool is not listed (``None`` for a listed one)."""
    rows: list[dict[str, Any]] = []
    for name in registry.names():
        tool = registry.get(name)
        assert tool is not None
        decision = registry.evaluate(name)
        unavailable = registry.unavailable_reason(name)
        why: str | None = None
        if not decision.allowed:
            state = "denied"
            why = f"denied by the {decision.source or 'tool policy'}: {decision.detail}"
        elif unavailable is not None:
            state = "unavailable"
            why = f"cannot work here: {unavailable} (callable by name: it says so)"
        elif registry.is_deferred(name):
            state = "deferred"
            why = "deferred: tool_search finds it; a call by name loads it"
        elif name in visible:
            state = "visible"
        else:
            state = "hidden"
            why = f"hidden by context_filter {list(registry.context_filter)} (still callable)"
        count = report.per_tool.get(name) if report is not None and state == "visible" else None
        rows.append(
            {
                "name": name,
                "group": registry.group_of(name),
                "tags": list(tool.tags),
                "class": tool.concurrency_class.value,
                "state": state,
                "spawn_only": registry.is_spawn_only(name),
                "tokens": count,
                "why": why,
            }
        )
    for name, (cls, tags) in registry.removed_by_policy().items():
        rows.append(
            {
                "name": name,
                "group": registry.group_of(name),
                "tags": list(tags),
                "class": cls.value,
                "state": "denied",
                "spawn_only": False,
                "tokens": None,
                "why": "removed by a hard policy (tool_policy or read-only mode)",
            }
        )
    return rows


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
    verbose: VerboseOpt = False,
) -> None:
    """Explain which rule of which policy allows or denies TOOL, and why.

    The verdict is the registry's own (the same check every call goes through); the steps
    show each policy in the order they apply, then whether the tool is shown to the model.
    """
    from .policy import resolve_provider_policy

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
        shadowed = cfg.provider if key == cfg.model and cfg.provider != key else None
        if shadowed is not None and shadowed in cfg.tool_policy_by_provider:
            steps.append(
                {
                    "policy": f"tool_policy_by_provider[{shadowed!r}]",
                    "allowed": None,
                    "detail": "not applied: the entry for the exact model id replaces the "
                    "provider's entry (one entry applies, the model id's first; they are not "
                    "combined: repeat the provider's rules in the model's entry if both should "
                    "hold)",
                }
            )
    verdict_decision = registry.evaluate(tool)
    allowed = known and verdict_decision.allowed
    suggestions: tuple[str, ...] = ()
    if not known:
        from .policy_names import suggest_names

        suggestions = suggest_names(tool, _known_names(registry))
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
    from .policy_names import same_job_warnings
    from .sandbox import SandboxSettings

    box = getattr(registry.get("exec_command"), "sandbox", None)
    warnings = same_job_warnings(
        lambda n: registry.evaluate(n).allowed,
        set(registry.names()) | set(registry.removed_by_policy()),
        commands_confined=isinstance(box, SandboxSettings) and box.confined,
    )
    anyio.run(registry.aclose)
    result = {
        "warnings": warnings,
        "tool": tool,
        "allowed": allowed,
        "decided_by": None if allowed else (verdict_decision.source or "registry"),
        "group": registry.group_of(tool),
        "steps": steps,
        "rule": "deny always wins; an empty allow list allows all not denied",
        "unknown": not known,
        "suggestions": list(suggestions),
    }
    if json_output:
        _write_stdout(json.dumps(result, indent=2) + "\n")
    else:
        verdict = "unknown tool" if not known else ("allowed" if allowed else "denied")
        lines = [f"{tool}: {verdict}"]
        for step in steps:
            mark = {True: "allow", False: "deny", None: "note"}[step["allowed"]]
            lines.append(f"  {step['policy']}: {mark} - {step['detail']}")
        _write_stdout("\n".join(lines) + "\n")
    for warning in warnings:
        _warn(warning)
    if not known:
        hint = f"; did you mean {' or '.join(repr(x) for x in suggestions)}?" if suggestions else ""
        _usage_error(f"unknown tool {tool!r}{hint} (`octos-tools tools` lists them)")


@app.command()
def contract(
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    read_only: ReadOnlyOpt = False,
    sandbox: SandboxOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Print the coding tool contract (coding.tool_contract.v1) as JSON."""
    from .contract import build_contract
    from .sandbox import settings_from_config

    cfg = _load(config, read_only, sandbox)
    registry = _registry(cfg, workspace)
    doc = build_contract(
        registry,
        sandbox=settings_from_config(cfg, config_path=cfg.source_path),
        approval_policy=cfg.approval_policy,
    )
    anyio.run(registry.aclose)
    _write_stdout(json.dumps(doc, indent=2) + "\n")


@sandbox_app.command("check")
def sandbox_check(
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_output: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Run real probes in every mode on each engine and print what is enforced here.

    Each engine runs the probes of docs/sandbox.md (22 forbidden actions, 5 allowed) as one
    command per mode; the mode of the configuration (and the engine ``auto`` picks) comes
    first. Exit 1 when the configured mode cannot be enforced.
    """
    from . import trusted_programs
    from .errors import ToolError
    from .sandbox import SandboxMode, engine_status, resolve_engine, settings_from_config
    from .sandbox._probe import NOT_ENFORCED, TRADE_OFFS, run_check

    cfg = _load(config)
    root = workspace if workspace is not None else (cfg.workspace or os.getcwd())
    trusted_programs.distrust_folders([root, *cfg.sandbox.writable_roots])
    box = settings_from_config(cfg, config_path=cfg.source_path)
    try:
        chosen: str | None = resolve_engine(box)
    except ToolError as exc:
        chosen = None
        problem = exc.message
    report: dict[str, Any] = {
        "mode": str(box.mode),
        "engine": chosen,
        "network": box.network,
        "allowed_hosts": list(box.allowed_hosts) if box.egress else [],
        "engines": [],
    }
    if box.egress and chosen == "bubblewrap":
        from .sandbox._bridge import bubblewrap_way

        report["egress_bridge"] = bubblewrap_way()
    lines = [
        f"configured: {box.mode} (engine {box.engine}: "
        + (f"{chosen})" if chosen else f"UNAVAILABLE: {problem})")
        + f", network {'on' if box.network else 'off'}"
        + (
            f" (HTTP(S) through the egress proxy to: {', '.join(box.allowed_hosts)}"
            + (f"; bridge: {report['egress_bridge']}" if "egress_bridge" in report else "")
            + ")"
            if box.egress
            else ""
        )
    ]
    skipped = {
        name: trusted_programs.untrusted_hits(name) for name in trusted_programs.SERVER_PROGRAMS
    }
    report["untrusted_programs"] = [
        {"program": hit, "why": why} for hits in skipped.values() for hit, why in hits
    ]
    for name, hits in skipped.items():
        for _hit, why in hits:
            lines.append(f"untrusted {name} on PATH, never run: {why}")
    for status in engine_status():
        entry: dict[str, Any] = {
            "name": status.name,
            "usable": status.usable,
            "detail": status.detail,
            "fix": status.fix,
            "modes": {},
        }
        lines.append(
            f"{status.name}: {'usable' if status.usable else 'unusable'} ({status.detail})"
        )
        if not status.usable:
            lines.append(f"  fix: {status.fix}")
        else:
            for mode in (SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE):
                results = run_check(status.name, mode)
                bad = [r for r in results if not r.ok]
                forbidden = [r for r in results if r.expected == "blocked"]
                allowed = [r for r in results if r.expected == "allowed"]
                happened = [r.name for r in forbidden if r.happened]
                refused = [r.name for r in allowed if not r.happened]
                entry["modes"][str(mode)] = {
                    "forbidden_happened": happened,
                    "allowed_refused": refused,
                    "probes": {r.name: {"expected": r.expected, "ok": r.ok} for r in results},
                }
                lines.append(
                    f"  {mode}: {len(forbidden) - len(happened)}/{len(forbidden)} forbidden "
                    f"actions blocked, {len(allowed) - len(refused)}/{len(allowed)} allowed "
                    f"actions work"
                    + (f"; NOT enforced: {', '.join(r.name for r in bad)}" if bad else "")
                )
            for name, why in NOT_ENFORCED[status.name].items():
                lines.append(f"  limit: {name}: {why}")
            for why in TRADE_OFFS[status.name]:
                lines.append(f"  refused: {why}")
            entry["trade_offs"] = list(TRADE_OFFS[status.name])
        report["engines"].append(entry)
    if json_output:
        _write_stdout(json.dumps(report, indent=2) + "\n")
    else:
        _write_stdout("\n".join(lines) + "\n")
    if chosen is None:
        raise typer.Exit(1)


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
    no_auth: Annotated[
        bool,
        typer.Option(
            "--no-auth",
            help="HTTP, loopback only: no bearer token (any local user can then call every tool).",
        ),
    ] = False,
    no_defer: Annotated[
        bool,
        typer.Option("--no-defer", help="List every tool from the start (nothing deferred)."),
    ] = False,
    read_only: ReadOnlyOpt = False,
    sandbox: SandboxOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Serve the tools over MCP (stdio by default). Logs go to stderr only.

    HTTP needs a bearer token on every request: OCTOS_TOOLS_MCP_TOKEN or
    serve.auth_token_file, else (loopback) a fresh one per start in a file named on stderr.
    """
    from .mcp.auth import TOKEN_ENV, is_loopback, load_token, transport_security
    from .mcp.server import run_server

    if transport not in ("stdio", "http"):
        _usage_error(f"--transport must be 'stdio' or 'http', not {transport!r}")
    cfg = _load(config, read_only, sandbox)
    if no_defer or not cfg.serve.defer:
        cfg = cfg.model_copy(
            update={"lifecycle": cfg.lifecycle.model_copy(update={"defer": False})}
        )
    token: str | None = None
    if transport == "http":
        if not 0 <= port <= 65535:
            _usage_error(f"--port must be between 0 and 65535, not {port}")
        loopback = is_loopback(host)
        if not loopback and not allow_remote:
            _usage_error(
                f"refusing to bind {host!r}: it is not a loopback address. Pass "
                "--allow-remote (a bearer token is then required) to bind it anyway."
            )
        if no_auth and not loopback:
            _usage_error(f"--no-auth is for loopback addresses only, not {host!r}")
        if not no_auth:
            try:
                token = load_token(cfg.serve.auth_token_file)
            except ConfigError as exc:
                _usage_error(str(exc))
        if not loopback:
            if token is None:
                _usage_error(
                    f"refusing to bind {host!r} without authentication: set {TOKEN_ENV} "
                    "or serve.auth_token_file in the config."
                )
            try:
                transport_security(host, allowed_hosts=cfg.serve.allowed_hosts)
            except ConfigError as exc:
                _usage_error(str(exc))
    registry = _registry(cfg, workspace)
    _sandbox_line(cfg, registry.workspace.root if registry.workspace is not None else None)
    _off_limits_line(registry, serving=True)
    sock = None
    if transport == "http":
        from .mcp.http import bind_socket  # the HTTP stack: not loaded for stdio

        try:
            sock = bind_socket(host, port)
        except OSError as exc:
            _usage_error(f"cannot listen on {host}:{port}: {exc.strerror or exc}")

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
                    no_auth=no_auth,
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
    _leave_abandoned_threads()


def _leave_abandoned_threads(grace: float = 2.0, code: int = 0) -> None:
    """End the process now when threads other than the main one still run after serving:
    a plugin call answered ``timeout`` whose code still blocks in its thread (Python cannot
    stop a thread, and the interpreter joins every non-daemon thread before it exits: a
    hung plugin would keep a SIGTERM'd ``serve``, or a ``call``, alive forever). Threads get
    ``grace`` seconds in all to end on their own; the process then exits with ``code``."""
    import threading

    deadline = time.monotonic() + grace
    for thread in threading.enumerate():
        if thread is threading.main_thread() or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
    left = [t for t in threading.enumerate() if t.is_alive() and not t.daemon]
    if len(left) > 1:
        logger.warning("exiting with %d thread(s) still running (timed-out plugins)", len(left) - 1)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _app_for(args: list[str]) -> typer.Typer:
    """``app`` with only the command that ``args`` names (typer builds the click command of
    every registered command on each run: about 10 ms for all of them, a few for one).
    The whole app when no known command is named (``--help``, a typo: its listing and its
    suggestions need every command). The root takes no option with a value, so the first
    argument that is not an option is the command."""
    name = next((a for a in args if not a.startswith("-")), None)
    commands = [
        c
        for c in app.registered_commands
        if c.callback is not None
        and (c.name or c.callback.__name__.lower().replace("_", "-")) == name
    ]
    groups = [g for g in app.registered_groups if g.name == name]
    if len(commands) + len(groups) != 1:
        return app
    trimmed = copy.copy(app)
    trimmed.registered_commands = commands
    trimmed.registered_groups = groups
    return trimmed


def main() -> None:
    """Entry point of the ``octos-tools`` script (exit codes: see the module docstring)."""
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    try:
        _app_for(sys.argv[1:])()
    except OctosToolsError as exc:  # a programmer-facing error that escaped a command
        _stderr_line("error", str(exc), "31")
        sys.exit(EXIT_USAGE)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)


def _quiet_broken_pipe() -> NoReturn:
    """Standard output was closed early (``octos-tools tools | head``): point stdout at
    /dev/null so the interpreter's final flush cannot complain, and exit 141."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    os._exit(EXIT_BROKEN_PIPE)
