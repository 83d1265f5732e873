"""The read-only ``git`` tool (octos ``git``; extra ``git``, which needs no Python package).

``git {command: status|diff|log|show|blame, path?, count=10, revision?}`` runs the ``git``
binary in the workspace. Why the binary and not a library: it is the reference
implementation, present wherever a repository is, and its porcelain/plumbing output formats
are stable; pygit2 needs libgit2 and GitPython itself shells out to ``git``.

If ``git`` is not on ``PATH`` the tool is still registered (installing git later makes it
work without a restart) and a call fails with ``unavailable`` saying so.

Outputs are plain text a model reads easily; ``structured_metadata`` holds the same data
as octos's JSON answers (ours: octos answers ``status``/``log``/``show`` with JSON strings).
``status`` → ``git status --short --branch`` lines (``## main``, ``## HEAD (detached at
<hash>)`` or ``## No commits yet on main``, then `` M path``, ``A  path``, ``R  old -> new``,
``?? path``, ``UU path``; ``(clean: no changes)`` when there is nothing; at most
:data:`MAX_STATUS_ENTRIES` lines, the rest counted), metadata ``{branch, staged, modified,
untracked, conflicted[, head, truncated]}``; ``diff`` → unified diff text (working
tree against the index; with ``revision``, working tree against that commit) or
``No changes.``; in a repository with no commit yet, ``diff`` also shows what is staged (the
index against the empty tree: ours, since there is no HEAD for ``--cached`` to compare with),
``diff`` against ``HEAD`` (or the current branch's name) compares the tracked files
with the empty tree, another ``revision`` is refused saying there is no commit yet, and
``blame`` of a file with no history (no commit yet, or never committed) says so instead
of echoing git's message;
``log`` → one commit a line, ``<hash 12> <YYYY-MM-DD> <author>: <subject>`` (``No
commits yet.`` in an empty repository), metadata ``{commits: [{hash (12 chars), author,
email, date, parents, message}]}``; ``show`` → a header as ``git show`` prints it
(``commit <hash>``, ``Author:``, ``Date:``, ``Merge:`` for a merge, the indented message,
then one ``<status> <path>`` line per changed file), a blank line, then its diff (octos
puts the diff inside JSON as one escaped string, which is hard to read and costs more
tokens; the metadata holds everything, the diff included); ``blame`` → lines
``<8-char hash> (<author, right-aligned 15>) <line, width 4> | <text>``.

Safety. The model can write files, including ``.git/config``, so git must not run anything a
repository's configuration names:

* the environment of every command (no API key or token of the server), and
  ``GIT_CONFIG_NOSYSTEM=1`` and ``GIT_CONFIG_GLOBAL=/dev/null`` (only the repository's own
  config is read), every inherited ``GIT_*`` variable dropped, ``GIT_OPTIONAL_LOCKS=0`` (no
  index refresh written by ``status``), ``GIT_TERMINAL_PROMPT=0``, ``LC_ALL=C``.
* Forced settings through ``GIT_CONFIG_COUNT``: ``core.fsmonitor=false`` (a hook command),
  ``core.hooksPath=/dev/null`` (no hook), ``core.sshCommand=false``, ``core.gitProxy=``,
  ``core.askPass=``, ``credential.helper=``, ``gpg.program=false``, ``core.editor=true``,
  ``core.pager=cat``, ``log.showSignature=false`` (runs gpg), ``mailmap.file=`` (would
  read any file), ``color.ui=never``; and for every ``filter.<driver>.clean|smudge|process`` and
  ``diff.<driver>.textconv|command`` the repository defines, an empty value, so no filter or
  diff driver runs (read with ``git config --list`` first, which executes nothing).
* No transport: ``GIT_ALLOW_PROTOCOL=`` (empty: no protocol, overriding
  ``protocol.*.allow``) and ``GIT_NO_LAZY_FETCH=1``, so a promisor remote cannot lazily fetch
  a missing object through an upload-pack, ssh command or ``ext::`` URL the config names.
* ``--no-pager``, ``--no-ext-diff``, ``--no-textconv``, ``--ignore-submodules=all``.
* ``blame.ignoreRevsFile`` cannot be cleared (git keeps the list sorted, so an empty entry
  comes first) and git echoes that file's first line in errors: ``blame`` is refused
  (``path_outside_workspace``) unless each such file is a regular file in the workspace.
* Where the repository starts at the workspace root (so the model could have written its
  ``.git``), the git directory must lie inside the workspace: a ``.git`` file or
  ``core.worktree`` leading to another repository is refused (``path_outside_workspace``).
  A repository *above* the workspace is the user's own and is used, limited to the
  workspace. Consequence: a ``git worktree`` checkout opened as the workspace is refused.
* ``revision`` must match ``[A-Za-z0-9_./~^-]``, start with a letter, digit or ``_``, be at
  most 256 characters, and contain no ``..``, ``@{`` or ``:/``; it is resolved to a commit
  with ``rev-parse --verify --end-of-options`` before use.
* ``path`` goes through the workspace (no ``..`` out, no symlinked parent) and is passed as
  a literal pathspec (``GIT_LITERAL_PATHSPECS=1``). When the workspace is a sub-folder of the
  repository, every command is limited to the workspace: git runs in the workspace with the
  pathspec ``.`` (status, diff, log, show), ``diff``/``show`` take ``--relative`` (paths
  relative to the workspace, nothing outside it even across a rename), and ``show`` of a
  commit that changes nothing in the workspace is ``not_found`` (log does not list it).

Error kinds: ``invalid_arguments``, path kinds, ``not_found`` (no repository, unknown
revision), ``unavailable`` (no git binary), ``timeout``, ``process_failed`` (other git
errors, with git's message).
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anyio
from anyio.abc import ByteReceiveStream
from pydantic import Field

from ... import trusted_programs
from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, JSONObject, ToolResult
from ...typed import ToolArgs
from .._base import WorkspaceTool
from ..runtime import command_env

if TYPE_CHECKING:
    from ...config import Config
    from ...context import ToolContext
    from ...registry import ToolRegistry
    from ...workspace import Workspace

__all__ = ["GitTool", "git_environment", "register", "validate_revision"]

#: Seconds one git process may run.
GIT_TIMEOUT_SECS = 30.0
#: Bytes of git output read at most (the rest is cut, and the output says so).
MAX_GIT_OUTPUT = 2_000_000
#: Characters of diff kept in ``show``'s output.
MAX_SHOW_DIFF_CHARS = 50_000
#: Entries per ``status`` list.
MAX_STATUS_ENTRIES = 1000

_REVISION_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./~^-]{0,255}$")

_FORCED_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.quotePath", "false"),
    ("log.showSignature", "false"),
    ("mailmap.file", ""),
    ("color.ui", "never"),
    ("diff.external", ""),
    ("core.hooksPath", os.devnull),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("core.askPass", ""),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("credential.helper", ""),
    ("gpg.program", "false"),
    ("uploadpack.packObjectsHook", ""),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("status.showUntrackedFiles", "normal"),
)
_DRIVER_KEY_RE = re.compile(r"^(filter\..+\.(clean|smudge|process)|diff\..+\.(textconv|command))$")


def validate_revision(revision: str) -> str:
    """Check a revision string from the model.

    Returns:
        ``revision`` unchanged.

    Raises:
        ToolError: ``invalid_arguments`` naming the rule broken.

    Source: octos's ``git`` tool (its charset and limits); the leading-character rule is
    ours (no option injection).
    """
    if not _REVISION_RE.match(revision) or ".." in revision or "@{" in revision:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"invalid revision {revision!r}: use a commit hash, branch, tag or HEAD~N "
            "(letters, digits and _ . / ~ ^ -, not starting with - or ., no '..' ranges, "
            "at most 256 characters)",
        )
    return revision


def git_environment(extra_config: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    """The environment git runs with: every command's scrubbed environment
    (:func:`~octos_tools.builtins.runtime.command_env`: no secrets of the
    server), inherited ``GIT_*`` removed, system and global config ignored, the forced
    settings (module docstring) plus ``extra_config`` applied."""
    env = {k: v for k, v in command_env().items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_OPTIONAL_LOCKS="0",
        GIT_TERMINAL_PROMPT="0",
        GIT_LITERAL_PATHSPECS="1",
        # No transport at all: a promisor remote (partial clone) in the repository config
        # would otherwise "lazily fetch" a missing object through its upload-pack, ssh
        # command or ext:: URL, i.e. run a command. The empty list allows no protocol
        # (it overrides protocol.*.allow); GIT_NO_LAZY_FETCH (git >= 2.44) says so directly.
        GIT_ALLOW_PROTOCOL="",
        GIT_NO_LAZY_FETCH="1",
        GIT_PAGER="cat",
        PAGER="cat",
        LC_ALL="C",
        LANG="C",
    )
    pairs = [*_FORCED_CONFIG, *extra_config]
    env["GIT_CONFIG_COUNT"] = str(len(pairs))
    for i, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


@dataclass(frozen=True, slots=True)
class _Run:
    code: int
    out: bytes
    err: str
    cut: bool


async def _read(stream: ByteReceiveStream | None, cap: int, sink: list[bytes]) -> bool:
    """Read ``stream`` to its end keeping at most ``cap`` bytes; ``True`` if it was cut."""
    if stream is None:
        return False
    size = 0
    cut = False
    async for chunk in stream:
        if size < cap:
            sink.append(chunk[: cap - size])
        size += len(chunk)
        cut = cut or size > cap
    return cut


async def _git(cwd: str, args: Sequence[str], env: dict[str, str]) -> _Run:
    exe = trusted_programs.which("git")
    if exe is None:
        raise ToolError(
            ErrorKind.UNAVAILABLE, "git is not installed: no 'git' program on PATH", tool="git"
        )
    out: list[bytes] = []
    err: list[bytes] = []
    cut = False
    argv = [exe, "--no-pager", *args]
    process = await anyio.open_process(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, start_new_session=True
    )
    try:
        with anyio.fail_after(GIT_TIMEOUT_SECS):
            async with anyio.create_task_group() as tg:

                async def read_out() -> None:
                    nonlocal cut
                    cut = await _read(process.stdout, MAX_GIT_OUTPUT, out)

                tg.start_soon(read_out)
                tg.start_soon(_read, process.stderr, 65_536, err)
            code = await process.wait()
    except TimeoutError:
        process.kill()
        raise ToolError(
            ErrorKind.TIMEOUT, f"git {args[0]} took longer than {GIT_TIMEOUT_SECS:g} s"
        ) from None
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()
        await process.aclose()
    return _Run(code, b"".join(out), b"".join(err).decode("utf-8", "replace").strip(), cut)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class _Repo:
    cwd: str
    env: dict[str, str]
    scope: list[str]  # pathspec limiting commands to the workspace ([] = whole repository)
    revs_files: list[str]  # blame.ignoreRevsFile values of the repository config


class GitTool(WorkspaceTool):
    """``git {command, path?, count=10, revision?}``: read-only repository queries.

    Args:
        workspace: the workspace (the repository or a folder inside one); ``None`` → the
            call's ``ctx.workspace``.
    """

    name = "git"
    title = "Git (read-only)"
    description = (
        "Read-only git. diff: unstaged changes, or against `revision`. blame needs `path`."
    )

    class Args(ToolArgs):
        command: Literal["status", "diff", "log", "show", "blame"] = Field(
            description="The git subcommand."
        )
        path: str | None = Field(None, description="File or folder.")
        count: int = Field(10, ge=1, le=500, description="Commits for log.")
        revision: str | None = Field(None, description="Commit, branch or tag.")

    tags = ("code", "search")
    concurrency_class = ConcurrencyClass.SAFE

    async def run(self, args: Args, ctx: ToolContext | None) -> ToolResult:
        ws = self.workspace_for(ctx)
        command = args.command
        revision = validate_revision(args.revision) if args.revision is not None else None
        path = _checked_path(ws, args.path, must_be_file=command == "blame")
        if command == "blame" and path is None:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "blame needs a file 'path'")
        repo = await _open_repo(ws)
        spec = [path] if path is not None else repo.scope
        if command == "show" and revision is None:
            revision = "HEAD"
        if command == "diff" and revision is not None and await _is_unborn_head(repo, revision):
            return await _diff_unborn_head(repo, spec, revision)
        commit = await _resolve(repo, revision) if revision is not None else None
        if command == "status":
            return await _status(repo, spec)
        if command == "diff":
            return await _diff(repo, spec, commit)
        if command == "log":
            return await _log(repo, spec, args.count, commit)
        if command == "show":
            assert commit is not None
            return await _show(repo, spec, commit)
        assert path is not None
        _check_revs_files(ws, repo.revs_files)
        return await _blame(repo, path, commit)


def _checked_path(ws: Workspace, raw: Any, *, must_be_file: bool) -> str | None:
    if raw is None or raw == "":
        return None
    rel = ws.relpath(str(raw))  # path_outside_workspace, NUL, …
    if ws.exists(rel):  # symlink_refused for a symlinked parent
        mode = ws.stat(rel).st_mode
        if stat.S_ISLNK(mode):
            raise ToolError(ErrorKind.SYMLINK_REFUSED, f"{rel!r} is a symbolic link")
        if must_be_file and not stat.S_ISREG(mode):
            kind = ErrorKind.IS_A_DIRECTORY if stat.S_ISDIR(mode) else ErrorKind.INVALID_ARGUMENTS
            raise ToolError(kind, f"{rel!r} is not a regular file")
    elif must_be_file:
        raise ToolError(ErrorKind.NOT_FOUND, f"no such file: {rel!r}")
    return rel


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


async def _open_repo(ws: Workspace) -> _Repo:
    cwd = str(ws.root)
    plain = git_environment()
    probe = await _git(
        cwd, ["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"], plain
    )
    if probe.code != 0:
        raise ToolError(
            ErrorKind.NOT_FOUND,
            "the workspace is not inside a git repository"
            + (f" ({probe.err.splitlines()[-1]})" if probe.err else ""),
        )
    top, git_dir, common = [*_text(probe.out).splitlines(), "", "", ""][:3]
    root = os.path.realpath(cwd)
    top = os.path.realpath(top)
    dirs = [os.path.realpath(git_dir), os.path.realpath(os.path.join(cwd, common))]
    if top == root:
        # The repository starts in the workspace, where the model can write: its git
        # directory must be there too (no ".git" file or core.worktree leading elsewhere).
        if not all(_inside(d, root) for d in dirs):
            raise ToolError(
                ErrorKind.PATH_OUTSIDE_WORKSPACE,
                "the workspace's repository keeps its git directory outside the workspace "
                "(a .git file, worktree or core.worktree pointing elsewhere); refusing to read it",
            )
    elif not _inside(root, top):
        raise ToolError(
            ErrorKind.PATH_OUTSIDE_WORKSPACE,
            "the repository's work tree does not contain the workspace (core.worktree points "
            "elsewhere); refusing to read it",
        )
    listing = await _git(cwd, ["config", "--list", "--includes", "-z"], plain)
    overrides: list[tuple[str, str]] = []
    revs_files: list[str] = []
    for entry in listing.out.split(b"\0"):
        key, _, value = _text(entry).partition("\n")
        if _DRIVER_KEY_RE.match(key):
            overrides.append((key, ""))
        elif key == "blame.ignorerevsfile":
            revs_files.append(value)
    scope = [] if top == root else ["."]
    return _Repo(cwd, git_environment(overrides), scope, revs_files)


def _check_revs_files(ws: Workspace, files: Sequence[str]) -> None:
    """``blame.ignoreRevsFile`` cannot be reset from the command line (git sorts the list),
    and git echoes the file's first line in its error: each one must be a workspace file."""
    for name in files:
        if not name:
            continue
        try:
            if name.startswith("~") or not ws.is_file(name):
                raise ToolError(ErrorKind.NOT_FOUND, "not a file")
        except ToolError:
            raise ToolError(
                ErrorKind.PATH_OUTSIDE_WORKSPACE,
                f"the repository config sets blame.ignoreRevsFile to {name!r}, which is not a "
                "regular file inside the workspace; refusing to run blame",
            ) from None


