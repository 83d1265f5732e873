"""OpenTelemetry: one ``execute_tool {tool name}`` span per call, through ``opentelemetry-api``
only (the ``otel`` extra; an application brings its own SDK and exporter).

The span follows OpenTelemetry's GenAI semantic conventions (*Semantic conventions for
generative AI spans*, "Execute tool span", https://opentelemetry.io/docs/specs/semconv/gen-ai/
gen-ai-spans/), as the MCP Python SDK v2 (``mcp/server/_otel.py``) and pydantic-ai emit it:

* name ``execute_tool {gen_ai.tool.name}``, kind ``INTERNAL``;
* ``gen_ai.operation.name = "execute_tool"``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``
  (when the call has one);
* on failure ``error.type`` = the call's error kind (``policy_denied``, ``timeout``, ...) and
  status ``ERROR``;
* ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result`` only when
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is set (``true``, ``1``,
  ``span_only`` or ``span_and_event``), redacted and cut at :data:`MAX_CONTENT_CHARS`.

The span is the current span while the tool runs, so under ``serve`` it is a child of the
MCP SDK's ``tools/call`` server span, and a command started by the call gets its context as
``TRACEPARENT`` / ``TRACESTATE`` (:func:`trace_env`). Tracing is a pipeline stage: off, it
costs nothing; :func:`Tracing.default` is how hosts decide (``[tracing] enabled``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tool_types import ToolResult

__all__ = ["CAPTURE_ENV", "MAX_CONTENT_CHARS", "Tracing", "trace_env", "tracing_available"]

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The variable that lets spans carry arguments and results (GenAI conventions)."""
MAX_CONTENT_CHARS = 8192
"""Captured arguments and results are cut at this many characters."""
_CAPTURE_VALUES = frozenset({"true", "1", "yes", "span_only", "span_and_event"})


def tracing_available() -> bool:
    """Whether ``opentelemetry-api`` can be imported."""
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        return False
    return True


def _capture_from_env() -> bool:
    return os.environ.get(CAPTURE_ENV, "").strip().lower() in _CAPTURE_VALUES


class Tracing:
    """The tracing stage: makes the ``execute_tool`` spans.

    Args:
        tracer_provider: an OpenTelemetry ``TracerProvider``; default the global one
            (``opentelemetry.trace.get_tracer_provider()``, looked up when each span starts,
            so a provider set later is used).
        capture_content: record arguments and results; default from
            :data:`CAPTURE_ENV`, read here.

    Raises:
        ImportError: if ``opentelemetry-api`` is not installed (``pip install
            'octos-tools[otel]'``).
    """

    def __init__(self, tracer_provider: Any = None, *, capture_content: bool | None = None) -> None:
        from opentelemetry import trace

        self._trace = trace
        self._kind = trace.SpanKind.INTERNAL
        self._provider = tracer_provider
        self._tracer: Any = None if tracer_provider is None else self._get_tracer()
        self.capture_content = _capture_from_env() if capture_content is None else capture_content

    @classmethod
    def default(cls, enabled: bool | None = None) -> Tracing | None:
        """The stage a host installs: ``enabled=True`` always (``ImportError`` without the
        API), ``False`` never, ``None`` ("auto") when ``opentelemetry-api`` is importable
        and an SDK tracer provider has been set globally (``opentelemetry-instrument``,
        or the application's own set-up) by now."""
        if enabled is False:
            return None
        if enabled is True:
            return cls()
        if "opentelemetry.trace" not in sys.modules and not tracing_available():
            return None
        from opentelemetry import trace

        provider = trace.get_tracer_provider()
        if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
            return None
        return cls()

    def _get_tracer(self) -> Any:
        from . import __version__

        return self._trace.get_tracer("octos-tools", __version__, self._provider)

    @contextmanager
    def span(self, tool_name: str, call_id: str) -> Iterator[Any]:
        """The current span of one call (ended at the end of the ``with``)."""
        tracer = self._tracer if self._tracer is not None else self._get_tracer()
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool_name}
        if call_id:
            attributes["gen_ai.tool.call.id"] = call_id
        with tracer.start_as_current_span(
            f"execute_tool {tool_name}",
            kind=self._kind,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            yield span

    def finish(self, span: Any, result: ToolResult, arguments: Any) -> None:
        """Set the outcome of the call on its span: ``error.type`` and status for a
        failure; the arguments and result when content is captured."""
        if not result.success:
            kind = result.error_kind
            span.set_attribute("error.type", kind.value if kind is not None else "tool_error")
            error = result.error or {}
            span.set_status(self._trace.StatusCode.ERROR, str(error.get("message", ""))[:500])
        if self.capture_content and span.is_recording():
            from .output import redact_secrets

            span.set_attribute(
                "gen_ai.tool.call.arguments",
                redact_secrets(_json_text(arguments))[:MAX_CONTENT_CHARS],
            )
            span.set_attribute(
                "gen_ai.tool.call.result", redact_secrets(result.output)[:MAX_CONTENT_CHARS]
            )


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, Mapping):
        value = dict(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def trace_env() -> dict[str, str]:
    """``{"TRACEPARENT": ..., "TRACESTATE": ...}`` of the current span for a command's
    environment (W3C trace context), or ``{}`` when OpenTelemetry is not loaded or no
    span is current. Costs a dictionary lookup when OpenTelemetry was never imported."""
    if "opentelemetry.trace" not in sys.modules:
        return {}
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if not trace.get_current_span().get_span_context().is_valid:
        return {}
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return {key.upper(): value for key, value in carrier.items()}
