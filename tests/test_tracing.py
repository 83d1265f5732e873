"""OpenTelemetry spans of tool calls (octos_tools.tracing), read with the SDK's in-memory
exporter: one execute_tool span per call, its attributes, a child of the MCP SDK's server
span under serve, TRACEPARENT passed to commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from octos_tools import ToolRegistry, ToolSession, tool
from octos_tools.tracing import CAPTURE_ENV, Tracing, trace_env

pytestmark = pytest.mark.anyio

_EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider()
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))
# The MCP SDK takes its tracer from the global provider: set ours once for this process.
trace.set_tracer_provider(_PROVIDER)


@pytest.fixture(autouse=True)
def _fresh_exporter() -> None:
    _EXPORTER.clear()


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _traced(capture: bool = False) -> tuple[ToolRegistry, ToolSession]:
    registry = ToolRegistry()
    registry.register(tool(add))
    registry.set_tracing(Tracing(_PROVIDER, capture_content=capture))
    return registry, ToolSession(registry)


async def test_one_execute_tool_span_per_call() -> None:
    _, session = _traced()
    assert (await session.call("add", '{"a":1,"b":2}', tool_call_id="call_1")).output == "3"
    bad = await session.call("add", '{"a":"x"}', tool_call_id="call_2")
    assert not bad.success
    spans = _EXPORTER.get_finished_spans()
    assert [s.name for s in spans] == ["execute_tool add", "execute_tool add"]
    ok, failed = spans
    assert ok.kind is trace.SpanKind.INTERNAL
    assert dict(ok.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "call_1",
    }
    assert ok.status.status_code is trace.StatusCode.UNSET
    assert (failed.attributes or {})["error.type"] == "invalid_arguments"
    assert failed.status.status_code is trace.StatusCode.ERROR


async def test_content_only_when_captured_and_redacted() -> None:
    _, session = _traced()
    await session.call("add", '{"a":1,"b":2}')
    assert "gen_ai.tool.call.arguments" not in (_EXPORTER.get_finished_spans()[0].attributes or {})
    _EXPORTER.clear()

    @tool
    async def echo(text: str) -> str:
        """Echo.

        Args:
            text: the text.
        """
        return text

    registry, session = _traced(capture=True)
    registry.register(echo)
    key = "sk-ant-api03-" + "a" * 40
    await session.call("echo", json.dumps({"text": f"key {key}"}))
    attributes = _EXPORTER.get_finished_spans()[0].attributes or {}
    assert key not in str(attributes["gen_ai.tool.call.arguments"])
    assert key not in str(attributes["gen_ai.tool.call.result"])
    assert "key" in str(attributes["gen_ai.tool.call.result"])


def test_capture_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CAPTURE_ENV, "true")
    assert Tracing(_PROVIDER).capture_content
    monkeypatch.setenv(CAPTURE_ENV, "false")
    assert not Tracing(_PROVIDER).capture_content


def test_auto_is_on_with_a_provider_set() -> None:
    assert isinstance(Tracing.default(None), Tracing)
    assert Tracing.default(False) is None


async def test_commands_get_traceparent(tmp_path: Path) -> None:
    from octos_tools.profile import build_registry

    registry = build_registry(None, tmp_path)
    registry.set_tracing(Tracing(_PROVIDER))
    async with ToolSession(registry, owns_registry=True) as session:
        result = await session.call("shell", {"command": "echo tp=$TRACEPARENT"})
    span = _EXPORTER.get_finished_spans()[-1]
    context = span.get_span_context()
    expected = f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
    assert f"tp={expected}" in result.output
    assert trace_env() == {}  # no span current here


async def test_serve_span_is_a_child_of_the_sdk_server_span() -> None:
    from mcp import Client
    from octos_tools.mcp.server import OctosMcpServer

    registry, _ = _traced()
    server = OctosMcpServer(registry)
    async with Client(server.server, mode="legacy") as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert not result.is_error
    spans = {s.name: s for s in _EXPORTER.get_finished_spans()}
    ours = spans["execute_tool add"]
    server_span = spans["tools/call add"]
    assert server_span.kind is trace.SpanKind.SERVER
    assert ours.parent is not None
    assert ours.parent.span_id == server_span.get_span_context().span_id