async def _checked(repo: _Repo, args: Sequence[str]) -> _Run:
    run = await _git(repo.cwd, args, repo.env)
    if run.code != 0:
        raise ToolError(
            ErrorKind.PROCESS_FAILED, f"git error: {run.err or f'exit status {run.code}'}"
        )
    return run


_NO_COMMIT_YET = "the repository has no commit yet"


async def _has_commit(repo: _Repo) -> bool:
    """Whether ``HEAD`` names a commit (``False`` in a repository with no commit yet)."""
    run = await _git(
        repo.cwd,
        ["rev-parse", "--verify", "--quiet", "--end-of-options", "HEAD^{commit}"],
        repo.env,
    )
    return run.code == 0


async def _is_unborn_head(repo: _Repo, revision: str) -> bool:
    """Whether ``revision`` names the commit ``HEAD`` will be once there is one (``HEAD``
    or the current branch's name) in a repository with no commit yet."""
    if revision != "HEAD":
        run = await _git(repo.cwd, ["symbolic-ref", "--quiet", "--short", "HEAD"], repo.env)
        if run.code != 0 or _text(run.out).strip() != revision:
            return False
    return not await _has_commit(repo)


async def _empty_tree(repo: _Repo) -> str:
    """The id of the empty tree in this repository's hash (SHA-1 or SHA-256)."""
    empty = await _checked(repo, ["hash-object", "-t", "tree", os.devnull])
    return _text(empty.out).strip()


