"""octos-tools: the tool runtime for LLM agents.

The public API is re-exported here; everything else is importable but not promised.
Names are imported on first use (PEP 562 module ``__getattr__``), so ``import octos_tools``
loads nothing else.
"""

from __future__ import annotations

import importlib

from ._version import __version__

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: importing typing costs ~9 ms

if TYPE_CHECKING:
    from .arguments import MAX_ARGS_SIZE, estimate_json_size
    from .config import Config, load_config
    from .context import ApprovalRequest, ToolContext, ToolPermissions, current_context
    from .errors import (
        ArgumentError,
        ConfigError,
        ErrorKind,
        OctosToolsError,
        PathError,
        ToolError,
    )
    from .execution import execute_batch
    from .function_tool import FunctionTool, tool
    from .lifecycle import ToolLifecycle
    from .policy import GROUPS, PolicyDecision, ToolPolicy, resolve_provider_policy
    from .registry import CatalogEntry, ToolRegistry
    from .session import ToolSession
    from .tasks import TaskRecord, TaskStatus, TaskSupervisor
    from .tool_types import ConcurrencyClass, TokenUsage, Tool, ToolCall, ToolResult, ToolSpec

_EXPORTS: dict[str, str] = {
    "MAX_ARGS_SIZE": "arguments",
    "estimate_json_size": "arguments",
    "Config": "config",
    "load_config": "config",
    "ApprovalRequest": "context",
    "ToolContext": "context",
    "ToolPermissions": "context",
    "current_context": "context",
    "ArgumentError": "errors",
    "ConfigError": "errors",
    "ErrorKind": "errors",
    "OctosToolsError": "errors",
    "PathError": "errors",
    "ToolError": "errors",
    "execute_batch": "execution",
    "FunctionTool": "function_tool",
    "tool": "function_tool",
    "ToolLifecycle": "lifecycle",
    "GROUPS": "policy",
    "PolicyDecision": "policy",
    "ToolPolicy": "policy",
    "resolve_provider_policy": "policy",
    "CatalogEntry": "registry",
    "ToolRegistry": "registry",
    "ToolSession": "session",
    "TaskRecord": "tasks",
    "TaskStatus": "tasks",
    "TaskSupervisor": "tasks",
    "ConcurrencyClass": "tool_types",
    "TokenUsage": "tool_types",
    "Tool": "tool_types",
    "ToolCall": "tool_types",
    "ToolResult": "tool_types",
    "ToolSpec": "tool_types",
}

__all__ = [
    "GROUPS",
    "MAX_ARGS_SIZE",
    "ApprovalRequest",
    "ArgumentError",
    "CatalogEntry",
    "ConcurrencyClass",
    "Config",
    "ConfigError",
    "ErrorKind",
    "FunctionTool",
    "OctosToolsError",
    "PathError",
    "PolicyDecision",
    "TaskRecord",
    "TaskStatus",
    "TaskSupervisor",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolLifecycle",
    "ToolPermissions",
    "ToolPolicy",
    "ToolRegistry",
    "ToolResult",
    "ToolSession",
    "ToolSpec",
    "__version__",
    "current_context",
    "estimate_json_size",
    "execute_batch",
    "load_config",
    "resolve_provider_policy",
    "tool",
]


def __getattr__(name: str) -> object:
    """Import a public name on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'octos_tools' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
