"""Provider wire formats: tool specs out, tool calls in, tool results back.

* :mod:`.openai`: Chat Completions ``tool_calls`` / ``role: "tool"`` messages, and the
  Responses API ``function_call`` / ``function_call_output`` items.
* :mod:`.anthropic`: Messages ``tool_use`` blocks / ``tool_result`` blocks with
  ``is_error``.

Spec conversion itself lives on :class:`~octos_tools.tool.ToolSpec` (``to_openai()``,
``to_anthropic()``); these modules add the list helpers and the call/result halves.
Arguments are passed on *raw* (the JSON string the model wrote, or the parsed object
Anthropic sends) so the registry's own size and JSON checks see exactly what the model sent.
"""

from __future__ import annotations

from . import anthropic, openai

__all__ = ["anthropic", "openai"]
