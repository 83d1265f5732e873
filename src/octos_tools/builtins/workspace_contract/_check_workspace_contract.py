"""The contract file, its validators and the ``check_workspace_contract`` tool (the family's
rules are in :mod:`octos_tools.builtins.workspace_contract`).

octos serves ``check_workspace_contract`` for its slides and sites projects; here the
contract is a file any project can carry, ``.octos-workspace.toml`` at the project's root::

    [[deliverables]]
    path = "dist/*.html"        # a glob, relative to the project

    [[validators]]
    name = "tests"
    command = "python -m pytest -q"
    timeout_secs = 120

The project is *ready* when every deliverable pattern matches at least one file and every
validator exits 0. The report names each missing deliverable and each failing validator
with the tail of its output; ``only_not_ready`` leaves out what passed.

Validators run through :func:`run_validator`, which wraps each command for the ``read-only``
sandbox (:func:`octos_tools.sandbox.wrap_command`): they can read the workspace and write
nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from pydantic import Field

from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...typed import ToolArgs
from .._base import WorkspaceTool

if TYPE_CHECKING:
    from ...config import Config
    from ...context import ToolContext
    from ...registry import ToolRegistry
    from ...sandbox import SandboxSettings
    from ...workspace import Workspace


CONTRACT_FILE = ".octos-workspace.toml"
_TAIL_CHARS = 1500
_MAX_TIMEOUT = 1800


@dataclass(frozen=True)
class ValidatorRun:
    """How one validator ended: ``exit_code`` (``None`` on timeout) and its output's tail."""

    exit_code: int | None
    tail: str


def run_validator(
    command: str,
    cwd: Path,
    timeout_secs: float,
    settings: SandboxSettings | None = None,
    workspace: Path | None = None,
) -> ValidatorRun:
    """Run one validator's ``command`` (``sh -c``) in ``cwd``, at most ``timeout_secs``,
    under the sandbox ``settings`` (read-only: :func:`octos_tools.sandbox.wrap_command`);
    ``None`` runs it unconfined.

    Raises:
        ToolError: ``sandbox_unavailable`` when the sandbox cannot be enforced here.
    """
    argv = ["/bin/sh", "-c", command]
    env = dict(os.environ)
    spawn = None
    if settings is not None:
        from ...sandbox import wrap_command

        spawn = wrap_command(argv, cwd, env, settings, workspace)
        argv, env = spawn.argv, spawn.env
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=spawn.pass_fds if spawn is not None else (),
            preexec_fn=spawn.preexec if spawn is not None else None,
        )
    finally:
        if spawn is not None:
            spawn.close()
    try:
        out, _ = proc.communicate(timeout=timeout_secs)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        code = None
    text = out.decode("utf-8", "replace")
    return ValidatorRun(code, text[-_TAIL_CHARS:])


class CheckWorkspaceContractTool(WorkspaceTool):
    """``check_workspace_contract {project?, only_not_ready=false}`` (module docstring).

    Errors: ``not_found`` (no contract file), ``invalid_arguments`` (a contract that does
    not parse, or an entry without its fields), path kinds for ``project``.
    """

    name = "check_workspace_contract"
    title = "Check workspace contract"
    description = (
        "Check .octos-workspace.toml: every deliverable present and every validator "
        "passing; reports ready or what is missing."
    )
    tags = ("gateway", "workspace")
    concurrency_class = ConcurrencyClass.SAFE
    sandbox: SandboxSettings | None = None
    """The sandbox validators run under (read-only when registered from a config)."""

    class Args(ToolArgs):
        project: str | None = Field(None, description="Subfolder holding the contract.")
        only_not_ready: bool = Field(False, description="Report only what fails.")

    async def run(
        self, args: CheckWorkspaceContractTool.Args, ctx: ToolContext | None
    ) -> ToolResult:
        ws = self.workspace_for(ctx)
        base = ws.relpath(args.project) if args.project else "."
        contract_rel = CONTRACT_FILE if base == "." else f"{base}/{CONTRACT_FILE}"
        try:
            raw = ws.read_bytes(contract_rel, max_bytes=1 << 20)
        except ToolError as exc:
            if exc.kind is ErrorKind.NOT_FOUND:
                raise ToolError(
                    ErrorKind.NOT_FOUND,
                    f"{contract_rel} does not exist; it lists [[deliverables]] path and "
                    "[[validators]] name, command, timeout_secs",
                ) from None
            raise
        try:
            doc = tomllib.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, f"{contract_rel}: {exc}") from None
        root = ws.root if base == "." else ws.root / base
        deliverables = _entries(doc, "deliverables", contract_rel)
        validators = _entries(doc, "validators", contract_rel)

        def work() -> ToolResult:
            report: list[JSONObject] = []
            lines: list[str] = []
            ready = True
            for d in deliverables:
                pattern = d.get("path")
                if not isinstance(pattern, str) or not pattern:
                    raise ToolError(
                        ErrorKind.INVALID_ARGUMENTS, f"{contract_rel}: a deliverable has no path"
                    )
                found = _matches(root, pattern)
                ok = bool(found)
                ready &= ok
                report.append({"deliverable": pattern, "ok": ok, "found": found[:20]})
                if not ok or not args.only_not_ready:
                    lines.append(f"{'ok' if ok else 'MISSING'} deliverable {pattern}")
            for v in validators:
                name, command = v.get("name"), v.get("command")
                if not isinstance(command, str) or not command:
                    raise ToolError(
                        ErrorKind.INVALID_ARGUMENTS, f"{contract_rel}: a validator has no command"
                    )
                label = name if isinstance(name, str) and name else command
                timeout = v.get("timeout_secs", 120)
                if not isinstance(timeout, (int, float)) or not 0 < timeout <= _MAX_TIMEOUT:
                    timeout = 120
                run = run_validator(command, root, float(timeout), self.sandbox, ws.root)
                ok = run.exit_code == 0
                ready &= ok
                entry: JSONObject = {"validator": label, "ok": ok, "exit_code": run.exit_code}
                if not ok:
                    entry["output_tail"] = run.tail
                report.append(entry)
                if ok and not args.only_not_ready:
                    lines.append(f"ok validator {label}")
                elif not ok:
                    why = "timed out" if run.exit_code is None else f"exit {run.exit_code}"
                    lines.append(f"FAILED validator {label} ({why}); output tail:\n{run.tail}")
            head = "ready" if ready else "not ready"
            text = f"{base if base != '.' else 'workspace'}: {head}"
            if lines:
                text += "\n" + "\n".join(lines)
            meta: JSONObject = {"ready": ready, "project": base, "checks": report}
            return ToolResult.ok(text, structured_metadata=meta)

        return await anyio.to_thread.run_sync(work)


def _entries(doc: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
    items = doc.get(key, [])
    if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, f"{where}: {key} must be [[{key}]] tables")
    return items


def _matches(root: Path, pattern: str) -> list[str]:
    if pattern.startswith("/") or ".." in Path(pattern).parts:
        return []
    real = os.path.realpath(root)
    found = []
    for p in sorted(root.glob(pattern)):
        if os.path.realpath(p).startswith(real + os.sep) and (p.is_file() or p.is_dir()):
            found.append(str(p.relative_to(root)))
    return found


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``check_workspace_contract``; its validators run read-only."""
    from ...sandbox import settings_from_config

    tool = CheckWorkspaceContractTool(workspace)
    tool.sandbox = settings_from_config(config, mode="read-only")
    registry.register(tool)
