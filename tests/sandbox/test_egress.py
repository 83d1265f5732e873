"""``[sandbox] allowed_hosts`` parsed and matched (octos_tools.sandbox._egress), validated at
config load, dropped with a denied web, and costing nothing when empty."""

from __future__ import annotations

from pathlib import Path

import pytest

from octos_tools.config import Config, load_config
from octos_tools.errors import ConfigError
from octos_tools.sandbox import SandboxSettings, settings_from_config, wrap_command
from octos_tools.sandbox._bridge import no_proxy
from octos_tools.sandbox._egress import (
    DEFAULT_PORTS,
    HostRules,
    canonical_host,
    parse_allowed_host,
    split_authority,
)


def test_entries_parse_to_host_ports_and_address_flag() -> None:
    assert parse_allowed_host("PyPI.org.") == ("pypi.org", DEFAULT_PORTS, False)
    assert parse_allowed_host("pypi.org:8443") == ("pypi.org", (8443,), False)
    assert parse_allowed_host("127.0.0.1:8000") == ("127.0.0.1", (8000,), True)
    assert parse_allowed_host("[::1]:8000") == ("::1", (8000,), True)
    assert parse_allowed_host("::1") == ("::1", DEFAULT_PORTS, True)
    assert parse_allowed_host("*.github.com") == ("*.github.com", DEFAULT_PORTS, False)


@pytest.mark.parametrize(
    "entry",
    [
        "",
        " ",
        "http://pypi.org",
        "10.0.0.0/8",
        "user@host",
        "pypi.org:0",
        "pypi.org:65536",
        "pypi.org:http",
        "*.com",
        "a.*.com",
        "-bad.org",
        "[::1",
        "[::1]x",
        "has space.org",
        "1.2.3",
        "[fe80::1%lo]",
        "pyp%69.org",
        "*.127.0.0.1",
    ],
)
def test_bad_entries_are_refused_with_the_entry_named(entry: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_allowed_host(entry)
    assert repr(entry) in str(err.value) and "\n" not in str(err.value)


def test_matching_exact_wildcard_ports_and_address_spellings() -> None:
    rules = HostRules.parse(["pypi.org", "*.github.com:443", "127.0.0.1:8000"])
    assert rules.allows("pypi.org", 80) and rules.allows("PYPI.ORG.", 443)
    assert not rules.allows("pypi.org", 8080)
    assert not rules.allows("files.pypi.org", 443)  # exact names only
    assert rules.allows("api.github.com", 443) and rules.allows("a.b.github.com", 443)
    assert not rules.allows("github.com", 443)  # a wildcard is for the names below
    assert not rules.allows("api.github.com", 80)
    assert not rules.allows("evilgithub.com", 443)
    assert rules.allows("127.0.0.1", 8000) and not rules.allows("127.0.0.1", 8001)
    # every spelling of a listed address is the listed address (canonical_host)
    assert rules.allows("[::ffff:127.0.0.1]", 8000) and rules.allows("2130706433", 8000)
    assert rules.allows("127.0.0.%31", 8000) and rules.allows("pyp%69.org", 80)
    assert not rules.allows("127.0.0.2", 8000) and not rules.allows("[fe80::1%25lo]", 80)
    assert rules.addresses() == ["127.0.0.1"]  # names never open a private address


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("PyPI.Org.", "pypi.org"),
        ("pyp%69.org", "pypi.org"),
        ("127.0.0.1.", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.0.0.%31", "127.0.0.1"),
        ("[::ffff:127.0.0.1]", "127.0.0.1"),
        ("[::FFFF:7f00:1]", "127.0.0.1"),
        ("[0:0::1]", "::1"),
        ("0ad.de", "0ad.de"),  # a name that starts like a number
        ("xn--bcher-kva.de", "xn--bcher-kva.de"),
    ],
)
def test_canonical_host_undoes_every_spelling(written: str, canonical: str) -> None:
    assert canonical_host(written) == canonical
    assert canonical_host(canonical) == canonical  # idempotent


@pytest.mark.parametrize(
    "written",
    [
        "[fe80::1%25eth0]",  # an IPv6 zone id (RFC 6874)
        "[fe80::1%eth0]",
        "fe80::1%eth0",
        "b%C3%BCcher.de",  # not ASCII once decoded: IDNA is the client's job
        "bücher.de",
        "a%2fb.org",
        "a..b",
        "1.2.3.4.5",
        "127.0.0.1 x",
        "[::1",
        "",
    ],
)
def test_canonical_host_refuses_what_no_host_is(written: str) -> None:
    with pytest.raises(ValueError) as err:
        canonical_host(written)
    assert "\n" not in str(err.value)


