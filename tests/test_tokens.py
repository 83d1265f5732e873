"""Token counts of tool declarations: exact with bpe-openai, a labelled estimate without."""

from __future__ import annotations

import json
import sys

import pytest

from octos_tools.tokens import (
    ESTIMATE_NAME,
    count_tokens,
    measure_specs,
    request_json,
    spec_json,
    spec_payload,
    token_counter,
)
from octos_tools.tool_types import ToolSpec

SPECS = [
    ToolSpec(
        name="read_file",
        description="Read a text file — numbered lines.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string", "description": "File path."}},
            "required": ["path"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="list_dir",
        description="List a folder.",
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
    ),
]


def test_payload_is_what_a_host_forwards_as_compact_json() -> None:
    spec = SPECS[0]
    assert spec_payload(spec) == {
        "name": "read_file",
        "description": spec.description,
        "parameters": spec.input_schema,
    }
    text = spec_json(spec)
    assert ", " not in text and '": ' not in text  # compact separators
    assert "—" in text  # non-ASCII as is, not \\u2014
    assert json.loads(request_json(SPECS)) == [spec_payload(s) for s in SPECS]


def test_exact_counts_match_the_tokenizer() -> None:
    bpe_openai = pytest.importorskip("bpe_openai", reason="the tokens extra is not installed")
    for encoding in ("o200k_base", "cl100k_base"):
        enc = bpe_openai.get_encoding(encoding)
        report = measure_specs(SPECS, encoding)
        assert report.exact and report.encoding == encoding
        assert report.label == f"{encoding} (exact)"
        assert report.per_tool == {s.name: len(enc.encode(spec_json(s))) for s in SPECS}
        assert report.total == len(enc.encode(request_json(SPECS)))
        assert list(report.per_tool) == ["read_file", "list_dir"]
    # the two vocabularies differ on ordinary text
    text = "Rechercher les fichiers modifiés depuis le dernier commit"
    assert token_counter("o200k_base").count(text) != token_counter("cl100k_base").count(text)
    assert token_counter("o200k_base").count("hello world") == 2


def test_without_bpe_openai_the_estimate_is_used_and_labelled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "bpe_openai", None)  # import raises ImportError
    counter = token_counter()
    assert not counter.exact
    assert counter.encoding == ESTIMATE_NAME
    assert "estimate" in counter.label and "octos-tools[tokens]" in counter.label
    report = measure_specs(SPECS)
    assert report.total == count_tokens(request_json(SPECS))
    assert report.per_tool["read_file"] == count_tokens(spec_json(SPECS[0]))
    with pytest.raises(ImportError, match="tokens"):
        token_counter(exact=True)


def test_estimate_on_request_and_unknown_encoding_refused() -> None:
    assert not token_counter(exact=False).exact
    assert count_tokens("abcde") == 2
    with pytest.raises(ValueError, match="o200k_base"):
        token_counter("p50k_base")