async def _diff_unborn_head(repo: _Repo, spec: list[str], revision: str) -> ToolResult:
    """``diff`` against ``HEAD`` before the first commit: the working tree (of the files
    git tracks, staged or not) against the empty tree, as ``git diff HEAD`` would show
    once ``HEAD`` is an empty root commit."""
    res = await _diff(repo, spec, await _empty_tree(repo))
    note = f"{revision} has no commit yet ({_NO_COMMIT_YET}): compared with the empty tree"
    if res.output == "No changes.":
        text = f"No changes ({note}; nothing is tracked)."
    else:
        text = f"{note[0].upper()}{note[1:]}.\n{res.output}"
    return ToolResult.ok(text, structured_metadata={"no_commit_yet": True})


async def _resolve(repo: _Repo, revision: str) -> str:
    run = await _git(
        repo.cwd,
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"],
        repo.env,
    )
    if run.code != 0:
        if not await _has_commit(repo):
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"{_NO_COMMIT_YET}, so there is no {revision!r} to compare with; 'diff' without "
                "a revision shows the staged and unstaged changes",
                reason="no_commit_yet",
            )
        raise ToolError(ErrorKind.NOT_FOUND, f"unknown revision {revision!r} (no such commit)")
    return _text(run.out).strip()


def _cut_note(run: _Run) -> str:
    return f"\n\n... (git output cut at {MAX_GIT_OUTPUT} bytes)" if run.cut else ""


