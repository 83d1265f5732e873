"""Workspace: the escape matrix, races, crash safety, transactions and the text codec."""

from __future__ import annotations

import os
import random
import signal
import stat
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from octos_tools.errors import ErrorKind, PathError
from octos_tools.workspace import Entry, FileChange, Workspace
from octos_tools.workspace import text as tc


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Workspace, Path, Path]:
    """``ws`` with a sibling ``ws_secret`` (a prefix of the workspace name) outside it."""
    root = tmp_path / "ws"
    outside = tmp_path / "ws_secret"
    root.mkdir()
    outside.mkdir()
    (outside / "key.txt").write_text("TOPSECRET\n")
    (root / "ok.txt").write_text("ok\n")
    (root / "sub").mkdir()
    (root / "sub" / "inner.txt").write_text("inner\n")
    (root / "leaf_link").symlink_to(outside / "key.txt")
    (root / "dir_link").symlink_to(outside)
    (root / "rel_link").symlink_to("../ws_secret")
    (root / "dangling").symlink_to(outside / "missing.txt")
    (root / "inner_link").symlink_to("sub")  # a link that stays inside: still refused
    return Workspace(root), root, outside


def _kind(fn: object, *args: object, **kw: object) -> ErrorKind:
    with pytest.raises(PathError) as info:
        fn(*args, **kw)  # type: ignore[operator]
    return info.value.kind


def _snapshot(d: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(d)): (p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
        for p in sorted(d.rglob("*"))
    }


# ------------------------------------------------------------------ escape matrix

ESCAPES = [
    ("../ws_secret/key.txt", ErrorKind.PATH_OUTSIDE_WORKSPACE),
    ("sub/../../ws_secret/key.txt", ErrorKind.PATH_OUTSIDE_WORKSPACE),
    ("./../ws/../ws_secret/key.txt", ErrorKind.PATH_OUTSIDE_WORKSPACE),
    ("/etc/passwd", ErrorKind.PATH_OUTSIDE_WORKSPACE),
    ("leaf_link", ErrorKind.SYMLINK_REFUSED),
    ("dir_link/key.txt", ErrorKind.SYMLINK_REFUSED),
    ("rel_link/key.txt", ErrorKind.SYMLINK_REFUSED),
    ("dangling", ErrorKind.SYMLINK_REFUSED),
    ("inner_link/inner.txt", ErrorKind.SYMLINK_REFUSED),
    ("ok.txt\x00.png", ErrorKind.INVALID_ARGUMENTS),
]


@pytest.mark.parametrize(("path", "kind"), ESCAPES)
def test_reads_never_leave_the_root(
    tree: tuple[Workspace, Path, Path], path: str, kind: ErrorKind
) -> None:
    ws, _, _ = tree
    assert _kind(ws.read_bytes, path) is kind
    assert _kind(ws.open_read, path) is kind


@pytest.mark.parametrize(("path", "kind"), ESCAPES)
def test_writes_never_leave_the_root(
    tree: tuple[Workspace, Path, Path], path: str, kind: ErrorKind
) -> None:
    ws, root, outside = tree
    before_out, before_in = _snapshot(outside), _snapshot(root)
    assert _kind(ws.write_bytes, path, b"PWNED") is kind
    assert _snapshot(outside) == before_out
    assert _snapshot(root) == before_in


def test_prefix_sibling_by_absolute_path(tree: tuple[Workspace, Path, Path]) -> None:
    ws, root, outside = tree
    # "/…/ws_secret" starts with the string "/…/ws" but is not inside it.
    assert str(outside).startswith(str(root))
    assert _kind(ws.read_bytes, str(outside / "key.txt")) is ErrorKind.PATH_OUTSIDE_WORKSPACE
    assert _kind(ws.list_dir, str(outside)) is ErrorKind.PATH_OUTSIDE_WORKSPACE
    assert ws.read_bytes(str(root / "ok.txt")) == b"ok\n"
    assert ws.read_bytes(str(root / "sub" / ".." / "ok.txt")) == b"ok\n"
    assert ws.relpath(str(root)) == "."


