"""The import-kind registry (assess.services.loading.IMPORT_KINDS): one entry per kind, and every caller reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from assess.cli import build_parser
from assess.services.exports import EXPORTERS
from assess.services.loading import IMPORT_KINDS, REPLACE_KINDS, ImportOptions, import_kind, load_file
from assess.tasks import EXPORT_FILE_KINDS, IMPORT_FILE_KINDS
from store import open_db
from tests.helpers import rows

DEMO = Path(__file__).resolve().parents[2] / "assets" / "demo"

KINDS = (
    "topics",
    "qrels",
    "ptkb-qrels",
    "run",
    "passages",
    "nuggets",
    "responses",
    "rag-topics",
    "ikat-responses",
    "rag-answers",
    "ntr-labels",
    "nuggetizer-nuggets",
    "nuggetizer-assignments",
)


def test_the_registry_holds_every_kind_in_the_order_offered():
    assert tuple(IMPORT_KINDS) == KINDS == IMPORT_FILE_KINDS  # the parser's names are the registry's
    assert all(entry.name == name for name, entry in IMPORT_KINDS.items())


def test_the_import_command_offers_the_registry_kinds():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    kind = next(a for a in sub.choices["import"]._actions if a.dest == "kind")
    assert tuple(kind.choices) == KINDS


def test_replace_kinds_are_the_entries_that_replace():
    assert sorted(REPLACE_KINDS) == sorted(name for name, entry in IMPORT_KINDS.items() if entry.replaces)
    assert REPLACE_KINDS == ("ikat-responses", "rag-answers", "nuggets", "responses", "passages")


def test_each_entry_reads_only_options_that_exist():
    fields = set(ImportOptions.__dataclass_fields__)
    for entry in IMPORT_KINDS.values():
        assert set(entry.options) <= fields, entry.name
        assert ("replace" in entry.options) == entry.replaces, entry.name


def test_default_sources():
    assert {name: entry.default_source for name, entry in IMPORT_KINDS.items() if entry.default_source} == {
        "qrels": "nist",
        "ptkb-qrels": "nist",
        "nuggets": "human",
        "ntr-labels": "crowd:mturk",
        "nuggetizer-nuggets": "human",
    }


def test_an_unknown_kind_is_refused_naming_the_kinds(tmp_path):
    with pytest.raises(ValueError, match=r"unknown import kind 'qrel'; choose one of topics, qrels, ptkb-qrels, run"):
        import_kind("qrel")
    db = open_db(tmp_path / "a.db")
    with pytest.raises(ValueError, match="unknown import kind 'qrel'"):
        load_file(db, "qrel", tmp_path / "x.qrels")


def test_an_import_writes_through_its_entry(tmp_path):
    """qrels: the reader's rows reach the store writer under the entry's default source (nist)."""
    target = tmp_path / "a.db"
    db = open_db(target)
    load_file(db, "topics", DEMO / "topics.json")
    turn = rows(target, "SELECT id FROM turns ORDER BY id LIMIT 1")[0][0]
    qrels = tmp_path / "a.qrels"
    qrels.write_text(f"{turn} 0 p:1 3\n{turn} 0 p:2 0\n")
    load_file(db, "qrels", qrels)
    assert rows(target, "SELECT source, passage_id, grade FROM passage_labels ORDER BY passage_id") == [
        ("nist", "p:1", 3),
        ("nist", "p:2", 0),
    ]


def test_the_parsers_kind_names_are_the_services_entries():
    """The parser reads the names from assess.tasks (light); the entries behind them must be the same, in order."""
    assert tuple(EXPORTERS) == EXPORT_FILE_KINDS
    assert sorted(REPLACE_KINDS) == sorted(name for name, entry in IMPORT_KINDS.items() if entry.replaces)
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    kind = next(a for a in sub.choices["export"]._actions if a.dest == "kind")
    assert tuple(kind.choices)[: len(EXPORTERS)] == tuple(EXPORTERS)
