"""Text the model can read: cuts between characters, split characters joined across session
reads, terminal control sequences removed, carriage-return redraws collapsed (tty too)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from octos_tools.builtins.runtime import (
    ExecCommandTool,
    OutputCapture,
    SessionManager,
    WriteStdinTool,
    clean_terminal_text,
)
from octos_tools.builtins.runtime._capture import incomplete_utf8_suffix
from octos_tools.config import ShellConfig
from octos_tools.workspace import Workspace

from .tool_helpers import call

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shells and ptys")


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[32mGREEN\x1b[0m ok", "GREEN ok"),
        ("a\x1b[1mB\x1b[22mc", "aBc"),
        ("\x1b]0;my title\x07after", "after"),  # OSC title ended by BEL
        ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC 8 hyperlink, ST-ended
        ("\x1b[?2004hprompt$ \x1b[?2004l", "prompt$ "),  # bracketed paste on/off
        ("\x1b(Bplain\x1b)0", "plain"),  # charset designation
        ("\x1b[2J\x1b[H\x1b[3;5Hhome", "home"),  # clear screen, cursor moves
        ("\x1bPq#0;2;0;0;0\x1b\\img", "img"),  # DCS string
        ("\x1b=\x1b>keypad", "keypad"),
        ("bell\x07 and nul\x00 gone", "bell and nul gone"),
        ("_\x08b_\x08o_\x08l_\x08d", "bold"),  # man's overstrike
        ("tab\tand\nnewline", "tab\tand\nnewline"),
        ("cut at the end \x1b[3", "cut at the end "),  # an unterminated sequence
    ],
)
def test_control_sequences_removed(raw: str, shown: str) -> None:
    assert clean_terminal_text(raw) == shown


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("10%\r50%\r100%\ndone", "100%\ndone"),
        ("Downloading [##   ] 40%\rDownloading [#####] 100%\n", "Downloading [#####] 100%\n"),
        ("abcdef\rXY", "XYcdef"),  # what a terminal shows
        ("long status line\r\x1b[Kshort\n", "short\n"),  # erase-line after the CR
        ("\x1b[32m 50%\x1b[0m\r\x1b[32m100%\x1b[0m", "100%"),
        ("line one\r\nline two\r\n", "line one\nline two\n"),  # a tty's line ends
        ("progress 99%\r", "progress 99%"),
    ],
)
def test_carriage_return_redraws_collapse_to_their_last_state(raw: str, shown: str) -> None:
    assert clean_terminal_text(raw) == shown


def test_plain_text_is_returned_unchanged() -> None:
    text = "def f(x):\n\treturn x  # ünïcødé €\n"
    assert clean_terminal_text(text) is text


def test_incomplete_utf8_suffix() -> None:
    euro = "€".encode()  # 3 bytes
    assert incomplete_utf8_suffix(b"ab") == 0
    assert incomplete_utf8_suffix(b"a" + euro) == 0
    assert incomplete_utf8_suffix(b"a" + euro[:1]) == 1
    assert incomplete_utf8_suffix(b"a" + euro[:2]) == 2
    assert incomplete_utf8_suffix("😀".encode()[:3]) == 3
    assert incomplete_utf8_suffix(b"\xff") == 0  # not UTF-8 at all: decoded as U+FFFD


def test_split_character_is_joined_across_reads() -> None:
    cap = OutputCapture(10_000)
    data = "x€y😀z".encode()
    for i in range(1, len(data)):  # every split point
        cap.feed(data[:i])
        first = cap.take()
        cap.feed(data[i:])
        second = cap.take()
        assert first + second == "x€y😀z", i
        assert "\ufffd" not in first + second


def test_truncation_cuts_between_characters() -> None:
    cap = OutputCapture(1000)
    cap.feed(("x€€" * 300_000 + "\nEND\n").encode())
    text = cap.render()
    assert "\ufffd" not in text and "x€€x" in text and text.endswith("END\n")
    assert "bytes omitted" in text
    for limit in range(256, 300):  # every cut point of a smaller render
        assert "\ufffd" not in cap.render(limit)


@pytest.mark.anyio
async def test_command_output_is_clean_text(tmp_path: Path) -> None:
    """Case BC-40 through the tool."""
    tool = ExecCommandTool(Workspace(tmp_path), ShellConfig(), SessionManager())
    r = await call(
        tool,
        {
            "cmd": "printf '\\033[32mGREEN\\033[0m ok \\033]0;title\\007 x\\n'; "
            "printf 'a\\033[1mB\\033[22mc\\n'; printf '10%%\\r55%%\\r100%%\\n'"
        },
    )
    assert r.success
    assert "GREEN ok  x\naBc\n100%" in r.output
    assert "\x1b" not in r.output and "title" not in r.output and "55%" not in r.output
    big = await call(
        tool,
        {"cmd": f"{sys.executable} -c \"import sys; sys.stdout.write('x€€' * 300000 + 'END')\""},
    )
    assert "\ufffd" not in big.output and "x€€x" in big.output and big.output.endswith("END")


@pytest.mark.anyio
async def test_tty_session_output_is_clean_and_split_characters_join(tmp_path: Path) -> None:
    sessions = SessionManager()
    exec_tool = ExecCommandTool(Workspace(tmp_path), ShellConfig(), sessions)
    stdin_tool = WriteStdinTool(sessions, ShellConfig())
    # prints the first byte of "€", waits for a line, then the rest: two reads (no echo of
    # the input, which a terminal would print between the two halves)
    code = (
        "import sys, os\n"
        "os.write(1, b'\\x1b[1mstart\\x1b[0m\\r\\n')\n"
        "os.write(1, '€'.encode()[:1])\n"
        "sys.stdin.readline()\n"
        "os.write(1, '€'.encode()[1:] + b'\\r\\n 1%\\r100%\\r\\n')\n"
    )
    script = tmp_path / "split.py"
    script.write_text(code, encoding="utf-8")
    r = await call(
        exec_tool,
        {"cmd": f"stty -echo; {sys.executable} {script}", "tty": True, "yield_time_ms": 1500},
    )
    assert r.structured_metadata is not None and r.structured_metadata["running"], r.output
    assert "start" in r.output and "\x1b" not in r.output and "\ufffd" not in r.output
    sid = r.structured_metadata["session_id"]
    r2 = await call(stdin_tool, {"session_id": sid, "chars": "go\n", "yield_time_ms": 3000})
    assert "Output:\n€\n100%" in r2.output, r2.output
    assert "\ufffd" not in r2.output and "\r" not in r2.output and "1%" not in r2.output
    await sessions.aclose()


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("abcdef\x1b[3D\x1b[K!", "abc!"),  # cursor back, erase to the end
        ("abcdef\x1b[0K", "abcdef"),  # erase from the cursor at the end: nothing
        ("abcdef\x1b[3D\x1b[1KX", "   Xef"),  # erase from the start to the cursor
        ("status: old\x1b[2K\rstatus: new", "status: new"),  # whole line, then CR
        ("old text\x1b[2Knew", "        new"),  # whole line cleared, cursor stays
        ("\x1b[2K\r[###  ] 60%\x1b[2K\r[#####] 100%", "[#####] 100%"),  # pip/npm style
        ("name\x1b[10Gvalue", "name     value"),  # cursor to column 10
        ("a\x1b[3Cb", "a   b"),  # cursor forward
        ("ab\x08\x08XY", "XY"),  # backspaces move back, text overwrites
        ("\x9b2K\rdone", "done"),  # 8-bit CSI
        ("\x1b[31m 12%\x1b[0m\r\x1b[K\x1b[32m100%\x1b[0m\n", "100%\n"),
    ],
)
def test_erase_line_and_cursor_moves_collapse_to_the_screen(raw: str, shown: str) -> None:
    assert clean_terminal_text(raw) == shown


def _frames(n: int, label: str = "downloading") -> bytes:
    return b"".join(f"\r\x1b[K{label} {i * 100 // n:3d}% [{i}/{n}]".encode() for i in range(n + 1))


@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
def test_capture_keeps_the_screen_not_the_stale_frames(chunk: int) -> None:
    """A redraw-heavy run: the head holds the final frame, nothing counts as omitted."""
    raw = b"start\n" + _frames(20_000) + b"\r\ndone\n"
    cap = OutputCapture(1000)
    for i in range(0, len(raw), chunk):
        cap.feed(raw[i : i + chunk])
    text = cap.render()
    assert text == "start\ndownloading 100% [20000/20000]\ndone\n"
    assert "omitted" not in text and "[0/20000]" not in text
    assert cap.take() == text and cap.take() == ""


def test_omitted_count_is_of_the_collapsed_text() -> None:
    lines = [_frames(50, f"file {k}") + b"\n" for k in range(400)]
    raw = b"".join(lines)
    screen = clean_terminal_text(raw.decode())
    cap = OutputCapture(2000)
    for part in lines:
        cap.feed(part)
    text = cap.render()
    assert text.startswith("file 0 100% [50/50]\nfile 1 100% [50/50]\n")
    assert text.endswith("file 399 100% [50/50]\n")
    marker = f" bytes omitted of {len(screen.encode())} ...]"
    assert marker in text, text[1300:1500]
    head, _, rest = text.partition("\n\n[... ")
    omitted = int(rest.split(" ", 1)[0])
    tail = rest.split("...]\n\n", 1)[1]
    assert len(head.encode()) + omitted + len(tail.encode()) == len(screen.encode())
    assert "% [4" not in head.replace("[50/50]", "")  # no stale frame anywhere


def test_a_line_still_being_drawn_shows_its_current_state() -> None:
    cap = OutputCapture(1000)
    cap.feed(b"build\n" + _frames(300)[: -len(b"\r\x1b[Kdownloading 100% [300/300]")])
    assert cap.render() == "build\ndownloading  99% [299/300]"
    cap.feed(b"\r\x1b[Kdownloading 100% [300/300]\r")
    cap.feed(b"\n")  # the \r\n split across reads is a line end, not a redraw
    assert cap.render() == "build\ndownloading 100% [300/300]\n"
    endless = OutputCapture(300)
    endless.feed(b"x" * 10_000)  # a line that never ends is still capped
    assert len(endless._line) <= 300 and "bytes omitted" in endless.render()


@pytest.mark.anyio
async def test_progress_bar_through_the_tool(tmp_path: Path) -> None:
    tool = ExecCommandTool(Workspace(tmp_path), ShellConfig(), SessionManager())
    code = (
        "import sys\n"
        "for i in range(30001):\n"
        "    sys.stdout.write(f'\\r\\x1b[2Kprogress {i}/30000')\n"
        "sys.stdout.write('\\nfinished\\n')\n"
    )
    (tmp_path / "bar.py").write_text(code)
    r = await call(tool, {"cmd": f"{sys.executable} bar.py", "max_output_tokens": 2000})
    assert r.success, r.output
    assert "progress 30000/30000\nfinished" in r.output
    assert "omitted" not in r.output and "progress 0/" not in r.output


def test_huge_cursor_moves_are_bounded() -> None:
    """A hostile ``ESC [ 99999999999 G`` cannot make a line of billions of cells."""
    assert clean_terminal_text("a\x1b[99999999999999999Gb") == "a" + " " * 998 + "b"
    assert len(clean_terminal_text("a" + "\x1b[999C" * 10_000 + "b")) <= 1_001
    assert clean_terminal_text("ab\x1b[99999999D!") == "!b"
