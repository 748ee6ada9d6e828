"""The page scripts and app.py reach the store only through services: of the store they may name only the handle
and the transaction (``store.db``'s ``open_db``, ``write`` and ``Store``, also importable from ``store``). Their
widget layer, ``assess/ui``, may import ``store.db`` (its errors too) and no other store module.

import-linter cannot say it (``pages/`` is a folder of scripts, not a package), so this test does: every import
of the page scripts and app.py, at the top or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {"open_db", "write", "Store"}


def front_end_files() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]


# Being reworked on other branches; they join the check once merged.
UI_PENDING = {"battles.py", "plots.py", "frame.py", "cursor.py"}


def store_imports(path: Path, allowed: set[str] | None = ALLOWED) -> list[str]:
    """``file:line what`` for each import of ``path`` that reaches into the store past its handle (``allowed``: the
    names of ``store.db`` it may import, None for any)."""
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
                names = ALLOWED if node.module == "store" else allowed
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
    files = [p for p in sorted((ROOT / "assess" / "ui").glob("*.py")) if p.name not in UI_PENDING]
    found = [hit for path in files for hit in store_imports(path, allowed=None)]
    assert not found, "assess/ui imports a store module other than store.db (call a service):\n" + "\n".join(found)


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


def test_the_widget_layer_may_name_anything_of_store_db(tmp_path):
    module = tmp_path / "widget.py"
    module.write_text("from store.db import StoreUnavailable\nfrom store import labels\n", encoding="utf-8")
    assert [hit.split(" ", 1)[1] for hit in store_imports(module, allowed=None)] == ["from store import labels"]