async def _status(repo: _Repo, spec: list[str]) -> ToolResult:
    run = await _checked(
        repo,
        [
            "status",
            "--porcelain=v2",
            "-z",
            "--branch",
            "--untracked-files=normal",
            "--ignore-submodules=all",
            "--",
            *spec,
        ],
    )
    branch: str | None = None
    head: str | None = None
    lists: dict[str, list[str]] = {"staged": [], "modified": [], "untracked": [], "conflicted": []}
    short: list[str] = []  # `git status --short` lines
    records = run.out.split(b"\0")
    i = 0
    while i < len(records):
        rec = _text(records[i])
        i += 1
        if not rec:
            continue
        if rec.startswith("# branch.head "):
            name = rec[len("# branch.head ") :]
            branch = None if name == "(detached)" else name
        elif rec.startswith("# branch.oid "):
            head = rec[len("# branch.oid ") :]
        elif rec.startswith("1 "):
            fields = rec.split(" ", 8)
            _add_change(lists, fields[1], fields[8])
            short.append(f"{_xy(fields[1])} {fields[8]}")
        elif rec.startswith("2 "):
            fields = rec.split(" ", 9)
            original = _text(records[i]) if i < len(records) else ""
            i += 1
            _add_change(lists, fields[1], f"{original} -> {fields[9]}")
            short.append(f"{_xy(fields[1])} {original} -> {fields[9]}")
        elif rec.startswith("u "):
            fields = rec.split(" ", 10)
            lists["conflicted"].append(fields[10])
            short.append(f"{fields[1]} {fields[10]}")
        elif rec.startswith("? "):
            lists["untracked"].append(rec[2:])
            short.append(f"?? {rec[2:]}")
    data: JSONObject = {"branch": branch}
    if branch is None and head and head != "(initial)":
        data["head"] = head[:12]
    truncated = False
    for key, items in lists.items():
        truncated = truncated or len(items) > MAX_STATUS_ENTRIES
        data[key] = items[:MAX_STATUS_ENTRIES]
    if truncated:
        data["truncated"] = f"lists cut at {MAX_STATUS_ENTRIES} entries"
    if branch is not None and head == "(initial)":
        top = f"## No commits yet on {branch}"
    elif branch is not None:
        top = f"## {branch}"
    else:
        top = f"## HEAD (detached at {data.get('head', 'unknown')})"
    lines = [top, *short[:MAX_STATUS_ENTRIES]]
    if len(short) > MAX_STATUS_ENTRIES:
        lines.append(
            f"... ({len(short) - MAX_STATUS_ENTRIES} more entries left out; give a 'path' "
            "to narrow)"
        )
    elif not short:
        lines.append("(clean: no changes)")
    return ToolResult.ok("\n".join(lines), structured_metadata=data)


