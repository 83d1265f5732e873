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


# A key made for this test only (never used anywhere): 64-column base64 body lines.
_KEY_BODY = (
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n"
    "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu\n"
    "NMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ\n"
)
_AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(
    "secret",
    [
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "rk_live_51H8abcDEFghiJKLmnoPQRstu",
        "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
        "whsec_abcdefghijklmnopqrstuvwx",
        "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
        "npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "github_pat_11ABCDEFG0_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
        "xoxp-1234567890-1234567890-abcdefghij",
        "xapp-1-A0123456789-0123456789012-abcdef0123456789",
        "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
        "GOCSPX-abcdefghijklmnopqrstuvwxyz",
        "ya29.a0AfH6SMBabcdefghijklmnopqrstuvwxyz",
        "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
        "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5ejAxMjM0",
        "dckr_pat_abcdefghijklmnopqrstuvwx",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ],
)
def test_more_credential_formats_redacted(secret: str) -> None:
    out = redact_secrets(f"token: {secret}\nnext line")
    assert secret not in out and "credential-redacted" in out and "next line" in out


@pytest.mark.parametrize(
    "text",
    [
        f"aws_secret_access_key = {_AWS_SECRET}\n",
        f"AWS_SECRET_ACCESS_KEY={_AWS_SECRET}\n",
        f'{{"SecretAccessKey": "{_AWS_SECRET}", "SessionToken": "x"}}',
        "DefaultEndpointsProtocol=https;AccountName=a;AccountKey="
        "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnop==;",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX\n",
    ],
)
def test_labelled_secrets_redact_the_value_only(text: str) -> None:
    out = redact_secrets(text)
    assert "credential-redacted" in out
    assert _AWS_SECRET not in out and "XXXXXXXXXXXXXXXXXXXXXXXX" not in out
    assert "abcdefghijklmnopqrstuvwxyz0123456789ABCDEF" not in out


def test_pem_key_bodies_without_begin_line_redacted() -> None:
    # the tail of a key file (tail -n 3 key.pem)
    tail = _KEY_BODY[-130:] + "-----END PRIVATE KEY-----\n"
    out = redact_secrets("$ tail key.pem\n" + tail)
    assert "MzEfYyjiWA4R4" not in out and "NMoSfm76oqFvAp8" not in out
    assert "-----END PRIVATE KEY-----" in out and out.startswith("$ tail key.pem\n")
    # a body without BEGIN or END (sed -n 2,4p key.pem)
    out = redact_secrets("before\n" + _KEY_BODY + "after\n")
    assert "MIIEvQIBADAN" not in out and "NMoSfm76" not in out
    assert out.startswith("before\n") and out.endswith("after\n")
    # a certificate body is public: left alone
    cert = "-----BEGIN CERTIFICATE-----\n" + _KEY_BODY + "-----END CERTIFICATE-----\n"
    assert redact_secrets(cert) == cert


def test_ordinary_code_with_lookalikes_untouched() -> None:
    code = (
        "model = self.hf_model\nuuid = '123e4567-e89b-12d3-a456-426614174000'\n"
        "digest = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'\n"
        "npm_config_cache = '/tmp/npm'\nSG.x = 1\nheader = 'eyJ' + rest\n"
        "const sk = task_live_mode; skip_test_value = 3\n"
    )
    assert redact_secrets(code) == code


def test_a_capped_output_ends_on_line_boundaries_and_says_how_to_get_the_rest() -> None:
    from octos_tools.output import cap_output

    lines = [f"line {i:05d} " + "x" * 40 for i in range(5000)]
    text = "\n".join(lines) + "\n"
    out = cap_output(text, 10_000)
    assert len(out.encode()) <= 10_000
    head, rest = out.split("\n... [", 1)
    marker, tail = rest.split("] ...\n\n", 1)  # a blank line on each side of the marker
    assert "redirect the output to a file and grep it" in marker
    assert "read it by line range" in marker
    assert head.splitlines() == lines[: len(head.splitlines())]  # whole lines only
    assert tail.splitlines() == lines[len(lines) - len(tail.splitlines()) :]
    omitted = int(marker.split(" bytes omitted")[0])
    assert omitted == len(text.encode()) - len(head.encode()) - len(tail.encode())


def test_one_huge_line_is_still_cut_on_a_character_boundary() -> None:
    from octos_tools.output import cap_output

    out = cap_output("é" * 100_000, 5_000)
    assert len(out.encode()) <= 5_000 and "bytes omitted of 200000 bytes" in out
