"""The output capture: head and tail kept."""

from __future__ import annotations

import sys

import pytest

from octos_tools.builtins.runtime import (
    OutputCapture,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


def test_output_capture_keeps_head_and_tail() -> None:
    cap = OutputCapture(1000)
    for _ in range(100):
        cap.feed(b"a" * 1000)
    cap.feed(b"THE END")
    text = cap.render()
    assert text.startswith("a" * 100) and text.endswith("THE END")
    assert f"{100_007 - 1000} bytes omitted" in text
    small = OutputCapture(1000)
    small.feed("é".encode() * 400)  # 800 bytes: kept whole
    assert small.render() == "é" * 400
    assert "\ufffd" not in small.render(300)  # cut on character boundaries
    assert small.take() and small.take() == ""
