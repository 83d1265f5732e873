"""tool_search and tool_suggest: ranking the catalog, select: loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from octos_tools.builtins.discovery import (
    DISCOVERY_TOOLS,
    score_catalog,
)
from octos_tools.policy import ToolPolicy

from ._discovery_helpers import _call, _json, _registry, _stand_in

# ------------------------------------------------------------------------------ fixtures


# ------------------------------------------------------------------------------ tool_search


@pytest.mark.anyio
async def test_tool_search_finds_a_deferred_tool_by_a_description_word() -> None:
    registry = _registry()
    data = _json(await _call(registry, "tool_search", {"query": "markdown"}))
    assert data["matches"][0]["name"] == "web_fetch"
    match = data["matches"][0]
    assert match["state"] == "deferred"
    assert match["group"] == "group:web"
    assert "load" not in match  # said once for the whole result, not per match
    assert "select:" in data["load"]
    assert match["args"] == ["text?"]  # argument names (EchoTool: optional text) end in ?
    assert data["total"] == len(registry.catalog())


@pytest.mark.anyio
async def test_tool_search_never_shows_a_policy_denied_tool() -> None:
    registry = _registry()
    registry.set_provider_policy(ToolPolicy(deny=["web_fetch"]))
    for query in ("markdown", "web", "web_fetch", "fetch"):
        data = _json(await _call(registry, "tool_search", {"query": query, "limit": 32}))
        assert "web_fetch" not in [m["name"] for m in data["matches"]]
    data = _json(await _call(registry, "tool_search", {"query": "select:web_fetch,grep"}))
    assert [m["name"] for m in data["matches"]] == ["grep"]
    assert data["refused"] == [{"name": "web_fetch", "why": "denied by the provider policy"}]
    assert "not_found" not in data
    suggest = _json(await _call(registry, "tool_suggest", {"task": "fetch a web page"}))
    assert "web_fetch" not in [s["name"] for s in suggest["suggestions"]]


@pytest.mark.anyio
async def test_tool_search_sees_a_tool_registered_later() -> None:
    registry = _registry()
    before = _json(await _call(registry, "tool_search", {"query": "spreadsheet"}))
    assert before["matches"] == []
    registry.register(_stand_in("sheet_tool", "Edit a spreadsheet cell."))
    after = _json(await _call(registry, "tool_search", {"query": "spreadsheet"}))
    assert [m["name"] for m in after["matches"]] == ["sheet_tool"]
    assert after["matches"][0]["state"] == "active"
    assert "load" not in after["matches"][0] and "load" not in after


@pytest.mark.anyio
async def test_tool_search_exact_name_first_and_limit_clamped() -> None:
    registry = _registry()
    data = _json(await _call(registry, "tool_search", {"query": "grep"}))
    assert data["matches"][0]["name"] == "grep"
    words = "file web search run session page command"
    few = _json(await _call(registry, "tool_search", {"query": words, "limit": 0}))
    assert len(few["matches"]) == 1
    registry.register(_stand_in("list_dir", "List the files of a folder.", ("fs",)))
    searchable = [e for e in registry.catalog() if e.name not in DISCOVERY_TOOLS]
    every = score_catalog(searchable, words)
    assert len(every) > 8  # more than the default limit, so the clamp to 32 shows
    big = _json(await _call(registry, "tool_search", {"query": words, "limit": 1000}))
    assert len(big["matches"]) == len(every)


@pytest.mark.anyio
async def test_tool_search_load_hint_said_once_and_output_readable() -> None:
    registry = _registry()
    result = await _call(registry, "tool_search", {"query": "web", "limit": 32})
    data = _json(result)
    deferred = [m for m in data["matches"] if m["state"] == "deferred"]
    assert len(deferred) >= 2
    assert result.output.count("select:name") == 1 and "load" in data
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{len(data['matches'])} tool(s) for 'web'")
    for match in data["matches"]:  # one line per tool: name, state, arguments, description
        line = next(x for x in lines if x.startswith(f"- {match['name']}"))
        assert (f"[{match['state']}]" in line) is (match["state"] != "active")
        assert match["description"] in line


@pytest.mark.anyio
@pytest.mark.parametrize(("tool", "key"), [("tool_search", "query"), ("tool_suggest", "task")])
@pytest.mark.parametrize("blank", ["", "   "])
async def test_empty_query_is_refused(tool: str, key: str, blank: str) -> None:
    result = await _call(_registry(), tool, {key: blank})
    assert result.error_kind == "invalid_arguments"
    assert key in result.output


@pytest.mark.anyio
async def test_tool_search_select_returns_full_schema_in_order() -> None:
    registry = _registry()
    data = _json(await _call(registry, "tool_search", {"query": "select:shell, read_file"}))
    assert [m["name"] for m in data["matches"]] == ["shell", "read_file"]
    assert data["matches"][0]["input_schema"]["type"] == "object"
    assert "not_found" not in data


@pytest.mark.anyio
async def test_tool_suggest_ranks_tools_for_a_task() -> None:
    registry = _registry()
    data = _json(await _call(registry, "tool_suggest", {"task": "I want to run a shell command"}))
    assert data["suggestions"][0]["name"] == "shell"
    assert data["suggestions"][0]["score"] > 0
    assert len(data["suggestions"]) <= 5


@pytest.mark.anyio
async def test_discovery_tools_are_not_in_search_or_suggest_results() -> None:
    registry = _registry()
    assert DISCOVERY_TOOLS == {"tool_search", "tool_suggest", "activate_tools"}
    assert DISCOVERY_TOOLS <= set(registry.names())
    suggest = _json(await _call(registry, "tool_suggest", {"task": "run the test suite"}))
    names = [s["name"] for s in suggest["suggestions"]]
    assert names and names[0] in ("shell", "exec_command"), names
    queries = [
        "tool_search",
        "tool_suggest",
        "activate_tools",
        "search tools",
        "suggest tools for a task",
        "activate load deferred tools",
        "find a tool",
    ]
    for query in queries:
        for tool, key, list_key in (
            ("tool_search", "query", "matches"),
            ("tool_suggest", "task", "suggestions"),
        ):
            data = _json(await _call(registry, tool, {key: query, "limit": 32}))
            assert not {m["name"] for m in data[list_key]} & DISCOVERY_TOOLS, (tool, query)
            assert data["total"] == len(registry.catalog())
    # Named exactly, they are still described.
    data = _json(await _call(registry, "tool_search", {"query": "select:tool_suggest"}))
    assert [m["name"] for m in data["matches"]] == ["tool_suggest"]


@pytest.mark.anyio
async def test_select_loads_deferred_tools_into_the_registry_view() -> None:
    registry = _registry()
    assert registry.is_deferred("web_fetch") and registry.is_deferred("shell")
    data = _json(await _call(registry, "tool_search", {"query": "select:web_fetch,grep,nope"}))
    assert [m["name"] for m in data["matches"]] == ["web_fetch", "grep"]
    assert data["loaded"] == ["web_fetch"]  # exactly the named tool, not its whole group
    assert data["not_found"] == ["nope"]
    assert data["matches"][0]["state"] == "active"
    assert "web_fetch" in registry.visible_names()
    assert registry.is_deferred("web_search") and registry.is_deferred("shell")
    again = _json(await _call(registry, "tool_search", {"query": "select:web_fetch"}))
    assert "loaded" not in again


@pytest.mark.anyio
async def test_tool_search_never_offers_a_tool_that_cannot_work_here(tmp_path: Path) -> None:
    from octos_tools.config import Config
    from octos_tools.profile import build_registry

    registry = build_registry(Config(), tmp_path)
    data = _json(await _call(registry, "tool_search", {"query": "make a picture of a cat"}))
    assert "image_generation" not in [m["name"] for m in data["matches"]]
    assert data["refused"][0] == {
        "name": "image_generation",
        "why": "unavailable here: no image backend is bound",
    }
    picked = _json(await _call(registry, "tool_search", {"query": "select:web_search"}))
    assert picked["matches"] == [] and "not_found" not in picked
    assert "no search provider" in picked["refused"][0]["why"]
    assert not registry.is_visible("web_search")
    await registry.aclose()


@pytest.mark.anyio
async def test_select_in_a_session_whose_list_cannot_change_says_call_by_name() -> None:
    from octos_tools.session import ToolSession

    registry = _registry()
    session = ToolSession(registry)
    session.list_persists = False
    result = await session.call("tool_search", {"query": "select:web_fetch"})
    data = result.structured_metadata["result"]
    assert "loaded" not in data and data["call_by_name"] == ["web_fetch"]
    assert "Loaded" not in result.output and "Call web_fetch by name" in result.output
    assert session.is_deferred("web_fetch")
    called = await session.call("web_fetch", {"text": "x"})
    assert called.success  # a call by name works