def test_absolute_path_through_unresolved_root_spelling(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "f").write_text("x")
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    ws = Workspace(alias)
    assert ws.root == real.resolve()
    assert ws.read_bytes(str(alias / "f")) == b"x"
    assert ws.read_bytes(str(real / "f")) == b"x"


def test_dangling_link_write_creates_nothing(tree: tuple[Workspace, Path, Path]) -> None:
    ws, root, outside = tree
    assert _kind(ws.write_bytes, "dangling", b"x") is ErrorKind.SYMLINK_REFUSED
    assert not (outside / "missing.txt").exists()
    assert (root / "dangling").is_symlink()


def test_backslash_is_an_ordinary_character(tree: tuple[Workspace, Path, Path]) -> None:
    ws, root, _ = tree
    ws.write_bytes("a\\..\\..\\b.txt", b"x")
    assert (root / "a\\..\\..\\b.txt").read_bytes() == b"x"
    assert ws.relpath("a\\b") == "a\\b"


def test_name_length_limits(tree: tuple[Workspace, Path, Path]) -> None:
    ws, root, _ = tree
    ws.write_bytes("n" * 255, b"ok")
    assert (root / ("n" * 255)).read_bytes() == b"ok"
    assert _kind(ws.write_bytes, "n" * 256, b"x") is ErrorKind.INVALID_ARGUMENTS
    assert _kind(ws.read_bytes, "é" * 128) is ErrorKind.INVALID_ARGUMENTS  # 256 bytes


def test_nul_message_names_the_byte(tree: tuple[Workspace, Path, Path]) -> None:
    ws, _, _ = tree
    with pytest.raises(PathError, match="NUL"):
        ws.stat("a\x00b")
    with pytest.raises(PathError, match="NUL"):
        ws.relpath("\x00")


def test_listing_and_stat_never_follow(tree: tuple[Workspace, Path, Path]) -> None:
    ws, _, _ = tree
    assert _kind(ws.list_dir, "dir_link") is ErrorKind.SYMLINK_REFUSED
    assert _kind(ws.list_dir, "rel_link") is ErrorKind.SYMLINK_REFUSED
    assert _kind(ws.list_dir, "ok.txt") is ErrorKind.NOT_A_DIRECTORY
    assert _kind(ws.list_dir, "nope") is ErrorKind.NOT_FOUND
    assert _kind(ws.stat, "dir_link/key.txt") is ErrorKind.SYMLINK_REFUSED
    assert stat.S_ISLNK(ws.stat("dir_link").st_mode)
    kinds = {e.name: e.kind for e in ws.list_dir(".")}
    assert kinds == {
        "dangling": "symlink",
        "dir_link": "symlink",
        "inner_link": "symlink",
        "leaf_link": "symlink",
        "ok.txt": "file",
        "rel_link": "symlink",
        "sub": "dir",
    }
    walked = [p for p, _ in ws.walk()]
    assert walked == [
        "dangling",
        "dir_link",
        "inner_link",
        "leaf_link",
        "ok.txt",
        "rel_link",
        "sub",
        "sub/inner.txt",
    ]
    assert not any("key" in p for p in walked)
    assert [p for p, _ in ws.walk(max_entries=3)] == walked[:3]


def test_exists_is_file_is_dir(tree: tuple[Workspace, Path, Path]) -> None:
    ws, _, _ = tree
    assert ws.exists("ok.txt") and ws.is_file("ok.txt") and not ws.is_dir("ok.txt")
    assert ws.exists("dangling") and not ws.is_file("dangling")
    assert not ws.exists("nope") and not ws.exists("ok.txt/child")
    assert ws.is_dir("sub") and not ws.is_dir("dir_link")
    assert _kind(ws.exists, "../x") is ErrorKind.PATH_OUTSIDE_WORKSPACE
    assert _kind(ws.exists, "dir_link/key.txt") is ErrorKind.SYMLINK_REFUSED


