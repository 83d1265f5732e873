"""Provider wire formats: tool specs out, tool calls in, tool results back.

* :mod:`.openai`: Chat Completions ``tool_calls`` / ``role: "tool"`` messages, and the
  Responses API ``function_call`` / ``function_call_output`` items.
* :mod:`.anthropic`: Messages ``tool_use`` blocks / ``tool_result`` blocks with
  ``is_error``.

* :mod:`.mcp`: the MCP ``Tool`` declaration as plain JSON (results are converted by the
  server, :mod:`octos_tools.mcp.server`).

Each module holds the whole wire shape of its provider: spec conversion
(``spec_to_openai``, ``spec_to_anthropic``, ``spec_to_mcp``; ``ToolSpec.to_openai()`` and
friends delegate here), calls in and results back.
Arguments are passed on *raw* (the JSON string the model wrote, or the parsed object
Anthropic sends) so the registry's own size and JSON checks see exactly what the model sent.
"""

from __future__ import annotations

from . import anthropic, mcp, openai

__all__ = ["anthropic", "mcp", "openai"]
