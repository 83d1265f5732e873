"""The BM25F ranking: words, stems, synonyms, hints and schema words."""

from __future__ import annotations

from octos_tools.builtins.discovery import (
    Document,
    rank,
    score_catalog,
    tokenize,
)
from octos_tools.registry import ToolRegistry

from ..helpers import EchoTool

# ------------------------------------------------------------------------------ fixtures


def _stand_in(name: str, description: str, tags: tuple[str, ...] = ()) -> EchoTool:
    return EchoTool(name, description=description, tags=tags)


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
