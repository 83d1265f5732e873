"""Terminal output made readable text: control sequences removed, carriage-return redraws
collapsed to what the terminal finally shows.

A command on a pseudo-terminal (or one that colours its output anyway) writes escape
sequences a model cannot use: colours and styles (CSI ``ESC [ … m``), cursor moves and
erasures (CSI), window titles and hyperlinks (OSC ``ESC ] … BEL`` or ``ESC ] … ESC \\``),
bracketed-paste switches (``ESC [ ? 2004 h``), character-set selection (``ESC ( B``),
device-control strings (DCS/APC/PM/SOS). Progress bars redraw one line with ``\\r``. What
the model should read is what a person sees on the screen at the end:

* ``\\r\\n`` (a terminal's line end) becomes ``\\n``;
* within a line, each ``\\r`` returns to column 0 and the following text overwrites the
  start of the line (``50%\\r100%`` → ``100%``; ``abcdef\\rXY`` → ``XYcdef``); the
  erase-line sequences clear from the cursor to the end (``ESC [ K``, ``ESC [ 0K``), from
  the start to the cursor (``ESC [ 1K``) or the whole line (``ESC [ 2K``) wherever they
  stand, and the cursor moves of one line (``ESC [ n G``, ``ESC [ n C``, ``ESC [ n D``)
  move the column the next text overwrites; cleared cells read as spaces, except at the
  end of the line;
* a backspace moves one column back, so the next character overwrites the one before it
  (``_\\bx``, man's overstrike → ``x``);
* other control characters except tab and newline are dropped.

Rules from ECMA-48 (control functions) and the xterm control sequence documentation.
"""

from __future__ import annotations

import re

__all__ = ["clean_terminal_text", "render_line"]

# One escape sequence: CSI (ESC [ params intermediates final), OSC (ESC ] ... BEL | ST),
# DCS/SOS/PM/APC strings (ESC P|X|^|_ ... ST), charset designation (ESC ( ) * + - . / X),
# or any other two-character escape (ESC followed by one char in @-~ or 0-?). 8-bit CSI
# (U+009B) as well. An unterminated sequence at the end of the text is dropped too.
_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*(?:[@-~]|$)"
    r"|\x9b[0-?]*[ -/]*(?:[@-~]|$)"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\|$)"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\|$)"
    r"|\x1b[()*+\-./][ -~]?"
    r"|\x1b[ -/]*[0-~]"
    r"|\x1b$"
)
_LINE_CONTROL = re.compile(r"\r|\x08|(?:\x1b\[|\x9b)([0-9]*)([KGCD])")
_CONTROL = re.compile(r"[\x00-\x07\x0b\x0c\x0e-\x1f\x7f]")
_BACKSPACE = re.compile(r"[^\x08\n]\x08")
_NEEDS_WORK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")
_MAX_MOVE = 1000
"""Columns a cursor move goes at most (no terminal is wider; bounds the line's memory)."""
_REDRAWS = re.compile(r"[\r\x08]|(?:\x1b\[|\x9b)[0-9]*[KGCD]")


def _strip(text: str) -> str:
    if "\x1b" in text or "\x9b" in text:
        text = _ESCAPE.sub("", text)
    if "\x08" in text:
        previous = None
        while previous != text:
            previous, text = text, _BACKSPACE.sub("", text)
    return _CONTROL.sub("", text)


def render_line(line: str) -> str:
    """What a terminal shows for one line (no ``\\n``) written with carriage returns,
    backspaces, erase-line sequences and cursor moves within the line (module docstring);
    other controls and escape sequences are removed."""
    cells: list[str | None] = []  # None: a cell cleared or skipped, shown as a space
    col = 0
    pos = 0

    def write(text: str) -> None:
        nonlocal col
        if not text:
            return
        if col > len(cells):
            cells.extend([None] * (col - len(cells)))
        cells[col : col + len(text)] = list(text)
        col += len(text)

    for m in _LINE_CONTROL.finditer(line):
        write(_strip(line[pos : m.start()]))
        pos = m.end()
        token = m.group(0)
        if token == "\r":
            col = 0
        elif token == "\x08":
            col = max(0, col - 1)
        else:
            n = min(int(m.group(1)[:6] or 0), _MAX_MOVE)  # a terminal is this wide at most
            final = m.group(2)
            if final == "K":
                if n == 0:
                    del cells[col:]
                elif n == 1:
                    cells[: col + 1] = [None] * min(col + 1, len(cells))
                elif n == 2:
                    cells = [None] * min(col, len(cells))
            elif final == "G":
                col = max(1, n) - 1
            elif final == "C":
                col = min(col + max(1, n), max(len(cells), _MAX_MOVE))
            else:
                col = max(0, col - max(1, n))
    write(_strip(line[pos:]))
    while cells and cells[-1] is None:
        cells.pop()
    return "".join(" " if c is None else c for c in cells)


def clean_terminal_text(text: str) -> str:
    """``text`` as a terminal finally shows it, in plain characters (module docstring).

    Fast when there is nothing to do (one regex scan). Tabs and newlines are kept; no
    visible character of the command's output is removed except those a ``\\r`` redraw or a
    backspace overwrote.
    """
    if not _NEEDS_WORK.search(text):
        return text
    text = text.replace("\r\n", "\n")
    if not _REDRAWS.search(text):
        return _strip(text)
    return "\n".join(
        render_line(line) if _REDRAWS.search(line) else _strip(line) for line in text.split("\n")
    )
