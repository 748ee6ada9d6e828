"""Issue 35 item 2: project imports sit at the top of each module (at most 20 hide inside a function), and
`python -m assess --help` still loads neither the store nor a heavy library (assess/lazylibs.py)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from assess.lazylibs import HEAVY_LIBRARIES

ROOT = Path(__file__).resolve().parents[2]
OURS = ("assess", "store", "pages")
MOST_IN_FUNCTIONS = 20


def _ours(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").split(".")[0] in OURS
    return any(alias.name.split(".")[0] in OURS for alias in node.names)


def imports_in_functions(path: Path) -> list[str]:
    """``file:line`` of each import of one of our modules nested in a function (at any depth) of ``path``."""
    found = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, ast.Import | ast.ImportFrom) and _ours(child):
                found.append(f"{path.relative_to(ROOT)}:{child.lineno}")
            walk(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    walk(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def _sources() -> list[Path]:
    return [ROOT / "app.py", *(path for package in OURS for path in sorted((ROOT / package).rglob("*.py")))]


def test_at_most_20_project_imports_inside_functions():
    found = [hit for path in _sources() for hit in imports_in_functions(path)]
    assert len(found) <= MOST_IN_FUNCTIONS, f"{len(found)} project imports inside functions:\n" + "\n".join(found)


def test_the_count_sees_nested_and_relative_imports(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    source = tmp_path / "m.py"
    source.write_text(
        "from store import db\n"
        "import json\n"
        "def f():\n"
        "    import json\n"
        "    from assess.errors import AssessError\n"
        "    def g():\n"
        "        from . import x\n"
        "class C:\n"
        "    async def h(self):\n"
        "        import store.db\n",
        encoding="utf-8",
    )
    assert imports_in_functions(source) == ["m.py:5", "m.py:7", "m.py:10"]


def test_help_loads_no_store_and_no_heavy_library():
    probe = (
        "import json, runpy, sys\n"
        "sys.argv = ['assess', '--help']\n"
        "out, sys.stdout = sys.stdout, open('/dev/null', 'w')\n"
        "try:\n"
        "    runpy.run_module('assess', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stdout = out\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    heavy = sorted(name for name in loaded if name.split(".")[0] in HEAVY_LIBRARIES)
    assert not heavy, f"python -m assess --help imports {heavy}"
    # the services the command modules name are there, unexecuted (lazy); the store module is never reached
    assert "assess.services.session" in loaded and "store.db" not in loaded


def test_a_lazily_imported_service_runs_when_called(tmp_path):
    """The same process: --help's parser built, then a command that reaches the store through a lazy service."""
    probe = (
        "import sys\n"
        "from assess.cli import build_parser, main\n"
        "build_parser()\n"
        "assert 'store.db' not in sys.modules\n"
        f"code = main(['init', '--db', {str(tmp_path / 'a.db')!r}])\n"
        "assert 'store.db' in sys.modules\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "a.db").exists()


def test_load_deferred_runs_every_module_the_parser_left_waiting():
    """Python 3.11's LazyLoader is not thread-safe: what starts threads first runs every waiting module."""
    code = (
        "import importlib.util, sys\n"
        "from assess import cli, lazylibs\n"
        "cli.build_parser()\n"
        "waiting = [n for n, m in sys.modules.items() if isinstance(m, importlib.util._LazyModule)]\n"
        "assert waiting, 'the parser left nothing waiting'\n"
        "assert lazylibs.load_deferred() == len(waiting)\n"
        "assert not [n for n, m in sys.modules.items() if isinstance(m, importlib.util._LazyModule)]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
