"""Redaction finds the markers of its patterns in the one Aho-Corasick pass it shares with
the injection scan (:mod:`octos_tools._prefilter`) and tries each case-sensitive pattern
only at its markers; the result must be exactly that of the plain method: one substring
search per marker and every pattern with a marker present run over the whole text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from octos_tools import _injection, _prefilter, output
from octos_tools.output import redact_secrets

ROOT = Path(__file__).resolve().parents[1]

SECRETS = [
    "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
    "sk_live_abcdefghijklmnop1234",
    "rk_test_abcdefghijklmnop1234",
    "whsec_abcdefghijklmnop1234",
    "AKIAIOSFODNN7EXAMPLE",
    "ASIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "ghs_abcdefghijklmnopqrstuvwxyz0123456789",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "glpat-abcdefghijklmnopqrstu",
    "hf_abcdefghijklmnopqrstuvwxyz0123456789",
    "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "pypi-AgEIcHlwaS5vcmc" + "x" * 50,
    "dckr_pat_abcdefghijklmnopqrstuvw",
    "xoxb-1234567890-abcdefghij",
    "xapp-1-abcdefghijklmnopqrstuvwxyz",
    "https://hooks.slack.com/services/T000/B000/abcdefghijklmnopqrstuvwx",
    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "GOCSPX-abcdefghijklmnopqrstuvwx",
    "ya29.abcdefghijklmnopqrstuvwxyz",
    "SG.abcdefghijklmnop.abcdefghijklmnopqrstuvwx",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop",
    "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
    "authorization: BEARER abcdefghijklmnopqrstuvwxyz012345",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY\n-----END PRIVATE KEY-----",
    "MII" + "A" * 61 + "\n" + "B" * 64 + "\n",
    "-----BEGIN CERTIFICATE-----\nMII" + "A" * 61 + "\n" + "B" * 64 + "\n",
    "AccountKey=" + "a" * 44 + "==",
    "task-sk-abcdefghijklmnopqrstuvwxyz012345",  # inside a word: kept
    "xsk_live_abcdefghijklmnop1234",  # inside a word: kept
    "sk-abc-sk-abcdefghijklmnopqrstuvwxyz",  # a marker inside a match
    "密钥sk-abcdefghijklmnopqrstuvwxyz0123",  # after a non-ASCII word: redacted
]


def _plain(text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The plain method: no prefilter pass (``find`` answers ``None``)."""
    with monkeypatch.context() as m:
        m.setattr(_prefilter, "find", lambda text: None)
        return redact_secrets(text)


def _find_each(text: str, literals: list[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for literal in literals:
        at = text.find(literal)
        while at >= 0:
            out.setdefault(literal, []).append(at)
            at = text.find(literal, at + 1)
    return out


LITERALS = sorted(set(output.SECRET_MARKERS) | set(_injection.CASED_ANCHORS))


@pytest.mark.parametrize(
    "text",
    [
        "a sk- b ghp_ and EARER; Ignore the prompt",
        "é sk- │ ghp_ 密钥 EARER; Ignore the prompt ignore\n" * 3,
        "sk-sk-sk- xoxox <|<|",
        "",
    ],
)
def test_the_one_pass_says_where_each_literal_occurs(text: str) -> None:
    found = _prefilter.find(text)
    assert found == _find_each(text, LITERALS)


def test_the_one_pass_finds_every_literal() -> None:
    text = " ".join(LITERALS)
    found = _prefilter.find(text)
    assert found is not None and set(found) == set(LITERALS)


def test_a_lone_surrogate_falls_back_to_the_plain_method() -> None:
    assert _prefilter.find("sk-\udcff") is None
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"
    assert redact_secrets(f"\udcff {secret}") == "\udcff sk-p...[credential-redacted]"


def test_the_last_long_pass_is_reused_for_the_same_object_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    real = _prefilter._finder if _prefilter._finder is not None else _prefilter._build()

    class Counting:
        def find_matches_as_indexes(self, data: bytes, overlapping: bool) -> Any:
            calls.append(len(data))
            return real.find_matches_as_indexes(data, overlapping=overlapping)

    monkeypatch.setattr(_prefilter, "_finder", Counting())
    long = "".join(["x" * 2000, " sk-"])
    assert _prefilter.find(long) == {"sk-": [2001]}
    assert _prefilter.find("short sk-") == {"sk-": [6]}  # short: scanned, not remembered
    assert _prefilter.find(long) == {"sk-": [2001]}
    assert calls == [2004, 9]
    same_text = "".join(["x" * 2000, " sk-"])  # equal, another object: scanned again
    assert _prefilter.find(same_text) == {"sk-": [2001]}
    assert calls == [2004, 9, 2004]


@pytest.mark.parametrize("secret", SECRETS)
def test_same_result_as_the_plain_method(secret: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for text in (
        secret,
        f"x = 1\n{secret}\nend",
        f"{secret} {secret}\n{SECRETS[0]}",
        f"{secret}{secret}",
        f"  1│ {secret}\n  2│ {secret[:10]}",
    ):
        assert redact_secrets(text) == _plain(text, monkeypatch), text


def test_the_secrets_are_redacted() -> None:
    kept = {"task-sk-", "xsk_live", "-----BEGIN CERTIFICATE"}
    for secret in SECRETS:
        if any(secret.startswith(k) for k in kept):
            assert redact_secrets(secret) == secret
        else:
            assert "[credential-redacted]" in redact_secrets(secret), secret


def test_same_result_on_this_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py"))
    assert len(files) > 100
    for path in files:
        text = path.read_text("utf-8")
        assert redact_secrets(text) == _plain(text, monkeypatch), path


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                *output.SECRET_MARKERS,
                *SECRETS,
                *_injection.CASED_ANCHORS[:12],
                " ",
                "\n",
                "a",
                "Z9",
                "_",
                "-",
                ".",
                "=",
                "/",
                "s",
                "r",
                "A" * 16,
                "é",
            ]
        ),
        max_size=30,
    )
)
def test_same_result_on_marker_soup(parts: list[str]) -> None:
    text = "".join(parts)
    mp = pytest.MonkeyPatch()
    try:
        assert redact_secrets(text) == _plain(text, mp)
    finally:
        mp.undo()


def test_every_windowed_match_starts_at_its_marker() -> None:
    """A pattern tried only at its markers must be case-sensitive, and each of its matches
    must start at one of its markers (less the stated offset), else a match would be
    missed: checked on every match in the secrets above, in every case."""
    texts = [s for secret in SECRETS for s in (secret, secret.lower(), secret.upper())]
    windowed = [p for p in output._SECRET_PATTERNS if p[2] is not None]
    assert len(windowed) > 15
    matched = set()
    for markers, pattern, offsets in windowed:
        assert offsets is not None and len(offsets) == len(markers)
        assert not pattern.flags & re.IGNORECASE
        for text in texts:
            for m in pattern.finditer(text):
                matched.add(pattern.pattern)
                assert any(
                    text.startswith(marker, m.start() + offset)
                    for marker, offset in zip(markers, offsets, strict=True)
                ), (pattern.pattern, text)
    assert matched == {p[1].pattern for p in windowed}
