"""The tool model: :class:`Tool`, :class:`ToolResult`, :class:`ToolSpec`, :class:`ToolCall`
(octos ``crates/octos-agent/src/tools/mod.rs``).

A tool has a declaration part (name, description, JSON-Schema input: together its
:class:`ToolSpec`, what the model sees), an execution part (``execute`` /
``execute_with_context``) and integration hooks (``tags``, ``concurrency_class``,
``cwd_bound``, ``timeout``).
"""

from __future__ import annotations

import copy
from abc import ABC
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar

from .errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from .context import ToolContext

__all__ = [
    "AudioContent",
    "ConcurrencyClass",
    "ContentBlock",
    "ImageContent",
    "JSONObject",
    "ResourceContent",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "ok_result",
]

JSONObject = dict[str, Any]
"""A JSON object as Python sees it after ``json.loads``."""


class ConcurrencyClass(str, Enum):
    """Whether a tool may run beside others in one batch (octos ``agent/execution.rs``).

    ``SAFE``: read-only or side-effect free; a batch of only Safe calls runs concurrently.
    ``EXCLUSIVE``: writes files, starts processes or changes state; one Exclusive call
    makes its whole batch run serially, in call order.
    """

    SAFE = "safe"
    EXCLUSIVE = "exclusive"


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens consumed by a tool that itself calls a model (sub-agents).

    Attributes:
        input_tokens: prompt tokens, as the model provider counted them.
        output_tokens: completion tokens, as the model provider counted them.
    """

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """``input_tokens + output_tokens``."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )


@dataclass(frozen=True, slots=True)
class ImageContent:
    """An image the model should see (MCP ``ImageContent``; OpenAI / Anthropic image parts).

    Attributes:
        data: the encoded image bytes (PNG, JPEG, GIF or WebP as the provider accepts).
        mime_type: its media type, e.g. ``"image/png"``.
    """

    data: bytes
    mime_type: str


@dataclass(frozen=True, slots=True)
class AudioContent:
    """Audio returned by a tool (MCP ``AudioContent``).

    Attributes:
        data: the encoded audio bytes.
        mime_type: its media type, e.g. ``"audio/wav"``.
    """

    data: bytes
    mime_type: str


@dataclass(frozen=True, slots=True)
class ResourceContent:
    """A resource returned by a tool (MCP ``EmbeddedResource`` or ``ResourceLink``).

    Attributes:
        uri: the resource URI.
        mime_type: its media type, or ``None`` when unknown.
        text: the text of a text resource, or ``None``.
        blob: the bytes of a binary resource, or ``None`` (a link when both are ``None``).
    """

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: bytes | None = None


ContentBlock = ImageContent | AudioContent | ResourceContent
"""Non-text content a tool result carries beside its text ``output``."""


def _content_to_dict(block: ContentBlock) -> JSONObject:
    import base64

    if isinstance(block, ImageContent | AudioContent):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return {
            "type": kind,
            "mime_type": block.mime_type,
            "data": base64.b64encode(block.data).decode("ascii"),
        }
    out: JSONObject = {"type": "resource", "uri": block.uri, "mime_type": block.mime_type}
    if block.text is not None:
        out["text"] = block.text
    if block.blob is not None:
        out["blob"] = base64.b64encode(block.blob).decode("ascii")
    return out


