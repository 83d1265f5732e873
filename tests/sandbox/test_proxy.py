"""The egress proxy of ``[sandbox] allowed_hosts`` (octos_tools.sandbox._proxy, ._bridge),
with real sandboxed processes and loopback servers on both engines: a listed host works
through the proxy (urllib, curl, CONNECT); an unlisted host, another spelling, a private
address, a listed name that resolves private and a direct connection all fail."""

from __future__ import annotations

import http.server
import os
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from octos_tools.sandbox import SandboxSettings, engine_status, wrap_command

USABLE = [s.name for s in engine_status() if s.usable]
pytestmark = pytest.mark.skipif(not USABLE, reason="no sandbox engine here")
CURL = shutil.which("curl")


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello {self.path}\n".encode()
        if self.path == "/host":
            body = f"{self.headers.get_all('Host')}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def web() -> Iterator[int]:
    """A plain-HTTP server on the host's loopback; its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def echo() -> Iterator[int]:
    """A TCP echo server on the host's loopback (a CONNECT target); its port."""
    srv = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(4096):
                    conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    yield srv.getsockname()[1]
    srv.close()


def _run(cmd: str, engine: str, hosts: tuple[str, ...], cwd: Path) -> tuple[int, str]:
    box = SandboxSettings(engine=engine, allowed_hosts=hosts)
    spawn = wrap_command(["/bin/sh", "-c", cmd], cwd, {"PATH": "/usr/bin:/bin"}, box, cwd)
    try:
        proc = subprocess.run(
            spawn.argv,
            cwd=cwd,
            env=spawn.env,
            pass_fds=spawn.pass_fds,
            preexec_fn=spawn.preexec,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        spawn.close()
    return proc.returncode, proc.stdout + proc.stderr


def _py(code: str) -> str:
    return f"{sys.executable} -I -c {shlex.quote(code)}"


_URLOPEN = (
    "import sys, urllib.request, urllib.error\n"
    "try:\n"
    "    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(), end='')\n"
    "except urllib.error.HTTPError as e:\n"
    "    print(e.code, e.read().decode().strip()); sys.exit(3)\n"
)


def _urlopen(url: str) -> str:
    return f"{_py(_URLOPEN)} {url}"


# CONNECT by hand to the proxy the environment names, then one echo round trip
_CONNECT = (
    "import os, socket, sys\n"
    "port = int(os.environ['HTTPS_PROXY'].rsplit(':', 1)[1])\n"
    "s = socket.create_connection(('127.0.0.1', port), timeout=10)\n"
    "s.sendall(b'CONNECT ' + sys.argv[1].encode() + b' HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
    "head = b''\n"
    "while b'\\r\\n\\r\\n' not in head:\n"
    "    chunk = s.recv(4096)\n"
    "    if not chunk: break\n"
    "    head += chunk\n"
    "print(head.split(b'\\r\\n')[0].decode())\n"
    "if b' 200 ' in head.split(b'\\r\\n')[0]:\n"
    "    s.sendall(b'ping'); print(s.recv(4).decode())\n"
    "else:\n"
    "    print(head.split(b'\\r\\n\\r\\n', 1)[1].decode().strip())\n"
)


@pytest.mark.parametrize("engine", USABLE)
def test_a_listed_host_is_reached_through_the_proxy(
    engine: str, web: int, echo: int, tmp_path: Path
) -> None:
    hosts = (f"127.0.0.1:{web}", f"127.0.0.1:{echo}")
    code, out = _run(_urlopen(f"http://127.0.0.1:{web}/a?b=1"), engine, hosts, tmp_path)
    assert (code, out) == (0, "hello /a?b=1\n")
    code, out = _run(f"{_py(_CONNECT)} 127.0.0.1:{echo}", engine, hosts, tmp_path)
    assert code == 0 and out.splitlines() == ["HTTP/1.1 200 Connection Established", "ping"]
    # the Host header of an absolute-URI request is the URI's, whatever the client sent
    host_cmd = f"{_urlopen(f'http://127.0.0.1:{web}/host')} 2>&1"
    if CURL:
        host_cmd = f"curl -sS -m 10 -H 'Host: other.example' http://127.0.0.1:{web}/host"
        for flag in ("", "-p"):  # absolute URI, then a CONNECT tunnel
            cmd = f"curl -sS -m 10 {flag} http://127.0.0.1:{web}/c"
            assert _run(cmd, engine, hosts, tmp_path) == (0, "hello /c\n"), flag
    assert _run(host_cmd, engine, hosts, tmp_path) == (0, f"['127.0.0.1:{web}']\n")


@pytest.mark.parametrize("engine", USABLE)
def test_what_is_not_listed_is_refused_with_403_and_a_reason(
    engine: str, web: int, echo: int, tmp_path: Path
) -> None:
    hosts = (f"127.0.0.1:{web}",)
    cases = {
        f"http://127.0.0.1:{echo}/": "is not in [sandbox] allowed_hosts",  # other port
        f"http://[::ffff:127.0.0.1]:{web}/": "is not in [sandbox] allowed_hosts",
        f"http://2130706433:{web}/": "is not in [sandbox] allowed_hosts",
        "http://192.168.0.1/": "192.168.0.1:80 is not in [sandbox] allowed_hosts",
        "http://169.254.169.254/latest/meta-data/": "is not in [sandbox] allowed_hosts",
    }
    for url, why in cases.items():
        code, out = _run(_urlopen(url), engine, hosts, tmp_path)
        assert code == 3 and out.startswith("403 octos-tools egress proxy:"), (url, out)
        assert why in out and len(out.strip().splitlines()) == 1, (url, out)
    code, out = _run(f"{_py(_CONNECT)} 127.0.0.1:{echo}", engine, hosts, tmp_path)
    assert out.splitlines()[0] == "HTTP/1.1 403 Forbidden" and "allowed_hosts" in out
    code, out = _run(_urlopen(f"https://127.0.0.1:{echo}/"), engine, hosts, tmp_path)
    assert code != 0 and "Tunnel connection failed: 403" in out, out


@pytest.mark.parametrize("engine", USABLE)
def test_a_listed_name_that_resolves_private_is_refused(
    engine: str, web: int, echo: int, tmp_path: Path
) -> None:
    names = ["localhost"]
    try:
        name = socket.gethostname()
        if name != "localhost" and socket.gethostbyname(name).startswith("127."):
            names.append(name)  # /etc/hosts: the machine's name is a loopback address
    except OSError:
        pass
    for name in names:
        hosts = (f"{name}:{web}", f"{name}:{echo}")
        code, out = _run(_urlopen(f"http://{name}:{web}/"), engine, hosts, tmp_path)
        assert code == 3 and out.startswith("403 ") and "loopback" in out, (name, out)
        assert "hello" not in out
        code, out = _run(f"{_py(_CONNECT)} {name}:{echo}", engine, hosts, tmp_path)
        assert out.splitlines()[0] == "HTTP/1.1 403 Forbidden" and "loopback" in out


@pytest.mark.parametrize("engine", USABLE)
def test_a_direct_connection_bypassing_the_proxy_fails(
    engine: str, web: int, tmp_path: Path
) -> None:
    hosts = (f"127.0.0.1:{web}",)
    probe = (
        "import socket, sys\n"
        "def tcp():\n"
        f"    socket.create_connection(('127.0.0.1', {web}), timeout=5).close()\n"
        "def udp():\n"
        "    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "    s.sendto(b'x', ('127.0.0.1', 9))\n"
        "def unix():\n"
        "    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "def netlink():\n"
        "    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)\n"
        "def sctp():\n"
        "    socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132)\n"
        "for probe in (tcp, udp, unix, netlink, sctp):\n"
        "    try:\n"
        "        probe(); print(probe.__name__, 'CONNECTED')\n"
        "    except OSError as e:\n"
        "        print(probe.__name__, 'refused', e.errno)\n"
    )
    code, out = _run(_py(probe), engine, hosts, tmp_path)
    assert code == 0, out
    assert "CONNECTED" not in out, out
    assert len(out.splitlines()) == 5
    if CURL:
        code, out = _run(
            f"curl -sS -m 5 --noproxy '*' http://127.0.0.1:{web}/", engine, hosts, tmp_path
        )
        assert code != 0 and "hello" not in out


@pytest.mark.skipif("bubblewrap" not in USABLE, reason="no bubblewrap here")
def test_bubblewrap_listener_ends_with_the_sandbox(web: int, tmp_path: Path) -> None:
    from octos_tools.sandbox._proxy import egress_proxy

    egress_proxy()  # started: its own descriptors are open from here on

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    hosts = (f"127.0.0.1:{web}",)
    _run(_urlopen(f"http://127.0.0.1:{web}/"), "bubblewrap", hosts, tmp_path)
    time.sleep(0.2)
    before = fds()
    for _ in range(5):
        assert _run(_urlopen(f"http://127.0.0.1:{web}/"), "bubblewrap", hosts, tmp_path)[0] == 0
    deadline = time.monotonic() + 5
    while fds() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fds() <= before  # each sandbox's listener and channel were closed
    # a command that binds its own loopback server reaches it directly (NO_PROXY)
    own = (
        "import socket, threading\n"
        "s = socket.create_server(('127.0.0.1', 0)); port = s.getsockname()[1]\n"
        "threading.Thread(target=lambda: s.accept()[0].sendall(b'own'), daemon=True).start()\n"
        "print(socket.create_connection(('localhost', port)).recv(3).decode())\n"
    )
    assert _run(_py(own), "bubblewrap", ("pypi.org",), tmp_path) == (0, "own\n")


@pytest.mark.parametrize("engine", USABLE)
def test_exec_command_through_the_cli_uses_the_configured_hosts(
    engine: str, web: int, tmp_path: Path
) -> None:
    import json

    src = str(Path(__file__).resolve().parents[2] / "src")
    cfg = tmp_path / "octos.toml"
    cfg.write_text(f'[sandbox]\nengine = "{engine}"\nallowed_hosts = ["127.0.0.1:{web}"]\n')
    cmd = f"{_urlopen(f'http://127.0.0.1:{web}/ok')} && {_urlopen(f'http://127.0.0.1:{web + 1}/')}"
    argv = ["call", "--json", "-c", str(cfg), "-w", str(tmp_path), "exec_command"]
    proc = subprocess.run(
        [sys.executable, "-m", "octos_tools", *argv, json.dumps({"cmd": cmd})],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": src},
        timeout=120,
        check=False,
    )
    result = json.loads(proc.stdout)
    meta = result["structured_metadata"]
    assert "hello /ok" in result["output"] and meta["exit_code"] == 3, result
    assert f"403 octos-tools egress proxy: 127.0.0.1:{web + 1} is not in" in result["output"]
    assert "allowed_hosts, through the egress proxy" in meta["sandbox_note"]


@pytest.mark.parametrize("engine", USABLE)
def test_a_listed_address_opens_only_its_own_ports_to_a_listed_name(
    engine: str, web: int, echo: int, tmp_path: Path
) -> None:
    # 127.0.0.1 listed for `web` only: a listed name resolving to 127.0.0.1 (DNS rebinding,
    # /etc/hosts) must not reach 127.0.0.1:echo
    try:
        name = socket.gethostname()
        loopback = name != "localhost" and socket.gethostbyname(name) == "127.0.0.1"
    except OSError:
        loopback = False
    if not loopback:
        pytest.skip("needs a machine name that resolves to 127.0.0.1 (/etc/hosts)")
    hosts = (f"127.0.0.1:{web}", f"{name}:{echo}")
    code, out = _run(f"{_py(_CONNECT)} {name}:{echo}", engine, hosts, tmp_path)
    assert out.splitlines()[0] == "HTTP/1.1 403 Forbidden", out
    assert "ping" not in out
    code, out = _run(_urlopen(f"http://127.0.0.1:{web}/"), engine, hosts, tmp_path)
    assert code == 0 and out == "hello /\n", out


_RAW = (
    "import os, socket, sys\n"
    "port = int(os.environ['HTTP_PROXY'].rsplit(':', 1)[1])\n"
    "s = socket.create_connection(('127.0.0.1', port), timeout=10)\n"
    "s.sendall(sys.argv[1].encode().decode('unicode_escape').encode('latin-1'))\n"
    "print(s.recv(4096).split(b'\\r\\n')[0].decode())\n"
)


@pytest.mark.parametrize("engine", USABLE)
def test_a_bare_cr_or_lf_in_the_head_is_refused(engine: str, web: int, tmp_path: Path) -> None:
    hosts = (f"127.0.0.1:{web}",)
    for head in (
        f"GET http://127.0.0.1:{web}/host HTTP/1.1\\r\\nX: a\\rHost: other\\r\\n\\r\\n",
        f"GET http://127.0.0.1:{web}/host HTTP/1.1\\r\\nX: a\\nHost: other\\r\\n\\r\\n",
    ):
        _, out = _run(f"{_py(_RAW)} {shlex.quote(head)}", engine, hosts, tmp_path)
        assert out.strip() == "HTTP/1.1 400 Bad Request", (head, out)
    good = f"GET http://127.0.0.1:{web}/ HTTP/1.1\\r\\nX: a\\r\\n\\r\\n"
    _, out = _run(f"{_py(_RAW)} {shlex.quote(good)}", engine, hosts, tmp_path)
    assert out.strip() == "HTTP/1.0 200 OK", out


def test_one_listener_cannot_take_every_connection_slot(
    web: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that opens many idle connections to its proxy holds at most
    MAX_CONNECTIONS_PER_LISTENER of the proxy's slots: another sandbox's request still
    goes through (before, one command's 256 idle connections froze everyone's egress)."""
    from octos_tools.sandbox import _proxy
    from octos_tools.sandbox._egress import HostRules

    monkeypatch.setattr(_proxy, "MAX_CONNECTIONS", 6)
    monkeypatch.setattr(_proxy, "MAX_CONNECTIONS_PER_LISTENER", 4)
    proxy = _proxy.EgressProxy()
    idle: list[socket.socket] = []
    try:
        greedy = proxy.tcp_port(HostRules.parse([f"127.0.0.1:{web}", "greedy.invalid"]))
        other = proxy.tcp_port(HostRules.parse([f"127.0.0.1:{web}"]))
        idle = [socket.create_connection(("127.0.0.1", greedy), timeout=5) for _ in range(6)]
        time.sleep(0.3)  # accepted, each waiting for its request head
        s = socket.create_connection(("127.0.0.1", other), timeout=5)
        with s:
            s.sendall(f"GET http://127.0.0.1:{web}/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            assert s.recv(4096).split(b"\r\n")[0] == b"HTTP/1.0 200 OK"
    finally:
        for c in idle:
            c.close()
        proxy.close()
