"""Shared fixtures (the anyio backend for async tests) and the bytecode set-up of a test run."""

from __future__ import annotations

import compileall
import importlib.util
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# No per-example deadline: these machines are shared and an example that waits for a core
# fails the deadline without any bug (CI and the README command run 4 workers on 2 cores).
settings.register_profile("octos", deadline=None)
settings.load_profile("octos")

TESTS = Path(__file__).resolve().parent

# The per-user state folder (octos_tools.state_dir) of every test and of every process the
# tests start: a fresh folder per test process, never the user's own ~/.local/state.
os.environ.setdefault("OCTOS_TOOLS_STATE_DIR", tempfile.mkdtemp(prefix="octos-state-"))


def pytest_configure(config: pytest.Config) -> None:
    """Compile once, before the xdist workers start, what every process would compile again.

    Where ``PYTHONDONTWRITEBYTECODE`` is set (this project's machines and CI set it), no
    ``.pyc`` is ever written: each of the four workers would rewrite and compile every test
    module, and each of the ~100 ``python -m octos_tools`` processes the tests start would
    compile the editable-installed package again. Reading bytecode is not affected by that
    variable, so the controller (or a run without xdist) writes it here, once; the
    ``__pycache__`` folders it fills are ignored by git.
    """
    if hasattr(config, "workerinput"):  # an xdist worker: the controller did it
        return
    _compile_package("octos_tools")
    _rewrite_test_modules(config)


def _compile_package(name: str) -> None:
    """Byte-compile the (editable-installed) package ``name``; a no-op when up to date."""
    spec = importlib.util.find_spec(name)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        compileall.compile_dir(folder, quiet=2)


def _rewrite_test_modules(config: pytest.Config) -> None:
    """Write pytest's assertion-rewritten ``.pyc`` of each test module, as its import would.

    Uses pytest's own rewriting (the same code, cache name and atomic write its import hook
    uses); if that internal API changes, nothing is written and the workers rewrite as before.
    """
    try:
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            get_cache_dir,
        )

        state = config.stash[assertstate_key]
    except (ImportError, KeyError):  # another pytest, or --assert=plain
        return
    for fn in sorted({*TESTS.rglob("test_*.py"), *TESTS.rglob("conftest.py")}):
        pyc = get_cache_dir(fn) / (fn.name[:-3] + PYC_TAIL)
        if _read_pyc(fn, pyc, state.trace) is not None:
            continue
        try:
            pyc.parent.mkdir(exist_ok=True)
            source_hash, co = _rewrite_test(fn, config)
        except (OSError, SyntaxError, ValueError):  # reported by the collection, as usual
            continue
        _write_pyc(state, co, source_hash, pyc)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    """After a failed run in random order (pytest-randomly), say how to repeat that order:
    ``-q`` hides the header line that names the seed."""
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int) and exitstatus not in (
        pytest.ExitCode.OK,
        pytest.ExitCode.NO_TESTS_COLLECTED,
    ):
        terminalreporter.write_line(
            f"tests ran in random order: repeat that order with --randomly-seed={seed}"
        )


@pytest.fixture
def anyio_backend() -> str:
    """Run ``@pytest.mark.anyio`` tests on asyncio (the backend hosts use)."""
    return "asyncio"
