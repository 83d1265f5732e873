"""The public API: ``__all__`` lists exactly the package's public names."""

from __future__ import annotations

import octos_tools


def test_all_is_sorted_and_importable() -> None:
    names = octos_tools.__all__
    assert len(set(names)) == len(names)
    for name in names:
        assert hasattr(octos_tools, name), name


def test_public_names_are_exported() -> None:
    public = {
        n
        for n in dir(octos_tools)
        if not n.startswith("_")
        and not isinstance(getattr(octos_tools, n), type(octos_tools))  # skip submodules
        and n not in {"annotations"}
    }
    assert public == set(octos_tools.__all__) - {"__version__"}


def test_py_typed_shipped() -> None:
    from importlib.resources import files

    assert files("octos_tools").joinpath("py.typed").is_file()
