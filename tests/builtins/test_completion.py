"""How a finished command reads."""

from __future__ import annotations

import sys

import pytest

from octos_tools.builtins import runtime

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


def test_seconds_in_words() -> None:
    assert runtime.seconds(1) == "1 second"
    assert runtime.seconds(1.0) == "1 second"
    assert runtime.seconds(2) == "2 seconds"
    assert runtime.seconds(0.5) == "0.5 seconds"
    assert runtime.seconds(600) == "600 seconds"