def test_trailing_slash_names_a_folder(tree: tuple[Workspace, Path, Path]) -> None:
    """POSIX: "file/" is ENOTDIR. The lexical normalisation drops the slash, so the leaf
    operations check it: a file is not_a_directory, nothing is read, written or deleted."""
    ws, root, _ = tree
    for path in ("ok.txt/", "ok.txt/.", "sub/../ok.txt/"):
        assert _kind(ws.read_bytes, path) is ErrorKind.NOT_A_DIRECTORY
        assert _kind(ws.open_read, path) is ErrorKind.NOT_A_DIRECTORY
        assert _kind(ws.stat, path) is ErrorKind.NOT_A_DIRECTORY
        assert _kind(ws.write_bytes, path, b"x") is ErrorKind.NOT_A_DIRECTORY
        assert _kind(ws.delete, path) is ErrorKind.NOT_A_DIRECTORY
        assert not ws.exists(path) and not ws.is_file(path)
    assert "drop the trailing '/'" in str(_raises(ws.read_bytes, "ok.txt/"))
    assert (root / "ok.txt").read_text() == "ok\n"
    assert _kind(ws.write_bytes, "new.txt/", b"x") is ErrorKind.NOT_FOUND
    assert not (root / "new.txt").exists()
    assert _kind(ws.read_bytes, "sub/") is ErrorKind.IS_A_DIRECTORY
    assert ws.is_dir("sub/") and ws.stat("sub/").st_mode & stat.S_IFDIR
    assert _kind(ws.stat, "inner_link/") is ErrorKind.SYMLINK_REFUSED
    assert ws.relpath("ok.txt/") == "ok.txt"  # relpath stays pure (no I/O)


def _raises(fn: object, *args: object) -> PathError:
    with pytest.raises(PathError) as info:
        fn(*args)  # type: ignore[operator]
    return info.value


def test_kinds_for_wrong_types(tree: tuple[Workspace, Path, Path]) -> None:
    ws, root, _ = tree
    assert _kind(ws.read_bytes, "sub") is ErrorKind.IS_A_DIRECTORY
    assert _kind(ws.read_bytes, ".") is ErrorKind.IS_A_DIRECTORY
    assert _kind(ws.read_bytes, "ok.txt/x") is ErrorKind.NOT_A_DIRECTORY
    assert _kind(ws.read_bytes, "missing") is ErrorKind.NOT_FOUND
    assert _kind(ws.write_bytes, "sub", b"x") is ErrorKind.IS_A_DIRECTORY
    assert _kind(ws.write_bytes, "x/y", b"x", create_parents=False) is ErrorKind.NOT_FOUND
    assert _kind(ws.read_bytes, "ok.txt", max_bytes=2) is ErrorKind.FILE_TOO_LARGE
    assert ws.read_bytes("ok.txt", max_bytes=3) == b"ok\n"
    os.mkfifo(root / "fifo")
    # A FIFO is refused at once (no blocking open, no read).
    assert _kind(ws.read_bytes, "fifo") is ErrorKind.INVALID_ARGUMENTS


def test_permission_denied(tree: tuple[Workspace, Path, Path]) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores permission bits")
    ws, root, _ = tree
    (root / "locked").mkdir()
    (root / "locked" / "f").write_text("x")
    (root / "locked").chmod(0)
    try:
        assert _kind(ws.read_bytes, "locked/f") is ErrorKind.PERMISSION_DENIED
    finally:
        (root / "locked").chmod(0o755)


# ------------------------------------------------------------------ writing


def test_write_creates_parents_and_keeps_mode(tree: tuple[Workspace, Path, Path]) -> None:
    ws, root, _ = tree
    ws.write_bytes("deep/er/new.txt", b"1")
    assert (root / "deep/er/new.txt").read_bytes() == b"1"
    (root / "ok.txt").chmod(0o640)
    ws.write_bytes("ok.txt", b"2")
    assert stat.S_IMODE((root / "ok.txt").stat().st_mode) == 0o640
    assert (root / "ok.txt").read_bytes() == b"2"
    assert not [p for p in os.listdir(root) if p.startswith(".octos-tmp")]


def test_write_refuses_link_in_parent_created_path(tree: tuple[Workspace, Path, Path]) -> None:
    ws, _, outside = tree
    assert _kind(ws.write_bytes, "dir_link/new/file", b"x") is ErrorKind.SYMLINK_REFUSED
    assert not (outside / "new").exists()


