"""Discovery tools: activate_tools, tool_search / tool_suggest, read_task_output."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins import discovery
from octos_tools.builtins.discovery import (
    DISCOVERY_TOOLS,
    MAX_OUTPUT_BYTES,
    ActivateToolsTool,
    Document,
    hints_of,
    rank,
    score_catalog,
    task_output,
    tokenize,
)
from octos_tools.context import ToolContext
from octos_tools.errors import ErrorKind, ToolError
from octos_tools.policy import ToolPolicy
from octos_tools.registry import ToolRegistry
from octos_tools.tasks import TaskRecord
from octos_tools.tool import JSONObject, Tool, ToolResult
from octos_tools.workspace import Workspace

from ..helpers import EchoTool

# ------------------------------------------------------------------------------ fixtures


def _stand_in(name: str, description: str, tags: tuple[str, ...] = ()) -> EchoTool:
    return EchoTool(name, description=description, tags=tags)


def _registry(workspace: Workspace | None = None, *, session_key: str = "s1") -> ToolRegistry:
    """Discovery tools plus stand-ins named like the runtime and web tools (the names
    matter: deferral and activation go by the seed's group table)."""
    registry = ToolRegistry(workspace, session_key=session_key)
    registry.register(_stand_in("read_file", "Read a text file of the workspace.", ("fs",)))
    registry.register(_stand_in("grep", "Search file contents with a regex.", ("search",)))
    registry.register(
        _stand_in("shell", "Run a shell command and return its output.", ("runtime",))
    )
    registry.register(
        _stand_in("exec_command", "Start a program in a pseudo-terminal session.", ("runtime",))
    )
    registry.register(_stand_in("write_stdin", "Type into a running session.", ("runtime",)))
    registry.register(_stand_in("web_search", "Search the internet for pages.", ("web",)))
    registry.register(
        _stand_in("web_fetch", "Download a web page and convert it to markdown.", ("web",))
    )
    discovery.register(registry, workspace or Workspace(os.getcwd()), _config())
    registry.defer_group("group:runtime")
    registry.defer_group("group:web")
    registry.register(ActivateToolsTool())
    return registry


def _config() -> Any:
    from octos_tools.config import Config

    return Config()


async def _call(registry: ToolRegistry, name: str, args: JSONObject, **ctx: Any) -> ToolResult:
    context = ToolContext(**ctx) if ctx else None
    return await registry.execute(name, args, context)


def _json(result: ToolResult) -> JSONObject:
    """The search answer's data (kept in the metadata; the output is readable text)."""
    assert result.success, result.output
    assert not result.output.lstrip().startswith("{"), "the model reads text, not JSON"
    data = (result.structured_metadata or {})["result"]
    assert isinstance(data, dict)
    for item in data.get("matches", data.get("suggestions", [])):
        assert item["name"] in result.output
    return data


# ------------------------------------------------------------------------------ activate_tools


def _activate_description(registry: ToolRegistry) -> str:
    return next(s.description for s in registry.specs() if s.name == "activate_tools")


def test_activate_tools_description_never_lists_deferred_names() -> None:
    registry = _registry()
    text = _activate_description(registry)
    assert text == ActivateToolsTool.description
    for name in ("exec_command", "shell", "web_fetch", "web_search", "write_stdin"):
        assert name not in text
    registry.activate("group:runtime")
    assert _activate_description(registry) == text


@pytest.mark.anyio
async def test_activate_tools_without_arguments_lists_by_group() -> None:
    registry = _registry()
    result = await _call(registry, "activate_tools", {})
    assert result.success
    assert "group:runtime" in result.output and "exec_command" in result.output
    assert result.structured_metadata is not None
    assert result.structured_metadata["deferred"] == [
        "exec_command",
        "shell",
        "web_fetch",
        "web_search",
        "write_stdin",
    ]
    registry.activate("group:runtime")
    registry.activate("group:web")
    result = await _call(registry, "activate_tools", {})
    assert result.output == "All tools are already active."


@pytest.mark.anyio
async def test_activate_tools_loads_the_whole_group_and_reports_already_active() -> None:
    registry = _registry()
    result = await _call(registry, "activate_tools", {"tools": ["exec_command", "read_file"]})
    assert result.success
    assert result.output == (
        "Loaded 3 tool(s): exec_command, shell, write_stdin. Already active: read_file."
    )
    assert {"shell", "exec_command", "write_stdin"} <= set(registry.visible_names())
    assert registry.is_deferred("web_fetch")
    again = await _call(registry, "activate_tools", {"group": "group:runtime"})
    assert again.output == "Already active: exec_command, shell, write_stdin."


@pytest.mark.anyio
async def test_activate_tools_unknown_and_denied_names_match_nothing() -> None:
    registry = _registry()
    registry.set_provider_policy(ToolPolicy(deny=["web_fetch"]))
    result = await _call(registry, "activate_tools", {"tools": ["web_fetch", "nope"]})
    assert result.error_kind is ErrorKind.NO_MATCH
    assert registry.is_deferred("web_fetch") and registry.is_deferred("web_search")
    # web_search's group also holds the denied web_fetch: loading it never names web_fetch
    result = await _call(registry, "activate_tools", {"tools": ["web_search", "nope"]})
    assert result.success
    assert "web_fetch" not in result.output
    assert result.output == "Loaded 1 tool(s): web_search. Not found: nope."
    unknown_group = await _call(registry, "activate_tools", {"group": "group:nothing"})
    assert unknown_group.error_kind is ErrorKind.NO_MATCH


@pytest.mark.anyio
async def test_activated_tools_get_lru_grace() -> None:
    registry = _registry()
    registry.lifecycle.max_active = 3
    registry.lifecycle.idle_threshold = 2
    for _ in range(5):
        registry.tick()
    await _call(registry, "activate_tools", {"tools": ["exec_command"]})
    registry.tick()
    evicted = registry.auto_evict()
    assert "read_file" in evicted  # idle since iteration 0
    assert not {"shell", "exec_command", "write_stdin"} & set(evicted)
    assert {"shell", "exec_command", "write_stdin"} <= set(registry.visible_names())


@pytest.mark.anyio
async def test_activate_tools_without_registry_is_not_configured() -> None:
    with pytest.raises(ToolError) as info:
        await ActivateToolsTool().execute_with_context(ToolContext(), {})
    assert info.value.kind is ErrorKind.NOT_CONFIGURED


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


def test_tokenize_splits_names_drops_stop_words_and_stems() -> None:
    assert tokenize("exec_command") == ["exec", "command"]
    assert tokenize("createIssue") == ["creat", "issu"]
    assert tokenize("Search the files for queries") == ["search", "file", "queri"]
    assert tokenize("running tests") == tokenize("run test")


def test_score_prefers_rare_words_and_name_matches() -> None:
    registry = ToolRegistry()
    registry.register(_stand_in("alpha", "common words here and a rare zebra"))
    registry.register(_stand_in("beta", "common words here"))
    registry.register(_stand_in("gamma", "common words"))
    scored = score_catalog(registry.catalog(), "common zebra")
    assert scored[0].entry.name == "alpha"
    assert {s.entry.name for s in scored} == {"alpha", "beta", "gamma"}
    assert score_catalog(registry.catalog(), "nothing") == []
    assert score_catalog(registry.catalog(), "gamma")[0].entry.name == "gamma"


def test_rank_uses_stems_synonyms_hints_and_schema_words() -> None:
    docs = [
        Document("remove_entry", "Remove an entry from the list."),
        Document("add_entry", "Add an entry to the list."),
        Document("list_entries", "List entries.", params="state open closed"),
        Document("mystery", "Does something.", hints=("telescope", "stars")),
    ]

    def top(query: str) -> str:
        return docs[rank(docs, query)[0].index].name

    assert top("deleting entries") == "remove_entry"  # delete ~ remove, entries ~ entry
    assert top("create a new entry") == "add_entry"  # create/new ~ add
    assert top("which entries are still closed") == "list_entries"  # an enum value
    assert top("look at the stars") == "mystery"  # the tool's own search hints
    assert rank(docs, "zebra") == []
    assert rank(docs, "") == []
    scored = rank(docs, "entry")
    assert [s.score for s in scored] == sorted((s.score for s in scored), reverse=True)


def test_hints_come_from_the_tool_else_the_builtin_table() -> None:
    class Hinted(EchoTool):
        search_hints = ("own", "words")

    assert hints_of(Hinted("grep")) == ("own", "words")
    assert "usages" in hints_of(EchoTool("grep"))
    assert hints_of(EchoTool("unknown_tool")) == ()


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


# ------------------------------------------------------------------------------ read_task_output


class ReportTool(Tool):
    """A spawn-only test tool: writes a report file and prints numbered lines."""

    name = "make_report"
    description = "Build a long report in the background."
    input_schema: JSONObject = {  # noqa: RUF012
        "type": "object",
        "properties": {"lines": {"type": "integer"}},
        "additionalProperties": False,
    }

    async def execute_with_context(self, ctx: ToolContext, args: JSONObject) -> ToolResult:
        assert ctx.workspace is not None
        count = int(args.get("lines", 30))
        ctx.workspace.write_bytes(
            "out/report.txt", "".join(f"report {i}\n" for i in range(1, 101)).encode()
        )
        body = "\n".join(f"line {i}" for i in range(1, count + 1))
        return ToolResult.ok(body, files_to_send=["out/report.txt"])


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


async def _spawned(registry: ToolRegistry, **args: Any) -> str:
    result = await _call(registry, "make_report", args)
    assert result.success
    assert len(result.output.encode()) < 1024
    envelope = json.loads(result.output)
    assert envelope["ok"] is True
    assert envelope["read_with"] == "read_task_output"
    assert envelope["read_modes"] == ["head", "tail", "grep", "line_range", "file"]
    assert envelope["expected_files"] == []
    assert "output_dir" in envelope and "summary" in envelope
    handle = envelope["task_handle"]
    records, timed_out = await registry.supervisor.wait([handle], timeout=30)
    assert not timed_out and records[handle].terminal
    return str(handle)


def _spawn_registry(workspace: Workspace) -> ToolRegistry:
    registry = _registry(workspace)
    registry.register(ReportTool())
    registry.mark_spawn_only("make_report")
    return registry


async def _read(registry: ToolRegistry, handle: str, mode: JSONObject, **ctx: Any) -> ToolResult:
    return await _call(registry, "read_task_output", {"task_handle": handle, "mode": mode}, **ctx)


@pytest.mark.anyio
async def test_spawn_only_output_readable_in_all_five_modes(workspace: Workspace) -> None:
    registry = _spawn_registry(workspace)
    try:
        handle = await _spawned(registry)
        head = await _read(registry, handle, {"kind": "head", "lines": 2})
        assert head.output.splitlines()[1] == "line 1"
        assert head.output.startswith("[starting] tool=make_report")
        assert len(head.output.splitlines()) == 2
        tail = await _read(registry, handle, {"kind": "tail", "lines": 2})
        assert tail.output == "line 29\nline 30"
        grep = await _read(registry, handle, {"kind": "grep", "pattern": "line 2"})
        assert grep.output.splitlines()[0] == "3:line 2"
        assert "21:line 20" in grep.output
        rng = await _read(registry, handle, {"kind": "line_range", "start": 2, "end": 4})
        assert rng.output == "line 1\nline 2\nline 3"
        file = await _read(
            registry,
            handle,
            {"kind": "file", "path": "out/report.txt", "mode": {"kind": "tail", "lines": 1}},
        )
        assert file.output == "report 100"
        default = await _call(registry, "read_task_output", {"task_handle": handle})
        assert default.output.splitlines()[-1] == "line 30"
        assert default.structured_metadata is not None
        assert default.structured_metadata["status"] == "completed"
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_handle_of_another_session_and_unknown_handle_refused(
    workspace: Workspace,
) -> None:
    registry = _spawn_registry(workspace)
    try:
        handle = await _spawned(registry)
        other = await _read(registry, handle, {"kind": "head"}, session_key="someone-else")
        assert other.error_kind is ErrorKind.PERMISSION_DENIED
        assert "another session" in other.output
        mine = await _read(registry, handle, {"kind": "head"}, session_key="s1")
        assert mine.success
        unknown = await _read(registry, "no-such-task", {"kind": "head"})
        assert unknown.error_kind is ErrorKind.NOT_FOUND
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_mode_errors(workspace: Workspace) -> None:
    registry = _spawn_registry(workspace)
    try:
        handle = await _spawned(registry)
        cases: list[tuple[JSONObject, str]] = [
            ({"kind": "line_range", "start": 0, "end": 3}, "start at 1"),
            ({"kind": "line_range", "start": 5, "end": 3}, "before start"),
            ({"kind": "line_range", "start": 1, "end": 501}, "spans 501 lines"),
            ({"kind": "grep", "pattern": ""}, "non-empty"),
            ({"kind": "file", "path": "out/report.txt", "mode": {"kind": "file"}}, "nested"),
            ({"kind": "file", "path": "out/report.txt", "mode": {"kind": "head", "x": 1}}, "x"),
            ({"kind": "file", "path": "out/report.txt", "mode": {"kind": "nope"}}, "nope"),
            ({"kind": "head", "lines": "3"}, "lines"),
        ]
        for mode, text in cases:
            result = await _read(registry, handle, mode)
            assert result.error_kind is ErrorKind.INVALID_ARGUMENTS, mode
            assert text in result.output, (mode, result.output)
        clamped = await _read(registry, handle, {"kind": "head", "lines": 100000})
        assert clamped.success and len(clamped.output.splitlines()) == 31
        nomatch = await _read(registry, handle, {"kind": "grep", "pattern": "zzz"})
        assert nomatch.output == '(no matches for "zzz")'
        past = await _read(registry, handle, {"kind": "line_range", "start": 90, "end": 95})
        assert past.success and "no lines" in past.output
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_file_mode_only_for_recorded_output_files(workspace: Workspace) -> None:
    registry = _spawn_registry(workspace)
    try:
        handle = await _spawned(registry)
        workspace.write_bytes("secret.txt", b"secret\n")
        refused = await _read(registry, handle, {"kind": "file", "path": "secret.txt"})
        assert refused.error_kind is ErrorKind.PERMISSION_DENIED
        assert "out/report.txt" in refused.output
        basename = await _read(registry, handle, {"kind": "file", "path": "report.txt"})
        assert basename.error_kind is ErrorKind.PERMISSION_DENIED
        absolute = str(workspace.root / "out" / "report.txt")
        ok = await _read(registry, handle, {"kind": "file", "path": absolute})
        assert ok.output.splitlines()[0] == "report 1"
        outside = await _read(registry, handle, {"kind": "file", "path": "/etc/passwd"})
        assert outside.error_kind is ErrorKind.PATH_OUTSIDE_WORKSPACE
        nul = await _read(registry, handle, {"kind": "file", "path": "out/report.txt\x00.png"})
        assert nul.error_kind is ErrorKind.INVALID_ARGUMENTS
        # the recorded file replaced by a symlink: never followed
        os.unlink(workspace.root / "out" / "report.txt")
        os.symlink(workspace.root / "secret.txt", workspace.root / "out" / "report.txt")
        link = await _read(registry, handle, {"kind": "file", "path": "out/report.txt"})
        assert link.error_kind is ErrorKind.SYMLINK_REFUSED
        assert "secret" not in link.output
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_file_mode_refused_before_outputs_and_for_symlinked_parent(
    workspace: Workspace, tmp_path_factory: pytest.TempPathFactory
) -> None:
    registry = _registry(workspace)
    try:
        record = registry.supervisor.spawn(_quiet, tool_name="quiet", session_key="s1")
        await registry.supervisor.wait([record.id], timeout=30)
        before = await _read(registry, record.id, {"kind": "file", "path": "x.txt"})
        assert before.error_kind is ErrorKind.NOT_FOUND
        assert "not recorded any output files" in before.output
        outside = tmp_path_factory.mktemp("outside")
        (outside / "x.txt").write_text("outside data\n")
        os.symlink(outside, workspace.root / "linked")
        record.output_files.append("linked/x.txt")
        linked = await _read(registry, record.id, {"kind": "file", "path": "linked/x.txt"})
        assert linked.error_kind is ErrorKind.SYMLINK_REFUSED
        assert "outside data" not in linked.output
    finally:
        await registry.aclose()


async def _quiet(record: TaskRecord) -> ToolResult:
    return ToolResult.ok("")


@pytest.mark.anyio
async def test_output_capped_at_4_kib_on_a_character_boundary(workspace: Workspace) -> None:
    registry = _registry(workspace)
    try:

        async def wide(record: TaskRecord) -> ToolResult:
            registry.supervisor.append_output(record.id, ("é€😀" * 300 + "\n") * 100)
            return ToolResult.ok("")

        record = registry.supervisor.spawn(wide, tool_name="wide", session_key="s1")
        await registry.supervisor.wait([record.id], timeout=30)
        for mode in (
            {"kind": "head", "lines": 500},
            {"kind": "tail", "lines": 500},
            {"kind": "grep", "pattern": "é", "max_matches": 100},
            {"kind": "line_range", "start": 1, "end": 100},
        ):
            result = await _read(registry, record.id, mode)
            assert result.success, result.output
            data = result.output.encode("utf-8")
            assert len(data) <= MAX_OUTPUT_BYTES, mode
            assert "…[truncated]" in result.output
            assert "\ufffd" not in result.output
    finally:
        await registry.aclose()


class _CountingReader(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        self.bytes_read += len(data)
        return data


def test_tail_reads_only_the_end_of_a_large_log() -> None:
    log = b"".join(b"row %d\n" % i for i in range(1_000_000))  # about 10 MB
    fh = _CountingReader(log)
    text = task_output._tail(fh, 3)
    assert text == "row 999997\nrow 999998\nrow 999999"
    assert fh.bytes_read < 200_000
    fh = _CountingReader(b"no newline at all " * 1000)
    assert task_output._tail(fh, 5).endswith("all ")


def test_a_huge_line_is_cut_while_reading() -> None:
    fh = _CountingReader(b"x" * 5_000_000 + b"\nsecond\n")
    lines = list(task_output._iter_lines(fh))
    assert [len(x) for x in lines] == [task_output._MAX_LINE_SCAN, 6]
    assert lines[1] == b"second"


def test_register_adds_three_tools_without_activate_tools(tmp_path: Path) -> None:
    registry = ToolRegistry()
    discovery.register(registry, Workspace(tmp_path), _config())
    assert registry.names() == ["tool_search", "tool_suggest", "read_task_output"]


@pytest.mark.anyio
async def test_discovery_acts_on_the_calling_session_only(tmp_path: Path) -> None:
    from octos_tools.profile import build_registry
    from octos_tools.session import ToolSession

    registry = build_registry(_config(), tmp_path)
    a, b = ToolSession(registry), ToolSession(registry)
    try:
        data = _json(await a.call("tool_search", {"query": "select:web_fetch"}))
        assert data["loaded"] == ["web_fetch"]
        assert data["matches"][0]["state"] == "active"
        assert not a.is_deferred("web_fetch")
        assert b.is_deferred("web_fetch") and registry.is_deferred("web_fetch")
        assert "web_fetch" in [s.name for s in a.before_model_request()]
        assert "web_fetch" not in [s.name for s in b.before_model_request()]
        seen_by_b = _json(await b.call("tool_search", {"query": "fetch a web page"}))
        states = {m["name"]: m["state"] for m in seen_by_b["matches"]}
        assert states["web_fetch"] == "deferred"
        loaded = await b.call("activate_tools", {"tools": ["diff_edit"]})
        assert loaded.success and "diff_edit" in loaded.output
        assert not b.is_deferred("diff_edit") and a.is_deferred("diff_edit")
        # a tool that cannot work here (no spawn delegate) is never "loaded"
        refused = await b.call("activate_tools", {"tools": ["spawn_agent"]})
        assert refused.error_kind == "no_match" and "Loaded" not in refused.output
    finally:
        await registry.aclose()


@pytest.mark.anyio
async def test_with_commands_denied_a_shell_request_offers_nothing_unrunnable_and_says_so(
    tmp_path: Path,
) -> None:
    from octos_tools.config import Config
    from octos_tools.profile import build_registry
    from octos_tools.session import ToolSession

    config = Config.from_mapping({"tool_policy": {"deny": ["group:runtime"]}})
    registry = build_registry(config, tmp_path)
    session = ToolSession(registry)
    unavailable = set(registry.unavailable())
    assert {"resume_agent", "close_agent"} <= unavailable
    for tool in ("tool_search", "tool_suggest"):
        key = "query" if tool == "tool_search" else "task"
        result = await session.call(tool, {key: "run a shell command", "limit": 8})
        data = result.structured_metadata["result"]
        offered = [m["name"] for m in data.get("matches", data.get("suggestions", []))]
        assert not set(offered) & (unavailable | {"exec_command", "shell", "bash"}), offered
        refused = {r["name"]: r["why"] for r in data["refused"]}
        assert "denied" in refused["exec_command"]
        assert "Not for you: exec_command: denied" in result.output
    await registry.aclose()


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
