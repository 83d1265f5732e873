"""Which git config entries can make git run a program: an allow-list.

git runs programs named by many config keys (``core.fsmonitor``, ``core.hooksPath``,
``core.sshCommand``, ``core.pager``, ``diff.external``, ``filter.*.clean``,
``diff.*.textconv``, ``credential.helper``, ``gpg.program``, ``remote.*.uploadpack``,
``alias.* = !cmd``, ``submodule.*.update = !cmd``, ``include.path`` pulling in another
file ...; ``git help config``), and new ones appear with new git versions. So the rule is an
**allow-list** of keys known not to run anything; every other key is dangerous, and so is
a line that does not parse (fail closed). The guard (:mod:`._git_guard`) applies it only to
entries a sandboxed command added: a repository's existing config is the user's.

Format: ``git help config``, "CONFIGURATION FILE" (sections ``[section]``, ``[section
"subsection"]``, the old ``[section.subsection]``; ``name = value``, a bare ``name`` is
``true``; ``#`` and ``;`` comments; ``\\`` continues a line). Section and key names are
case-insensitive, subsection names are not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ConfigEntry", "dangerous_entries", "is_safe", "parse_config", "safe_config_text"]

#: ``section.key`` names (lower case) that never run a program.
SAFE_KEYS = frozenset(
    {
        "core.repositoryformatversion",
        "core.filemode",
        "core.bare",
        "core.logallrefupdates",
        "core.ignorecase",
        "core.precomposeunicode",
        "core.symlinks",
        "core.autocrlf",
        "core.eol",
        "core.safecrlf",
        "core.quotepath",
        "core.worktree",
        "core.sharedrepository",
        "core.untrackedcache",
        "core.commitgraph",
        "core.multipackindex",
        "core.compression",
        "core.checkstat",
        "core.trustctime",
        "core.splitindex",
        "core.abbrev",
        "core.sparsecheckout",
        "core.sparsecheckoutcone",
        "extensions.objectformat",
        "extensions.worktreeconfig",
        "extensions.refstorage",
        "extensions.preciousobjects",
        "extensions.partialclone",
        "extensions.noop",
        "user.name",
        "user.email",
        "user.signingkey",
        "author.name",
        "author.email",
        "committer.name",
        "committer.email",
        "init.defaultbranch",
        "index.version",
        "index.skiphash",
        "feature.manyfiles",
        "gc.auto",
        "gc.autodetach",
        "fetch.prune",
        "fetch.prunetags",
        "pull.rebase",
        "pull.ff",
        "push.default",
        "push.autosetupremote",
        "merge.ff",
        "rebase.autostash",
        "status.showuntrackedfiles",
        "color.ui",
        "maintenance.auto",
        "maintenance.strategy",
        "lfs.repositoryformatversion",
    }
)
#: ``section.*.key`` names (subsection any) that never run a program.
SAFE_SUBSECTION_KEYS = frozenset(
    {
        "remote.url",
        "remote.pushurl",
        "remote.fetch",
        "remote.push",
        "remote.tagopt",
        "remote.prune",
        "remote.promisor",
        "remote.partialclonefilter",
        "branch.remote",
        "branch.pushremote",
        "branch.merge",
        "branch.rebase",
        "branch.description",
        "submodule.url",
        "submodule.active",
        "submodule.branch",
        "submodule.update",
        "submodule.shallow",
        "worktree.guessremote",
    }
)
#: ``submodule.*.update`` values that are not ``!command``.
_SAFE_UPDATE = frozenset({"checkout", "rebase", "merge", "none"})

_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\]\s*(?:[#;].*)?$')
_ENTRY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One ``name = value`` of a config file.

    Attributes:
        section: lower case (``core``, ``remote``).
        subsection: as written (``origin``), or ``None``.
        name: lower case (``fsmonitor``).
        value: the raw value text (quotes and escapes kept), ``None`` for a bare name.
        line: the 1-based line number where it starts (``0``: a line that does not parse).
    """

    section: str
    subsection: str | None
    name: str
    value: str | None
    line: int

    @property
    def key(self) -> str:
        """``section.subsection.name`` (or ``section.name``), as git names it."""
        if self.subsection is None:
            return f"{self.section}.{self.name}"
        return f"{self.section}.{self.subsection}.{self.name}"

    def identity(self) -> tuple[str, str | None, str, str | None]:
        """What makes two entries the same (the line number aside)."""
        return (self.section, self.subsection, self.name, self.value)


