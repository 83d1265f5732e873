"""The environment a command sees: secrets and injection variables removed, paging and
prompting turned off; and the host's own environment kept out of the commands' reach.

Rules (octos ``crates/octos-agent/src/subprocess_env.rs`` for the name list; the rest ours):

* **Secrets by name**: a variable whose name has a secret word as one of its ``_``/``-``/``.``
  parts (``TOKEN``, ``KEY``, ``PAT``, ``AUTH``, ``CREDS``, ``SK``, ``PEM`` …), or contains
  ``TOKEN``, ``SECRET``, ``PASSWORD``, ``API_KEY``… anywhere, or is a known credential-file
  pointer (``KUBECONFIG``, ``NETRC``, ``DOCKER_AUTH_CONFIG``, ``GOOGLE_APPLICATION_CREDENTIALS``).
  ``SSH_AUTH_SOCK`` is kept (commands may need the agent; it is a socket, not a secret).
* **Secrets by value**: a value that is a URL with a password, a PEM block, a known token
  format (the list of :func:`octos_tools.output.redact_secrets`), a JWT, or a long
  random-looking token (mixed case and digits, 32+ characters, no spaces or path shape).
* **Injection variables**: ``LD_PRELOAD``, ``LD_LIBRARY_PATH``, ``LD_AUDIT``, ``DYLD_*``,
  ``NODE_OPTIONS``, ``PYTHONSTARTUP``, ``PYTHONPATH``, ``PERL5OPT``, ``RUBYOPT``,
  ``RUBYLIB``, ``JAVA_TOOL_OPTIONS``, ``BASH_ENV``, ``ENV``, ``ZDOTDIR``: they make the
  command's interpreters load code chosen by whoever set up the host's environment.
* **Never wait on a person** (:data:`NONINTERACTIVE_ENV`): pagers print and exit
  (``PAGER=cat``, ``GIT_PAGER=cat``, ``MANPAGER=cat`` …), git and ssh never prompt for
  credentials (``GIT_TERMINAL_PROMPT=0``, askpass helpers removed, ``GCM_INTERACTIVE=never``),
  git never opens an editor (``GIT_EDITOR=true``), apt, pip and gh never ask
  (``DEBIAN_FRONTEND=noninteractive``, ``PIP_NO_INPUT=1``, ``GH_PROMPT_DISABLED=1``), and
  colour is off (``NO_COLOR=1``).
* **The host's own environment** (:func:`protect_host_environment`, Linux): the server
  process is made non-dumpable, so other processes of the same (non-root) user can no longer
  read ``/proc/<pid>/environ`` or ``/proc/<pid>/mem``; and the values of its secret variables
  are moved to the heap (``setenv``) and overwritten in the start-up block that
  ``/proc/<pid>/environ`` shows, so even a root command reads ``****`` there. The values stay
  usable in-process (``os.environ``, ``getenv``).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Mapping

from ...output import redact_secrets

__all__ = [
    "NONINTERACTIVE_ENV",
    "command_env",
    "is_secret_name",
    "is_secret_value",
    "protect_host_environment",
    "scrubbed_env",
]

_SECRET_PARTS = frozenset(
    {
        "TOKEN",
        "TOKENS",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWD",
        "PASSCODE",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "CRED",
        "CREDS",
        "PAT",
        "BEARER",
        "AUTH",
        "AUTHORIZATION",
        "COOKIE",
        "COOKIES",
        "SESSIONID",
        "KEY",
        "APIKEY",
        "ACCESSKEY",
        "SECRETKEY",
        "PRIVATEKEY",
        "PASS",
        "PWD",  # MYSQL_PWD; the exact names PWD / OLDPWD are the working directory
        "JWT",
        "DSN",
        "SK",  # STRIPE_SK
        "PEM",  # SIGNING_CERT_PEM
        "P12",
        "PFX",
        "KEYSTORE",
        "WEBHOOK",
        "SIGNATURE",
    }
)
_SECRET_SUBSTRINGS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSPHRASE",
    "CREDENTIAL",
    "APIKEY",
    "API_KEY",
    "ACCESSKEY",
    "ACCESS_KEY",
    "PRIVATEKEY",
    "PRIVATE_KEY",
    "AUTHORIZATION",
    "CONNECTION_STRING",
    "KUBECONFIG",
    "NETRC",
    "AUTH_CONFIG",
)
_NOT_SECRET = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK"})
_INJECTION_VARS = frozenset(
    {
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "NODE_OPTIONS",
        "PYTHONSTARTUP",
        "PYTHONPATH",
        "PERL5OPT",
        "RUBYOPT",
        "RUBYLIB",
        "JAVA_TOOL_OPTIONS",
        "BASH_ENV",
        "ENV",
        "ZDOTDIR",
    }
)
#: Removed so that nothing asks for a password on a terminal or in a window.
_PROMPT_VARS = frozenset({"GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS"})

#: Set in every command's environment (over the host's values): pagers print and exit,
#: nothing prompts, nothing opens an editor.
NONINTERACTIVE_ENV: Mapping[str, str] = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "",
    "GH_PAGER": "cat",
    "AWS_PAGER": "",
    "PSQL_PAGER": "cat",
    "BAT_PAGER": "cat",
    "LESS": "-FRX",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "GCM_INTERACTIVE": "never",
    "SSH_ASKPASS_REQUIRE": "never",
    "DEBIAN_FRONTEND": "noninteractive",
    "PIP_NO_INPUT": "1",
    "GH_PROMPT_DISABLED": "1",
    "NO_COLOR": "1",
}

_URL_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]*:[^/@\s]+@")
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.")
_RANDOM_TOKEN = re.compile(r"[A-Za-z0-9+/_.=-]{32,}")
_SPLIT = re.compile(r"[_\-.]")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable name looks like it holds a secret (module docstring).

    Args:
        name: the variable name (any case).
    """
    upper = name.upper()
    if upper in _NOT_SECRET:
        return False
    if any(p in _SECRET_PARTS for p in _SPLIT.split(upper)) or upper.endswith("_AUTH"):
        return True
    return any(s in upper for s in _SECRET_SUBSTRINGS)


