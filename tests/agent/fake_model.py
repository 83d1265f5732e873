"""A scripted fake model server on loopback, speaking the OpenAI Chat Completions and the
Anthropic Messages wire formats, plus per-format helpers for building replies and reading
the recorded requests."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from octos_tools.agent import AnthropicProvider, OpenAIChatProvider
from octos_tools.agent._http_client import HTTPProvider


@dataclass
class Reply:
    """One scripted HTTP answer."""

    body: Any = None  # dict/list → JSON, str/bytes → raw
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to sleep before answering


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


Responder = Callable[[Any], "Reply | dict[str, Any] | None"]
"""Answers one decoded request body (``None``: fall back to the scripted queue)."""


class FakeModelServer:
    """Answers each POST with the next scripted :class:`Reply` (a bare dict is a 200 JSON
    reply), or with what ``responder(body)`` returns when one is set, and records every
    request. With no reply left it answers 418 (never retried). ``GET .../models`` lists
    :attr:`models` (OpenAI's and Anthropic's ``{"data": [{"id"}]}`` shape)."""

    def __init__(self, responder: Responder | None = None) -> None:
        self.requests: list[Recorded] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.responder = responder
        self.models: list[str] = ["fake-gpt", "fake-claude"]
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                if not self.path.endswith("/models"):
                    self.send_error(404)
                    return
                data = json.dumps(
                    {"object": "list", "data": [{"id": m, "object": "model"} for m in owner.models]}
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw
                with owner._lock:
                    owner.requests.append(
                        Recorded(
                            "POST",
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                        )
                    )
                    answer = owner.responder(body) if owner.responder is not None else None
                    if answer is not None:
                        reply: Reply | None = answer if isinstance(answer, Reply) else Reply(answer)
                    else:
                        reply = owner._replies.popleft() if owner._replies else None
                if reply is None:
                    reply = Reply({"error": {"message": "no scripted reply left"}}, status=418)
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body
                if isinstance(payload, dict | list):
                    data = json.dumps(payload).encode()
                    ctype = "application/json"
                elif isinstance(payload, str):
                    data = payload.encode()
                    ctype = "text/html"
                else:
                    data = payload or b""
                    ctype = "application/octet-stream"
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", ctype)
                    self.send_header("content-length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *replies: Reply | dict[str, Any]) -> None:
        with self._lock:
            for r in replies:
                self._replies.append(r if isinstance(r, Reply) else Reply(r))

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


@contextmanager
def fake_model_server(responder: Responder | None = None) -> Iterator[FakeModelServer]:
    server = FakeModelServer(responder)
    server.start()
    try:
        yield server
    finally:
        server.stop()


Call = tuple[str, str, dict[str, Any]]  # (id, name, arguments)


class Dialect:
    """Builds scripted replies and reads recorded requests for one wire format."""

    name: str
    path: str

    def provider(self, url: str, **kwargs: Any) -> HTTPProvider:
        raise NotImplementedError

    def calls_reply(self, calls: list[Call], text: str = "", usage: tuple[int, int] = (10, 5)):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def text_reply(self, text: str, usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
        raise NotImplementedError

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def results(self, body: dict[str, Any]) -> list[tuple[str, str, bool]]:
        """(call id, content, is_error) of the tool results that end the request."""
        raise NotImplementedError

    def usage_total(self, usage: tuple[int, int]) -> tuple[int, int]:
        return usage


class OpenAIDialect(Dialect):
    name = "openai"
    path = "/v1/chat/completions"

    def provider(self, url: str, **kwargs: Any) -> OpenAIChatProvider:
        kwargs.setdefault("api_key", "sk-test")
        kwargs.setdefault("retry_base_delay", 0.01)
        return OpenAIChatProvider(url + "/v1", model="fake-gpt", **kwargs)

    def calls_reply(self, calls: list[Call], text: str = "", usage: tuple[int, int] = (10, 5)):  # type: ignore[no-untyped-def]
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "fake-gpt",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": text or None,
                        "tool_calls": [
                            {
                                "id": cid,
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args)},
                            }
                            for cid, name, args in calls
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": sum(usage),
            },
        }

    def text_reply(self, text: str, usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
        return {
            "id": "chatcmpl-2",
            "object": "chat.completion",
            "model": "fake-gpt",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": sum(usage),
            },
        }

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        return [t["function"]["name"] for t in body.get("tools", [])]

    def results(self, body: dict[str, Any]) -> list[tuple[str, str, bool]]:
        out: list[tuple[str, str, bool]] = []
        for m in reversed(body["messages"]):
            if m["role"] != "tool":
                break
            out.append((m["tool_call_id"], m["content"], m["content"].startswith("Error")))
        return out[::-1]


class AnthropicDialect(Dialect):
    name = "anthropic"
    path = "/v1/messages"

    def provider(self, url: str, **kwargs: Any) -> AnthropicProvider:
        kwargs.setdefault("api_key", "ak-test")
        kwargs.setdefault("retry_base_delay", 0.01)
        return AnthropicProvider(url, model="fake-claude", **kwargs)

    def calls_reply(self, calls: list[Call], text: str = "", usage: tuple[int, int] = (10, 5)):  # type: ignore[no-untyped-def]
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += [{"type": "tool_use", "id": c, "name": n, "input": a} for c, n, a in calls]
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "fake-claude",
            "content": content,
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        }

    def text_reply(self, text: str, usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
        return {
            "id": "msg_2",
            "type": "message",
            "role": "assistant",
            "model": "fake-claude",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        }

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        return [t["name"] for t in body.get("tools", [])]

    def results(self, body: dict[str, Any]) -> list[tuple[str, str, bool]]:
        last = body["messages"][-1]
        assert last["role"] == "user"
        return [
            (b["tool_use_id"], b["content"], b["is_error"])
            for b in last["content"]
            if b["type"] == "tool_result"
        ]


DIALECTS = [OpenAIDialect(), AnthropicDialect()]