def test_mkdir_delete_rename(tree: tuple[Workspace, Path, Path]) -> None:
    ws, root, outside = tree
    ws.mkdir("m/n/o")
    ws.mkdir("m/n/o")  # already a directory: fine
    assert (root / "m/n/o").is_dir()
    assert _kind(ws.mkdir, "ok.txt") is ErrorKind.ALREADY_EXISTS
    assert _kind(ws.mkdir, "dir_link") is ErrorKind.SYMLINK_REFUSED
    assert _kind(ws.mkdir, "p/q", parents=False) is ErrorKind.NOT_FOUND
    ws.rename("ok.txt", "m/moved.txt")
    assert (root / "m/moved.txt").read_text() == "ok\n" and not (root / "ok.txt").exists()
    ws.rename("m/moved.txt", "fresh/dir/again.txt")
    assert (root / "fresh/dir/again.txt").exists()
    assert _kind(ws.rename, "sub", "x") is ErrorKind.IS_A_DIRECTORY
    assert _kind(ws.rename, "fresh/dir/again.txt", "dir_link/x") is ErrorKind.SYMLINK_REFUSED
    ws.delete("leaf_link")  # the link itself goes; its target stays
    assert not (root / "leaf_link").is_symlink()
    assert (outside / "key.txt").read_text() == "TOPSECRET\n"
    assert _kind(ws.delete, "sub") is ErrorKind.IS_A_DIRECTORY
    assert _kind(ws.delete, "nope") is ErrorKind.NOT_FOUND


# ------------------------------------------------------------------ apply_changes


def test_apply_changes_commits_all(tree: tuple[Workspace, Path, Path]) -> None:
    ws, root, _ = tree
    ws.apply_changes(
        [
            FileChange("ok.txt", b"new"),
            FileChange("sub/inner.txt", None),
            FileChange("made/new.txt", b"fresh"),
        ]
    )
    assert (root / "ok.txt").read_bytes() == b"new"
    assert not (root / "sub/inner.txt").exists()
    assert (root / "made/new.txt").read_bytes() == b"fresh"
    assert not [p for p in root.rglob(".octos-tmp*")]


@pytest.mark.parametrize(
    "bad",
    [
        FileChange("dir_link/x.txt", b"x"),
        FileChange("leaf_link", b"x"),
        FileChange("sub", b"x"),
        FileChange("absent.txt", None),
        FileChange("../escape.txt", b"x"),
    ],
)
def test_apply_changes_checks_everything_first(
    tree: tuple[Workspace, Path, Path], bad: FileChange
) -> None:
    ws, root, outside = tree
    before_in, before_out = _snapshot(root), _snapshot(outside)
    with pytest.raises(PathError):
        ws.apply_changes([FileChange("ok.txt", b"new"), FileChange("newdir/a.txt", b"a"), bad])
    assert _snapshot(root) == before_in
    assert _snapshot(outside) == before_out


