"""octos-tools inside the agent frameworks Python builders already use.

One module per framework, each importing its framework only when imported itself (the
package imports without any extra; a missing framework raises an ``ImportError`` naming the
extra to install):

* :mod:`octos_tools.adapters.pydantic_ai`: ``OctosToolset``, a pydantic-ai toolset
  (extra ``pydantic-ai``);
* :mod:`octos_tools.adapters.openai_agents`: ``OctosAgentTools`` (function tools over a
  session), ``WorkspaceEditor`` (an ``ApplyPatchEditor``) and ``ShellExecutor`` (a
  ``ShellTool`` executor) for the OpenAI Agents SDK (extra ``openai-agents``);
* :mod:`octos_tools.adapters.langchain`: ``octos_langchain_tools``, LangChain ``BaseTool`` s
  (extra ``langchain``, langchain-core only).

Every adapter runs calls through :meth:`octos_tools.session.ToolSession.call`, so policies,
deferral, validation, timeouts, output caps and redaction are the same as under MCP.
"""

from __future__ import annotations

__all__: list[str] = []
