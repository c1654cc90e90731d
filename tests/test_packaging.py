"""What the built wheel holds: every file the package reads at run time, and no entry naming nothing.

setuptools puts in the wheel the modules of the packages it finds (folders with an
``__init__.py``) and the other files ``[tool.setuptools.package-data]`` names, so
checking the two against the source tree checks the wheel without building it.
"""

import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "datasette_obelisk"


def package_data() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["setuptools"]["package-data"]["datasette_obelisk"]


def source_files():
    return [path for path in PACKAGE.rglob("*") if path.is_file() and "__pycache__" not in path.parts]


def test_every_package_data_entry_names_a_file():
    for pattern in package_data():
        assert any(path.is_file() for path in PACKAGE.glob(pattern)), f"package-data {pattern!r} names no file"


def test_every_file_the_package_reads_goes_into_the_wheel():
    """Templates, static files, the redaction rules: each is named by package-data."""
    named = {path for pattern in package_data() for path in PACKAGE.glob(pattern)}
    left_out = [str(path.relative_to(ROOT)) for path in source_files()
                if path.suffix not in (".py", ".pyc") and path not in named]
    assert not left_out, f"not in the wheel: {left_out}"
    for wanted in ("templates/obelisk/base.html", "static/obelisk.css", "static/obelisk.js", "store/redaction/rules.toml"):
        assert PACKAGE / wanted in named, wanted


def test_every_module_is_in_a_package_setuptools_finds():
    """A folder of modules without ``__init__.py`` (the migrations beside the store, the
    sources, the web handlers...) would be left out of the wheel."""
    folders = {path.parent for path in source_files() if path.suffix == ".py"}
    assert [str(f.relative_to(ROOT)) for f in sorted(folders) if not (f / "__init__.py").is_file()] == []