def _xy(xy: str) -> str:
    """Porcelain v2's ``XY`` (``.`` = unchanged) as ``--short`` prints it (a space)."""
    return xy.replace(".", " ")


def _add_change(lists: dict[str, list[str]], xy: str, path: str) -> None:
    if xy[0] != ".":
        lists["staged"].append(path)
    if xy[1] != ".":
        lists["modified"].append(path)


async def _diff(repo: _Repo, spec: list[str], commit: str | None) -> ToolResult:
    # Plumbing, not porcelain `git diff`: git 2.39's `diff` refreshes and rewrites the index
    # even with GIT_OPTIONAL_LOCKS=0 (a read-only tool must not write); diff-files (working
    # tree against the index) and diff-index (against a commit) never write it, and skip
    # files whose stat data changed but whose content did not.
    args = [
        "diff-files" if commit is None else "diff-index",
        "-p",
        "-M",  # renames, as porcelain diff shows them by default
        "--no-ext-diff",
        "--no-textconv",
        "--no-color",
        "--ignore-submodules=all",
        "--relative",  # workspace-relative paths, as status prints them
    ]
    if commit is not None:
        args.append(commit)
    run = await _checked(repo, [*args, "--", *spec])
    text = _text(run.out)
    if commit is None and not await _has_commit(repo):
        return await _diff_without_commits(repo, args[1:], spec, run)
    if not text.strip():
        return ToolResult.ok("No changes.")
    return ToolResult.ok(text + _cut_note(run))


