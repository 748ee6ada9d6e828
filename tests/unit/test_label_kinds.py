"""A label kind is one registry entry, one migration, one page and its tests: the plumbing reads the registry.

Every kind's table is exported (with its missing-value column where the registry names one) and granted to
the PostgreSQL app role without a line naming the kind; every kind's page is in the menu, which
assess/ui/frame.py builds without naming one; a kind that names its item source has every label checked against
it; docs/architecture.md's worked example names files that exist and shows the registry entry as it is; its list
of engine branches is whole. (tests/services/test_new_label_kind.py runs the recipe with a throwaway kind.)
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path

import pytest

from assess.errors import UnknownItem
from assess.tasks import EXPORT_TABLES, LABEL_KINDS, UNSOURCED_TABLES, Task
from store import exports, labels, open_db
from store.db import rows
from store.schema import roles

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())  # any tier folder
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _section(title: str) -> str:
    """The text of docs/architecture.md from the heading ``title`` to the next heading of its level or above."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    match = re.search(rf"^(#+) {re.escape(title)}\n", text, re.M)
    assert match, f"docs/architecture.md has no section {title!r}"
    level = len(match.group(1))
    rest = text[match.end() :]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    return rest[: end.start()] if end else rest


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    store = open_db(tmp_path_factory.mktemp("kinds") / "kinds.db")
    yield store
    store.close()


def test_every_label_table_is_exported_in_registry_order():
    label_tables = [k.table for k in LABEL_KINDS.values()]
    exported = [t for t in EXPORT_TABLES if t in label_tables]
    assert exported == label_tables
    assert not set(label_tables) & set(UNSOURCED_TABLES)  # every label table is filtered by --source


@pytest.mark.parametrize("kind", LABEL_KINDS.values(), ids=lambda k: k.task.value)
def test_table_export_columns_follow_the_registry(db, kind):
    from store.schema.active_time import TIMED_COLUMNS

    # active time and guideline versions (migration 19) are read by `audit speed`, not the table export
    stored = [r["name"] for r in rows(db, f"PRAGMA table_info({kind.table})") if r["name"] not in TIMED_COLUMNS]
    expected = list(stored)
    if kind.missing_column is not None:
        expected.insert(stored.index(kind.value_column) + 1, kind.missing_column)
    frame = exports.table_frame(db, kind.table, source="nobody")
    assert list(frame.columns) == expected
    assert len(frame) == 0


def test_only_citations_have_a_missing_column_today():
    # pins the export's shape: passage labels keep their NULL grades without an extra column
    assert {k.task.value: k.missing_column for k in LABEL_KINDS.values() if k.missing_column} == {
        "citation": "cannot_judge"
    }


def _code(source: str) -> str:
    """``source`` without its docstrings and comments (what runs, not what it says)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            body[0] = ast.Pass()
    return ast.unparse(tree)


def test_the_export_and_the_app_role_name_no_label_kind():
    """The table export and the app role's grants read the registry: no kind's table or task is spelled there."""
    sources = {
        "store.exports.table_frame": _code(inspect.getsource(exports.table_frame)),
        "store/schema/roles.py": _code((ROOT / "store" / "schema" / "roles.py").read_text(encoding="utf-8")),
    }
    for where, text in sources.items():
        for kind in LABEL_KINDS.values():
            assert kind.table not in text, f"{where} names {kind.table}"
            assert f"Task.{kind.task.name}" not in text, f"{where} names Task.{kind.task.name}"
    assert set(roles.LABEL_TABLES) == {k.table for k in LABEL_KINDS.values()}
    assert set(roles.LABEL_TABLES) <= roles.APP_UPDATES & roles.APP_DELETES


# ------------------------------------------------------------------------------------------- the worked example


def test_the_worked_example_names_files_that_exist():
    section = _section("Adding a label kind: a worked example")
    named = set(re.findall(r"`((?:assess|store|pages|docs)/[\w./]+\.(?:py|md))`", section))
    tests = set(re.findall(r"`((?:tests/\w+/)?test_\w+\.py)`", section))  # a bare name: any tier folder
    assert len(named) >= 12 and len(tests) >= 5, (sorted(named), sorted(tests))
    missing = sorted(p for p in named if not (ROOT / p).is_file())
    missing += sorted(t for t in tests if not ((ROOT / t).is_file() if "/" in t else any((ROOT / "tests").rglob(t))))
    assert not missing, f"docs/architecture.md's worked example names files that do not exist: {missing}"


def test_the_worked_example_shows_the_real_registry_entry():
    section = _section("Adding a label kind: a worked example")
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, "the worked example shows no registry entry"
    shown = [line.strip() for line in textwrap.dedent(block.group(1)).splitlines() if line.strip()]
    source = [
        line.strip() for line in (ROOT / "assess" / "tasks" / "__init__.py").read_text(encoding="utf-8").splitlines()
    ]
    start = source.index(shown[0])  # ValueError: the entry's first line is not in assess/tasks/__init__.py
    assert source[start : start + len(shown)] == shown


# ------------------------------------------------------------------------------------------- items and pages

MENU = [  # (address, title, icon) of every page, as the sidebar has listed them since the nugget pages came
    [
        ("home", "Home", "🏠"),
        ("judge", "Judge passages", "📝"),
        ("ptkb", "PTKB relevance", "👤"),
        ("nuggets", "Passage nuggets", "💬"),
        ("ntr", "Nugget matching (NtR)", "✅"),
        ("citations", "Citation support", "📎"),
        ("battles", "Battles", "⚔"),
        ("banks", "Nugget banks", "🏦"),
        ("duplicates", "Duplicate nuggets", "🔗"),
        ("gold-response", "Gold responses", "🖊"),
    ],
    [
        ("data", "Import & export", "📤"),
        ("review", "Review", "📊"),
        ("adjudicate", "Adjudicate", "⚖"),
        ("scores", "Scores", "📈"),
        ("audit", "Judge audit", "🤖"),
        ("llm", "LLM pre-judging", "🧠"),
        ("response-nuggets", "Response nuggets (GFRC2)", "🖍"),
        ("aspects", "Aspects (AEPD)", "🗂"),
        ("users", "Accounts", "🔑"),
    ],
]


def test_every_kind_s_page_is_in_the_menu_and_the_frame_names_none():
    """The menu lists each kind's page from the registry: assess/ui/frame.py spells no kind's page."""
    from assess.ui import frame

    listed = [page for section in frame.menu() for page in section]
    assert [[(p.url_path, p.title, p.icon) for p in section] for section in frame.menu()] == MENU
    kind_pages = [k.page for k in LABEL_KINDS.values() if k.page is not None]
    assert kind_pages and all(listed.count(page) == 1 for page in kind_pages)
    assert all((ROOT / page.script).is_file() for page in listed)
    code = _code(inspect.getsource(frame))
    for page in kind_pages:
        assert page.script not in code and page.title not in code, f"assess/ui/frame.py names {page.script}"


@pytest.mark.parametrize("kind", [k for k in LABEL_KINDS.values() if k.item_source], ids=lambda k: k.task.value)
def test_a_kind_with_an_item_source_refuses_a_label_about_no_item(db, kind):
    item = tuple(1 if c in kind.integer_columns else f"no-{c}" for c in kind.item_columns)
    with pytest.raises(UnknownItem) as refused:
        labels.save(db, kind.task, "nobody", item, kind.scale.low, mode="blind", via="key")
    assert str(refused.value) == kind.unknown_item(item)
    assert labels.items(db, kind.task) == []  # the empty store holds no item
    assert rows(db, f"SELECT * FROM {kind.table}") == [] and rows(db, "SELECT * FROM label_history") == []


def test_only_citations_name_an_item_source_today():
    # the other kinds' items are more than one table's rows (docs/architecture.md says which and why)
    assert [k.task.value for k in LABEL_KINDS.values() if k.item_source] == ["citation"]
    assert LABEL_KINDS[Task.CITATION].unknown_item(("1_1", "r 1", 2, "d:7")) == (
        "sentence 2 of run 'r 1''s response to turn 1_1 does not cite d:7"
    )


# ------------------------------------------------------------------------------------------- engine branches

_ENGINE_TEST = re.compile(r"\w\.sqlite\b(?![\w.\"'])|\bis_postgres\(")


def test_the_engine_branches_are_the_documented_ones():
    documented = set(re.findall(r"^\| `([\w/]+\.py)` \|", _section("Engine branches"), re.M))
    found = set()
    for folder in ("assess", "store", "pages"):
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "store/db.py" or rel.startswith("store/schema/"):
                continue
            if _ENGINE_TEST.search(path.read_text(encoding="utf-8")):
                found.add(rel)
    assert found, "the scan finds no engine branch at all: is the pattern still right?"
    assert found == documented, (
        f"not in docs/architecture.md's engine branches: {sorted(found - documented)}; "
        f"listed there without one: {sorted(documented - found)}"
    )


# ------------------------------------------------------------------------------------------- records


def _importers(name: str) -> set[str]:
    """The modules under assess/, store/ and pages/ that import ``name`` from assess.tasks."""
    found = set()
    for path in [*(ROOT / "assess").rglob("*.py"), *(ROOT / "store").rglob("*.py"), *(ROOT / "pages").glob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            imported = isinstance(node, ast.ImportFrom) and node.module == "assess.tasks"
            if imported and any(alias.name == name for alias in node.names):
                found.add(path.relative_to(ROOT).as_posix())
    return found


@pytest.mark.parametrize("record", ["Label", "Passage", "TurnContext"])
def test_the_records_are_read_in_the_store_and_used_above_it(record):
    """Not merely declared: the store builds the record and a service or page takes it; docs/architecture.md's
    registry table lists it among the records passed between layers."""
    importers = _importers(record)
    assert any(p.startswith("store/") for p in importers), (record, sorted(importers))
    assert any(p.startswith(("assess/services/", "assess/ui/", "pages/")) for p in importers), (
        record,
        sorted(importers),
    )
    listed = re.search(
        r"^\| ((?:`\w+`, )*`\w+`) \| typed records passed between layers", _section("The task registry"), re.M
    )
    assert listed and f"`{record}`" in listed.group(1)
