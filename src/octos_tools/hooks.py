"""Hooks around a tool call: before it (allow, deny, ask, rewrite) and after it (observe,
add context), as Python callbacks or as commands in Claude Code's wire format.

A :class:`Hook` is an event name, a matcher on tool names and a callback
``await callback(HookInput) -> HookOutput | None``. Register one on a registry (every
session) or on one session::

    async def no_env_files(event: HookInput) -> HookOutput | None:
        if str(event.tool_input.get("path", "")).endswith(".env"):
            return HookOutput(permission_decision="deny", reason="no .env files")
        return None

    registry.add_hook("PreToolUse", no_env_files, matcher="read_file|write_file")

A :class:`CommandHook` runs a command the way Claude Code does (its *Hooks reference*,
https://code.claude.com/docs/en/hooks): ``sh -c COMMAND`` in the workspace, the event as one
JSON object on stdin (``session_id``, ``cwd``, ``hook_event_name``, ``tool_name``,
``tool_input``, ``tool_use_id``; ``tool_response`` after the call); the environment is the
commands' scrubbed one (:func:`octos_tools.builtins.runtime.command_env`) plus
``CLAUDE_PROJECT_DIR`` (the workspace root), so a script written for Claude Code runs
unmodified. The command tools' ``cmd`` is also sent as ``tool_input.command``, the field
Claude Code's Bash hooks read (a validator that finds no ``command`` would let every
command through), and an ``updatedInput`` that changes ``command`` changes ``cmd``. Its
exit code:

* ``0``: stdout, when it is a JSON object, is read: ``hookSpecificOutput`` with
  ``permissionDecision`` (``allow`` | ``deny`` | ``ask``), ``permissionDecisionReason``,
  ``updatedInput`` and ``additionalContext``; the older top-level ``decision``
  (``approve`` / ``block``) and ``reason`` too. Other stdout is ignored (logged when it
  looks like JSON and does not parse);
* ``2``: the call is blocked (before it) or the model is told (after it); stderr is the
  reason the model reads;
* anything else: a failure of the hook, logged; the call goes on.

A hook that fails (raises, times out, exits with another code, prints invalid JSON) does not
block the call, unless it was registered with ``fail_closed=True``: then the call is refused
(``policy_denied``) as if the hook had denied it. A command still running at its timeout is
killed with its process group. Its answer is read when it *exits*: a background process it
started that keeps stdout open does not hold the call (what was printed before the exit
counts, after a :data:`DRAIN_SECS` grace); such a process, and one that left the group
with ``setsid``, is not the hook's to wait for and is not killed.

How the pipeline combines the answers of several matching hooks (they run concurrently) is
in :mod:`octos_tools.stages`: ``deny`` wins over ``ask``, ``ask`` over ``allow``; rewrites
apply in registration order. Hooks run only for a call the policies allowed, so no hook's
``allow`` overrides a policy's deny (octos ``[HOOK DENIED]``; Claude Code: "a hook that
returns allow doesn't skip the deny rules").
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "HOOK_EVENTS",
    "CommandHook",
    "Hook",
    "HookCallback",
    "HookError",
    "HookInput",
    "HookOutput",
    "HookSet",
    "HooksOwner",
    "compile_matcher",
]

logger = logging.getLogger("octos_tools.hooks")

HookEvent = Literal["PreToolUse", "PostToolUse", "PostToolUseFailure"]

HOOK_EVENTS: tuple[str, ...] = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
"""The events octos-tools runs hooks for: before a call, after a call that succeeded, after
a call that ran and failed (Claude Code's names)."""

_MAX_STREAM_BYTES = 1 << 20
"""At most this much of a command hook's stdout or stderr is read (1 MiB)."""
_MAX_REASON_CHARS = 10_000
DRAIN_SECS = 0.5
"""After a command hook exits, how long its output is still read (seconds) before its
answer is taken: a background child may hold the pipes open for ever."""
"""Reasons and added context are cut at this many characters (Claude Code caps hook output
it injects at 10,000 characters)."""
_EXACT_MATCHER = re.compile(r"^[A-Za-z0-9_|-]+$")

Decision = Literal["allow", "deny", "ask"]


class HookError(Exception):
    """A hook failed (timed out, could not start, exited with a code other than 0 or 2,
    printed invalid JSON): logged and ignored, unless the hook is ``fail_closed``."""


@dataclass(frozen=True, slots=True)
class HookInput:
    """What a hook is told about a call (Claude Code's hook input fields).

    Attributes:
        hook_event_name: ``PreToolUse``, ``PostToolUse`` or ``PostToolUseFailure``.
        tool_name: the tool's name.
        tool_input: the call's validated arguments as JSON values.
        tool_use_id: the model's id of the call (``""`` outside a model turn).
        session_id: the host session (the context's ``session_key``), ``""`` if none.
        cwd: the workspace root (else the process's current directory).
        tool_response: after a call: ``{"success", "output", "structured_metadata"}`` of
            the result the model will read (capped and redacted); ``None`` before.
        error: after a failed call: its ``Error [kind]: message`` text; else ``None``.
    """

    hook_event_name: str
    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str = ""
    session_id: str = ""
    cwd: str = ""
    tool_response: dict[str, Any] | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object a command hook reads on stdin (``cmd`` also as ``command``:
        module docstring)."""
        tool_input = self.tool_input
        if isinstance(tool_input.get("cmd"), str) and "command" not in tool_input:
            tool_input = {**tool_input, "command": tool_input["cmd"]}
        data: dict[str, Any] = {
            "session_id": self.session_id,
            "cwd": self.cwd,
            "hook_event_name": self.hook_event_name,
            "tool_name": self.tool_name,
            "tool_input": tool_input,
            "tool_use_id": self.tool_use_id,
        }
        if self.tool_response is not None:
            data["tool_response"] = self.tool_response
        if self.error is not None:
            data["error"] = self.error
        return data


@dataclass(frozen=True, slots=True)
class HookOutput:
    """A hook's answer; every field optional.

    Attributes:
        permission_decision: before a call: ``"allow"`` (go on), ``"deny"`` (refuse:
            ``policy_denied`` with :attr:`reason`), ``"ask"`` (the context's approval
            channel decides); ``None``: no opinion.
        reason: why (shown to the model for a deny and to the person for an ask).
        updated_input: before a call: arguments that replace the call's (validated again).
        additional_context: text added to the result the model reads.
        block: after a call: tell the model :attr:`reason` (Claude Code's
            ``decision: "block"`` / exit 2 of a PostToolUse hook; the call already ran).
    """

    permission_decision: Decision | None = None
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    additional_context: str = ""
    block: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HookOutput:
        """Read Claude Code's JSON hook output (``hookSpecificOutput`` and the older
        top-level ``decision`` / ``reason``).

        Raises:
            HookError: when a known field has the wrong type or value.
        """
        specific = data.get("hookSpecificOutput") or {}
        if not isinstance(specific, Mapping):
            raise HookError("hookSpecificOutput is not an object")
        decision = specific.get("permissionDecision")
        reason = specific.get("permissionDecisionReason")
        block = False
        legacy = data.get("decision")
        if decision is None and legacy is not None:
            decision = {"approve": "allow", "block": "deny"}.get(legacy)
            if decision is None:
                raise HookError(f"decision {legacy!r} is not approve or block")
            block = legacy == "block"
        if reason is None:
            reason = data.get("reason")
        if decision not in (None, "allow", "deny", "ask"):
            raise HookError(f"permissionDecision {decision!r} is not allow, deny or ask")
        updated = specific.get("updatedInput")
        if updated is not None and not isinstance(updated, dict):
            raise HookError("updatedInput is not an object")
        context = specific.get("additionalContext")
        for name, value in (("permissionDecisionReason", reason), ("additionalContext", context)):
            if value is not None and not isinstance(value, str):
                raise HookError(f"{name} is not a string")
        return cls(
            permission_decision=decision,
            reason=(reason or "")[:_MAX_REASON_CHARS],
            updated_input=updated,
            additional_context=(context or "")[:_MAX_REASON_CHARS],
            block=block,
        )


HookCallback = Callable[[HookInput], Awaitable[HookOutput | None]]
"""``await callback(event) -> HookOutput | None`` (``None``: no opinion)."""


def compile_matcher(matcher: str) -> Callable[[str], bool]:
    """The test a matcher makes on tool names (Claude Code's rule): ``""`` or ``"*"``
    matches every tool; letters, digits, ``_``, ``-`` and ``|`` only are exact names
    (``"read_file|write_file"``); anything else is a regular expression searched in the
    name (``"^mcp__.*"``, ``"file$"``).

    Raises:
        ValueError: if the matcher is not a valid regular expression.
    """
    if matcher in ("", "*"):
        return _match_all
    if _EXACT_MATCHER.match(matcher):
        names = frozenset(matcher.split("|"))
        return names.__contains__
    try:
        pattern = re.compile(matcher)
    except re.error as exc:
        raise ValueError(f"matcher {matcher!r} is not a valid regular expression: {exc}") from None
    return lambda name: pattern.search(name) is not None


def _match_all(name: str) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Hook:
    """One registered hook.

    Attributes:
        event: one of :data:`HOOK_EVENTS`.
        callback: the :data:`HookCallback`.
        matcher: the tool names it runs for (:func:`compile_matcher`).
        fail_closed: a failure of the hook refuses the call (before it) instead of being
            ignored.

    Raises:
        ValueError: for an unknown event or an invalid matcher.
    """

    event: str
    callback: HookCallback
    matcher: str = ""
    fail_closed: bool = False
    _test: Callable[[str], bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {self.event!r}; use one of {HOOK_EVENTS}")
        object.__setattr__(self, "_test", compile_matcher(self.matcher))

    def matches(self, tool_name: str) -> bool:
        """Whether this hook runs for ``tool_name``."""
        return self._test(tool_name)


class HookSet:
    """The hooks of one place, in registration order: the registry's
    (:attr:`ToolRegistry.hooks <octos_tools.registry.ToolRegistry.hooks>`, every session's
    calls) or one session's (:attr:`ToolSession.hooks
    <octos_tools.session.ToolSession.hooks>`, after the registry's). The one way hooks are
    added and removed; ``add_hook`` / ``remove_hook`` of the registry and the session are
    this class's :meth:`add` / :meth:`remove`.

    Args:
        on_change: called (no arguments) after each :meth:`add` / :meth:`remove`: the
            owner recomputes its stages (:mod:`octos_tools.stages`).
    """

    __slots__ = ("_hooks", "_on_change")

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self._hooks: tuple[Hook, ...] = ()
        self._on_change = on_change

    def add(
        self,
        event: str,
        callback: HookCallback,
        *,
        matcher: str = "",
        fail_closed: bool = False,
    ) -> Hook:
        """Run ``callback`` around every matching call of this place.

        Args:
            event: ``"PreToolUse"``, ``"PostToolUse"`` or ``"PostToolUseFailure"``.
            callback: ``await callback(HookInput) -> HookOutput | None`` (a
                :class:`CommandHook` for a command).
            matcher: tool names (``"read_file|write_file"``), a regular expression, or
                ``""`` / ``"*"`` for all (:func:`compile_matcher`).
            fail_closed: a failure of the hook refuses the call instead of being ignored.

        Returns:
            The :class:`Hook` (for :meth:`remove`).

        Raises:
            ValueError: for an unknown event or an invalid matcher.
        """
        hook = Hook(event, callback, matcher, fail_closed)
        self._hooks = (*self._hooks, hook)
        self._changed()
        return hook

    def remove(self, hook: Hook) -> bool:
        """Undo :meth:`add`; ``False`` if ``hook`` is not one of this set's."""
        if hook not in self._hooks:
            return False
        self._hooks = tuple(h for h in self._hooks if h is not hook)
        self._changed()
        return True

    def replace_all(self, hooks: Sequence[Hook]) -> None:
        """Hold exactly ``hooks`` (a derived registry copies its parent's)."""
        self._hooks = tuple(hooks)
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()

    def as_tuple(self) -> tuple[Hook, ...]:
        """The hooks, in registration order."""
        return self._hooks

    def __iter__(self) -> Iterator[Hook]:
        return iter(self._hooks)

    def __len__(self) -> int:
        return len(self._hooks)

    def __bool__(self) -> bool:
        return bool(self._hooks)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HookSet):
            return self._hooks == other.as_tuple()
        if isinstance(other, tuple):
            return self._hooks == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"HookSet({list(self._hooks)!r})"


class HooksOwner:
    """``add_hook`` / ``remove_hook`` over the owner's :attr:`hooks`: the conveniences of a
    :class:`~octos_tools.registry.ToolRegistry` (every session's calls) and a
    :class:`~octos_tools.session.ToolSession` (its own calls, after the registry's).
    """

    __slots__ = ()

    @property
    def hooks(self) -> HookSet:
        """The owner's :class:`HookSet` (each owner defines it)."""
        raise NotImplementedError

    def add_hook(
        self,
        event: str,
        callback: HookCallback,
        *,
        matcher: str = "",
        fail_closed: bool = False,
    ) -> Hook:
        """``self.hooks.add(...)`` (:meth:`HookSet.add`: arguments and errors there).

        Returns:
            The :class:`Hook` (for :meth:`remove_hook`).

        Raises:
            ValueError: for an unknown event or an invalid matcher.
        """
        return self.hooks.add(event, callback, matcher=matcher, fail_closed=fail_closed)

    def remove_hook(self, hook: Hook) -> bool:
        """``self.hooks.remove(hook)``: ``False`` if ``hook`` is not one of the owner's."""
        return self.hooks.remove(hook)


class CommandHook:
    """A command run as a hook, in Claude Code's wire format (module docstring).

    Args:
        command: the command line, run by ``sh -c``.
        timeout: seconds before the command (and its process group) is killed (Claude
            Code's default: 60).
        cwd: the folder it runs in (the workspace root; default the current directory).

    Raises:
        ValueError: for an empty command or a non-positive timeout.
    """

    def __init__(self, command: str, *, timeout: float = 60.0, cwd: str | None = None) -> None:
        if not command.strip():
            raise ValueError("a hook command is empty")
        if timeout <= 0:
            raise ValueError("a hook timeout must be positive (seconds)")
        self.command = command
        self.timeout = timeout
        self.cwd = cwd

    def __repr__(self) -> str:
        return f"CommandHook({self.command!r}, timeout={self.timeout:g})"

    async def __call__(self, event: HookInput) -> HookOutput | None:
        """Run the command with ``event`` on stdin and read its answer.

        Raises:
            HookError: timeout, start failure, an exit code other than 0 and 2, invalid
                JSON on stdout.
        """
        import anyio

        from .builtins.runtime import command_env

        cwd = self.cwd or event.cwd or os.getcwd()
        env = command_env()
        env["CLAUDE_PROJECT_DIR"] = cwd
        env.update(_trace_env())
        payload = json.dumps(event.to_json(), ensure_ascii=False, default=str).encode()
        try:
            proc = await anyio.open_process(
                ["/bin/sh", "-c", self.command],
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise HookError(f"hook {self.command!r} could not start: {exc}") from None
        out = bytearray()
        err = bytearray()
        drained = [anyio.Event(), anyio.Event()]

        async def read(stream: Any, buf: bytearray, done: anyio.Event) -> None:
            try:
                await _read_into(stream, buf)
            finally:
                done.set()

        try:
            with anyio.fail_after(self.timeout):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(read, proc.stdout, out, drained[0])
                    tg.start_soon(read, proc.stderr, err, drained[1])
                    assert proc.stdin is not None
                    try:
                        await proc.stdin.send(payload)
                        await proc.stdin.aclose()
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        pass  # the hook did not read its input: its answer still counts
                    code = await proc.wait()
                    with anyio.move_on_after(DRAIN_SECS):
                        for done in drained:
                            await done.wait()
                    if not all(d.is_set() for d in drained):
                        logger.warning(
                            "hook %r exited, but a background process it started keeps its "
                            "output open; its answer is what it printed before exiting",
                            self.command,
                        )
                    tg.cancel_scope.cancel()
        except TimeoutError:
            _kill_group(proc.pid)
            with anyio.CancelScope(shield=True):
                await proc.wait()
            raise HookError(
                f"hook {self.command!r} did not finish within {self.timeout:g} s and was killed"
            ) from None
        except BaseException:
            _kill_group(proc.pid)
            with anyio.CancelScope(shield=True):
                await proc.wait()
            raise
        finally:
            _kill_group(proc.pid)  # anything the hook left running in its group
            with anyio.CancelScope(shield=True):
                await proc.aclose()  # its pipes: no transport left for the loop to close
        stderr = err.decode("utf-8", "replace").strip()
        if code == 2:
            reason = stderr[:_MAX_REASON_CHARS] or f"blocked by hook {self.command!r}"
            if event.hook_event_name == "PreToolUse":
                return HookOutput(permission_decision="deny", reason=reason, block=True)
            return HookOutput(reason=reason, block=True)
        if code != 0:
            raise HookError(
                f"hook {self.command!r} exited with status {code}"
                + (f": {stderr[:500]}" if stderr else "")
            )
        text = out.decode("utf-8", "replace").strip()
        if not text.startswith("{"):
            return None  # plain text on stdout: Claude Code shows it in verbose mode only
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise HookError(f"hook {self.command!r} printed invalid JSON: {exc}") from None
        if not isinstance(data, dict):
            return None
        answer = HookOutput.from_json(data)
        return _command_as_cmd(answer, event)


def _command_as_cmd(answer: HookOutput, event: HookInput) -> HookOutput:
    """An ``updatedInput`` naming Claude Code's ``command`` for a tool whose field is
    ``cmd``: the new ``command`` (when it changed) becomes ``cmd``; the alias is dropped."""
    import dataclasses

    updated = answer.updated_input
    if updated is None or "command" not in updated or "command" in event.tool_input:
        return answer
    if "cmd" not in event.tool_input:
        return answer
    new = dict(updated)
    command = new.pop("command")
    if command != event.tool_input.get("cmd") or "cmd" not in new:
        new["cmd"] = command
    return dataclasses.replace(answer, updated_input=new)


async def _read_into(stream: Any, buf: bytearray) -> None:
    import anyio

    if stream is None:
        return
    try:
        async for chunk in stream:
            if len(buf) < _MAX_STREAM_BYTES:
                buf.extend(chunk[: _MAX_STREAM_BYTES - len(buf)])
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        return


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _trace_env() -> dict[str, str]:
    """``TRACEPARENT`` / ``TRACESTATE`` of the current span, when tracing is on."""
    from .tracing import trace_env

    return trace_env()
