"""The one line added to a command's result when the sandbox probably blocked it.

A blocked command is not a tool error: its own output and exit code come back, and this line
says which rule blocked it and how to ask for more. Whether the sandbox was the cause is
guessed from the output, as Codex does (``codex-rs/core/src/exec.rs``,
``is_likely_sandbox_denied``: a non-zero exit with "Read-only file system", "Permission
denied", "Operation not permitted" ... in the output).
"""

from __future__ import annotations

from ._settings import SandboxMode

__all__ = ["blocked_note"]

_WRITE = ("read-only file system", "permission denied", "operation not permitted")
_NET = (
    "network is unreachable",
    "could not resolve host",
    "temporary failure in name resolution",
    "name or service not known",
    "connection refused",
    "couldn't connect to server",  # curl's exit 7 hides the EPERM of socket()
    "address family not supported",
)
_PROXY = (
    "octos-tools egress proxy:",
    "tunnel failed, response 403",
    "tunnel connection failed: 403",
)
_ESCALATE = (
    'To run it outside the sandbox, call again with sandbox_permissions: "require_escalated" '
    "and a justification"
)


def blocked_note(
    output: str, exit_code: int | None, *, mode: SandboxMode, engine: str, network: bool
) -> str | None:
    """The note for a command that exited non-zero with a sandbox denial in its output.

    Args:
        output: the command's (possibly cut) output text.
        exit_code: its exit status (``None``: still running).
        mode: the mode it ran in; engine: the engine; network: whether the network was on.

    Returns:
        One line, or ``None`` when nothing points at the sandbox.
    """
    if mode is SandboxMode.DANGER_FULL_ACCESS or not exit_code:
        return None
    low = output.lower()
    rules: list[str] = []
    if any(marker in low for marker in _WRITE):
        if mode is SandboxMode.READ_ONLY:
            rules.append("read-only: writes only to /dev/null and $TMPDIR")
        else:
            rules.append(
                "workspace-write: writes only in the workspace, $TMPDIR and writable_roots; "
                ".git hooks/config, credential stores and the server's files are protected; "
                "no Unix sockets, ptrace or host processes"
            )
    if any(marker in low for marker in _PROXY):
        rules.append("network only to [sandbox] allowed_hosts, through the egress proxy")
    elif not network and any(marker in low for marker in _NET):
        rules.append("network off")
    if not rules:
        return None
    return f"Sandbox ({mode}, {engine}) may have blocked this: {'; '.join(rules)}. {_ESCALATE}."