async def _diff_without_commits(
    repo: _Repo, options: list[str], spec: list[str], unstaged: _Run
) -> ToolResult:
    """``diff`` before the first commit: the staged files (the index against the empty
    tree) and then the unstaged changes (the working tree against the index)."""
    tree = await _empty_tree(repo)
    staged = await _checked(repo, ["diff-index", "--cached", *options, tree, "--", *spec])
    parts = []
    if staged.out.strip():
        parts.append(
            f"Staged ({_NO_COMMIT_YET}; against the empty tree):\n"
            + _text(staged.out)
            + _cut_note(staged)
        )
    if unstaged.out.strip():
        parts.append("Unstaged:\n" + _text(unstaged.out) + _cut_note(unstaged))
    if not parts:
        return ToolResult.ok(f"No changes ({_NO_COMMIT_YET} and nothing is staged).")
    return ToolResult.ok("\n".join(parts), structured_metadata={"no_commit_yet": True})


_LOG_FORMAT = "%H%x1f%an%x1f%ae%x1f%aI%x1f%P%x1f%B%x1e"


def _parse_log(data: bytes) -> list[JSONObject]:
    commits: list[JSONObject] = []
    for record in _text(data).split("\x1e"):
        record = record.lstrip("\n")
        if not record:
            continue
        parts = record.split("\x1f", 5)
        if len(parts) < 6:
            continue
        full, author, email, date, parents, message = parts
        commits.append(
            {
                "hash": full[:12],
                "author": author,
                "email": email,
                "date": date,
                "parents": [p[:12] for p in parents.split()],
                "message": message.strip(),
            }
        )
    return commits


