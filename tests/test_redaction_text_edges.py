"""Redaction on text as tools really produce it: lone surrogates (``os.fsdecode`` of a
non-UTF-8 file name) must not break it, and a key right after a non-ASCII letter is still a
key (only an ASCII word can run into one)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from octos_tools.function_tool import tool
from octos_tools.output import redact_secrets, redact_value
from octos_tools.registry import ToolRegistry

KEY = "sk-proj-Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9"


def test_a_lone_surrogate_is_kept_and_keys_beside_it_are_redacted() -> None:
    assert redact_secrets("report_\udcff.txt done") == "report_\udcff.txt done"
    out = redact_secrets(f"report_\udcff.txt {KEY} end")
    assert KEY not in out and "\udcff" in out and "[credential-redacted]" in out
    assert redact_value({"files": ["name_\udcffx.txt"]}) == {"files": ["name_\udcffx.txt"]}


@pytest.mark.parametrize("before", ["密钥", "Ключ", "clé:", "é"])
def test_a_key_after_a_non_ascii_letter_is_redacted(before: str) -> None:
    out = redact_secrets(before + KEY)
    assert KEY not in out and out.startswith(before)


@pytest.mark.parametrize("before", ["task-", "x", "9", "_"])
def test_a_key_inside_an_ascii_word_is_left(before: str) -> None:
    text = before + KEY[3:] if before == "task-" else before + KEY
    assert redact_secrets(text) == text


@pytest.mark.anyio
@pytest.mark.skipif(os.uname().sysname == "Darwin", reason="macOS refuses non-UTF-8 names")
async def test_a_tool_listing_non_utf8_names_returns_its_result(tmp_path: Path) -> None:
    (tmp_path / os.fsdecode(b"bad\xffname")).write_text("x")
    (tmp_path / "good.txt").write_text("y")

    @tool
    async def names() -> str:
        """List the folder."""
        return "\n".join(sorted(os.listdir(tmp_path)))

    registry = ToolRegistry()
    registry.register(names)
    result = await registry.execute("names", "{}")
    assert result.success, result.output
    assert "good.txt" in result.output and "bad\udcffname" in result.output


GHP = "ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9"


@pytest.mark.parametrize("key", [KEY, GHP])
@pytest.mark.parametrize("offset", range(-40, 41, 4))
def test_no_part_of_a_key_a_cut_goes_through_survives(key: str, offset: int) -> None:
    from octos_tools.builtins.runtime import OutputCapture
    from octos_tools.output import cap_output

    limit = 2_000
    head_cut = int((limit - 80) * 0.7)  # where cap_output ends its head
    text = "w " * ((head_cut + offset) // 2) + key + " " + "z " * 3_000
    capped = redact_secrets(cap_output(text, limit))
    assert "omitted" in capped
    for n in range(8, len(key)):  # no fragment of 8+ characters of the key is left
        assert key[:n] not in capped and key[-n:] not in capped

    tail_text = "w " * 3_000 + key + " " + "z " * ((limit - head_cut + offset) // 2)
    capped = redact_secrets(cap_output(tail_text, limit))
    assert key[-8:] not in capped and key[:8] not in capped

    cap = OutputCapture(1_000)
    cap.feed(("w " * ((700 + offset) // 2) + key + " " + "z " * 3_000).encode())
    rendered = redact_secrets(cap.render())
    assert "omitted" in rendered
    assert key[:8] not in rendered and key[-8:] not in rendered


def test_a_long_run_at_a_cut_is_kept() -> None:
    from octos_tools.output import cap_output

    out = cap_output("A" * 100_000 + "Z" * 100_000, 50_000)
    assert out.startswith("A" * 30_000) and out.endswith("Z" * 10_000)
