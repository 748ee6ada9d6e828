"""No module is imported under the name of another of our modules (`import store.prejudgments as store`
made a reader take the prejudgments module for the store package)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("assess", "store", "pages")


def _sources() -> list[Path]:
    return [ROOT / "app.py", *(path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py")))]


def _module_names() -> set[str]:
    """The last part of every module and package name of ours (`store.crowd` -> `crowd`)."""
    names = set(PACKAGES)
    for path in _sources():
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.add(parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1])
    return names - {"__init__"}


def _aliases(path: Path) -> list[tuple[int, str, str]]:
    """(line, imported module or name, alias) of every aliased import of one of our modules."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, a.name, a.asname) for a in node.names if a.asname and a.name.split(".")[0] in PACKAGES
            ]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
            found += [(node.lineno, f"{node.module}.{a.name}", a.asname) for a in node.names if a.asname]
    return found


def test_no_module_is_imported_under_another_modules_name():
    names = _module_names()
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {imported} as {alias}"
        for path in _sources()
        for line, imported, alias in _aliases(path)
        if alias in names and alias != imported.rsplit(".", 1)[-1]
    ]
    assert not wrong, "imported under another module's name:\n" + "\n".join(wrong)


def test_the_check_sees_a_renamed_module(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from store import prejudgments as store\nimport store.crowd as crowd\n", encoding="utf-8")
    assert [(imported, alias) for _, imported, alias in _aliases(bad)] == [
        ("store.prejudgments", "store"),
        ("store.crowd", "crowd"),
    ]
    assert {"store", "crowd", "prejudgments"} <= _module_names()