async def _log(repo: _Repo, spec: list[str], count: int, commit: str | None) -> ToolResult:
    args = ["log", f"--max-count={count}", "--no-color", f"--format={_LOG_FORMAT}"]
    if commit is not None:
        args.append(commit)
    run = await _git(repo.cwd, [*args, "--", *spec], repo.env)
    if run.code != 0:
        if "does not have any commits" in run.err:
            return ToolResult.ok("No commits yet.", structured_metadata={"commits": []})
        raise ToolError(ErrorKind.PROCESS_FAILED, f"git error: {run.err}")
    commits = _parse_log(run.out)
    if not commits:
        return ToolResult.ok("No commits.", structured_metadata={"commits": commits})
    return ToolResult.ok(
        "\n".join(_log_line(c) for c in commits) + _cut_note(run),
        structured_metadata={"commits": commits},
    )


def _log_line(commit: JSONObject) -> str:
    """``<hash 12> <YYYY-MM-DD> <author>: <subject>`` (``git log --oneline`` plus date and
    author)."""
    message = str(commit.get("message", ""))
    subject = message.split("\n", 1)[0].strip()
    return f"{commit['hash']} {str(commit['date'])[:10]} {commit['author']}: {subject}"


async def _show(repo: _Repo, spec: list[str], commit: str) -> ToolResult:
    meta = await _checked(repo, ["show", "-s", "--no-color", f"--format={_LOG_FORMAT}", commit])
    [info] = _parse_log(meta.out) or [{"hash": commit[:12]}]
    # --relative: paths relative to the workspace (as status prints them), and nothing
    # outside it even where a rename or copy crosses the workspace's edge.
    diff_opts = [
        "--no-ext-diff",
        "--no-textconv",
        "--no-color",
        "--ignore-submodules=all",
        "--relative",
    ]
    names = await _checked(
        repo, ["show", "--format=", "--name-status", "-z", *diff_opts, commit, "--", *spec]
    )
    files: list[JSONObject] = []
    fields = [_text(f) for f in names.out.split(b"\0")]
    i = 0
    while i < len(fields):
        status = fields[i].strip()
        i += 1
        if not status:
            continue
        if status[0] in "RC" and i + 1 < len(fields):
            files.append({"status": status[0], "from": fields[i], "path": fields[i + 1]})
            i += 2
        elif i < len(fields):
            files.append({"status": status, "path": fields[i]})
            i += 1
    if repo.scope and not files and not await _touches_workspace(repo, commit):
        # The workspace is a sub-folder of a larger repository: a commit that changes
        # nothing in it is none of the model's business (log does not list it either).
        raise ToolError(
            ErrorKind.NOT_FOUND,
            f"commit {commit[:12]} changes no file inside the workspace (the workspace is a "
            "folder of a larger repository); use command 'log' to list the commits that do",
        )
    patch = await _checked(repo, ["show", "--format=", "--patch", *diff_opts, commit, "--", *spec])
    diff = _text(patch.out)
    header: JSONObject = {**info, "hash": commit, "files": files}
    note = ""
    if len(diff) > MAX_SHOW_DIFF_CHARS or patch.cut:
        diff = diff[:MAX_SHOW_DIFF_CHARS]
        header["diff_truncated"] = True
        note = (
            f"\n... (diff cut at {MAX_SHOW_DIFF_CHARS} characters; give a 'path' to see the "
            "changes of one file or folder)"
        )
    text = _show_header(header) + (f"\n\n{diff.rstrip(chr(10))}{note}" if diff else "")
    return ToolResult.ok(text, structured_metadata={**header, "diff": diff})