def _continues(line: str) -> bool:
    """``line`` ends in a backslash git reads as a line continuation: not escaped, and not
    inside a comment (git's config parser skips everything after an unquoted ``;`` or
    ``#`` to the end of the line, a final backslash included: config.c, parse_value)."""
    quote, i = False, 0
    while i < len(line):
        char = line[i]
        if char == "\\":
            if i == len(line) - 1:
                return True
            i += 2
            continue
        if char == '"':
            quote = not quote
        elif char in ";#" and not quote:
            return False
        i += 1
    return False


def _logical_lines(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending = ""
    start = 0
    # only "\n" (and "\r\n") ends a line for git; str.splitlines() would also split at
    # "\f", "\v", "\x1c".. and "\u2028", letting a comment hide a "[user]" header from git
    for number, raw in enumerate(text.split("\n"), 1):
        raw = raw.removesuffix("\r")
        if not pending:
            start = number
        if _continues(pending + raw):
            pending += raw[:-1]
            continue
        out.append((start, pending + raw))
        pending = ""
    if pending:
        out.append((start, pending))
    return out


def parse_config(text: str) -> list[ConfigEntry]:
    """Every entry of a git config file's ``text``. A line that does not parse becomes an
    entry with section ``"?"`` (never safe), so a trick in the syntax fails closed."""
    entries: list[ConfigEntry] = []
    section, subsection = "", None
    for number, raw in _logical_lines(text):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            close = line.find("]")
            head = _SECTION.match(line if close < 0 else line[: close + 1])
            rest = "" if close < 0 else line[close + 1 :].strip()
            if head is None:
                entries.append(ConfigEntry("?", None, "?", raw, number))
                section, subsection = "?", None
                continue
            name, sub = head.group(1), head.group(2)
            if sub is None and "." in name:  # [section.subsection], the old syntax
                name, _, sub = name.partition(".")
            section, subsection = name.lower(), sub
            if rest and rest[0] not in "#;":
                line = rest  # "[core] fsmonitor = x" on one line
            else:
                continue
        entry = _ENTRY.match(line)
        if entry is None or not section:
            entries.append(ConfigEntry("?", None, "?", raw, number))
            continue
        entries.append(
            ConfigEntry(section, subsection, entry.group(1).lower(), entry.group(2), number)
        )
    return entries


def _unquoted(value: str | None) -> str:
    text = (value or "").strip()
    for mark in ("#", ";"):
        if mark in text and '"' not in text:
            text = text.split(mark, 1)[0].strip()
    return text.strip('"').strip()


def is_safe(entry: ConfigEntry) -> bool:
    """``entry`` is on the allow-list (and its value is not a program where the key takes
    either: ``submodule.*.update = !cmd``, a remote URL ``ext::cmd``)."""
    if entry.subsection is None:
        if entry.section in ("user", "author", "committer", "advice"):
            return True
        return entry.key in SAFE_KEYS
    if f"{entry.section}.{entry.name}" not in SAFE_SUBSECTION_KEYS:
        return False
    value = _unquoted(entry.value).lower()
    if entry.section == "submodule" and entry.name == "update":
        return value in _SAFE_UPDATE
    if entry.section == "remote" and entry.name in ("url", "pushurl"):
        return not value.startswith("ext::")
    return True


def dangerous_entries(text: str, before: str | None = None) -> list[ConfigEntry]:
    """The entries of ``text`` that could make git run a program and were not already in
    ``before`` (the file's content before the command; ``None``: a new file), in order."""
    old = {e.identity() for e in parse_config(before)} if before is not None else set()
    return [e for e in parse_config(text) if e.identity() not in old and not is_safe(e)]


def safe_config_text(text: str) -> str:
    """``text`` rebuilt from its safe entries only (a new repository's config with what
    could run a program taken out; the repository keeps working)."""
    out: list[str] = []
    current: tuple[str, str | None] | None = None
    for entry in parse_config(text):
        if not is_safe(entry):
            continue
        head = (entry.section, entry.subsection)
        if head != current:
            current = head
            sub = f' "{entry.subsection}"' if entry.subsection is not None else ""
            out.append(f"[{entry.section}{sub}]")
        value = "" if entry.value is None else f" = {entry.value}"
        out.append(f"\t{entry.name}{value}")
    return "\n".join(out) + ("\n" if out else "")