@dataclass(slots=True)
class ToolResult:
    """What a tool call produced (octos ``tools/mod.rs`` ``ToolResult``).

    Attributes:
        output: the text returned to the model.
        success: the tool-level success bit (default ``True``).
        file_modified: one workspace-relative path the call changed, or ``None`` (octos's
            field: the first one when the call changed several).
        files_modified: every workspace-relative path the call changed, in order (a
            multi-file ``apply_patch`` lists them all); empty when none or when the tool
            set only ``file_modified``. Read :attr:`modified_files` for both.
        files_to_send: paths the host should deliver to the user.
        tokens_used: model tokens spent by the call (sub-agent tools), or ``None``.
        structured_metadata: a JSON side channel for hosts and UIs. On failure it holds
            ``{"error": {"kind": <ErrorKind value>, "message": str}, ...}``.
        content: non-text content the model should see beside ``output`` (images from
            ``view_image``, browser screenshots, mounted MCP tools), in order.
    """

    output: str = ""
    success: bool = True
    file_modified: str | None = None
    files_modified: list[str] = field(default_factory=list)
    files_to_send: list[str] = field(default_factory=list)
    tokens_used: TokenUsage | None = None
    structured_metadata: JSONObject | None = None
    content: list[ContentBlock] = field(default_factory=list)

    @classmethod
    def ok(cls, output: str, **kwargs: Any) -> ToolResult:
        """A successful result with ``output`` (other fields as keywords)."""
        return cls(output=output, success=True, **kwargs)

    @classmethod
    def failure(
        cls,
        kind: ErrorKind | str,
        message: str,
        *,
        output: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """A failed result carrying ``{"error": {"kind", "message"}}``.

        Args:
            kind: the error kind (:class:`~octos_tools.errors.ErrorKind`).
            message: what went wrong, for the model.
            output: the text shown to the model; by default ``"Error [kind]: message"``.
            metadata: extra keys merged into ``structured_metadata`` beside ``error``.
        """
        kind = ErrorKind(kind)
        meta: JSONObject = dict(metadata or {})
        meta["error"] = {"kind": kind.value, "message": message}
        text = output if output is not None else f"Error [{kind.value}]: {message}"
        return cls(output=text, success=False, structured_metadata=meta)

    @classmethod
    def from_error(cls, error: ToolError) -> ToolResult:
        """The failed result for a raised :class:`~octos_tools.errors.ToolError`."""
        return cls.failure(error.kind, error.message, metadata=error.details or None)

    @property
    def modified_files(self) -> list[str]:
        """Every path the call changed: :attr:`files_modified`, else ``[file_modified]``."""
        if self.files_modified:
            return list(self.files_modified)
        return [self.file_modified] if self.file_modified else []

    @property
    def error(self) -> JSONObject | None:
        """``{"kind", "message"}`` of a failed result, else ``None``."""
        if self.structured_metadata is None:
            return None
        err = self.structured_metadata.get("error")
        return err if isinstance(err, dict) else None

    @property
    def error_kind(self) -> ErrorKind | None:
        """The :class:`ErrorKind` of a failed result, else ``None``."""
        err = self.error
        if err is None:
            return None
        try:
            return ErrorKind(err.get("kind"))
        except ValueError:
            return None

    def to_dict(self) -> JSONObject:
        """The JSON shape of ``octos-tools call --json`` (docs/cli.md)."""
        return {
            "success": self.success,
            "output": self.output,
            "error": self.error if not self.success else None,
            "file_modified": self.file_modified,
            "files_modified": self.modified_files,
            "files_to_send": list(self.files_to_send),
            "tokens_used": (
                None
                if self.tokens_used is None
                else {
                    "input_tokens": self.tokens_used.input_tokens,
                    "output_tokens": self.tokens_used.output_tokens,
                }
            ),
            "structured_metadata": self.structured_metadata,
            "content": [_content_to_dict(block) for block in self.content],
        }


_new = object.__new__


def ok_result(output: str, metadata: JSONObject | None = None) -> ToolResult:
    """``ToolResult(output=output, structured_metadata=metadata)``, built without the
    dataclass ``__init__`` (keyword binding and three default factories: about half the
    cost of a no-op call's result). Every field is set, the lists are fresh."""
    result: ToolResult = _new(ToolResult)
    result.output = output
    result.success = True
    result.file_modified = None
    result.files_modified = []
    result.files_to_send = []
    result.tokens_used = None
    result.structured_metadata = metadata
    result.content = []
    return result


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of a model turn (what :mod:`octos_tools.formats` parses out of a
    provider's message; also re-exported from :mod:`octos_tools.execution`).

    Attributes:
        id: the model's tool-call id (echoed back with the result).
        name: the tool name.
        arguments: the raw argument string as sent, or parsed arguments.
    """

    id: str
    name: str
    arguments: str | bytes | Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """The declaration of a tool as a model sees it.

    Attributes:
        name: unique tool name (``^[a-zA-Z0-9_-]{1,64}$`` for every provider).
        description: what the tool does and when to use it.
        input_schema: a JSON Schema object describing the arguments.
        title: a human-readable title (MCP annotation), or ``None``.
        read_only: the tool does not modify its environment (Safe tools).
        destructive: the tool may modify or delete (Exclusive tools).
        tags: capability tags, for hosts; not sent to providers.
    """

    name: str
    description: str
    input_schema: JSONObject
    title: str | None = None
    read_only: bool = True
    destructive: bool = False
    tags: tuple[str, ...] = ()

    def to_openai(self) -> JSONObject:
        """OpenAI Chat Completions ``tools`` entry (delegates to
        :func:`octos_tools.formats.openai.spec_to_openai`)."""
        from .formats.openai import spec_to_openai

        return spec_to_openai(self)

    def to_anthropic(self) -> JSONObject:
        """Anthropic Messages ``tools`` entry (delegates to
        :func:`octos_tools.formats.anthropic.spec_to_anthropic`)."""
        from .formats.anthropic import spec_to_anthropic

        return spec_to_anthropic(self)

    def to_mcp(self) -> JSONObject:
        """MCP ``Tool`` object of ``tools/list`` (delegates to
        :func:`octos_tools.formats.mcp.spec_to_mcp`)."""
        from .formats.mcp import spec_to_mcp

        return spec_to_mcp(self)


class Tool(ABC):  # noqa: B024 - "one of two methods" is enforced in __new__
    """Abstract base class of every tool (octos ``tools/mod.rs`` ``Tool`` trait).

    Subclasses set the class attributes (or override them as properties) and implement
    :meth:`execute` or :meth:`execute_with_context` (at least one: instantiating a class
    that overrides neither raises ``TypeError``, as an abstract method would). Both receive
    arguments that the registry has already size-checked and validated against
    :attr:`input_schema`.

    Attributes:
        name: unique name the model calls.
        description: what the tool does, for the model.
        input_schema: JSON Schema (Draft 2020-12) object of the arguments.
        tags: capability tags, used by ``require_tags`` policies and context filters.
        concurrency_class: :class:`ConcurrencyClass` (default Safe).
        cwd_bound: the tool is bound to a workspace and is rebuilt by
            :meth:`~octos_tools.registry.ToolRegistry.rebind_cwd`.
        timeout: per-call limit in seconds, or ``None`` for the registry default.
        blocks_on_human_input: the call waits for a person; no timeout is applied.
        title: a human title (MCP annotation), or ``None``.
    """

    name: str = ""
    description: str = ""
    input_schema: JSONObject = {"type": "object", "properties": {}}  # noqa: RUF012
    tags: tuple[str, ...] = ()
    concurrency_class: ConcurrencyClass = ConcurrencyClass.SAFE
    cwd_bound: bool = False
    timeout: float | None = None
    blocks_on_human_input: bool = False
    title: str | None = None
    max_output_bytes: int | None = None
    """Output cap of this tool in bytes (``None``: the registry default, 50,000)."""
    search_hints: tuple[str, ...] = ()
    """Words a task may use for this tool (never sent to the model; ``tool_search`` ranks them)."""
    content_trust: ClassVar[str] = "trusted"
    """Where the result's text comes from: ``"trusted"`` (this process, the tool's own
    words), ``"untrusted"`` (the web, another MCP server: prompt-injection phrases are
    blocked or flagged per ``[output] injection_filter`` and the metadata says
    ``untrusted``) or ``"workspace"`` (file contents: kept exact, matches only flagged)."""
    validate_arguments: ClassVar[bool] = True
    """When ``False`` the registry skips JSON-Schema validation (the tool validates itself)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Tool:
        if cls.execute is Tool.execute and cls.execute_with_context is Tool.execute_with_context:
            raise TypeError(
                f"Can't instantiate tool class {cls.__name__}: it implements neither "
                "execute() nor execute_with_context()"
            )
        return super().__new__(cls)

    async def execute(self, args: JSONObject) -> ToolResult:
        """Run the tool with validated ``args``.

        Raises:
            ToolError: for a typed failure the model should see.
        """
        raise NotImplementedError(
            f"tool {self.name!r} implements neither execute() nor execute_with_context()"
        )

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        """Run the tool with its :class:`~octos_tools.context.ToolContext`.

        The default calls :meth:`execute`; the context is still readable there through
        :func:`~octos_tools.context.current_context` (octos's task-local ``TOOL_CTX``).
        """
        return await self.execute(args)

    def spec(self) -> ToolSpec:
        """This tool's :class:`ToolSpec`."""
        exclusive = self.concurrency_class is ConcurrencyClass.EXCLUSIVE
        return ToolSpec(
            name=self.name,
            description=self.description,
            input_schema=self.input_schema,
            title=self.title,
            read_only=not exclusive,
            destructive=exclusive,
            tags=tuple(self.tags),
        )

    def unavailable_reason(self, ctx: ToolContext | None = None) -> str | None:
        """Why this tool cannot work here (no provider, no browser, no backend), or ``None``
        when it can (the default). ``ctx``: a session's base context, for what a session
        brings itself (a spawn delegate in its extras); ``None`` for the registry's answer.

        A tool with a reason is not listed to the model, nor offered by ``tool_search``,
        but stays callable by name (its call answers the typed failure that explains what
        is missing). The registry caches the answer until its next mutation
        (:meth:`~octos_tools.registry.ToolRegistry.refresh_availability`); keep it cheap
        and free of I/O beyond a ``PATH`` lookup.
        """
        return None

    def spec_for(self, registry: Any) -> ToolSpec:
        """The spec as shown by ``registry`` (default :meth:`spec`).

        Tools whose description depends on the registry's state (``activate_tools`` lists
        the deferred tools) override this; it is called when the registry rebuilds its
        cached specs, i.e. after a mutation.
        """
        return self.spec()

    def with_workspace(self, workspace: Any) -> Tool:
        """A copy of this tool bound to another workspace (for ``rebind_cwd``).

        The default makes a shallow copy and sets its ``workspace`` attribute; tools whose
        state depends on the workspace in other ways override this.
        """
        clone = copy.copy(self)
        clone.workspace = workspace  # type: ignore[attr-defined]
        return clone

    async def aclose(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Release resources (processes, sessions); called by ``ToolRegistry.aclose``."""

    async def session_closed(self, session: object) -> None:  # noqa: B027 - optional hook
        """Release what the host session ``session`` (a
        :class:`~octos_tools.session.ToolSession`, the ``ctx.session`` of its calls)
        started: its command sessions, its browser, ... Called by
        :meth:`ToolSession.aclose <octos_tools.session.ToolSession.aclose>` on every tool of
        the registry; the tool itself stays open for the other sessions. Errors are logged,
        never raised to the host."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def schema_property_names(schema: Mapping[str, Any]) -> Sequence[str]:
    """Names of the top-level ``properties`` of an object schema (helper for docs)."""
    props = schema.get("properties") or {}
    return list(props) if isinstance(props, Mapping) else []