def is_secret_value(value: str) -> bool:
    """Whether a variable's value looks like a credential whatever its name: a URL carrying a
    password, a PEM block, a known token format, a JWT, or a long random-looking token
    (one base64-like word of 32+ characters holding a run of 24+ letters and digits that
    mixes upper case, lower case and digits; hex digests, UUIDs, paths and dotted or
    dashed names such as ``Ubuntu-22.04-Jammy-Release`` are kept)."""
    if len(value) < 16:
        return False
    if _URL_PASSWORD.match(value) or "-----BEGIN" in value or _JWT.search(value):
        return True
    if redact_secrets(value) != value:
        return True
    if _RANDOM_TOKEN.fullmatch(value) and value[0] not in "/.":
        run = max(_ALNUM_RUN.findall(value), key=len)
        return (
            len(run) >= 24
            and any(c.isupper() for c in run)
            and any(c.islower() for c in run)
            and any(c.isdigit() for c in run)
        )
    return False


def _is_injection_name(name: str) -> bool:
    return name in _INJECTION_VARS or name.startswith("DYLD_")


def _removed(name: str, value: str) -> bool:
    return (
        is_secret_name(name)
        or _is_injection_name(name)
        or name in _PROMPT_VARS
        or is_secret_value(value)
    )


def scrubbed_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default ``os.environ``) minus secret and injection variables and password
    prompts (see the module docstring). Nothing is added."""
    source = os.environ if base is None else base
    return {k: v for k, v in source.items() if not _removed(k, v)}


def command_env(base: Mapping[str, str] | None = None, *, tty: bool = False) -> dict[str, str]:
    """The complete environment of a command: :func:`scrubbed_env` plus
    :data:`NONINTERACTIVE_ENV` and the W3C trace context of the current span
    (:func:`octos_tools.tracing.trace_env`); ``TERM=dumb`` without a terminal (tools then
    print plain text), the host's ``TERM`` (default ``xterm``) on one."""
    env = scrubbed_env(base)
    env.update(NONINTERACTIVE_ENV)
    if "opentelemetry.trace" in sys.modules:  # TRACEPARENT of the call's span
        from ...tracing import trace_env

        env.update(trace_env())
    if not tty:
        env["TERM"] = "dumb"
    elif env.get("TERM", "dumb") in ("", "dumb"):
        env["TERM"] = "xterm"
    return env


_protected = False


def protect_host_environment() -> None:
    """Keep the host process's secrets out of ``/proc/<pid>/environ`` (Linux; no-op
    elsewhere; once per process; never raises).

    1. ``prctl(PR_SET_DUMPABLE, 0)``: ``/proc/<pid>/environ``, ``mem`` and friends become
       root-owned, so commands running as the same non-root user cannot read them (nor
       ptrace the host). Core dumps of the host are off from then on.
    2. Each variable :func:`scrubbed_env` would remove for its name or value is re-set with
       ``setenv`` (the value moves to the heap, ``getenv``/``os.environ`` unchanged), and its
       value is overwritten with ``*`` in the start-up environment block, the memory that
       ``/proc/<pid>/environ`` shows: a root command reading it sees only ``NAME=****``.
    """
    global _protected
    if _protected or not sys.platform.startswith("linux"):
        return
    _protected = True
    with contextlib.suppress(Exception):
        _make_non_dumpable()
    with contextlib.suppress(Exception):
        _wipe_startup_environ()


def _make_non_dumpable() -> None:
    import ctypes

    pr_set_dumpable = 4
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0)


def _wipe_startup_environ() -> None:
    import ctypes

    with open("/proc/self/stat", "rb") as fh:
        stat = fh.read()
    rest = stat[stat.rfind(b")") + 2 :].split()
    start, end = int(rest[47]), int(rest[48])  # fields 50 and 51: env_start, env_end
    if not 0 < start < end or end - start > 16 * 1024 * 1024:
        return
    block = bytes((ctypes.c_char * (end - start)).from_address(start))
    offset = 0
    for entry in block.split(b"\0"):
        name, eq, value = entry.partition(b"=")
        if eq and value:
            key = name.decode("utf-8", "surrogateescape")
            text = value.decode("utf-8", "surrogateescape")
            current = os.environ.get(key)
            if current is not None and _removed(key, text):
                os.putenv(key, current)  # setenv: the live value now lives on the heap
                at = start + offset + len(name) + 1
                ctypes.memset(at, ord("*"), len(value))
        offset += len(entry) + 1
