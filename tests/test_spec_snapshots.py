"""Snapshot of every built-in tool's spec in OpenAI, Anthropic and MCP form.

A change to a tool's declaration shows up here as a diff to review: schemas may get
leaner, never looser. Regenerate after a deliberate change with
``OCTOS_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_spec_snapshots.py`` and read the
diff before committing it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from octos_tools.builtins import register_builtins
from octos_tools.registry import ToolRegistry
from octos_tools.workspace import Workspace

SNAPSHOTS = Path(__file__).parent / "snapshots" / "specs"
UPDATE = os.environ.get("OCTOS_UPDATE_SNAPSHOTS") == "1"


def _all_builtin_specs(tmp_path: Path) -> dict[str, dict[str, object]]:
    registry = ToolRegistry(Workspace(tmp_path))
    register_builtins(registry, registry.workspace)  # type: ignore[arg-type]
    out: dict[str, dict[str, object]] = {}
    for name in registry.names():
        spec = registry.get(name).spec()  # type: ignore[union-attr]
        out[name] = {
            "openai": spec.to_openai(),
            "anthropic": spec.to_anthropic(),
            "mcp": spec.to_mcp(),
        }
    return out


def test_builtin_specs_match_their_snapshots(tmp_path: Path) -> None:
    specs = _all_builtin_specs(tmp_path)
    assert specs, "no built-in tools registered"
    if UPDATE:
        SNAPSHOTS.mkdir(parents=True, exist_ok=True)
        for old in SNAPSHOTS.glob("*.json"):
            if old.stem not in specs:
                old.unlink()
        for name, forms in specs.items():
            text = json.dumps(forms, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            (SNAPSHOTS / f"{name}.json").write_text(text, encoding="utf-8")
        pytest.skip("snapshots rewritten")
    on_disk = {p.stem for p in SNAPSHOTS.glob("*.json")}
    assert on_disk == set(specs), "tools added or removed: regenerate and review the snapshots"
    for name, forms in specs.items():
        expected = json.loads((SNAPSHOTS / f"{name}.json").read_text(encoding="utf-8"))
        got = json.loads(json.dumps(forms))
        assert got == expected, f"spec of {name!r} changed: regenerate and review the diff"
