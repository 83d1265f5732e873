"""The ``rg`` grep engine: ripgrep's parallel walk and search, results checked and sorted.

``rg --json`` runs with the workspace root as its working directory (``fchdir`` to a
descriptor opened without following links, so the root cannot be swapped under it) and
workspace-relative paths; it walks on all cores (no ``--sort``: that makes rg walk on one
thread), and the results are sorted here, by path, so the output is the same from run to
run. Once more than ``limit`` matches are confirmed, rg is killed.

Every finding is confirmed through the workspace before it is reported (:mod:`._hits`);
rg's error messages are read too: a folder rg cannot open because its path is longer than
``PATH_MAX`` is searched by the Python engine, other unreadable paths are reported as
skipped with rg's reason. What is off limits in the workspace (credential stores, the state
folder: :mod:`octos_tools.workspace._off_limits`) is excluded by ``--iglob`` and never
confirmed.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import selectors
import stat as stat_mod
import subprocess
import sys
import tempfile
from typing import IO, TYPE_CHECKING, Any

from ... import trusted_programs
from ...errors import ErrorKind, ToolError
from ...workspace import text as textcodec
from ..runtime import command_env
from ._budget import Budget, BudgetExceeded
from ._globmatch import expand_braces
from ._hits import (
    FileHits,
    GrepQuery,
    GrepResult,
    cut_to_limit,
    path_key,
    verified,
    verified_binary,
    verified_skip,
)
from ._rules import (
    RG_WALK_ARGS,
    is_internal_path,
    rg_glob_escape,
    rules_above,
)

if TYPE_CHECKING:
    from ...workspace import Workspace

__all__ = ["find_rg", "grep_rg", "rg_command"]

_ENAMETOOLONG = "(os error 36)"
_MAX_STDERR = 1 << 20
_MAX_SKIPPED = 200


def find_rg() -> str | None:
    """Path of the ``rg`` binary: next to ``sys.executable`` (the venv's ``bin``, where the
    ``ripgrep`` wheel puts it), then ``PATH``; ``None`` if neither has one that the server
    may run (:mod:`octos_tools.trusted_programs`: a venv inside a folder sandboxed commands
    write is skipped, with a warning naming it). ``OCTOS_TOOLS_NO_RG=1`` forces ``None``."""
    if os.environ.get("OCTOS_TOOLS_NO_RG") == "1":
        return None
    exe = "rg.exe" if os.name == "nt" else "rg"
    beside = os.path.join(os.path.dirname(sys.executable), exe)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        found = trusted_programs.which(beside)
        if found is not None:
            return found
    return trusted_programs.which(exe)


def rg_command(rg: str, q: GrepQuery) -> list[str]:
    """The rg command line for ``q`` (without the ignore file and the path)."""
    cmd = [rg, "--json", "--no-config"]
    cmd.append("--ignore-case" if q.ignore_case else "--case-sensitive")
    if q.context:
        cmd += ["--context", str(q.context)]
    for pat in expand_braces(q.file_pattern) if q.file_pattern else []:
        cmd += ["--glob", pat]
    if q.file_pattern and rg_glob_escape(q.file_pattern) != q.file_pattern:
        cmd += ["--glob", rg_glob_escape(q.file_pattern)]  # a name spelled like the pattern
    cmd += RG_WALK_ARGS  # after the user's globs: the last matching glob wins
    cmd += ["--regexp", q.pattern]
    return cmd


def _text(obj: dict[str, Any] | None) -> str:
    """An rg JSON ``{"text": ...}`` or ``{"bytes": base64}`` as a str (surrogate-escaped)."""
    obj = obj or {}
    if "text" in obj:
        return str(obj["text"])
    return base64.b64decode(obj.get("bytes", "")).decode("utf-8", "surrogateescape")


def _rel(path_obj: dict[str, Any] | None) -> str:
    text = _text(path_obj)
    return text[2:] if text.startswith("./") else text


class _Collector:
    """Reads rg's JSON stream file by file, confirming each file before counting it."""

    def __init__(self, ws: Workspace, q: GrepQuery, target: str, is_file: bool) -> None:
        self.ws, self.q, self.target, self.is_file = ws, q, target, is_file
        self.files: list[FileHits] = []
        self.binary: list[str] = []
        self.matches = 0
        self.more = False
        self.current: FileHits | None = None
        self.pending = 0  # matches in ``current``

    def _finish(self, binary_offset: int | None = None) -> None:
        hits, self.current, self.pending = self.current, None, 0
        if hits is None or (not self.is_file and is_internal_path(hits.path)):
            return
        if binary_offset is not None and hits.path not in self.binary:
            if self.is_file or verified_binary(self.ws, hits.path, binary_offset):
                self.binary.append(hits.path)
        if not hits.lines or not (self.is_file or verified(self.ws, hits)):
            return
        self.files.append(hits)
        self.matches += hits.matches
        if self.matches > self.q.limit:
            self.more = True

    def feed(self, line: bytes) -> bool:
        """Take one JSON line; ``False`` once enough matches are confirmed."""
        msg = json.loads(line)
        kind = msg.get("type")
        data = msg.get("data") or {}
        if kind == "begin":
            self._finish()
            self.current = FileHits(self.target if self.is_file else _rel(data.get("path")))
        elif kind in ("match", "context") and self.current is not None:
            text = _text(data.get("lines")).rstrip("\n").rstrip("\r")
            self.current.lines[int(data["line_number"])] = (
                textcodec.display(text),
                kind == "match",
            )
            if kind == "match":
                self.pending += 1
                if self.matches + self.pending > self.q.limit:
                    self._finish()  # enough in this file alone: confirm what we have
        elif kind == "end":
            if self.current is None:  # cut short above; only the binary flag is left
                self.current = FileHits(self.target if self.is_file else _rel(data.get("path")))
            offset = data.get("binary_offset")
            self._finish(int(offset) if offset is not None else None)
        return not self.more

    def result(self) -> GrepResult:
        self._finish()
        kept = cut_to_limit(self.files, self.q.limit, self.q.context)
        matches = sum(h.matches for h in kept)
        binary = sorted(self.binary, key=path_key)
        return GrepResult(kept, matches, self.more, binary, "rg")


