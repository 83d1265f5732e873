"""The SafePolicy: a check of the *parsed* command before it runs.

Deny rules refuse the command (``policy_denied``); ask rules need a person's approval
through the approval channel (:mod:`octos_tools.approval`). The rules are octos's
(``crates/octos-agent/src/policy.rs``: ``rm -rf /``, ``dd if=``, ``mkfs``, the fork bomb,
``chmod -R 777 /``; ask for ``sudo``, ``rm -rf``, ``git push --force``, ``git reset
--hard``), matched on words, not text:

* the line is split into words the way ``sh`` does (:mod:`shlex`: quotes removed, so
  ``r''m`` is ``rm``) and into commands at ``;``, ``&&``, ``||``, ``|``, ``&``, newlines and
  parentheses (Codex splits the same way to judge each segment);
* in each command, leading ``NAME=value`` assignments and the wrappers ``sudo``, ``doas``,
  ``env``, ``command``, ``exec``, ``nohup``, ``time``, ``nice``, ``timeout``, ``stdbuf`` and
  ``xargs`` are skipped (with their own options), and ``sh``/``bash``/``zsh``/``dash -c
  '...'`` and ``eval`` are checked recursively;
* the program is the last part of its path (``/bin/rm`` is ``rm``) and its flags are
  normalised: ``rm -r -f``, ``rm -fr``, ``rm -Rf`` and ``rm --recursive --force`` are all
  ``rm -rf``; ``git -C dir push -fu`` is ``git push --force``.

It is a guard rail against slips, not a security boundary: ``$(echo rm) -rf /``, a
script file, ``python -c`` or ``echo … | base64 -d | sh`` all pass. Confinement is the
sandbox's job (docs/approvals.md).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from typing import Literal

__all__ = ["ASK_PATTERNS", "DENY_PATTERNS", "check_command", "split_commands"]

#: The deny rules, by the canonical spelling :func:`check_command` reports.
DENY_PATTERNS: tuple[str, ...] = (
    "rm -rf /",
    "dd if=",
    "mkfs",
    ":(){:|:&};:",
    "chmod -R 777 /",
)
#: The ask rules, by the canonical spelling :func:`check_command` reports.
ASK_PATTERNS: tuple[str, ...] = (
    "sudo",
    "rm -rf",
    "git push --force",
    "git reset --hard",
)

Verdict = Literal["allow", "deny", "ask"]

_FORK_BOMB = re.compile(r":\(\)\{:\|:&\};:")
_WS = re.compile(r"\s+")
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&", ";;", "(", ")", "\n", "{", "}", "!"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "busybox"})
#: Wrapper programs: name -> options that take a value (skipped with it).
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "--user", "--group"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "xargs": frozenset({"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--delimiter"}),
    "chronic": frozenset(),
}
#: Wrappers whose first operand is theirs, not the command's (``timeout 5 rm ...``).
_WRAPPER_OPERAND = frozenset({"timeout"})
_MAX_DEPTH = 4


def _words(command: str) -> list[str]:
    """``sh``-like words of ``command``; control operators are their own words. Newlines
    count as ``;``. Unbalanced quotes: split on whitespace instead."""
    text = command.replace("\r\n", "\n").replace("\n", " ; ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return _WS.split(text.strip())


def split_commands(command: str) -> list[list[str]]:
    """The simple commands of a command line, each as its words (control operators and
    redirections removed).

    Args:
        command: the shell command line.

    Returns:
        ``[[word, ...], ...]``, empty commands dropped.
    """
    out: list[list[str]] = []
    current: list[str] = []
    skip_target = False
    for word in _words(command):
        if skip_target:
            skip_target = False
            continue
        if word in _SEPARATORS or (word and set(word) <= set(";&|()")):
            if current:
                out.append(current)
            current = []
            continue
        if word and set(word) <= set("<>&"):
            skip_target = True  # a redirection: its target is not an argument
            continue
        current.append(word)
    if current:
        out.append(current)
    return out


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _unwrap(words: list[str]) -> tuple[list[str], bool]:
    """Skip assignments and wrapper programs; return the real command's words and whether
    ``sudo``/``doas`` was among the wrappers."""
    elevated = False
    i = 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word):
            i += 1
            continue
        name = _basename(word)
        takes_value = _WRAPPERS.get(name)
        if takes_value is None:
            break
        elevated = elevated or name in ("sudo", "doas")
        i += 1
        while i < len(words):
            opt = words[i]
            if opt == "--":
                i += 1
                break
            if name == "env" and _ASSIGNMENT.match(opt):
                i += 1
                continue
            if not opt.startswith("-") or opt == "-":
                break
            i += 2 if opt in takes_value else 1
        if name in _WRAPPER_OPERAND and i < len(words):
            i += 1
    return words[i:], elevated


def _short_flags(args: list[str]) -> set[str]:
    """Every letter of the ``-abc`` clusters (until ``--``)."""
    flags: set[str] = set()
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("-") and not arg.startswith("--"):
            flags.update(arg[1:])
    return flags


def _long_flags(args: list[str]) -> set[str]:
    out: set[str] = set()
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("--"):
            out.add(arg.split("=", 1)[0])
    return out


def _operands(args: list[str]) -> list[str]:
    out: list[str] = []
    after = False
    for arg in args:
        if after or not arg.startswith("-") or arg == "-":
            out.append(arg)
        elif arg == "--":
            after = True
    return out


def _is_root(path: str) -> bool:
    """``/``, ``/*``, ``//``, ``/.``, ``/..`` and the like: the whole file system."""
    norm = re.sub(r"/+", "/", path)
    return norm in ("/", "/*", "/.", "/..", "/./", "/../", "/.*")


def _check_rm(args: list[str]) -> tuple[Verdict, str] | None:
    short, long = _short_flags(args), _long_flags(args)
    recursive = bool(short & {"r", "R"}) or "--recursive" in long
    force = "f" in short or "--force" in long
    if not (recursive and force):
        return None
    if "--no-preserve-root" in long or any(_is_root(p) for p in _operands(args)):
        return "deny", "rm -rf /"
    return "ask", "rm -rf"


#: git's global options that take a separate value.
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})


def _check_git(args: list[str]) -> tuple[Verdict, str] | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _GIT_VALUE_OPTIONS else 1
    if i >= len(args):
        return None
    sub, rest = args[i], args[i + 1 :]
    short, long = _short_flags(rest), _long_flags(rest)
    if sub == "push" and (
        "f" in short
        or long & {"--force", "--force-with-lease", "--force-if-includes", "--mirror"}
        or any(op.startswith("+") for op in _operands(rest)[1:])
    ):
        return "ask", "git push --force"
    if sub == "reset" and "--hard" in long:
        return "ask", "git reset --hard"
    return None


def _check_words(words: list[str], depth: int) -> tuple[Verdict, str] | None:
    words, elevated = _unwrap(words)
    found: tuple[Verdict, str] | None = ("ask", "sudo") if elevated else None
    if not words:
        return found
    name, args = _basename(words[0]), words[1:]
    verdict: tuple[Verdict, str] | None = None
    if name in ("sudo", "doas"):  # "sudo" alone, or after other wrappers
        verdict = ("ask", "sudo")
    elif name == "rm":
        verdict = _check_rm(args)
    elif name == "git":
        verdict = _check_git(args)
    elif name == "dd" and any(a.startswith("if=") for a in args):
        verdict = ("deny", "dd if=")
    elif name == "mkfs" or name.startswith("mkfs."):
        verdict = ("deny", "mkfs")
    elif name == "chmod" and (
        ("R" in _short_flags(args) or "--recursive" in _long_flags(args))
        and "777" in args
        and any(_is_root(p) for p in _operands(args))
    ):
        verdict = ("deny", "chmod -R 777 /")
    elif name in _SHELLS and depth < _MAX_DEPTH:
        script = _shell_script(args)
        if script is not None:
            verdict = _check_line(script, depth + 1)
    elif name == "eval" and depth < _MAX_DEPTH:
        verdict = _check_line(" ".join(args), depth + 1)
    return _worst(found, verdict)


def _shell_script(args: list[str]) -> str | None:
    """The script of ``sh [-euxo ...] -c SCRIPT`` (``-lc``, ``-ec`` included), or ``None``."""
    for i, arg in enumerate(args):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return args[i + 1] if i + 1 < len(args) else None
        if not arg.startswith("-"):
            return None
    return None


def _worst(
    a: tuple[Verdict, str] | None, b: tuple[Verdict, str] | None
) -> tuple[Verdict, str] | None:
    order = {"deny": 2, "ask": 1}
    if a is None:
        return b
    if b is None:
        return a
    return a if order[a[0]] >= order[b[0]] else b


def _each(line: str, depth: int) -> Iterator[tuple[Verdict, str]]:
    if _FORK_BOMB.search(_WS.sub("", line)):
        yield "deny", ":(){:|:&};:"
    for words in split_commands(line):
        verdict = _check_words(words, depth)
        if verdict is not None:
            yield verdict


def _check_line(line: str, depth: int) -> tuple[Verdict, str] | None:
    worst: tuple[Verdict, str] | None = None
    for verdict in _each(line, depth):
        worst = _worst(worst, verdict)
        if worst is not None and worst[0] == "deny":
            break
    return worst


def check_command(command: str) -> tuple[Verdict, str | None]:
    """Classify a command line with the SafePolicy (module docstring). Deny beats ask
    anywhere in the line (``sudo true; rm -rf /`` is denied).

    Args:
        command: the shell command line.

    Returns:
        ``("deny" | "ask" | "allow", the canonical rule or None)``; the rule is one of
        :data:`DENY_PATTERNS` or :data:`ASK_PATTERNS`.
    """
    found = _check_line(command, 0)
    if found is None:
        return "allow", None
    return found
