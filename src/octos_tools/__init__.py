"""octos-tools: the tool runtime for LLM agents.

The public API is re-exported here; everything else is importable but not promised.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .arguments import MAX_ARGS_SIZE, estimate_json_size
from .config import Config, load_config
from .context import (
    ApprovalRequest,
    ToolContext,
    ToolPermissions,
    current_context,
)
from .errors import (
    ArgumentError,
    ConfigError,
    ErrorKind,
    OctosToolsError,
    PathError,
    ToolError,
)
from .execution import ToolCall, execute_batch
from .function_tool import FunctionTool, tool
from .lifecycle import ToolLifecycle
from .policy import GROUPS, PolicyDecision, ToolPolicy, resolve_provider_policy
from .registry import CatalogEntry, ToolRegistry
from .session import ToolSession
from .tasks import TaskRecord, TaskStatus, TaskSupervisor
from .tool import ConcurrencyClass, TokenUsage, Tool, ToolResult, ToolSpec

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