def _pump(proc: subprocess.Popen[bytes], col: _Collector, budget: Budget) -> tuple[bytes, bool]:
    """Feed rg's stdout to ``col`` until it ends or has enough; collect stderr.

    Returns ``(stderr bytes, stopped early)``. Kills rg at the budget's end.
    """
    assert proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    buf = b""
    err = bytearray()
    open_streams = 2
    try:
        while open_streams:
            left = budget.remaining()
            wait = 0.1 if left is None else min(0.1, left)
            if budget.stopped:
                raise BudgetExceeded()
            for key, _ in sel.select(wait):
                stream: IO[bytes] = key.fileobj  # type: ignore[assignment]
                chunk = os.read(stream.fileno(), 1 << 16)
                if not chunk:
                    sel.unregister(stream)
                    open_streams -= 1
                    continue
                if key.data == "err":
                    if len(err) < _MAX_STDERR:
                        err += chunk
                    continue
                buf += chunk
                if b"\n" not in chunk:
                    continue
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line and not col.feed(line):
                        return bytes(err), True
        if buf.strip():
            col.feed(buf)
        return bytes(err), False
    finally:
        sel.close()


def _errors(err: str) -> tuple[list[str], list[tuple[str, str]]]:
    """rg's stderr lines ``rg: PATH: REASON``: (paths too long to open, other skips)."""
    too_long: list[str] = []
    other: list[tuple[str, str]] = []
    for line in err.splitlines():
        if not line.startswith("rg: ") or ": " not in line[4:]:
            continue
        body = line[4:]
        if body.endswith(_ENAMETOOLONG):
            path = body[: body.rfind(": ", 0, len(body) - len(_ENAMETOOLONG))]
            too_long.append(path[2:] if path.startswith("./") else path)
            continue
        path, _, reason = body.rpartition(": ")
        if path.startswith("./"):
            other.append((path[2:], reason))
    return too_long, other


def _spawn(cmd: list[str], root_fd: int, stdin: IO[bytes] | None) -> subprocess.Popen[bytes]:
    """Start rg in the directory ``root_fd`` (the workspace root, opened without following
    links): through ``/proc/self/fd/N``, a link to the open directory itself, never
    re-resolved by name (and cheap: no ``preexec_fn``, so Python can use ``vfork``); where
    there is no ``/proc``, by ``fchdir`` in the child."""
    proc_cwd = f"/proc/self/fd/{root_fd}"
    common: dict[str, Any] = {
        "stdin": stdin if stdin is not None else subprocess.DEVNULL,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "env": command_env(),  # no API keys or tokens of the server in rg's environment
    }
    if os.path.isdir("/proc/self/fd"):
        return subprocess.Popen(cmd, cwd=proc_cwd, **common)
    return subprocess.Popen(cmd, preexec_fn=lambda: os.fchdir(root_fd), **common)


