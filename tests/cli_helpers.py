"""Run the ``octos-tools`` command in this process, for CLI tests that are not about the
process boundary (about 0.3 s of interpreter start-up and imports saved per command)."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from click.testing import CliRunner

from octos_tools import cli


def run_in_process(
    *args: str,
    stdin: bytes = b"",
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """``octos-tools ARGS`` run by ``octos_tools.cli.main`` (what the script runs) with
    standard input, output and error swapped for buffers (click's ``CliRunner`` isolation:
    none of them is a terminal, as in a pipe). ``env`` entries are set on top of this
    process's environment for the run. Returns what ``subprocess.run(..., capture_output=True)``
    would: the exit status (``SystemExit``'s code) and both outputs as bytes.

    What only a process shows stays with real processes: signals, a closed pipe, a terminal,
    the exit of a ``call`` that ends its sessions, ``python -m`` versus the script.
    """
    code = 0
    with _restored_process_state(cwd):
        with CliRunner().isolation(input=stdin, env=env) as (out, err, _):
            sys.argv = ["octos-tools", *args]
            try:
                cli.main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            stdout, stderr = out.getvalue(), err.getvalue()
    return subprocess.CompletedProcess(["octos-tools", *args], code, stdout, stderr)


@contextlib.contextmanager
def _restored_process_state(cwd: Path | None) -> Iterator[None]:
    """Undo what a run of the command changes in the process it runs in: the working folder,
    ``sys.argv``, the environment (``main`` sets ``PYTHONIOENCODING``) and the logging set-up
    (``-v`` and the first run attach a handler to the stderr of that run): each run starts
    with the logging of a new process."""
    argv, environ = sys.argv, dict(os.environ)
    ours, root = logging.getLogger("octos_tools"), logging.getLogger()
    saved = (ours.handlers[:], ours.level, ours.propagate, root.handlers[:], root.level)
    ready = getattr(cli, "_logging_ready", None)
    ours.handlers[:], ours.level, ours.propagate = [], logging.NOTSET, True  # as in a new process
    if ready is not None:
        cli._logging_ready = False  # type: ignore[attr-defined]
    try:
        with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
            yield
    finally:
        sys.argv = argv
        os.environ.clear()
        os.environ.update(environ)
        ours.handlers[:], ours.level, ours.propagate = saved[0], saved[1], saved[2]
        root.handlers[:], root.level = saved[3], saved[4]
        if ready is not None:
            cli._logging_ready = ready  # type: ignore[attr-defined]
