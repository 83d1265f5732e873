"""The workspace path resolver finds a name by its Unicode NFC/NFD twin, for every file tool.

macOS writes file names decomposed (NFD); a model types them composed (NFC); Linux file
systems compare bytes. A component that does not exist as typed is looked up by its twin,
component by component, and results name the stored spelling.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from octos_tools.profile import build_registry
from octos_tools.workspace import Workspace

pytestmark = pytest.mark.anyio


def nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def nfd(s: str) -> str:
    return unicodedata.normalize("NFD", s)


FORMS = [pytest.param(nfd, nfc, id="stored-NFD-typed-NFC"), (nfc, nfd)]


def names(folder: Path) -> set[str]:
    return set(os.listdir(folder))


@pytest.mark.parametrize(("stored", "typed"), FORMS)
def test_relpath_spells_each_component_as_stored(tmp_path: Path, stored, typed) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / stored("café") / "plain" / stored("résumé")).mkdir(parents=True)
    ws = Workspace(tmp_path)
    rel = ws.relpath(typed("café/plain/résumé/x.txt"))
    assert rel == stored("café") + "/plain/" + stored("résumé") + "/" + typed("x.txt")
    assert rel.encode() != typed("café/plain/résumé/x.txt").encode()
    # a name that exists as typed is never replaced, even when its twin exists too
    (tmp_path / typed("café")).mkdir()
    assert ws.relpath(typed("café")) == typed("café")
    assert ws.relpath(stored("café")) == stored("café")
    # plain names cost no lookup and stay as typed; so does a missing name
    assert ws.relpath("a/b.txt") == "a/b.txt"
    assert ws.relpath(typed("nowhere/ü.txt")) == typed("nowhere/ü.txt")


@pytest.mark.parametrize(("stored", "typed"), FORMS)
async def test_every_file_tool_reaches_the_stored_name(tmp_path: Path, stored, typed) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / stored("Ångström")
    folder.mkdir()
    (folder / stored("naïve.md")).write_text("line one\nneedle\n")
    reg = build_registry(None, tmp_path)
    path = typed("Ångström/naïve.md")
    stored_rel = stored("Ångström/naïve.md")

    read = await reg.execute("read_file", {"path": path})
    assert read.success and "needle" in read.output, read.output
    assert (read.structured_metadata or {})["path"] == stored_rel

    edit = await reg.execute(
        "edit_file", {"path": path, "old_string": "needle", "new_string": "pin"}
    )
    assert edit.success, edit.output
    assert edit.file_modified == stored_rel  # the stored spelling, not the typed one
    assert (folder / stored("naïve.md")).read_text() == "line one\npin\n"

    patch = (
        f"*** Begin Patch\n*** Update File: {path}\n@@\n line one\n-pin\n+patched\n*** End Patch\n"
    )
    res = await reg.execute("apply_patch", {"patch": patch})
    assert res.success, res.output
    assert (folder / stored("naïve.md")).read_text() == "line one\npatched\n"

    write = await reg.execute("write_file", {"path": path, "content": "rewritten\n"})
    assert write.success, write.output
    assert names(folder) == {stored("naïve.md")}  # no look-alike second file
    assert (folder / stored("naïve.md")).read_text() == "rewritten\n"

    new = await reg.execute("write_file", {"path": typed("Ångström/new.txt"), "content": "n\n"})
    assert new.success and new.file_modified == stored("Ångström") + "/new.txt"
    assert names(tmp_path) == {stored("Ångström")}  # went into the stored folder

    listing = await reg.execute("list_dir", {"path": typed("Ångström")})
    assert listing.success and "new.txt" in listing.output
    found = await reg.execute("grep", {"pattern": "rewritten", "path": typed("Ångström")})
    assert found.success and stored_rel in found.output, found.output
    globbed = await reg.execute("glob", {"pattern": typed("Ångström/*.md")})
    assert (globbed.structured_metadata or {}).get("paths") == [stored_rel]
    gone = await reg.execute(
        "apply_patch", {"patch": f"*** Begin Patch\n*** Delete File: {path}\n*** End Patch\n"}
    )
    assert gone.success, gone.output
    assert names(folder) == {"new.txt"}


async def test_twin_lookup_follows_no_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOPSECRET\n")
    root = tmp_path / "ws"
    root.mkdir()
    (root / nfd("café")).symlink_to(outside)
    reg = build_registry(None, root)
    res = await reg.execute("read_file", {"path": nfc("café/secret.txt")})
    assert not res.success and res.error_kind is not None
    assert res.error_kind.value == "symlink_refused"
    assert "TOPSECRET" not in res.output


async def test_missing_name_is_not_found_with_the_typed_spelling(tmp_path: Path) -> None:
    reg = build_registry(None, tmp_path)
    res = await reg.execute("read_file", {"path": nfc("über.txt")})
    assert res.error_kind is not None and res.error_kind.value == "not_found"
    assert nfc("über.txt") in res.output