def _show_header(header: JSONObject) -> str:
    """The commit as ``git show`` heads it: hash, author, date, parents, the indented
    message, then one ``<status> <path>`` line per changed file (``R from -> to``)."""
    lines = [f"commit {header['hash']}"]
    if header.get("author") is not None:
        lines.append(f"Author: {header['author']} <{header.get('email', '')}>")
    if header.get("date"):
        lines.append(f"Date:   {header['date']}")
    parents = header.get("parents")
    if isinstance(parents, list) and len(parents) > 1:
        lines.append(f"Merge:  {' '.join(str(p) for p in parents)}")
    message = str(header.get("message", ""))
    if message:
        lines += ["", *(f"    {line}".rstrip() for line in message.splitlines())]
    files = header.get("files")
    if isinstance(files, list) and files:
        lines.append("")
        for entry in files:
            assert isinstance(entry, dict)
            path = f"{entry['from']} -> {entry['path']}" if "from" in entry else entry["path"]
            lines.append(f"{entry['status']} {path}")
    return "\n".join(lines)


async def _touches_workspace(repo: _Repo, commit: str) -> bool:
    """Whether ``commit`` changes anything under the workspace against any of its parents
    (``-m``: each parent of a merge; ``--root``: a first commit against the empty tree)."""
    run = await _checked(
        repo,
        [
            "diff-tree",
            "-r",
            "-m",
            "--root",
            "--name-only",
            "--no-commit-id",
            commit,
            "--",
            *repo.scope,
        ],
    )
    return bool(run.out.strip())


async def _blame(repo: _Repo, path: str, commit: str | None) -> ToolResult:
    args = ["blame", "--porcelain", "--no-textconv"]
    if commit is not None:
        args.append(commit)
    run = await _git(repo.cwd, [*args, "--", path], repo.env)
    if run.code != 0:
        if not await _has_commit(repo):
            why = f"{_NO_COMMIT_YET}; blame shows who last changed each committed line"
        elif "no such path" in run.err:
            where = "that commit" if commit is not None else "HEAD"
            why = f"it is not in {where} (never committed: untracked, ignored or new)"
        else:
            raise ToolError(ErrorKind.PROCESS_FAILED, f"git error: {run.err}")
        raise ToolError(
            ErrorKind.NOT_FOUND, f"{path} has no history to blame: {why}", reason="no_history"
        )
    authors: dict[str, str] = {}
    lines: list[str] = []
    current = ""
    final_line = 0
    for raw in run.out.split(b"\n"):
        if raw.startswith(b"\t"):
            author = authors.get(current, "")
            lines.append(f"{current[:8]} ({author:>15}) {final_line:>4} | {_text(raw[1:])}")
            continue
        text = _text(raw)
        head = text.split(" ")
        if len(head) >= 3 and len(head[0]) >= 40 and all(c in "0123456789abcdef" for c in head[0]):
            current = head[0]
            final_line = int(head[2])
        elif text.startswith("author "):
            authors[current] = text[len("author ") :]
    if not lines:
        return ToolResult.ok(f"(empty file: {path})")
    return ToolResult.ok("\n".join(lines) + _cut_note(run))


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``git``. It needs no Python package, only the ``git`` program, which is
    looked up at each call (``unavailable`` when missing), so it is always registered."""
    registry.register(GitTool(workspace))