def test_split_authority_ports_and_userinfo() -> None:
    assert split_authority("Example.COM.:08000", None) == ("example.com", 8000)
    assert split_authority("example.com:", 80) == ("example.com", 80)
    assert split_authority("[::1]:443", None) == ("::1", 443)
    assert split_authority("example.com", 80) == ("example.com", 80)
    for bad in ("user@h:1", "h:1@h:2", "h", "h:0", "h:65536", "h:+1", "h:\u0663", "[::1]x", ":80"):
        with pytest.raises(ValueError):
            split_authority(bad, None)


def test_an_entry_names_an_address_in_its_standard_spelling() -> None:
    for entry, shown in (("2130706433:8000", "127.0.0.1"), ("[::ffff:10.0.0.1]", "10.0.0.1")):
        with pytest.raises(ValueError, match=f"write the address as {shown}"):
            parse_allowed_host(entry)
    assert parse_allowed_host("[0:0::1]:8000") == ("::1", (8000,), True)
    assert parse_allowed_host("127.0.0.1.:8000") == ("127.0.0.1", (8000,), True)


def test_config_errors_name_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[sandbox]\nallowed_hosts = ["https://pypi.org"]\n')
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert "sandbox.allowed_hosts" in str(err.value) and "\n" not in str(err.value)
    cfg.write_text('[sandbox]\nnetwork = true\nallowed_hosts = ["pypi.org"]\n')
    with pytest.raises(ConfigError, match=r"sandbox\.allowed_hosts: has no effect with network"):
        load_config(cfg)
    cfg.write_text('[sandbox]\nallowed_hosts = ["pypi.org", "127.0.0.1:8000"]\n')
    box = settings_from_config(load_config(cfg))
    assert box.allowed_hosts == ("pypi.org", "127.0.0.1:8000") and box.egress


def test_a_denied_web_means_no_proxy() -> None:
    for deny in (["group:web"], ["web_fetch"]):
        cfg = Config.from_mapping(
            {"sandbox": {"allowed_hosts": ["pypi.org"]}, "tool_policy": {"deny": deny}}
        )
        box = settings_from_config(cfg)
        assert box.allowed_hosts == () and not box.egress and not box.network


def test_no_proxy_keeps_the_commands_own_loopback_unless_listed() -> None:
    assert no_proxy(("pypi.org",)) == "localhost,127.0.0.1,::1"
    assert no_proxy(("127.0.0.1:8000",)) == "::1"
    assert no_proxy(("[::1]:8000",)) == "localhost,127.0.0.1"


@pytest.mark.parametrize("engine", ["bubblewrap", "landlock"])
def test_without_allowed_hosts_nothing_is_added(engine: str, tmp_path: Path) -> None:
    from octos_tools.sandbox import resolve_engine

    box = SandboxSettings(engine=engine)
    try:
        resolve_engine(box)
    except Exception:
        pytest.skip(f"{engine} is not usable here")
    spawn = wrap_command(["/bin/true"], tmp_path, {"PATH": "/usr/bin:/bin"}, box, tmp_path)
    spawn.close()
    assert not any("proxy" in k.lower() for k in spawn.env)
    assert "--unshare-net" not in spawn.argv and "--sync-fd" not in spawn.argv
    assert len(spawn.pass_fds) == (1 if engine == "bubblewrap" else 0)


def test_contract_reports_the_hosts_only_when_the_proxy_is_in_use() -> None:
    from octos_tools.contract import build_contract
    from octos_tools.profile import build_registry

    hosts = ("pypi.org", "127.0.0.1:8000")
    with_hosts = SandboxSettings(allowed_hosts=hosts)
    policy = build_contract(build_registry(), sandbox=with_hosts)["policy"]
    assert policy["sandbox_allowed_hosts"] == list(hosts) and policy["sandbox_network"] is False
    for box in (SandboxSettings(), SandboxSettings(network=True, allowed_hosts=hosts)):
        assert (
            build_contract(build_registry(), sandbox=box)["policy"]["sandbox_allowed_hosts"] == []
        )
