"""The read-only git tool against real repositories made in each test."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from octos_tools.builtins.vcs import GitTool, validate_revision
from octos_tools.builtins.vcs import _git_tool as git_module
from octos_tools.config import Config
from octos_tools.context import ToolContext
from octos_tools.errors import ToolError
from octos_tools.tool_types import ToolResult
from octos_tools.workspace import Workspace

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]


def sh(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    full_env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Ada Lovelace",
        "GIT_AUTHOR_EMAIL": "ada@example.org",
        "GIT_COMMITTER_NAME": "Ada Lovelace",
        "GIT_COMMITTER_EMAIL": "ada@example.org",
        **(env or {}),
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=full_env, check=True, capture_output=True, text=True
    )
    return done.stdout


def commit(repo: Path, message: str, author: str = "Ada Lovelace") -> str:
    sh(repo, "commit", "-q", "-m", message, env={"GIT_AUTHOR_NAME": author})
    return sh(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with three commits on ``main`` and some uncommitted changes."""
    root = tmp_path / "repo"
    root.mkdir()
    sh(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    (root / "src").mkdir()
    (root / "src" / "m.py").write_text("x = 1\n")
    sh(root, "add", ".")
    commit(root, "first commit")
    (root / "a.txt").write_text("one\nTWO\nthree\n")
    sh(root, "add", "a.txt")
    commit(root, "second: shout two\n\nWith a body line.", author="Grace Hopper")
    (root / "src" / "m.py").write_text("x = 2\n")
    sh(root, "add", ".")
    commit(root, "third")
    return root


async def run(ws_root: Path, **args: Any) -> ToolResult:
    tool = GitTool(Workspace(ws_root))
    try:
        return await tool.execute_with_context(ToolContext(), args)
    except ToolError as exc:
        return ToolResult.from_error(exc)


async def test_status(repo: Path) -> None:
    (repo / "a.txt").write_text("changed\n")  # modified, unstaged
    (repo / "new.txt").write_text("n\n")
    sh(repo, "add", "new.txt")  # staged
    (repo / "untracked.txt").write_text("u\n")
    sh(repo, "mv", "src/m.py", "src/renamed.py")  # staged rename
    result = await run(repo, command="status")
    assert result.success, result.output
    data = result.structured_metadata
    assert data["branch"] == "main"
    assert data["modified"] == ["a.txt"]
    assert "new.txt" in data["staged"] and "src/m.py -> src/renamed.py" in data["staged"]
    assert data["untracked"] == ["untracked.txt"]
    assert data["conflicted"] == []
    lines = result.output.splitlines()
    assert lines[0] == "## main"
    assert sorted(lines[1:]) == sorted(
        [" M a.txt", "A  new.txt", "R  src/m.py -> src/renamed.py", "?? untracked.txt"]
    )
    clean = await run(repo, command="status", path="src")
    assert clean.structured_metadata["modified"] == []
    assert clean.output.startswith("## main\n") and "a.txt" not in clean.output
    sh(repo, "commit", "-q", "-am", "tidy")
    (repo / "untracked.txt").unlink()
    tidy = await run(repo, command="status")
    assert tidy.output == "## main\n(clean: no changes)"
    sh(repo, "checkout", "-q", "--detach", "HEAD")
    detached = await run(repo, command="status")
    head = sh(repo, "rev-parse", "HEAD").strip()[:12]
    assert detached.output.splitlines()[0] == f"## HEAD (detached at {head})"
    assert detached.structured_metadata["branch"] is None
    assert detached.structured_metadata["head"] == head


async def test_status_lists_are_bounded_in_text_and_metadata(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_module, "MAX_STATUS_ENTRIES", 3)
    for i in range(5):
        (repo / f"u{i}.txt").write_text("u\n")
    result = await run(repo, command="status")
    lines = result.output.splitlines()
    assert lines[1:4] == ["?? u0.txt", "?? u1.txt", "?? u2.txt"] and len(lines) == 5
    assert "2 more entries left out" in lines[4]
    assert result.structured_metadata["untracked"] == ["u0.txt", "u1.txt", "u2.txt"]
    assert "truncated" in result.structured_metadata


async def test_diff_never_rewrites_the_index_of_a_stat_dirty_file(repo: Path) -> None:
    """Deterministic: a.txt's stat data differs from the index entry and is older than the
    index (not "racily clean"), so porcelain `git diff` (git 2.39) refreshes and rewrites
    the index even with GIT_OPTIONAL_LOCKS=0. The tool's diff must not."""
    index = repo / ".git" / "index"
    past = index.stat().st_mtime - 100
    os.utime(repo / "a.txt", (past, past))
    os.utime(repo / "src" / "m.py", (past, past))
    before = index.stat().st_mtime_ns, index.read_bytes()
    assert (await run(repo, command="diff")).output == "No changes."  # stat-only: no diff
    assert (await run(repo, command="diff", revision="HEAD")).output == "No changes."
    assert (await run(repo, command="status")).success
    assert (index.stat().st_mtime_ns, index.read_bytes()) == before


async def test_outputs_are_readable_text_not_json(repo: Path) -> None:
    (repo / "a.txt").write_text("changed\n")
    for command in ("status", "log", "show"):
        result = await run(repo, command=command)
        assert result.success, result.output
        assert not result.output.lstrip().startswith(("{", "[")), result.output
        assert '":' not in result.output.split("\ndiff --git")[0], result.output
        assert result.structured_metadata


async def test_show_cuts_a_long_diff_with_a_note(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_module, "MAX_SHOW_DIFF_CHARS", 40)
    result = await run(repo, command="show")
    assert result.structured_metadata["diff_truncated"] is True
    _, _, diff = result.output.partition("\n\ndiff --git")
    diff = "diff --git" + diff
    assert diff.startswith("diff --git a/src/m.py")
    assert "diff cut at 40 characters" in diff and "'path'" in diff


async def test_status_does_not_write_the_index(repo: Path) -> None:
    index = repo / ".git" / "index"
    (repo / "a.txt").touch()  # stat info differs: a refresh would rewrite the index
    before = index.stat().st_mtime_ns, index.read_bytes()
    await run(repo, command="status")
    await run(repo, command="diff")
    assert (index.stat().st_mtime_ns, index.read_bytes()) == before


async def test_diff(repo: Path) -> None:
    assert (await run(repo, command="diff")).output == "No changes."
    (repo / "a.txt").write_text("one\nTWO\nthree\nfour\n")
    result = await run(repo, command="diff")
    assert "+four" in result.output and result.output.startswith("diff --git a/a.txt b/a.txt")
    limited = await run(repo, command="diff", path="src")
    assert limited.output == "No changes."
    against = await run(repo, command="diff", revision="HEAD~2")
    assert "-two" in against.output and "+TWO" in against.output and "+four" in against.output
    assert "-x = 1" in against.output


async def test_log(repo: Path) -> None:
    result = await run(repo, command="log")
    commits = result.structured_metadata["commits"]
    assert [c["message"] for c in commits] == [
        "third",
        "second: shout two\n\nWith a body line.",
        "first commit",
    ]
    assert all(re.fullmatch(r"[0-9a-f]{12}", c["hash"]) for c in commits)
    assert commits[1]["author"] == "Grace Hopper"
    assert re.match(r"\d{4}-\d\d-\d\dT", commits[0]["date"])
    lines = result.output.splitlines()
    assert len(lines) == 3
    for line, c in zip(lines, commits, strict=True):
        subject = c["message"].split("\n")[0]
        assert line == f"{c['hash']} {c['date'][:10]} {c['author']}: {subject}"
    assert re.fullmatch(r"[0-9a-f]{12} \d{4}-\d\d-\d\d Grace Hopper: second: shout two", lines[1])
    assert "With a body line." not in result.output
    one = await run(repo, command="log", count=1)
    assert len(one.output.splitlines()) == 1 and len(one.structured_metadata["commits"]) == 1
    by_path = (await run(repo, command="log", path="a.txt")).structured_metadata["commits"]
    assert [c["message"].split("\n")[0] for c in by_path] == ["second: shout two", "first commit"]
    older = await run(repo, command="log", revision="HEAD~1")
    assert older.output.splitlines()[0].endswith(": second: shout two")


async def test_log_of_empty_repository(tmp_path: Path) -> None:
    sh(tmp_path, "init", "-q")
    result = await run(tmp_path, command="log")
    assert result.success and result.output == "No commits yet."
    assert result.structured_metadata == {"commits": []}


def show_parts(result: ToolResult) -> tuple[dict[str, Any], str]:
    """``show`` output: a readable header (``commit``, ``Author:``, ``Date:``, the indented
    message, ``<status> <path>`` lines), then (after a blank line) the diff text; the
    metadata holds the same data."""
    assert result.success, result.output
    data = dict(result.structured_metadata)
    header, sep, rest = result.output.partition("\n\ndiff --git")
    diff = "diff --git" + rest if sep else ""
    lines = header.splitlines()
    assert lines[0] == f"commit {data['hash']}"
    assert lines[1] == f"Author: {data['author']} <{data['email']}>"
    assert lines[2] == f"Date:   {data['date']}"
    for line in str(data["message"]).splitlines():
        assert f"    {line}".rstrip() in lines
    for f in data["files"]:
        path = f"{f['from']} -> {f['path']}" if "from" in f else f["path"]
        assert f"{f['status']} {path}" in lines
    assert data["diff"].rstrip("\n") == diff.rstrip("\n")
    return data, diff


async def test_show(repo: Path) -> None:
    head, diff = show_parts(await run(repo, command="show"))
    assert head["message"] == "third"
    assert head["files"] == [{"status": "M", "path": "src/m.py"}]
    assert diff.startswith("diff --git a/src/m.py b/src/m.py\n")
    assert "-x = 1\n+x = 2" in diff
    assert head["hash"] == sh(repo, "rev-parse", "HEAD").strip()
    second, _ = show_parts(await run(repo, command="show", revision="HEAD~1"))
    assert second["author"] == "Grace Hopper" and "+TWO" in second["diff"]
    sh(repo, "tag", "-a", "v1", "-m", "tag message", "HEAD~2")
    tagged, _ = show_parts(await run(repo, command="show", revision="v1"))
    assert tagged["message"] == "first commit"
    assert {f["path"] for f in tagged["files"]} == {"a.txt", "src/m.py"}


async def test_blame(repo: Path) -> None:
    (repo / "a.txt").write_text("one\nTWO\nthree\nfour\n")
    result = await run(repo, command="blame", path="a.txt")
    lines = result.output.splitlines()
    assert len(lines) == 4
    pattern = r"[0-9a-f]{8} \(.{15,}\) {1,4}\d{1,4} \| .*"
    assert all(re.fullmatch(pattern, line) for line in lines), lines
    assert lines[0].endswith("   1 | one") and "(   Ada Lovelace)" in lines[0]
    assert "(   Grace Hopper)    2 | TWO" in lines[1]
    assert lines[3].startswith("00000000 (Not Committed Yet)    4 | four")
    old = await run(repo, command="blame", path="a.txt", revision="HEAD~2")
    assert "   2 | two" in old.output


@pytest.mark.parametrize(
    "revision",
    [
        "-x",
        "--output=/tmp/pwned",
        "HEAD..main",
        "main...HEAD",
        "HEAD@{1}",
        "@{-1}",
        ":/first",
        "HEAD:a.txt",
        " HEAD",
        ".hidden",
        "a b",
        "x" * 300,
        "",
        "HEAD;rm",
        "$(id)",
    ],
)
async def test_bad_revision_refused(repo: Path, revision: str) -> None:
    result = await run(repo, command="log", revision=revision)
    assert result.error_kind == "invalid_arguments", result.output
    assert not Path("/tmp/pwned").exists()


@pytest.mark.parametrize("revision", ["HEAD", "HEAD~1", "HEAD^", "main", "v1.0-rc_2", "a/b"])
def test_good_revision_shapes(revision: str) -> None:
    assert validate_revision(revision) == revision


async def test_unknown_revision(repo: Path) -> None:
    result = await run(repo, command="show", revision="no-such-branch")
    assert result.error_kind == "not_found"


async def test_paths_checked(repo: Path, tmp_path: Path) -> None:
    outside = await run(repo, command="blame", path="../outside.txt")
    assert outside.error_kind == "path_outside_workspace"
    (repo / "link.txt").symlink_to(repo / "a.txt")
    assert (await run(repo, command="blame", path="link.txt")).error_kind == "symlink_refused"
    (repo / "dirlink").symlink_to(repo / "src")
    assert (await run(repo, command="log", path="dirlink/m.py")).error_kind == "symlink_refused"
    assert (await run(repo, command="blame")).error_kind == "invalid_arguments"
    assert (await run(repo, command="blame", path="src")).error_kind == "is_a_directory"
    assert (await run(repo, command="blame", path="nope.txt")).error_kind == "not_found"


async def test_not_a_repository(tmp_path: Path) -> None:
    result = await run(tmp_path, command="status")
    assert result.error_kind == "not_found"
    assert "not inside a git repository" in result.output


async def test_git_missing_is_unavailable(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from octos_tools import trusted_programs

    monkeypatch.setattr(trusted_programs, "which", lambda name: None)
    result = await run(repo, command="status")
    assert result.error_kind == "unavailable" and "git" in result.output


async def test_repository_config_cannot_run_commands(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "markers"
    marker.mkdir()

    def cmd(name: str) -> str:
        return f"touch {marker / name}; cat"

    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    for key, value in {
        "core.fsmonitor": f"touch {marker / 'fsmonitor'}; false",
        "core.pager": cmd("pager"),
        "pager.log": cmd("pager_log"),
        "filter.evil.clean": cmd("clean"),
        "filter.evil.smudge": cmd("smudge"),
        "filter.evil.process": cmd("process"),
        "diff.evil.textconv": cmd("textconv"),
        "diff.evil.command": cmd("diffcmd"),
        "diff.external": cmd("external"),
        "log.showSignature": "true",
        "gpg.program": cmd("gpg"),
        "mailmap.file": str(marker.parent / "mailmap"),
    }.items():
        sh(repo, "config", key, value)
    (repo / "a.txt").write_text("one\ntwo\nchanged\n")
    os.utime(repo / "a.txt", (1, 1))  # makes git re-read the file (through the filter)
    for args in (
        {"command": "status"},
        {"command": "diff"},
        {"command": "diff", "revision": "HEAD~1"},
        {"command": "log"},
        {"command": "show"},
        {"command": "blame", "path": "a.txt"},
    ):
        result = await run(repo, **args)
        assert result.success, (args, result.output)
    assert list(marker.iterdir()) == []


async def test_promisor_lazy_fetch_cannot_run_commands(repo: Path, tmp_path: Path) -> None:
    """A repository config can declare a promisor remote (partial clone) whose upload-pack
    (or ssh command, or ext:: URL) is a shell command; a missing object then makes
    show/diff/blame "lazily fetch" it, running that command. Every transport is refused."""
    marker = tmp_path / "markers"
    marker.mkdir()
    blob = sh(repo, "rev-parse", "HEAD:a.txt").strip()
    obj = repo / ".git" / "objects" / blob[:2] / blob[2:]
    obj.chmod(0o644)
    obj.unlink()
    for key, value in {
        "core.repositoryformatversion": "1",
        "extensions.partialClone": "origin",
        "remote.origin.url": str(repo),
        "remote.origin.promisor": "true",
        "remote.origin.uploadpack": f"sh -c 'touch {marker / 'uploadpack'}; exit 1' #",
        "protocol.allow": "always",
        "protocol.file.allow": "always",
        "protocol.ext.allow": "always",
    }.items():
        sh(repo, "config", key, value)
    (repo / "a.txt").write_text("changed\n")
    for args in (
        {"command": "status"},
        {"command": "diff"},
        {"command": "diff", "revision": "HEAD"},
        {"command": "log"},
        {"command": "show"},
        {"command": "blame", "path": "a.txt"},
    ):
        await run(repo, **args)  # may fail (object missing); must not run anything
    sh(repo, "config", "remote.origin.url", f"ext::sh -c touch% {marker / 'ext'}")
    await run(repo, command="show")
    sh(repo, "config", "remote.origin.url", "ssh://example.invalid/x")
    sh(repo, "config", "core.sshCommand", f"touch {marker / 'ssh'}; false")
    await run(repo, command="show")
    assert sorted(p.name for p in marker.iterdir()) == []


async def test_blame_ignore_revs_file_must_be_in_workspace(repo: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-LINE\n")
    sh(repo, "config", "blame.ignoreRevsFile", str(secret))
    refused = await run(repo, command="blame", path="a.txt")
    assert refused.error_kind == "path_outside_workspace"
    assert "TOPSECRET" not in refused.output
    assert (await run(repo, command="log")).success  # only blame reads that file
    (repo / ".git-blame-ignore-revs").write_text("")
    sh(repo, "config", "--replace-all", "blame.ignoreRevsFile", ".git-blame-ignore-revs")
    assert (await run(repo, command="blame", path="a.txt")).success


async def test_git_dir_outside_workspace_refused(repo: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    result = await run(ws, command="log")
    assert result.error_kind == "path_outside_workspace"
    assert "third" not in result.output
    (ws / ".git").unlink()
    sh(ws, "init", "-q")
    sh(ws, "config", "core.worktree", str(repo))
    assert (await run(ws, command="status")).error_kind == "path_outside_workspace"


async def test_inherited_git_environment_ignored(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    sh(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "false")
    (repo / "a.txt").write_text("z\n")
    result = await run(repo, command="diff")
    assert result.success and "+z" in result.output


async def test_workspace_inside_repository_is_scoped(repo: Path) -> None:
    (repo / "a.txt").write_text("outside the workspace\n")
    (repo / "src" / "m.py").write_text("x = 3\n")
    sub = repo / "src"
    status = (await run(sub, command="status")).structured_metadata
    assert status["modified"] == ["m.py"] or status["modified"] == ["src/m.py"]
    diff = await run(sub, command="diff")
    assert "x = 3" in diff.output and "outside the workspace" not in diff.output
    log = (await run(sub, command="log")).structured_metadata["commits"]
    assert [c["message"] for c in log] == ["third", "first commit"]


async def test_through_registry(repo: Path) -> None:
    from octos_tools.registry import ToolRegistry

    ws = Workspace(repo)
    reg = ToolRegistry(ws)
    git_module.register(reg, ws, Config())
    tool = reg.get("git")
    assert tool is not None and tool.cwd_bound and tool.tags == ("code", "search")
    ok = await reg.execute("git", '{"command": "log", "count": 2}')
    assert ok.success and len(ok.output.splitlines()) == 2
    assert len(ok.structured_metadata["commits"]) == 2
    bad = await reg.execute("git", {"command": "push"})
    assert bad.error_kind == "invalid_arguments"
    other = Workspace(repo / "src")
    rebound = tool.with_workspace(other)
    assert isinstance(rebound, GitTool) and rebound.workspace is other


async def test_subfolder_workspace_hides_commits_and_files_outside(tmp_path: Path) -> None:
    """Workspace = a folder of a larger repository: log/show/blame/diff never show a commit
    that only changes files outside it, nor the outside files of a commit touching both."""
    root = tmp_path / "big"
    (root / "ws").mkdir(parents=True)
    sh(root, "init", "-q", "-b", "main")
    (root / "ws" / "in.txt").write_text("inside 1\n")
    (root / "secret.txt").write_text("TOP SECRET 1\n")
    sh(root, "add", ".")
    both = commit(root, "both sides")
    (root / "secret.txt").write_text("TOP SECRET 2\n")
    sh(root, "add", ".")
    outside = commit(root, "outside only: classified")
    sh(root, "mv", "secret.txt", "ws/moved.txt")
    moved = commit(root, "move a file in")
    ws = root / "ws"

    log = (await run(ws, command="log")).structured_metadata["commits"]
    assert [c["message"] for c in log] == ["move a file in", "both sides"]
    assert "classified" not in (await run(ws, command="log", revision=outside)).output

    hidden = await run(ws, command="show", revision=outside)
    assert hidden.error_kind == "not_found"
    assert "classified" not in hidden.output and "SECRET" not in hidden.output

    first = await run(ws, command="show", revision=both)
    assert first.success, first.output
    assert "SECRET" not in first.output and "secret.txt" not in first.output
    assert first.structured_metadata is not None
    assert first.structured_metadata["files"] == [{"status": "A", "path": "in.txt"}]
    assert "+inside 1" in first.output

    # A rename from outside shows as a new file; the outside name never appears.
    rename = await run(ws, command="show", revision=moved)
    assert rename.structured_metadata is not None
    assert rename.structured_metadata["files"] == [{"status": "A", "path": "moved.txt"}]
    assert "secret.txt" not in rename.output

    (root / "secret.txt").write_text("new outside\n")
    (ws / "in.txt").write_text("inside 2\n")
    diff = await run(ws, command="diff")
    assert diff.output.startswith("diff --git a/in.txt b/in.txt"), diff.output
    assert "outside" not in diff.output

    blame = await run(ws, command="blame", path="moved.txt")
    assert blame.success and "SECRET 2" in blame.output  # the file's own lines, now inside
    assert (await run(ws, command="blame", path="../secret.txt")).error_kind == (
        "path_outside_workspace"
    )


async def test_repository_with_no_commit_yet(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    sh(root, "init", "-q", "-b", "main")
    nothing = await run(root, command="diff")
    assert nothing.success and nothing.output.startswith("No changes")
    assert "no commit yet" in nothing.output

    (root / "new.txt").write_text("first line\n")
    sh(root, "add", "new.txt")
    (root / "later.txt").write_text("untracked\n")
    staged = await run(root, command="diff")
    assert staged.success, staged.output
    assert "no commit yet" in staged.output and "+first line" in staged.output
    assert "new file mode" in staged.output and "later.txt" not in staged.output
    (root / "new.txt").write_text("first line\nsecond line\n")
    both = await run(root, command="diff")
    staged_part, unstaged_part = both.output.split("Unstaged:")
    assert "+first line" in staged_part and "+second line" in unstaged_part
    only_path = await run(root, command="diff", path="later.txt")
    assert only_path.output.startswith("No changes")

    other = await run(root, command="diff", revision="HEAD~1")
    assert other.error_kind is not None and other.error_kind.value == "not_found"
    assert "no commit yet" in other.output and "HEAD~1" in other.output
    show = await run(root, command="show")
    assert "no commit yet" in show.output

    blame = await run(root, command="blame", path="new.txt")
    assert blame.error_kind is not None and blame.error_kind.value == "not_found"
    assert "new.txt has no history" in blame.output and "no commit yet" in blame.output
    assert "fatal" not in blame.output


async def test_diff_against_unborn_head_compares_with_the_empty_tree(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    sh(root, "init", "-q", "-b", "trunk")
    empty = await run(root, command="diff", revision="HEAD")
    assert empty.success and empty.output.startswith("No changes")
    assert "empty tree" in empty.output
    (root / "staged.txt").write_text("one\n")
    sh(root, "add", "staged.txt")
    (root / "staged.txt").write_text("one\ntwo\n")  # staged, then changed again
    (root / "sub").mkdir()
    (root / "sub" / "b.txt").write_text("bee\n")
    sh(root, "add", "sub/b.txt")
    (root / "untracked.txt").write_text("u\n")
    for revision in ("HEAD", "trunk"):
        res = await run(root, command="diff", revision=revision)
        assert res.success, res.output
        assert res.structured_metadata == {"no_commit_yet": True}
        assert "compared with the empty tree" in res.output
        # what `git diff HEAD` shows once HEAD is a commit of nothing: the working tree
        assert "+one\n+two" in res.output and "+bee" in res.output
        assert "untracked.txt" not in res.output
    only = await run(root, command="diff", revision="HEAD", path="sub")
    assert "+bee" in only.output and "staged.txt" not in only.output
    # the same repository once it has a commit: git's own diff against HEAD
    sh(root, "commit", "-q", "-m", "first")
    after = await run(root, command="diff", revision="HEAD")
    assert after.success and "no_commit_yet" not in (after.structured_metadata or {})
    assert after.output.startswith("diff --git a/staged.txt") and "+two" in after.output
    unknown = await run(root, command="diff", revision="nosuchbranch")
    assert unknown.error_kind is not None and unknown.error_kind.value == "not_found"


async def test_blame_of_a_file_never_committed(repo: Path) -> None:
    (repo / "fresh.txt").write_text("new\n")
    result = await run(repo, command="blame", path="fresh.txt")
    assert result.error_kind is not None and result.error_kind.value == "not_found"
    assert "fresh.txt has no history" in result.output and "never committed" in result.output
    assert "fatal" not in result.output
    old = await run(repo, command="blame", path="a.txt", revision="HEAD~2")
    assert old.success and "TWO" not in old.output


async def test_arguments_are_typed(repo: Path) -> None:
    wrong = await run(repo, command="log", count="5")
    assert wrong.error_kind is not None and wrong.error_kind.value == "invalid_arguments"
    assert "count" in wrong.output
    integral = await run(repo, command="log", count=2.0)
    assert integral.success and len(integral.structured_metadata["commits"]) == 2
    unknown = await run(repo, command="push")
    assert unknown.error_kind is not None and unknown.error_kind.value == "invalid_arguments"
