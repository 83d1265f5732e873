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
        f"http://[::ffff:127.0.0.2]:{web}/": "127.0.0.2:",  # another address, any spelling
        f"http://2130706434:{web}/": "127.0.0.2:",
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
def test_a_bare_cr_is_refused_and_a_bare_lf_ends_a_line(
    engine: str, web: int, tmp_path: Path
) -> None:
    hosts = (f"127.0.0.1:{web}",)
    head = f"GET http://127.0.0.1:{web}/host HTTP/1.1\\r\\nX: a\\rHost: other\\r\\n\\r\\n"
    _, out = _run(f"{_py(_RAW)} {shlex.quote(head)}", engine, hosts, tmp_path)
    assert out.strip() == "HTTP/1.1 400 Bad Request", (head, out)
    # a bare LF ends a header line (RFC 9112 section 2.2); the head goes upstream
    # re-serialised with CRLF and the Host of the URI, so "Host: other" reaches nobody
    for head in (
        f"GET http://127.0.0.1:{web}/host HTTP/1.1\\r\\nX: a\\nHost: other\\r\\n\\r\\n",
        f"GET http://127.0.0.1:{web}/host HTTP/1.1\\nHost: other\\n\\n",
    ):
        _, out = _run(f"{_py(_RAW_ALL)} {shlex.quote(head)}", engine, hosts, tmp_path)
        assert out.splitlines()[0] == "HTTP/1.1 200 OK", (head, out)
        assert out.strip().splitlines()[-1] == f"['127.0.0.1:{web}']", (head, out)


_RAW_ALL = (
    "import os, socket, sys\n"
    "port = int(os.environ['HTTP_PROXY'].rsplit(':', 1)[1])\n"
    "s = socket.create_connection(('127.0.0.1', port), timeout=10)\n"
    "s.sendall(sys.argv[1].encode().decode('unicode_escape').encode('latin-1'))\n"
    "out = b''\n"
    "while chunk := s.recv(4096): out += chunk\n"
    "print(out.decode().replace('\\r\\n', '\\n'))\n"
)


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
            assert s.recv(4096).split(b"\r\n")[0] == b"HTTP/1.1 200 OK"
    finally:
        for c in idle:
            c.close()
        proxy.close()


# ---------------------------------------------------------------------------------------
# The request rules, on the proxy's own loopback listener (the Landlock engine's), with real
# sockets: what reaches the upstream, byte for byte, and what the client gets back.


class _Upstream:
    """A TCP server that reads one request (its head, then a Content-Length or chunked
    body), answers ``reply`` and keeps the connection open, recording every byte that
    arrives until the proxy closes it (a server that ignores ``Connection: close``)."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.received: list[bytes] = []
        self._done = threading.Event()
        self._srv = socket.create_server(("127.0.0.1", 0))
        self.port = self._srv.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._srv.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        data = b""
        conn.settimeout(20)
        with conn:
            try:
                while not self._complete(data) and (chunk := conn.recv(65536)):
                    data += chunk
                conn.sendall(self.reply)
                while chunk := conn.recv(65536):
                    data += chunk
            except OSError:
                pass
        self.received.append(data)
        self._done.set()

    @staticmethod
    def _complete(data: bytes) -> bool:
        head, sep, body = data.partition(b"\r\n\r\n")
        if not sep:
            return False
        low = head.lower()
        if b"transfer-encoding: chunked" in low:
            return b"\r\n0\r\n" in b"\r\n" + body and body.endswith(b"\r\n\r\n")
        for line in low.split(b"\r\n"):
            if line.startswith(b"content-length:"):
                return len(body) >= int(line.split(b":")[1])
        return True

    def wait(self, count: int = 1) -> list[bytes]:
        deadline = time.monotonic() + 10
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.received

    def close(self) -> None:
        self._srv.close()


_OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nKeep-Alive: timeout=5\r\n\r\nok"


@pytest.fixture()
def upstream() -> Iterator[_Upstream]:
    up = _Upstream(_OK)
    yield up
    up.close()


@pytest.fixture(scope="module")
def egress() -> Iterator[object]:
    from octos_tools.sandbox import _proxy

    proxy = _proxy.EgressProxy()
    yield proxy
    proxy.close()


def _exchange(port: int, raw: bytes, timeout: float = 10) -> tuple[bytes, float]:
    """Send ``raw`` to the proxy on ``port``; everything it answers until it closes, and
    how long that took (seconds)."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out, time.monotonic() - start