def grep_rg(
    rg: str,
    ws: Workspace,
    target: str,
    is_file: bool,
    q: GrepQuery,
    budget: Budget,
    exclude: list[str] | tuple[str, ...] = (),
) -> GrepResult:
    """Search ``target`` (a workspace-relative file or directory) with rg; the folders
    ``exclude`` (workspace-relative: virtual environments found by the pre-pass,
    :func:`._walk.skipped_folders`) are not entered.

    Raises:
        ToolError: ``invalid_arguments`` for a pattern or glob rg refuses.
        BudgetExceeded: out of time (rg is killed).
    """
    cmd = rg_command(rg, q)
    ignore_file = None
    stdin_fh = None
    if is_file:
        # The file through a no-follow descriptor on stdin: no path is resolved by rg.
        stdin_fh = ws.open_read(target)
        cmd.append("-")
    else:
        above = target != "." and q.rules_from_above
        lines = rules_above(ws, target).rg_ignore_lines() if above else []
        if lines:
            ignore_file = tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", suffix=".gitignore", prefix="octos-grep-"
            )
            ignore_file.write("\n".join(lines) + "\n")
            ignore_file.flush()
            cmd[-2:-2] = ["--ignore-file", ignore_file.name]
        for folder in exclude:
            cmd[-2:-2] = ["--glob", f"!/{rg_glob_escape(folder)}/"]
        for off in ws.off_limits.paths:  # last: an exclusion no user glob can undo
            cmd[-2:-2] = ["--iglob", f"!/{rg_glob_escape(off)}"]
        cmd += ["--", target if target != "." else "./"]
    col = _Collector(ws, q, target, is_file)
    try:
        root_fd = os.open(ws.root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0))
        try:
            proc = _spawn(cmd, root_fd, stdin_fh)
        finally:
            os.close(root_fd)
            if stdin_fh is not None:
                stdin_fh.close()
        try:
            err_bytes, early = _pump(proc, col, budget)
        finally:
            if proc.poll() is None:
                proc.kill()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
            code = proc.wait()
    finally:
        if ignore_file is not None:
            ignore_file.close()
    err = err_bytes.decode("utf-8", "replace")
    if code == 2 and not early and not col.files and not col.current:
        low = err.lower()
        if "regex" in low or "parse" in low:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"invalid regular expression {q.pattern!r}: {_first_lines(err)}",
            )
        if "glob" in low:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"invalid file_pattern {q.file_pattern!r}: {_first_lines(err)}",
            )
    res = col.result()
    if early:
        return res
    too_long, other = _errors(err)
    res.skipped = [(p, r) for p, r in other[:_MAX_SKIPPED] if verified_skip(ws, p)]
    for folder in sorted(too_long, key=path_key):
        _search_too_long(ws, folder, q, budget, res)
    res.skipped.sort(key=lambda item: path_key(item[0]))
    return res


def _search_too_long(
    ws: Workspace, folder: str, q: GrepQuery, budget: Budget, res: GrepResult
) -> None:
    """Search a folder or file rg could not open (path over ``PATH_MAX``) with the Python
    engine and merge its findings into ``res``."""
    from ._pygrep import grep_python

    left = q.limit + 1 - res.matches
    if left <= 0:
        return
    try:
        mode = ws.stat(folder).st_mode
    except ToolError:
        return  # not in the workspace (anymore): nothing to report
    if not (stat_mod.S_ISDIR(mode) or stat_mod.S_ISREG(mode)):
        return
    sub_q = dataclasses.replace(q, limit=left)
    try:
        sub = grep_python(ws, folder, stat_mod.S_ISREG(mode), sub_q, budget)
    except ToolError as exc:
        if isinstance(exc, BudgetExceeded):
            raise
        res.skipped.append((folder, exc.message))
        return
    res.more = res.more or sub.more or res.matches + sub.matches > q.limit
    kept = cut_to_limit([*res.files, *sub.files], q.limit, q.context)
    res.files = kept
    res.matches = sum(h.matches for h in kept)
    res.binary_skipped = sorted({*res.binary_skipped, *sub.binary_skipped}, key=path_key)
    res.skipped += sub.skipped


def _first_lines(text: str, n: int = 4) -> str:
    return " ".join(x.strip() for x in text.strip().splitlines()[:n])[:400]