def test_apply_changes_rolls_back_a_failure_during_commit(
    tree: tuple[Workspace, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, root, _ = tree
    before = _snapshot(root)
    real_replace = os.replace
    calls = {"n": 0}

    def flaky(src: str, dst: str, **kw: object) -> None:
        if not str(src).endswith(".bak"):
            calls["n"] += 1
            if calls["n"] == 3:
                raise OSError(28, "No space left on device")
        real_replace(src, dst, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(PathError):
        ws.apply_changes(
            [
                FileChange("ok.txt", b"one"),
                FileChange("sub/inner.txt", None),
                FileChange("brand/new.txt", b"two"),
                FileChange("sub/third.txt", b"three"),
            ]
        )
    monkeypatch.undo()
    assert _snapshot(root) == before
    assert not (root / "brand").exists()


def test_apply_changes_refuses_duplicates(tree: tuple[Workspace, Path, Path]) -> None:
    ws, _, _ = tree
    with pytest.raises(PathError) as info:
        ws.apply_changes([FileChange("a", b"1"), FileChange("./a", b"2")])
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS


# ------------------------------------------------------------------ race


_RACE_KINDS = (ErrorKind.SYMLINK_REFUSED, ErrorKind.NOT_FOUND, ErrorKind.NOT_A_DIRECTORY)


@pytest.mark.slow
def test_symlink_swap_race_never_escapes(tmp_path: Path) -> None:
    """A thread swaps ``d`` between a real directory and a link to outside, thousands of
    times, while reads and writes go through ``d``: nothing outside is read or changed."""
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "f.txt").write_text("TOPSECRET")
    (root / "d").mkdir()
    (root / "d" / "f.txt").write_text("inside")
    ws = Workspace(root)
    before = _snapshot(outside)
    stop = threading.Event()
    swaps = {"n": 0}

    def swapper() -> None:
        d, parked = root / "d", root / "parked"
        while not stop.is_set():
            os.rename(d, parked)
            os.symlink(outside, d)
            os.unlink(d)
            os.rename(parked, d)
            swaps["n"] += 1

    t = threading.Thread(target=swapper)
    t.start()
    reads = writes = refused = 0
    deadline = time.monotonic() + 2.5
    try:
        while time.monotonic() < deadline or swaps["n"] < 2000:
            if time.monotonic() > deadline + 10:
                break
            try:
                data = ws.read_bytes("d/f.txt")
                assert data == b"inside"
                reads += 1
            except PathError as exc:
                assert exc.kind in _RACE_KINDS
                refused += 1
            try:
                ws.write_bytes("d/f.txt", b"inside", create_parents=False)
                writes += 1
            except PathError as exc:
                assert exc.kind in _RACE_KINDS
                refused += 1
    finally:
        stop.set()
        t.join()
    assert swaps["n"] >= 1000
    assert reads > 0 and writes > 0
    assert _snapshot(outside) == before
    assert sorted(os.listdir(outside)) == ["f.txt"]


# ------------------------------------------------------------------ crash


def _writer_child(root: Path, size: int, ready_w: int) -> None:  # pragma: no cover - child
    """Runs in a forked child: rewrite big.bin with all-a / all-b content forever."""
    try:
        ws = Workspace(root)
        a, b = b"a" * size, b"b" * size
        os.write(ready_w, b"r")
        i = 0
        while True:
            ws.write_bytes("big.bin", a if i % 2 else b)
            i += 1
    finally:
        os._exit(1)


@pytest.mark.slow
def test_sigkill_during_writes_leaves_old_or_new(tmp_path: Path) -> None:
    """A child process rewriting a 4 MiB file is SIGKILLed at random moments: the file is
    always exactly the old content or the new, never a mix, short or empty; the next open
    of the workspace leaves no temporary file behind."""
    size = 4 * 1024 * 1024
    (tmp_path / "big.bin").write_bytes(b"a" * size)
    rng = random.Random(1234)
    for _ in range(25):
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            os.close(ready_r)
            _writer_child(tmp_path, size, ready_w)
        os.close(ready_w)
        assert os.read(ready_r, 1) == b"r"
        os.close(ready_r)
        time.sleep(rng.uniform(0.0, 0.15))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        data = (tmp_path / "big.bin").read_bytes()
        assert len(data) == size
        assert data in (b"a" * size, b"b" * size)
        Workspace(tmp_path)  # opening it sweeps what the killed writer left
        assert not list(tmp_path.glob(".octos-tmp*"))


# ------------------------------------------------------------------ text codec


def test_entry_is_a_value() -> None:
    e = Entry("a", "file", 1, 0.0)
    assert e == Entry("a", "file", 1, 0.0)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_decode_encode_is_lossless(data: bytes) -> None:
    doc = tc.decode(data)
    assert doc.encode(doc.text) == data
    assert tc.latin1(data).encode(tc.latin1(data).text) == data


@pytest.mark.parametrize(
    ("data", "codec", "bom", "label"),
    [
        (b"plain\n", "utf-8", b"", "UTF-8"),
        (b"\xef\xbb\xbfbom\r\n", "utf-8", b"\xef\xbb\xbf", "UTF-8 with BOM"),
        ("hi\r\n".encode("utf-16-le"), "utf-8", b"", None),
        (b"\xff\xfe" + "h\u00e9\r\n".encode("utf-16-le"), "utf-16-le", b"\xff\xfe", None),
        (b"\xfe\xff" + "h\u00e9\n".encode("utf-16-be"), "utf-16-be", b"\xfe\xff", None),
        (b"\xff\xfe\x00\x00" + "x\n".encode("utf-32-le"), "utf-32-le", b"\xff\xfe\x00\x00", None),
        (b"caf\xe9\n", "utf-8", b"", "not valid UTF-8 (first invalid byte at offset 3)"),
    ],
)
def test_decode_detects_encodings(data: bytes, codec: str, bom: bytes, label: str | None) -> None:
    doc = tc.decode(data)
    assert (doc.codec, doc.bom) == (codec, bom)
    if label:
        assert doc.label == label
    assert doc.encode(doc.text) == data


def test_binary_detection() -> None:
    assert tc.is_binary(b"PK\x03\x04\x00\x00")
    assert tc.is_binary(bytes(range(32)) * 4)
    assert not tc.is_binary(b"\xff\xfe" + "hello".encode("utf-16-le"))
    assert not tc.is_binary(b"caf\xe9\n")
    assert not tc.is_binary(b"")
    assert not tc.is_binary(b"tabs\tand\x1b[0m colours\n")


@pytest.mark.parametrize(
    ("data", "old", "new", "expected"),
    [
        (b"alpha\r\nbeta\r\ngamma", "alpha\nbeta", "A\nB\nC", b"A\r\nB\r\nC\r\ngamma"),
        (b"alpha\r\nbeta\r\n", "alpha\r\nbeta", "X", b"X\r\n"),
        (b"a\r\nb\nc\r\n", "b", "B", b"a\r\nB\nc\r\n"),
        (b"a\r\nb\nc\r\n", "b\nc", "1\n2", b"a\r\n1\n2\r\n"),
        (b"a\rb\rc", "a\nb", "x\ny", b"x\ry\rc"),
        (b"\xef\xbb\xbfk = 1\r\n", "k = 1", "k = 2", b"\xef\xbb\xbfk = 2\r\n"),
        (b"x = 1;\n// caf\xe9\n", "x = 1", "x = 2", b"x = 2;\n// caf\xe9\n"),
        (
            b"\xff\xfe" + "a\r\nb\r\n".encode("utf-16-le"),
            "a\nb",
            "\u00e9\nb",
            b"\xff\xfe" + "\u00e9\r\nb\r\n".encode("utf-16-le"),
        ),
    ],
)
def test_replace_keeps_bytes_outside_the_edit(
    data: bytes, old: str, new: str, expected: bytes
) -> None:
    doc = tc.decode(data)
    spans = tc.find(doc.text, old)
    assert len(spans) == 1
    assert doc.encode(tc.replace_spans(doc.text, spans, new)) == expected


def test_latin1_retry_for_edits_of_non_utf8_lines() -> None:
    data = b"const x = 1;\n// caf\xe9 note\n"
    assert tc.find(tc.decode(data).text, "café") == []
    doc = tc.latin1(data)
    spans = tc.find(doc.text, "café note")
    out = doc.encode(tc.replace_spans(doc.text, spans, "th\u00e9 note"))
    assert out == b"const x = 1;\n// th\xe9 note\n"
    with pytest.raises(UnicodeEncodeError):
        doc.encode("snowman \u2603")


def test_line_helpers() -> None:
    assert tc.split_lines("a\r\nb\nc\rd") == ["a", "b", "c", "d"]
    assert tc.split_lines("a\n") == ["a"]
    assert "".join(tc.split_lines("a\r\nb\n", keepends=True)) == "a\r\nb\n"
    assert tc.eol_style("a\r\nb\r\n") == "crlf"
    assert tc.eol_style("a\nb\r\n") == "mixed"
    assert tc.eol_style("ab") == "none"
    assert tc.eol_style("a\nb\n") == "lf"
    assert tc.eol_style("a\rb\r") == "cr"
    assert tc.eol_style("a\rb\n") == "mixed"
    assert tc.dominant_eol("a\r\nb\r\nc\n") == "\r\n"
    assert tc.line_number_at("a\r\nb\nc", 5) == 3
    assert tc.display("caf\udce9") == "café"
    with pytest.raises(ValueError):
        tc.find("abc", "")
