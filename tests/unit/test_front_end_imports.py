"""The page scripts and app.py reach the store only through services: of the store they may name only the handle
and the transaction (``store.db``'s ``open_db``, ``write`` and ``Store``, also importable from ``store``). Their
widget layer, ``assess/ui``, may import ``store.db`` (its errors too) and no other store module. The command line,
``assess/cli``, imports no store module at all: a command opens its store through ``assess.services.session``.

import-linter cannot say it for the pages (``pages/`` is a folder of scripts, not a package), nor that ``assess/ui``
may use ``store.db`` but no other store module (a forbidden contract would forbid ``store.db`` too), so this test
does: every import, at the top or inside a function. The CLI's rule is also an import-linter contract
(``pyproject.toml``); this test names the file and line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {"open_db", "write", "Store"}


def front_end_files() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]


# Why assess/ui may import store.db at all: the frame owns the browser session's connection (``frame.py``: it opens
# the store once per session, interrupts a running read when the session ends or the server stops, waits out a busy
# write lock and says plainly when the store is unavailable), which is no service's business.


def store_imports(path: Path, allowed: set[str] | None = ALLOWED) -> list[str]:
    """``file:line what`` for each import of ``path`` that reaches into the store past its handle (``allowed``: the
    names of ``store.db`` it may import, None for any; what ``store`` re-exports of them only if among them)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{where}:{node.lineno} import {a.name}" for a in node.names if a.name.split(".")[0] == "store"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "store":
            if node.module not in ("store", "store.db"):
                found.append(f"{where}:{node.lineno} from {node.module} import …")
            else:  # from store: only what it re-exports of store.db
                names = allowed
                if node.module == "store":
                    names = ALLOWED if allowed is None else ALLOWED & allowed
                found += [
                    f"{where}:{node.lineno} from {node.module} import {a.name}"
                    for a in node.names
                    if names is not None and a.name not in names
                ]
    return found


def test_pages_and_app_reach_the_store_through_services():
    found = [hit for path in front_end_files() for hit in store_imports(path)]
    assert not found, "front ends import the store past store.db's handle (call a service):\n" + "\n".join(found)


def test_the_widget_layer_reaches_the_store_through_services():
    files = sorted((ROOT / "assess" / "ui").glob("*.py"))
    found = [hit for path in files for hit in store_imports(path, allowed=None)]
    assert not found, "assess/ui imports a store module other than store.db (call a service):\n" + "\n".join(found)


def test_the_command_line_reaches_the_store_through_services():
    files = sorted((ROOT / "assess" / "cli").glob("*.py"))
    assert len(files) > 10, "the scan finds no command module: is the path still right?"
    found = [hit for path in files for hit in store_imports(path, allowed=set())]
    assert not found, "assess/cli imports the store (call a service; assess.services.session opens it):\n" + "\n".join(
        found
    )


@pytest.mark.parametrize(
    ("source", "hits"),
    [
        ("from store import queue\n", 1),
        ("import store.labels\n", 1),
        ("def f():\n    from store.nuggets import gold\n", 1),
        ("from store.db import display, write\n", 1),
        ("from store import Store, open_db, write\nfrom store.db import Store\n", 0),
        ("from assess.services import judging\n", 0),
        ("from store import queue, Store\n", 1),
    ],
)
def test_the_check_sees_each_way_in(tmp_path, source, hits):
    page = tmp_path / "page.py"
    page.write_text(source, encoding="utf-8")
    assert len(store_imports(page)) == hits


@pytest.mark.parametrize(
    "source",
    [
        "from store import open_db\n",
        "from store.db import display\n",
        "import store.db\n",
        "from store.nuggets import gold\n",
    ],
)
def test_the_command_line_may_name_nothing_of_the_store(tmp_path, source):
    module = tmp_path / "command.py"
    module.write_text(source, encoding="utf-8")
    assert len(store_imports(module, allowed=set())) == 1


def test_the_widget_layer_may_name_anything_of_store_db(tmp_path):
    module = tmp_path / "widget.py"
    module.write_text("from store.db import StoreUnavailable\nfrom store import labels\n", encoding="utf-8")
    assert [hit.split(" ", 1)[1] for hit in store_imports(module, allowed=None)] == ["from store import labels"]
