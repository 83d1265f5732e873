"""The bridge of ``[sandbox] allowed_hosts`` under bubblewrap (octos_tools.sandbox._bridge,
._netns): the pre-made network namespace where it works (root, and an unprivileged
server), the Python bridge where it does not; either way the command has a network
namespace of its own, reaches a listed host only through the proxy, inherits no channel,
and a failed set-up runs nothing."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from octos_tools.sandbox import SandboxSettings, _netns, engine_status, wrap_command

pytestmark = pytest.mark.skipif(
    "bubblewrap" not in {s.name for s in engine_status() if s.usable},
    reason="no bubblewrap here",
)
SRC = str(Path(__file__).resolve().parents[2] / "src")


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "6")
        self.end_headers()
        self.wfile.write(b"hello\n")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def web() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


# what the command sees: its network namespace, a fetch through the proxy, a direct
# connection to the same port, the descriptors it inherited
_PROBE = (
    "import os, socket, sys, urllib.request\n"
    "print(os.readlink('/proc/self/ns/net'))\n"
    "print(urllib.request.urlopen(f'http://127.0.0.1:{sys.argv[1]}/', timeout=10).read()"
    ".decode().strip())\n"
    "try:\n"
    "    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5); print('direct')\n"
    "except OSError:\n"
    "    print('no direct')\n"
    "print(sorted(int(f) for f in os.listdir('/proc/self/fd')))\n"
)


def _python() -> str:
    """A Python this user may run (an unprivileged user may not reach the server's own,
    under ``/root``)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.access(os.path.realpath(exe), os.X_OK):
            return exe
    pytest.skip("no Python this user can run")


def _spawn_probe(port: int, cwd: Path) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    box = SandboxSettings(engine="bubblewrap", allowed_hosts=(f"127.0.0.1:{port}",))
    argv = [_python(), "-I", "-c", _PROBE, str(port)]
    spawn = wrap_command(argv, cwd, {"PATH": "/usr/bin:/bin"}, box, cwd)
    try:
        done = subprocess.run(
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
    return spawn.argv, done


def _check_probe_output(out: str) -> None:
    lines = out.splitlines()
    assert lines[0] != os.readlink("/proc/self/ns/net")  # a namespace of its own
    assert lines[1:3] == ["hello", "no direct"]
    # 0-2, and the descriptor listdir itself opened: no channel, no sync descriptor
    assert len(json.loads(lines[3])) == 4


def test_the_premade_namespace_starts_no_bridge_process(web: int, tmp_path: Path) -> None:
    if _netns.available(shutil.which("bwrap") or "bwrap") is None:
        pytest.skip("the pre-made network namespace does not work here")
    argv, done = _spawn_probe(web, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "--unshare-net" not in argv and "--sync-fd" in argv
    assert "-S" not in argv  # no Python bridge before the command
    _check_probe_output(done.stdout)


def test_the_python_bridge_is_the_fallback(
    web: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCTOS_TOOLS_SANDBOX_BRIDGE", "python")
    argv, done = _spawn_probe(web, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "--unshare-net" in argv and "-S" in argv
    _check_probe_output(done.stdout)


def test_a_failed_namespace_set_up_runs_nothing(tmp_path: Path) -> None:
    bad = os.open(os.devnull, os.O_RDONLY)  # not a socket: sending the listener fails
    marker = tmp_path / "ran"
    try:
        with pytest.raises(subprocess.SubprocessError):
            subprocess.run(
                ["/bin/sh", "-c", f"touch {marker}"],
                preexec_fn=_netns.premade_netns(bad, 0, user=os.geteuid() != 0),
                check=False,
            )
    finally:
        os.close(bad)
    assert not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root")
def test_an_unprivileged_server_bridges_too(web: int) -> None:
    home = tempfile.mkdtemp(prefix="octos-nobody-bridge-")  # home and state (unreadable)
    ws = tempfile.mkdtemp(prefix="octos-nobody-bridge-ws-")
    for folder in (home, ws):
        os.chown(folder, 65534, 65534)
    code = (
        "import json, shutil, sys; from pathlib import Path\n"
        "sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])\n"
        "from octos_tools.sandbox import _netns\n"
        "import test_bridge as t\n"
        "argv, done = t._spawn_probe(int(sys.argv[3]), Path(sys.argv[4]))\n"
        "print(json.dumps([_netns.available(shutil.which('bwrap')), argv, done.returncode,"
        " done.stdout, done.stderr]))\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": home,
        "OCTOS_TOOLS_STATE_DIR": home,
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    tests = str(Path(__file__).parent)
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
    try:
        done = subprocess.run(
            [*cmd, "-c", code, SRC, tests, str(web), ws],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(ws, ignore_errors=True)
    if "cannot create its namespaces" in done.stderr:
        pytest.skip("bwrap needs user namespaces for an unprivileged user here")
    assert done.returncode == 0, done.stderr
    user, argv, code_, out, err = json.loads(done.stdout.splitlines()[-1])
    assert code_ == 0, err
    if user is not None:  # the pre-made namespace, a user namespace with it
        assert user is True and "--unshare-net" not in argv
    _check_probe_output(out)


@pytest.mark.parametrize("way", ["pre-made namespace", "python bridge"])
def test_the_listener_ends_with_the_sandbox_either_way(
    way: str, web: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from octos_tools.sandbox._bridge import bubblewrap_way
    from octos_tools.sandbox._proxy import egress_proxy

    if way == "python bridge":
        monkeypatch.setenv("OCTOS_TOOLS_SANDBOX_BRIDGE", "python")
    if bubblewrap_way() != way:
        pytest.skip(f"no {way} here")
    egress_proxy()
    assert _spawn_probe(web, tmp_path)[1].returncode == 0
    time.sleep(0.2)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        done = _spawn_probe(web, tmp_path)[1]
        assert done.returncode == 0, done.stderr
        _check_probe_output(done.stdout)
    deadline = time.monotonic() + 5
    while len(os.listdir("/proc/self/fd")) > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(os.listdir("/proc/self/fd")) <= before  # listeners and channels closed


def test_a_command_never_spawned_leaves_no_channel_behind(web: int, tmp_path: Path) -> None:
    import time

    from octos_tools.sandbox._bridge import bubblewrap_way
    from octos_tools.sandbox._proxy import egress_proxy

    if bubblewrap_way() != "pre-made namespace":
        pytest.skip("no pre-made namespace here")
    egress_proxy()
    assert _spawn_probe(web, tmp_path)[1].returncode == 0
    time.sleep(0.2)
    before = len(os.listdir("/proc/self/fd"))
    box = SandboxSettings(engine="bubblewrap", allowed_hosts=(f"127.0.0.1:{web}",))
    # queued for the proxy, but its child never runs (a spawn that failed)
    wrap_command(["/bin/true"], tmp_path, {"PATH": "/usr/bin:/bin"}, box, tmp_path).close()
    done = _spawn_probe(web, tmp_path)[1]  # the next child's wake-up takes both
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 5
    while len(os.listdir("/proc/self/fd")) > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(os.listdir("/proc/self/fd")) <= before
