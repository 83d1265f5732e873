"""``python -m octos_tools.sandbox._launch SETTINGS_JSON WORKSPACE -- PROGRAM ARGS...``:
confine this process with the Landlock engine, then ``exec`` the program.

For processes this project does not spawn itself (a mounted stdio MCP server: the MCP SDK
starts it, with no ``preexec_fn``), the same ruleset and seccomp filter as
:meth:`octos_tools.sandbox.Sandbox.wrap` are applied here, then the program replaces the
launcher. Any failure exits 126 with one line on stderr: the program never runs unconfined.
"""

from __future__ import annotations

import json
import os
import sys

from ._settings import SandboxMode, SandboxSettings
from ._spawn import sandbox_for


def main(argv: list[str]) -> int:
    """Parse ``argv`` (see the module docstring), confine, exec."""
    try:
        sep = argv.index("--")
        raw, workspace = argv[0], argv[1] or None
        program = argv[sep + 1 :]
        data = json.loads(raw)
        data["mode"] = SandboxMode(data["mode"])
        for key in (
            "writable_roots",
            "deny_read",
            "read_only_paths",
            "append_only_paths",
            "secret_paths",
        ):
            data[key] = tuple(data.get(key, ()))
        settings = SandboxSettings(**data)
        box = sandbox_for(settings)
        spawn = box.wrap(program, cwd=os.getcwd(), env=os.environ, workspace=workspace, guard=False)
        if spawn.engine != "landlock" or spawn.preexec is None:
            raise RuntimeError(f"the launcher confines with Landlock, not {spawn.engine}")
        spawn.preexec()
        os.execvpe(program[0], program, spawn.env)
    except Exception as exc:  # noqa: BLE001 - any failure: do not run the program
        sys.stderr.write(f"octos-tools sandbox: not started: {exc}\n")
        return 126
    return 0  # pragma: no cover - exec does not return


if __name__ == "__main__":  # pragma: no cover - run as a program
    sys.exit(main(sys.argv[1:]))
