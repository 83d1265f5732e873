"""The adapters package imports without any framework; each adapter names its extra when its
framework is missing; importing octos_tools never imports a framework."""

from __future__ import annotations

import subprocess
import sys

import pytest

ADAPTERS = {
    "pydantic_ai": ("pydantic_ai", "pydantic-ai"),
    "openai_agents": ("agents", "openai-agents"),
    "langchain": ("langchain_core", "langchain"),
}


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_package_imports_without_frameworks() -> None:
    blocked = ", ".join(f"{m!r}: None" for m, _ in ADAPTERS.values())
    proc = _run(
        f"import sys; sys.modules.update({{{blocked}}})\n"
        "import octos_tools, octos_tools.adapters\n"
        "import octos_tools.adapters._shared\n"
        "print('ok')"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_missing_framework_names_the_extra(adapter: str) -> None:
    module, extra = ADAPTERS[adapter]
    proc = _run(
        f"import sys; sys.modules[{module!r}] = None\n"
        "try:\n"
        f"    import octos_tools.adapters.{adapter}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert f"pip install 'octos-tools[{extra}]'" in proc.stdout


def test_octos_tools_does_not_import_frameworks() -> None:
    proc = _run(
        "import sys, octos_tools, octos_tools.adapters\n"
        "print(sorted(m for m in ('pydantic_ai', 'agents', 'langchain_core') if m in sys.modules))"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_failure_text_always_names_the_kind() -> None:
    from octos_tools.adapters._shared import failure_text
    from octos_tools.errors import ErrorKind
    from octos_tools.tool_types import ToolResult

    plain = ToolResult.failure(ErrorKind.NOT_FOUND, "no such file")
    assert failure_text(plain) == "Error [not_found]: no such file"
    custom = ToolResult.failure(ErrorKind.TIMEOUT, "killed after 1 s", output="partial output")
    assert failure_text(custom) == "Error [timeout]: killed after 1 s\npartial output"
    assert failure_text(ToolResult(output="", success=False)) == "Error: the tool call failed"
