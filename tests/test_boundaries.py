"""Layout rules: only assess/ui.py, app.py and pages/ import Streamlit; only store/ talks to SQLite;
pages stay thin."""
from __future__ import annotations

import re

from tests.helpers import ROOT

IMPORT_ST = re.compile(r"^\s*(import streamlit|from streamlit)", re.M)
IMPORT_SQL = re.compile(r"^\s*(import sqlite3|from sqlite3|import sqlite_utils|from sqlite_utils)", re.M)


def test_streamlit_only_in_the_ui_layer():
    offenders = [p.relative_to(ROOT).as_posix() for p in (ROOT / "assess").rglob("*.py")
                 if IMPORT_ST.search(p.read_text()) and p.name != "ui.py"]
    offenders += [p.relative_to(ROOT).as_posix() for p in (ROOT / "store").rglob("*.py") if IMPORT_ST.search(p.read_text())]
    assert offenders == []


def test_only_store_touches_sqlite():
    offenders = [p.relative_to(ROOT).as_posix() for folder in ("assess", "pages") for p in (ROOT / folder).rglob("*.py")
                 if IMPORT_SQL.search(p.read_text())]
    assert offenders == [] and not IMPORT_SQL.search((ROOT / "app.py").read_text())


def test_pages_are_thin_scripts_without_sql():
    for page in (ROOT / "pages").glob("*.py"):
        text = page.read_text()
        assert len(text.splitlines()) <= 150, page.name
        assert not re.search(r"\b(SELECT|INSERT|UPDATE|DELETE)\b\s", text), page.name
