"""Tool results across the MCP wire, both ways.

Serving (:func:`result_to_mcp`), the rule of the MCP specification, *Server features →
Tools → Tool result* (2025-06-18 and later):

* ``content`` carries what the model reads: the tool's text first, then its non-text
  :attr:`~octos_tools.tool_types.ToolResult.content` blocks as MCP ``ImageContent``,
  ``AudioContent`` and ``EmbeddedResource`` (or ``ResourceLink``);
* ``structuredContent`` is the *structured result* of a tool that declares an
  ``outputSchema``: only then is it sent, and then it is the whole structured result
  (none of the built-ins declares one);
* our own metadata (``structured_metadata``, ``file_modified``, ``files_to_send``) travels in
  the result's ``_meta`` under :data:`META_KEY` (``_meta`` keys take a reverse-DNS prefix;
  prefixes whose second label is ``modelcontextprotocol`` or ``mcp`` are reserved);
* ``isError`` is set only for a call that failed; its text starts ``Error [<kind>]:``.

Mounting (:func:`call_result_to_tool_result`): a remote result's text blocks become the
output; images, audio and resources are kept whole on ``ToolResult.content`` (so a host
that serves them passes them on); a remote ``isError`` is a failure of kind
``remote_error``.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import mcp_types as types

from ..errors import ErrorKind
from ..tool_types import AudioContent, ContentBlock, ImageContent, ResourceContent, ToolResult

__all__ = [
    "META_KEY",
    "block_from_mcp",
    "block_to_mcp",
    "call_result_to_tool_result",
    "result_to_mcp",
]

META_KEY = "io.octos-tools/result"
"""The ``_meta`` key of a served result holding ``{"structured_metadata",
"file_modified", "files_to_send"}`` (each only when set)."""


def _json_safe(value: Any) -> Any:
    """``value`` if it is plain JSON, else a JSON round trip with ``str`` for the rest."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def block_to_mcp(block: ContentBlock) -> types.ContentBlock:
    """The MCP content block for one :data:`~octos_tools.tool_types.ContentBlock`.

    ``ImageContent`` / ``AudioContent`` → the MCP types of the same name (base64 data);
    ``ResourceContent`` with ``text`` or ``blob`` → ``EmbeddedResource``, with neither →
    ``ResourceLink``.
    """
    if isinstance(block, ImageContent):
        return types.ImageContent(data=_b64(block.data), mime_type=block.mime_type)
    if isinstance(block, AudioContent):
        return types.AudioContent(data=_b64(block.data), mime_type=block.mime_type)
    if block.text is not None:
        text_res = types.TextResourceContents(
            uri=block.uri, mime_type=block.mime_type, text=block.text
        )
        return types.EmbeddedResource(resource=text_res)
    if block.blob is not None:
        blob_res = types.BlobResourceContents(
            uri=block.uri, mime_type=block.mime_type, blob=_b64(block.blob)
        )
        return types.EmbeddedResource(resource=blob_res)
    name = block.uri.rstrip("/").rsplit("/", 1)[-1] or block.uri
    return types.ResourceLink(uri=block.uri, name=name, mime_type=block.mime_type)


def _unb64(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return base64.b64decode(data + "===", validate=False)


def block_from_mcp(block: Any) -> ContentBlock | None:
    """The :data:`~octos_tools.tool_types.ContentBlock` for one non-text MCP content block, or
    ``None`` for a text block (and for a kind this version does not know)."""
    if isinstance(block, types.ImageContent):
        return ImageContent(_unb64(block.data), block.mime_type)
    if isinstance(block, types.AudioContent):
        return AudioContent(_unb64(block.data), block.mime_type)
    if isinstance(block, types.ResourceLink):
        return ResourceContent(str(block.uri), block.mime_type)
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            return ResourceContent(str(res.uri), res.mime_type, text=res.text)
        if isinstance(res, types.BlobResourceContents):
            return ResourceContent(str(res.uri), res.mime_type, blob=_unb64(res.blob))
    return None


def _error_text(result: ToolResult) -> str:
    text = result.output
    err = result.error or {}
    kind = str(err.get("kind") or ErrorKind.INTERNAL_ERROR.value)
    message = str(err.get("message") or text or "the tool failed")
    head = f"Error [{kind}]: {message}"
    if text.startswith(f"Error [{kind}]"):
        return text
    return head if not text or text == message else f"{head}\n\n{text}"


def result_meta(result: ToolResult) -> dict[str, Any] | None:
    """``{"structured_metadata", "file_modified", "files_to_send"}`` of ``result`` (each
    key only when set), or ``None`` when none is."""
    meta: dict[str, Any] = {}
    if result.structured_metadata is not None:
        meta["structured_metadata"] = _json_safe(result.structured_metadata)
    if result.file_modified:
        meta["file_modified"] = result.file_modified
    if len(result.modified_files) > 1:
        meta["files_modified"] = result.modified_files
    if result.files_to_send:
        meta["files_to_send"] = list(result.files_to_send)
    return meta or None


def result_to_mcp(
    result: ToolResult, *, structured: dict[str, Any] | None = None
) -> types.CallToolResult:
    """Convert a :class:`~octos_tools.tool_types.ToolResult` into an MCP ``CallToolResult``.

    Args:
        result: the tool's result (after the registry's output cap and redaction).
        structured: the structured result of a tool that declares an ``outputSchema``
            (sent as ``structuredContent``; its JSON text is then also in ``content`` if the
            tool gave no text). ``None`` for every other tool: no ``structuredContent``.

    Returns:
        ``content`` = the text (for a failure, ``Error [<kind>]: <message>`` first) then the
        non-text blocks; ``_meta[META_KEY]`` = :func:`result_meta`; ``isError`` iff the call
        failed.
    """
    text = result.output if result.success else _error_text(result)
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    content: list[types.ContentBlock] = []
    if text or not result.content:
        content.append(types.TextContent(text=text))
    content.extend(block_to_mcp(block) for block in result.content)
    meta = result_meta(result)
    return types.CallToolResult(
        content=content,
        structured_content=_json_safe(structured) if structured is not None else None,
        is_error=not result.success,
        _meta={META_KEY: meta} if meta is not None else None,
    )


def call_result_to_tool_result(result: types.CallToolResult, server: str, tool: str) -> ToolResult:
    """Convert a mounted server's ``CallToolResult`` into a
    :class:`~octos_tools.tool_types.ToolResult`.

    Text blocks are joined with newlines into ``output``; images, audio and resources are
    kept on ``content``. ``structuredContent`` goes to ``structured_metadata["structured_content"]``
    (and is the output when there is no text). An ``isError`` result becomes a failure of
    kind ``remote_error`` carrying the remote text.
    """
    texts: list[str] = []
    blocks: list[ContentBlock] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            texts.append(block.text)
            continue
        converted = block_from_mcp(block)
        if converted is None:
            texts.append(f"[{getattr(block, 'type', 'unknown')} content]")
            continue
        blocks.append(converted)
    output = "\n".join(t for t in texts if t)
    meta: dict[str, Any] = {"mcp_server": server, "mcp_tool": tool}
    if result.structured_content is not None:
        meta["structured_content"] = result.structured_content
        if not output:
            output = json.dumps(result.structured_content, ensure_ascii=False)
    if result.is_error:
        failed = ToolResult.failure(
            ErrorKind.REMOTE_ERROR,
            f"MCP server {server!r} tool {tool!r} reported an error: {output or '(no text)'}",
            metadata=meta,
        )
        failed.content = blocks
        return failed
    return ToolResult.ok(output, structured_metadata=meta, content=blocks)
