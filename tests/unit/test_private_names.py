"""No module of the code (assess/, store/, pages/, app.py) uses another module's private name.

A name with one leading underscore is its module's own business: `from store.imports import _check_turns` or
`jobs._begin(...)` ties one module to another's insides, so what is shared gets a public name in the module that
owns it. Tests may use private names (they pin a module's insides on purpose); the code may not. Only our own
modules count: `sys._getframe` and friends are the standard library's affair.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("assess", "store", "pages")


def _code_files() -> list[Path]:
    return [ROOT / "app.py", *(path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py")))]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_ours(module: str) -> bool:
    return module.split(".")[0] in PACKAGES


def _is_module(dotted: str) -> bool:
    base = ROOT.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(path: Path, own: str | None = None) -> list[str]:
    """``file:line what`` for each private name of another of our modules that ``path`` (the module ``own``,
    by default the one at that path) imports or reads."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    own = own or _module_name(path)
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    found: list[str] = []
    modules: dict[str, str] = {}  # local name -> one of our modules it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and _is_ours(node.module):
            for alias in node.names:
                if _private(alias.name) and node.module != own:
                    found.append(f"{where}:{node.lineno} from {node.module} import {alias.name}")
                if _is_module(f"{node.module}.{alias.name}"):
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_ours(alias.name):
                    modules[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        chain, base = [], node.value
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name) and base.id in modules:
            dotted = ".".join([base.id, *reversed(chain)])
            if modules[base.id] != own:
                found.append(f"{where}:{node.lineno} {dotted}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_name():
    found = [use for path in _code_files() for use in private_uses(path)]
    assert found == []


def test_the_scan_finds_both_forms(tmp_path):
    """The scan can fail: both forms of a private use are found; public names, our own private names and
    other objects' underscored attributes are not."""
    module = tmp_path / "probe.py"
    module.write_text(
        "from assess.cli.data import cmd_stats, _open\n"
        "from assess.services import jobs\n"
        "import store.db\n"
        "from assess.cli.probe import _mine\n"
        "jobs._begin(1)\n"
        "store.db._url('x')\n"
        "jobs.plan(1)\n"
        "'text'._private\n",
        encoding="utf-8",
    )
    assert [use.split(" ", 1)[1] for use in private_uses(module, "assess.cli.probe")] == [
        "from assess.cli.data import _open",
        "jobs._begin",
        "store.db._url",
    ]
