"""Runtime tools: ``shell``, ``exec_command``, ``write_stdin`` and the ``bash`` alias.

Rules: every command is ``sh -c`` in the sandbox of :mod:`octos_tools.sandbox`; nothing it
starts outlives its call; its environment is scrubbed; an exit code is an answer, a timeout
a failure. Each rule lives in the module named for it:

* :mod:`._safe_policy`: the SafePolicy deny/ask rules, matched on the parsed command;
* :mod:`._escalation`: the sandbox mode a command runs in (an approved escalation:
  ``danger-full-access``);
* :mod:`._environment`: what a command's environment holds (secrets scrubbed by name and
  by value, injection variables removed, pagers and prompts off) and how the host's own
  environment is kept out of ``/proc/<pid>/environ``; also used for ``rg``, ``git`` and hooks;
* :mod:`._command`: one running ``sh -c`` and how it is ended (:mod:`._cgroup` where cgroup
  v2 is writable, else the freeze-and-kill walk of :mod:`._process_tree`);
* :mod:`._capture` and :mod:`._terminal_text`: the output kept (head and tail, cut between
  characters) and cleaned of terminal control sequences and ``\\r`` redraws;
* :mod:`._completion`: how a finished command reads;
* :mod:`._exec_sessions`: ``exec_command`` sessions read and written with ``write_stdin``;
* :mod:`._command_tools`: the four tools and their arguments.

Layout: the one every family follows (see :mod:`octos_tools.builtins`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._capture import MIN_OUTPUT_BYTES, OutputCapture
from ._command import DRAIN_GRACE_SECS, KILL_GRACE_SECS, RunningCommand, run_to_completion
from ._command_tools import (
    MAX_TIMEOUT_SECS,
    MIN_TIMEOUT_SECS,
    BashTool,
    ExecCommandTool,
    ShellTool,
    WriteStdinTool,
)
from ._completion import exit_text, seconds
from ._environment import (
    NONINTERACTIVE_ENV,
    command_env,
    is_secret_name,
    is_secret_value,
    scrubbed_env,
)
from ._exec_sessions import ExecSession, SessionManager
from ._safe_policy import ASK_PATTERNS, DENY_PATTERNS, check_command
from ._terminal_text import clean_terminal_text

if TYPE_CHECKING:
    from ...config import Config
    from ...registry import ToolRegistry
    from ...workspace import Workspace

__all__ = [
    "ASK_PATTERNS",
    "DENY_PATTERNS",
    "DRAIN_GRACE_SECS",
    "KILL_GRACE_SECS",
    "MAX_TIMEOUT_SECS",
    "MIN_OUTPUT_BYTES",
    "MIN_TIMEOUT_SECS",
    "NONINTERACTIVE_ENV",
    "BashTool",
    "ExecCommandTool",
    "ExecSession",
    "OutputCapture",
    "RunningCommand",
    "SessionManager",
    "ShellTool",
    "WriteStdinTool",
    "check_command",
    "clean_terminal_text",
    "command_env",
    "exit_text",
    "is_secret_name",
    "is_secret_value",
    "register",
    "run_to_completion",
    "scrubbed_env",
    "seconds",
]


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``shell``, ``exec_command``, ``bash`` and ``write_stdin`` (octos order).

    The four tools share one :class:`SessionManager` bounded by
    ``config.shell.max_sessions`` (and ``max_sessions_per_client`` per host session), and
    one sandbox (:func:`octos_tools.sandbox.settings_from_config`).
    """
    from ...sandbox import settings_from_config

    box = settings_from_config(config, config_path=config.source_path, workspace=workspace.root)
    policy = config.approval_policy
    sessions = SessionManager(config.shell.max_sessions, config.shell.max_sessions_per_client)
    registry.register(ShellTool(workspace, config.shell, sessions, box, policy))
    registry.register(ExecCommandTool(workspace, config.shell, sessions, box, policy))
    registry.register(BashTool(workspace, config.shell, sessions, box, policy))
    registry.register(WriteStdinTool(sessions, config.shell, policy))
