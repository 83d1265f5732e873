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


def test_package_root_is_lazy_and_json_schema_waits_for_a_json_schema_tool() -> None:
    import subprocess
    import sys

    code = (
        "import sys, octos_tools\n"
        "assert 'pydantic' not in sys.modules and 'octos_tools.registry' not in sys.modules\n"
        "from octos_tools import ToolRegistry, tool\n"
        "import octos_tools.tool_types\n"
        "assert callable(octos_tools.tool) and octos_tools.tool is tool\n"
        "import octos_tools.session, octos_tools.builtins, octos_tools.profile\n"
        "assert 'jsonschema' not in sys.modules, 'jsonschema imported eagerly'\n"
        "import anyio\n"
        "@tool\n"
        "async def add(a: int, b: int) -> int:\n"
        "    return a + b\n"
        "r = ToolRegistry(); r.register(add)\n"
        "assert anyio.run(r.execute, 'add', '{\"a\": 1, \"b\": 2}').output == '3'\n"
        "assert 'jsonschema' not in sys.modules, 'a typed call imported jsonschema'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_no_submodule_is_named_like_an_export() -> None:
    """Importing ``octos_tools.<name>`` binds the submodule over the package attribute: an
    export and a submodule of one name would make ``octos_tools.tool`` a module or a function
    depending on what was imported first."""
    import pkgutil

    submodules = {m.name for m in pkgutil.iter_modules(octos_tools.__path__)}
    assert not submodules & set(octos_tools.__all__)
