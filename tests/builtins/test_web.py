"""The web family: registration order, tags, the missing extra, the registry."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import pytest

from octos_tools.builtins import web
from octos_tools.config import Config
from octos_tools.tool_types import Tool

from ._web_helpers import Server, page

pytestmark = pytest.mark.anyio


# -------------------------------------------------------------------------- registration


class FakeRegistry:
    def __init__(self) -> None:
        self.tools: list[Tool] = []

    def register(self, tool: Tool) -> None:
        self.tools.append(tool)


def test_register_order_and_tags(tmp_path: Any) -> None:
    reg = FakeRegistry()
    web.register(reg, None, Config())  # type: ignore[arg-type]
    assert [t.name for t in reg.tools] == ["web_search", "web_fetch"]
    for t in reg.tools:
        assert t.tags == ("web",) and t.concurrency_class.value == "safe" and not t.cwd_bound
        assert t.input_schema["additionalProperties"] is False


def test_register_without_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    missing: dict[str, str] = {}
    monkeypatch.setitem(sys.modules, "markdownify", None)  # makes the import fail
    monkeypatch.setattr(web, "MISSING_EXTRAS", missing)
    reg = FakeRegistry()
    web.register(reg, None, Config())  # type: ignore[arg-type]
    assert reg.tools == []
    assert missing == {"web_search": "web", "web_fetch": "web"}


async def test_through_registry(serve: Callable[..., Server], tmp_path: Any) -> None:
    from octos_tools.registry import ToolRegistry
    from octos_tools.workspace import Workspace

    srv = serve({"/": page("<p>hi there</p>"), "/secret": page("SECRET-Q")})
    reg = ToolRegistry(Workspace(tmp_path))
    web.register(reg, Workspace(tmp_path), Config.from_mapping({"web": {}}))
    refused = await reg.execute("web_fetch", json.dumps({"url": srv.url("/secret")}))
    assert refused.error_kind == "network_refused" and srv.requests == []
    bad = await reg.execute("web_fetch", {"url": srv.url("/"), "extract_mode": "html"})
    assert bad.error_kind == "invalid_arguments"
    count = await reg.execute("web_search", {"query": "x", "count": 11})
    assert count.error_kind == "invalid_arguments"

    reg = ToolRegistry(Workspace(tmp_path))
    cfg = Config.from_mapping({"web": {"allow_private_hosts": True}})
    web.register(reg, Workspace(tmp_path), cfg)
    ok = await reg.execute("web_fetch", {"url": srv.url("/")})
    assert ok.success and ok.output.endswith("hi there")