def _listener(egress: object, *hosts: str) -> int:
    from octos_tools.sandbox._egress import HostRules

    return int(egress.tcp_port(HostRules.parse(list(hosts))))  # type: ignore[attr-defined]


def test_framing_a_proxy_could_be_smuggled_past_is_refused_and_the_connection_closed(
    egress: object, upstream: _Upstream
) -> None:
    """RFC 9112 section 6.3: TE with CL, a TE not ending in chunked, obs-fold, conflicting
    CL, bad names. Before, TE+CL, conflicting CLs and ``chunked, gzip`` went upstream as
    written (the upstream and the proxy could read different request boundaries)."""
    port = _listener(egress, f"127.0.0.1:{upstream.port}")
    url = f"http://127.0.0.1:{upstream.port}/"
    heads = {
        "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n": "400 Bad Request",
        "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n": "400 Bad Request",
        "Transfer-Encoding: chunked, gzip\r\n": "400 Bad Request",
        "Transfer-Encoding: gzip\r\n": "400 Bad Request",
        "Transfer-Encoding:\r\n": "400 Bad Request",
        "Transfer-Encoding: gzip, chunked\r\n": "501 Not Implemented",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n": "501 Not Implemented",
        "Content-Length: 3\r\nContent-Length: 4\r\n": "400 Bad Request",
        "X: a\r\n folded\r\n": "400 Bad Request",
        "X : a\r\n": "400 Bad Request",
        "X(y): a\r\n": "400 Bad Request",
        "X: a\x00b\r\n": "400 Bad Request",
    }
    for extra, status in heads.items():
        raw = f"POST {url} HTTP/1.1\r\nHost: h\r\n{extra}\r\n0\r\n\r\nGET /x HTTP/1.1\r\n\r\n"
        out, took = _exchange(port, raw.encode("latin-1"))
        assert out.startswith(f"HTTP/1.1 {status}\r\n".encode()), (extra, out)
        assert b"Connection: close" in out and took < 5, (extra, out)  # answered, closed
    folded = f"GET {url} HTTP/1.1\r\n Host: h\r\n\r\n".encode()  # space before 1st header
    assert _exchange(port, folded)[0].startswith(b"HTTP/1.1 400 ")
    assert upstream.received == []  # nothing reached the upstream
    # what is well framed goes through, framed again by the proxy
    body = "5\r\nhello\r\n0\r\nX-Sum: 1\r\n\r\n"
    raw = f"POST {url}a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n{body}"
    out, _ = _exchange(port, raw.encode())
    assert out.startswith(b"HTTP/1.1 200 OK\r\n") and out.endswith(b"\r\n\r\nok")
    sent = upstream.wait()[0]
    assert sent.startswith(b"POST /a HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % upstream.port)
    assert sent.endswith(b"\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: 1\r\n\r\n"), sent


def test_one_request_per_connection_and_the_next_one_is_never_forwarded(
    egress: object, upstream: _Upstream
) -> None:
    """Before, the bytes after the first request were relayed to the first upstream
    unchecked: a pipelined ``GET http://other/`` reached the checked address with its own
    Host; and a keep-alive upstream held the client until the upstream timed out."""
    port = _listener(egress, f"127.0.0.1:{upstream.port}")
    first = f"POST http://127.0.0.1:{upstream.port}/1 HTTP/1.1\r\nHost: h\r\n"
    first += "Content-Length: 3\r\n\r\nabc"
    second = "GET http://unlisted.example/2 HTTP/1.1\r\nHost: unlisted.example\r\n\r\n"
    out, took = _exchange(port, (first + second).encode())
    # one response, Connection: close (the upstream's Keep-Alive dropped), then the end,
    # although the upstream keeps its connection open
    assert out.count(b"HTTP/1.1 ") == 1 and took < 5, out
    assert b"\r\nConnection: close\r\n" in out and b"Keep-Alive" not in out
    assert out.endswith(b"\r\n\r\nok")
    sent = upstream.wait()
    assert len(sent) == 1 and sent[0].endswith(b"\r\n\r\nabc"), sent  # nothing after
    assert b"unlisted" not in sent[0] and b"/2" not in sent[0]
    # the next request, on its own connection, is checked on its own
    out, _ = _exchange(port, second.encode())
    assert out.startswith(b"HTTP/1.1 403 Forbidden") and b"unlisted.example:80 is not in" in out


def test_a_head_with_bare_lf_endings_is_answered_at_once_and_big_heads_get_431(
    egress: object, upstream: _Upstream
) -> None:
    """Before, a head ending in ``\\n\\n`` waited 30 s for the head timeout; any number of
    headers passed, and an oversized head was a 400."""
    from octos_tools.sandbox._proxy_http import MAX_HEAD_BYTES, MAX_HEADERS

    port = _listener(egress, f"127.0.0.1:{upstream.port}")
    url = f"http://127.0.0.1:{upstream.port}/"
    out, took = _exchange(port, f"GET {url} HTTP/1.1\nHost: h\nX: 1\n\n".encode(), timeout=5)
    assert out.startswith(b"HTTP/1.1 200 OK") and took < 2, (out, took)
    assert upstream.wait()[0].startswith(b"GET / HTTP/1.1\r\nHost: 127.0.0.1:")
    many = "".join(f"X-{i}: v\r\n" for i in range(MAX_HEADERS))
    out, _ = _exchange(port, f"GET {url} HTTP/1.1\r\n{many}Host: h\r\n\r\n".encode())
    assert out.startswith(b"HTTP/1.1 431 Request Header Fields Too Large"), out
    assert b"more than 100 header lines" in out
    big = "X: " + "a" * MAX_HEAD_BYTES
    out, took = _exchange(port, f"GET {url} HTTP/1.1\r\nHost: h\r\n{big}".encode())
    assert out.startswith(b"HTTP/1.1 431 ") and took < 5, out  # no end of head waited for
    fits = "".join(f"X-{i}: v\r\n" for i in range(MAX_HEADERS - 1))
    out, _ = _exchange(port, f"GET {url} HTTP/1.1\r\n{fits}Host: h\r\n\r\n".encode())
    assert out.startswith(b"HTTP/1.1 200 OK"), out


def test_every_spelling_of_a_listed_host_matches_and_is_sent_canonical(
    egress: object, upstream: _Upstream, echo: int
) -> None:
    """Canonicalised once (``_egress.canonical_host``) before the allow-list and the SSRF
    guard. Before, ``127.0.0.1.`` and ``:0PORT`` went upstream in the client's spelling,
    ``%31`` and ``[::ffff:127.0.0.1]`` / ``2130706433`` missed the listed entry, and
    userinfo in an absolute URI was silently dropped."""
    up = upstream.port
    port = _listener(egress, f"127.0.0.1:{up}", f"127.0.0.1:{echo}")
    spellings = [
        f"http://127.0.0.1.:{up}/",
        f"http://127.0.0.1:0{up}/",
        f"HTTP://127.0.0.1:{up}/",
        f"http://127.0.0.%31:{up}/",
        f"http://[::ffff:127.0.0.1]:{up}/",
        f"http://2130706433:{up}/",
        f"http://0x7f.1:{up}/",
        f"http://127.1:{up}",  # no path: "/"
    ]
    for n, url in enumerate(spellings, 1):
        out, _ = _exchange(port, f"GET {url} HTTP/1.1\r\nHost: h\r\n\r\n".encode())
        assert out.startswith(b"HTTP/1.1 200 OK"), (url, out)
        sent = upstream.wait(n)[-1]
        assert (
            sent == f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{up}\r\nConnection: close\r\n\r\n".encode()
        )
    for target in (f"127.0.0.1.:0{echo}", f"[::ffff:127.0.0.1]:{echo}"):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\nping".encode())
            want = b"HTTP/1.1 200 Connection Established\r\n\r\nping"  # "ping": echoed
            got = b""
            while len(got) < len(want) and (chunk := s.recv(4096)):
                got += chunk
            assert got == want, target
    refused = {
        f"GET http://user@127.0.0.1:{up}/": "400 Bad Request",
        f"GET http://127.0.0.1:{up}@127.0.0.1:{up}/": "400 Bad Request",
        f"CONNECT user:pw@127.0.0.1:{echo}": "400 Bad Request",
        f"GET http://[fe80::1%25lo]:{up}/": "400 Bad Request",  # a zone id
        f"GET http://[fe80::1%lo]:{up}/": "400 Bad Request",
        f"GET http://127.0.0.1%2f:{up}/": "400 Bad Request",
        f"GET http://127.0.0.1\\.x:{up}/": "400 Bad Request",
        f"GET http://b%C3%BCcher.de:{up}/": "400 Bad Request",  # not IDNA
        f"GET http://127.0.0.1:{up}/#frag": "400 Bad Request",
        f"GET http://127.0.0.1:+{up}/": "400 Bad Request",
        f"GET http://127.0.0.2:{up}/": "403 Forbidden",  # another address, however spelled
        f"GET http://[::ffff:127.0.0.2]:{up}/": "403 Forbidden",
        f"GET http://2130706434:{up}/": "403 Forbidden",
        f"CONNECT 127.0.0.1:{up + 1 if up + 1 != echo else up + 2}": "403 Forbidden",
    }
    for line, status in refused.items():
        out, _ = _exchange(port, f"{line} HTTP/1.1\r\nHost: h\r\n\r\n".encode())
        assert out.startswith(f"HTTP/1.1 {status}".encode()), (line, out)
        assert out.count(b"\n") == 6, (line, out)  # five header lines and a one-line reason
    assert len(upstream.received) == len(spellings)


def test_the_response_is_framed_again_for_the_client(egress: object) -> None:
    """A chunked response with trailers reaches an HTTP/1.1 client chunked, an HTTP/1.0
    client close-delimited; a malformed response is a 502."""
    chunked = _Upstream(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
        b"3\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n"
    )
    broken = _Upstream(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")
    extra = _Upstream(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n")
    try:
        hosts = (f"127.0.0.1:{u.port}" for u in (chunked, broken, extra))
        port = _listener(egress, *hosts)
        # a Content-Length body is relayed as is, and nothing past its length
        url = f"http://127.0.0.1:{extra.port}/"
        out, _ = _exchange(port, f"GET {url} HTTP/1.1\r\nHost: h\r\n\r\n".encode())
        assert out.endswith(b"Content-Length: 2\r\nConnection: close\r\n\r\nok"), out
        out, _ = _exchange(port, f"HEAD {url} HTTP/1.1\r\nHost: h\r\n\r\n".encode())
        assert out.endswith(b"Content-Length: 2\r\nConnection: close\r\n\r\n"), out
        url = f"http://127.0.0.1:{chunked.port}/"
        out, _ = _exchange(port, f"GET {url} HTTP/1.1\r\nHost: h\r\n\r\n".encode())
        head, _, body = out.partition(b"\r\n\r\n")
        assert b"Transfer-Encoding: chunked" in head and b"keep-alive" not in head
        assert body == b"3\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n"
        out, _ = _exchange(port, f"GET {url} HTTP/1.0\r\n\r\n".encode())
        head, _, body = out.partition(b"\r\n\r\n")
        assert b"Transfer-Encoding" not in head and body == b"abcde", out
        url = f"http://127.0.0.1:{broken.port}/"
        out, _ = _exchange(port, f"GET {url} HTTP/1.1\r\nHost: h\r\n\r\n".encode())
        assert out.startswith(b"HTTP/1.1 502 Bad Gateway") and b"malformed" in out, out
    finally:
        for u in (chunked, broken, extra):
            u.close()


class _Echo11(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1 (so ``Expect: 100-continue`` gets its ``100``): answers the body's size."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        if self.headers.get("Transfer-Encoding") == "chunked":
            data = b""
            while size := int(self.rfile.readline().strip(), 16):
                data += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
        else:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = f"{len(data)} {self.headers.get('Expect')}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_request_bodies_go_through_whole(egress: object, tmp_path: Path) -> None:
    """A body sent after its head, an ``Expect: 100-continue`` upload (curl waits for the
    ``100``), a chunked upload, urllib's POST."""
    import urllib.request

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo11)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        up = server.server_address[1]
        port = _listener(egress, f"127.0.0.1:{up}")
        url = f"http://127.0.0.1:{up}/"
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(f"POST {url} HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n".encode())
            time.sleep(0.2)  # the head alone first
            s.sendall(b"hello")
            out = b""
            while chunk := s.recv(4096):
                out += chunk
        assert out.startswith(b"HTTP/1.1 200 OK") and out.endswith(b"\r\n\r\n5 None"), out
        proxies = urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"})
        request = urllib.request.Request(url, data=b"abc", method="POST")
        assert urllib.request.build_opener(proxies).open(request, timeout=10).read() == b"3 None"
        if CURL:
            big = tmp_path / "big.bin"
            big.write_bytes(os.urandom(3 << 20))
            for extra in ([], ["-H", "Transfer-Encoding: chunked"]):
                argv = [CURL, "-sS", "-m", "20", "-x", f"http://127.0.0.1:{port}", *extra]
                argv += ["--data-binary", f"@{big}", url]
                done = subprocess.run(argv, capture_output=True, text=True, check=False)
                assert (done.returncode, done.stdout) == (0, f"{3 << 20} 100-continue"), done
    finally:
        server.shutdown()
        server.server_close()
