"""Output post-processing: head/tail cap and credential redaction."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from octos_tools.output import cap_output, redact_secrets


def test_short_output_unchanged() -> None:
    assert cap_output("hello", 1000) == "hello"


def test_cap_keeps_head_and_tail_and_states_omitted() -> None:
    text = "A" * 100_000 + "Z" * 100_000
    out = cap_output(text, 50_000)
    assert len(out.encode()) <= 50_000
    assert out.startswith("A" * 30_000) and out.endswith("Z" * 10_000)
    assert "bytes omitted of 200000 bytes" in out


@given(st.text(min_size=0, max_size=3000), st.integers(min_value=256, max_value=2000))
def test_cap_never_exceeds_budget_and_stays_valid_utf8(text: str, budget: int) -> None:
    out = cap_output(text, budget)
    assert len(out.encode("utf-8", "surrogatepass")) <= max(budget, 0) or out == text
    if len(text.encode("utf-8", "surrogatepass")) <= budget:
        assert out == text


def test_cap_rejects_tiny_budget() -> None:
    with pytest.raises(ValueError):
        cap_output("x", 10)


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
        "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "glpat-abcdefghijklmnopqrstu",
        "xoxb-1234567890-abcdefghij",
    ],
)
def test_known_credentials_redacted(secret: str) -> None:
    out = redact_secrets(f"key = {secret}\nnext line")
    assert secret not in out and "credential-redacted" in out and "next line" in out


def test_bearer_and_private_key_redacted() -> None:
    text = "Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456\n"
    text += "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
    out = redact_secrets(text)
    assert "abcdefghijklmnopqrstuvwxyz123456" not in out and "MIIEowIBAAKCAQEA" not in out


def test_ordinary_code_untouched() -> None:
    code = 'sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"\n'
    code += "password = request.form['password']\ntask-id: disk-0123456789abcdefghijkl\n"
    assert redact_secrets(code) == code
