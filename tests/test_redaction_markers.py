"""Redaction finds the markers of its patterns in one Aho-Corasick pass (``ahocorasick_rs``);
the result must be exactly that of one substring search per marker (the fallback)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from octos_tools import output
from octos_tools.output import redact_secrets

ROOT = Path(__file__).resolve().parents[1]

SECRETS = [
    "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
    "sk_live_abcdefghijklmnop1234",
    "whsec_abcdefghijklmnop1234",
    "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "glpat-abcdefghijklmnopqrstu",
    "hf_abcdefghijklmnopqrstuvwxyz0123456789",
    "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "xoxb-1234567890-abcdefghij",
    "https://hooks.slack.com/services/T000/B000/abcdefghijklmnopqrstuvwx",
    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop",
    "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "AccountKey=" + "a" * 44 + "==",
    "task-sk-abcdefghijklmnopqrstuvwxyz012345",  # inside a word: kept
]


def _fallback(text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as m:
        m.setattr(output, "_MARKER_FINDER", None)
        return redact_secrets(text)


def test_the_one_pass_finder_is_in_use() -> None:
    assert output._MARKER_FINDER is not None
    assert output._present_markers("a sk- b ghp_ and EARER") == {"sk-", "ghp_", "EARER"}


@pytest.mark.parametrize("secret", SECRETS)
def test_same_result_as_one_search_per_marker(secret: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for text in (secret, f"x = 1\n{secret}\nend", f"{secret} {secret}\n{SECRETS[0]}"):
        assert redact_secrets(text) == _fallback(text, monkeypatch)


def test_same_result_on_this_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py"))
    assert len(files) > 100
    for path in files:
        text = path.read_text("utf-8")
        assert redact_secrets(text) == _fallback(text, monkeypatch), path


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([*output._MARKERS, *SECRETS, " ", "\n", "a", "Z9", "_", "-", "."]),
        max_size=30,
    )
)
def test_same_result_on_marker_soup(parts: list[str]) -> None:
    text = "".join(parts)
    mp = pytest.MonkeyPatch()
    try:
        assert redact_secrets(text) == _fallback(text, mp)
    finally:
        mp.undo()
