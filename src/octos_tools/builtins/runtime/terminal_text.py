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
  start of the line (``50%\\r100%`` → ``100%``; ``abcdef\\rXY`` → ``XYcdef``); an
  erase-line sequence (``ESC [ K``/``ESC [ 2K``) after a ``\\r`` clears the rest first;
* a backspace erases the character before it (``_\\bx``, man's overstrike → ``x``);
* other control characters except tab and newline are dropped.

Rules from ECMA-48 (control functions) and the xterm control sequence documentation.
"""

from __future__ import annotations

import re

__all__ = ["clean_terminal_text"]

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
_ERASE_LINE = re.compile(r"\x1b\[[02]?K")
_CONTROL = re.compile(r"[\x00-\x07\x0b\x0c\x0e-\x1f\x7f]")
_BACKSPACE = re.compile(r"[^\x08\n]\x08")
_NEEDS_WORK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")


def _strip(text: str) -> str:
    if "\x1b" in text or "\x9b" in text:
        text = _ESCAPE.sub("", text)
    if "\x08" in text:
        previous = None
        while previous != text:
            previous, text = text, _BACKSPACE.sub("", text)
    return _CONTROL.sub("", text)


def _collapse_line(line: str) -> str:
    """What a terminal shows for one line written with carriage returns."""
    shown = ""
    for i, part in enumerate(line.split("\r")):
        erase = i > 0 and _ERASE_LINE.match(part) is not None
        text = _strip(part)
        if erase or len(text) >= len(shown):
            shown = text
        else:
            shown = text + shown[len(text) :]
    return shown


def clean_terminal_text(text: str) -> str:
    """``text`` as a terminal finally shows it, in plain characters (module docstring).

    Fast when there is nothing to do (one regex scan). Tabs and newlines are kept; no
    visible character of the command's output is removed except those a ``\\r`` redraw or a
    backspace overwrote.
    """
    if not _NEEDS_WORK.search(text):
        return text
    text = text.replace("\r\n", "\n")
    if "\r" not in text:
        return _strip(text)
    return "\n".join(
        _collapse_line(line) if "\r" in line else _strip(line) for line in text.split("\n")
    )
