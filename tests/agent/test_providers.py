"""Providers on the wire: exact request bodies and headers, parsing, errors, retries."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path

import httpx2
import pytest

from octos_tools.agent import (
    Agent,
    AnthropicProvider,
    ModelProvider,
    OpenAIChatProvider,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderResponseError,
    ProviderStatusError,
    ProviderTimeoutError,
    parse_retry_after,
)
from octos_tools.profile import build_registry
from octos_tools.tool_types import ToolResult, ToolSpec

from .fake_model import (
    DIALECTS,
    AnthropicDialect,
    Dialect,
    FakeModelServer,
    OpenAIDialect,
    Reply,
    fake_model_server,
)

OA = OpenAIDialect()
AN = AnthropicDialect()

SPEC = ToolSpec(
    name="echo",
    description="Echo text.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    },
)


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with fake_model_server() as s:
        yield s


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    return tmp_path


# ---------------------------------------------------------------- exact wire round trips


@pytest.mark.anyio
async def test_openai_request_bodies_and_tool_call_id_round_trip(
    server: FakeModelServer, workspace: Path
) -> None:
    registry = build_registry(workspace=workspace)
    specs = registry.specs()
    server.script(
        OA.calls_reply([("call_abc", "read_file", {"path": "notes.txt"})], text="Reading."),
        OA.text_reply("alpha, beta"),
    )
    async with OpenAIChatProvider(
        server.url + "/v1", "sk-test", "fake-gpt", extra_body={"temperature": 0}
    ) as provider:
        result = await Agent(registry, provider, system="sys").run("read it")
    first, second = server.requests
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == "Bearer sk-test"
    assert first.headers["content-type"] == "application/json"
    assert first.body == {
        "temperature": 0,
        "model": "fake-gpt",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "read it"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": s.name,
                    "description": s.description,
                    "parameters": s.input_schema,
                },
            }
            for s in specs
        ],
    }
    assert second.body["tools"] == first.body["tools"]
    assert second.body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "read it"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "call_abc",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_abc", "content": "1│ alpha\n2│ beta"},
    ]
    assert result.messages[-1] == {"role": "assistant", "content": "alpha, beta"}
    assert result.finish_reason == "stop"
    await registry.aclose()


@pytest.mark.anyio
async def test_anthropic_request_bodies_and_tool_use_id_round_trip(
    server: FakeModelServer, workspace: Path
) -> None:
    registry = build_registry(workspace=workspace)
    specs = registry.specs()
    server.script(
        AN.calls_reply(
            [
                ("toolu_1", "read_file", {"path": "notes.txt"}),
                ("toolu_2", "read_file", {"path": "nope.txt"}),
            ],
            text="Reading.",
        ),
        AN.text_reply("alpha, beta"),
    )
    async with AnthropicProvider(server.url, "ak-test", "fake-claude", max_tokens=512) as provider:
        result = await Agent(registry, provider, system="sys").run("read it")
    first, second = server.requests
    assert first.path == "/v1/messages"
    assert first.headers["x-api-key"] == "ak-test"
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in first.headers
    assert first.body == {
        "max_tokens": 512,
        "model": "fake-claude",
        "system": "sys",
        "messages": [{"role": "user", "content": "read it"}],
        "tools": [
            {"name": s.name, "description": s.description, "input_schema": s.input_schema}
            for s in specs
        ],
    }
    assert second.body["messages"] == [
        {"role": "user", "content": "read it"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "read_file",
                    "input": {"path": "notes.txt"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "read_file",
                    "input": {"path": "nope.txt"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "1│ alpha\n2│ beta",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "Error [not_found]: nope.txt does not exist",
                    "is_error": True,
                },
            ],
        },
    ]
    assert result.text == "alpha, beta" and result.finish_reason == "end_turn"
    await registry.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
async def test_no_tools_means_no_tools_key(dialect: Dialect, server: FakeModelServer) -> None:
    server.script(dialect.text_reply("hi"))
    async with dialect.provider(server.url) as provider:
        turn = await provider.complete([provider.user_message("hello")], [], system=None)
    assert turn.text == "hi" and turn.tool_calls == []
    body = server.bodies[0]
    assert "tools" not in body and "system" not in body
    assert body["messages"] == [{"role": "user", "content": "hello"}]


def test_providers_follow_the_protocol() -> None:
    for provider in (
        OpenAIChatProvider("http://127.0.0.1:9/v1", model="m"),
        AnthropicProvider("http://127.0.0.1:9", model="m"),
    ):
        assert isinstance(provider, ModelProvider)


# ---------------------------------------------------------------- keys and construction


@pytest.mark.anyio
async def test_api_keys_come_from_the_environment(
    server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-env")
    server.script(OA.text_reply("a"), AN.text_reply("b"))
    async with OpenAIChatProvider(server.url + "/v1", model="m") as oa:
        await oa.complete([oa.user_message("x")], [])
    async with AnthropicProvider(server.url, model="m") as an:
        await an.complete([an.user_message("x")], [])
    assert server.requests[0].headers["authorization"] == "Bearer sk-env"
    assert server.requests[1].headers["x-api-key"] == "ak-env"


@pytest.mark.anyio
async def test_base_url_from_the_environment_and_no_key_for_local_servers(
    server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1/")
    server.script(OA.text_reply("local"))
    async with OpenAIChatProvider(model="qwen2.5:7b") as provider:
        turn = await provider.complete([provider.user_message("x")], [])
    assert turn.text == "local"
    assert server.requests[0].path == "/v1/chat/completions"
    assert "authorization" not in server.requests[0].headers


def test_official_endpoints_need_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIChatProvider(model="gpt-4.1")
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider(model="claude")


def test_bad_construction_is_refused() -> None:
    with pytest.raises(ValueError, match="model"):
        OpenAIChatProvider("http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="model"):
        AnthropicProvider("http://127.0.0.1:9")
    with pytest.raises(ValueError, match="extra_body"):
        OpenAIChatProvider("http://127.0.0.1:9/v1", model="m", extra_body={"tools": []})
    with pytest.raises(ValueError, match="extra_body"):
        AnthropicProvider("http://127.0.0.1:9", model="m", extra_body={"system": "x"})
    with pytest.raises(ValueError, match="max_tokens"):
        AnthropicProvider("http://127.0.0.1:9", model="m", max_tokens=0)
    with pytest.raises(ValueError, match="timeout"):
        OpenAIChatProvider("http://127.0.0.1:9/v1", model="m", timeout=0)
    with pytest.raises(ValueError, match="max_retries"):
        OpenAIChatProvider("http://127.0.0.1:9/v1", model="m", max_retries=-1)


@pytest.mark.anyio
async def test_a_caller_supplied_client_is_used_and_not_closed(server: FakeModelServer) -> None:
    server.script(OA.text_reply("x"))
    async with httpx2.AsyncClient() as client:
        provider = OpenAIChatProvider(server.url + "/v1", "k", "m", client=client)
        await provider.complete([provider.user_message("x")], [])
        await provider.aclose()
        await provider.aclose()
        assert not client.is_closed
    assert len(server.requests) == 1


# ---------------------------------------------------------------- parsing


def test_openai_parsing_normalises_what_compatible_servers_send() -> None:
    provider = OpenAIChatProvider("http://127.0.0.1:9/v1", model="m")
    turn = provider.parse_response(
        {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "echo", "arguments": {"text": "hi"}},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": None},
        }
    )
    assert turn.text == "ab"
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("c1", "echo", {"text": "hi"})
    ]
    assert turn.message is not None
    assert turn.message["tool_calls"][0]["function"]["arguments"] == '{"text":"hi"}'
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (3, 0)
    # An empty tool_calls list (vLLM) is a final answer and is not echoed back.
    final = provider.parse_response(
        {"choices": [{"message": {"content": "done", "tool_calls": []}, "finish_reason": "stop"}]}
    )
    assert final.tool_calls == [] and final.message == {"role": "assistant", "content": "done"}
    # An empty answer keeps no transcript message (providers refuse empty assistant turns).
    empty = provider.parse_response({"choices": [{"message": {"content": None}}]})
    assert empty.message is None and empty.text == ""


def test_anthropic_parsing_sums_cache_tokens_and_keeps_blocks() -> None:
    provider = AnthropicProvider("http://127.0.0.1:9", model="m")
    blocks = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "x"},
        {"type": "tool_use", "id": "t1", "name": "echo", "input": {"text": "y"}},
    ]
    turn = provider.parse_response(
        {
            "content": blocks,
            "stop_reason": "tool_use",
            "usage": {
                "input_tokens": 5,
                "output_tokens": 7,
                "cache_creation_input_tokens": 100,
                "cache_read_input_tokens": 1000,
            },
        }
    )
    assert turn.message == {"role": "assistant", "content": blocks}
    assert turn.text == "x" and turn.finish_reason == "tool_use"
    assert [(c.id, c.arguments) for c in turn.tool_calls] == [("t1", {"text": "y"})]
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (1105, 7)
    empty = provider.parse_response({"content": [], "stop_reason": "end_turn"})
    assert empty.message is None


def test_result_messages_pair_calls_and_results() -> None:
    from octos_tools.execution import ToolCall

    calls = [ToolCall("a", "echo", "{}"), ToolCall("b", "echo", "{}")]
    results = [ToolResult.ok(""), ToolResult.failure("timeout", "too slow")]
    oa = OpenAIChatProvider("http://127.0.0.1:9/v1", model="m")
    assert oa.tool_result_messages(calls, results) == [
        {"role": "tool", "tool_call_id": "a", "content": "(no output)"},
        {"role": "tool", "tool_call_id": "b", "content": "Error [timeout]: too slow"},
    ]
    an = AnthropicProvider("http://127.0.0.1:9", model="m")
    [message] = an.tool_result_messages(calls, results)
    assert [(b["tool_use_id"], b["is_error"]) for b in message["content"]] == [
        ("a", False),
        ("b", True),
    ]
    with pytest.raises(ValueError):
        oa.tool_result_messages(calls, results[:1])


# ---------------------------------------------------------------- errors and retries


@pytest.mark.anyio
@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
async def test_malformed_answers_raise_response_errors(
    dialect: Dialect, server: FakeModelServer
) -> None:
    server.script(
        Reply("<html>not an API</html>"),
        Reply([1, 2]),
        Reply({"unexpected": True}),
        dialect.calls_reply([("", "echo", {"text": "x"})]),  # a call without an id
    )
    async with dialect.provider(server.url) as provider:
        messages = [provider.user_message("x")]
        with pytest.raises(ProviderResponseError, match="not JSON") as info:
            await provider.complete(messages, [SPEC])
        assert "<html>" in info.value.body
        with pytest.raises(ProviderResponseError, match="not an object"):
            await provider.complete(messages, [SPEC])
        with pytest.raises(ProviderResponseError, match=r"choices|content"):
            await provider.complete(messages, [SPEC])
        with pytest.raises(ProviderResponseError, match="malformed"):
            await provider.complete(messages, [SPEC])
    assert len(server.requests) == 4  # none of these is retried


@pytest.mark.anyio
@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
async def test_persistent_5xx_gives_up_after_the_retries(
    dialect: Dialect, server: FakeModelServer
) -> None:
    server.script(*(Reply({"error": {"message": "down"}}, status=503) for _ in range(5)))
    async with dialect.provider(server.url, max_retries=2) as provider:
        with pytest.raises(ProviderStatusError) as info:
            await provider.complete([provider.user_message("x")], [])
    assert not isinstance(info.value, ProviderAuthError)
    assert info.value.status == 503 and info.value.attempts == 3
    assert "down" in str(info.value) and "3 attempts" in str(info.value)
    assert len(server.requests) == 3


@pytest.mark.anyio
async def test_a_retry_after_beyond_the_bound_is_not_waited_for(server: FakeModelServer) -> None:
    server.script(
        Reply({"error": {"message": "quota"}}, status=429, headers={"retry-after": "600"})
    )
    async with OA.provider(server.url, max_retry_delay=5) as provider:
        with pytest.raises(ProviderStatusError) as info:
            await provider.complete([provider.user_message("x")], [])
    assert info.value.status == 429 and info.value.attempts == 1
    assert "max_retry_delay" in str(info.value)
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_other_4xx_and_403_are_not_retried(server: FakeModelServer) -> None:
    server.script(
        Reply({"error": {"message": "no such model", "type": "invalid_request_error"}}, 404),
        Reply({"error": "forbidden"}, status=403),
    )
    async with OA.provider(server.url) as provider:
        with pytest.raises(ProviderStatusError, match=r"no such model.*base_url") as info:
            await provider.complete([provider.user_message("x")], [])
        assert info.value.status == 404
        with pytest.raises(ProviderAuthError, match="forbidden"):
            await provider.complete([provider.user_message("x")], [])
    assert len(server.requests) == 2


@pytest.mark.anyio
async def test_a_slow_server_raises_a_timeout_error(server: FakeModelServer) -> None:
    server.script(Reply(OA.text_reply("late"), delay=3.0))
    async with OA.provider(server.url, timeout=0.3) as provider:
        with pytest.raises(ProviderTimeoutError, match="timed out"):
            await provider.complete([provider.user_message("x")], [])
    assert len(server.requests) == 1  # timeouts are not retried


@pytest.mark.anyio
async def test_connection_refused_raises_a_connection_error() -> None:
    with socket.socket() as sock:  # a loopback port with nobody listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with OA.provider(f"http://127.0.0.1:{port}") as provider:
        with pytest.raises(ProviderConnectionError) as info:
            await provider.complete([provider.user_message("x")], [])
    assert not isinstance(info.value, ProviderTimeoutError)
    assert info.value.provider == "openai"


def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "junk", "retry-after": "9"}) == 9.0
    assert parse_retry_after({"retry-after": "-4"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "nan"}) is None
    assert parse_retry_after({}) is None
    now = 1_700_000_000.0
    date = formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(30.0, abs=1.0)
    assert parse_retry_after({"retry-after": formatdate(now - 30, usegmt=True)}, now=now) == 0.0


def test_error_bodies_are_kept_for_the_host() -> None:
    err = ProviderStatusError("openai", "HTTP 500", status=500, body=json.dumps({"a": 1}))
    assert err.provider == "openai" and err.status == 500 and json.loads(err.body) == {"a": 1}
    assert str(err) == "openai: HTTP 500"


@pytest.mark.anyio
@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
async def test_list_models_asks_once_and_with_model_shares_the_client(
    dialect: Dialect, server: FakeModelServer
) -> None:
    server.models = ["other-model"]
    async with dialect.provider(server.url) as provider:
        assert await provider.list_models() == [provider.model, "other-model"]
        server.models = ["changed"]
        assert await provider.list_models() == [provider.model, "other-model"]  # cached
        server.script(dialect.text_reply("from the other"))
        other = provider.with_model("other-model")
        turn = await other.complete([other.user_message("hi")], [])
        assert turn.text == "from the other"
        assert server.bodies[-1]["model"] == "other-model" and provider.model != "other-model"
        await other.aclose()  # the shared client stays open for the original
        server.script(dialect.text_reply("still open"))
        assert (await provider.complete([provider.user_message("hi")], [])).text == "still open"
