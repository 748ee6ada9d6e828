"""``export release``: the bundle read back by the field's loaders (ir_datasets, Hugging Face datasets,
mlcroissant) and compared with the store; bad --out / --source refused with exit 2 and nothing written."""

from __future__ import annotations

import json

import pytest

from store import open_db
from store.db import rows as query
from tests.helpers import run_cli, snapshot


@pytest.fixture
def bundle(demo_target, tmp_path):
    # untrusted text in the store: a tab and a line break in a passage, a formula-like note
    with open_db(demo_target) as db:
        from store.db import run, write

        with write(db):
            run(db, "UPDATE passages SET text = 'two\tcolumns\nand lines' WHERE id = 'demo-doc-003:0'")
            run(
                db,
                "UPDATE sources SET description = '[click](http://x.example) | ![](http://x.example/p.png)' "
                "WHERE name = 'demo-ben'",
            )
    out = tmp_path / "bundle"
    proc = run_cli("export", "release", "--out", out, db=demo_target)
    assert proc.returncode == 0, proc.stderr
    return demo_target, out


def _store(target, sql, params=None):
    with open_db(target) as db:
        return query(db, sql, params)


def test_ir_datasets_reads_docs_queries_and_each_sources_qrels(bundle):
    import ir_datasets

    target, out = bundle
    passages = _store(target, "SELECT id, text FROM passages ORDER BY id")
    qrels = _store(
        target, "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'demo-ann' AND grade IS NOT NULL"
    )
    ds = ir_datasets.create_dataset(
        docs_tsv=str(out / "docs.tsv"),
        queries_tsv=str(out / "queries.tsv"),
        qrels_trec=str(out / "qrels/demo-ann.trec"),
    )
    docs = {d.doc_id: d.text for d in ds.docs_iter()}
    assert list(docs) == [p["id"] for p in passages]
    assert docs["demo-doc-003:0"] == "two columns and lines"
    missing = [p["id"] for p in passages if p["text"] is None]
    assert missing and all(docs[m] == "" for m in missing)  # texts not public: the id alone
    queries = {q.query_id: q.text for q in ds.queries_iter()}
    turn = _store(target, "SELECT id, resolved_utterance FROM turns WHERE id = '101_1'")[0]
    assert queries["101_1"] == turn["resolved_utterance"]
    assert len(queries) == len(_store(target, "SELECT id FROM turns"))
    assert sorted((q.query_id, q.doc_id, q.relevance) for q in ds.qrels_iter()) == sorted(
        (r["turn_id"], r["passage_id"], r["grade"]) for r in qrels
    )
    # every source with passage labels has its file, named safely (llm:demo-gpt -> llm_demo-gpt)
    assert sorted(p.name for p in (out / "qrels").iterdir()) == [
        "demo-ann.trec",
        "demo-ben.trec",
        "llm_demo-gpt.trec",
        "llm_demo-llama.trec",
    ]


def test_datasets_and_mlcroissant_read_the_tables(bundle, tmp_path, monkeypatch):
    import datasets
    import mlcroissant

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    target, out = bundle
    cache = str(tmp_path / "hf")
    labels = datasets.load_dataset("parquet", data_files=str(out / "labels.parquet"), cache_dir=cache, split="train")
    kinds = ("passage_labels", "ptkb_labels", "ntr_labels")
    stored = sum(len(_store(target, f"SELECT source FROM {t}")) for t in kinds)
    assert labels.filter(lambda r: r["task"] in ("passage", "ptkb", "ntr")).num_rows == stored
    row = labels.filter(lambda r: r["task"] == "passage" and r["source"] == "demo-ann")[0]
    grade = _store(
        target,
        "SELECT grade FROM passage_labels WHERE source = 'demo-ann' AND turn_id = :t AND passage_id = :p",
        {"t": row["turn_id"], "p": row["item"]},
    )[0]["grade"]
    history = _store(
        target,
        "SELECT COUNT(*) AS n FROM label_history WHERE label_table = 'passage' AND source = 'demo-ann' AND item = :i",
        {"i": f"{row['turn_id']} {row['item']}"},
    )[0]["n"]
    assert row["value"] == grade and row["changes"] == history >= 1 and row["first_value"] is not None
    responses = datasets.load_dataset(str(out), "responses", cache_dir=cache, split="train")  # the card's configs
    assert responses.num_rows == len(_store(target, "SELECT run FROM responses"))
    assert not (out / "battles.parquet").exists()  # the demo has no battles: an empty table has no file

    meta = mlcroissant.Dataset(jsonld=str(out / "croissant.json"))
    nuggets = list(meta.records(record_set="nuggets"))
    assert len(nuggets) == len(_store(target, "SELECT id FROM nuggets"))
    assert {n["nuggets/text"].decode() for n in nuggets} == {
        r["text"] for r in _store(target, "SELECT text FROM nuggets")
    }
    card = json.loads((out / "croissant.json").read_text())
    assert card["conformsTo"] == "http://mlcommons.org/croissant/1.1"
    assert any(t.startswith("llm:demo-gpt: model demo-gpt") for t in card["rai:machineAnnotationTools"])
    assert "demo-ann (kind assessor)" in card["rai:dataCollection"]
    assert "2 of 60 passages have no public text" in card["rai:dataLimitations"]
    readme = (out / "README.md").read_text()
    # store text in the card is a code span with its pipes escaped: no link, image or extra table cell
    assert "| `[click](http://x.example) \\| ![](http://x.example/p.png)` |" in readme
    assert "`llm:demo-gpt` -> `qrels/llm_demo-gpt.trec`" in readme
    assert (out / "leaderboards" / "llm_demo-gpt.txt").read_text().count("\tall\tnDCG@10\t") == 3  # one all row per run


def test_sources_chosen_and_bad_options_refused(demo_target, tmp_path):
    out = tmp_path / "one"
    assert run_cli("export", "release", "--out", out, "--source", "demo-ben", db=demo_target).returncode == 0
    assert [p.name for p in (out / "qrels").iterdir()] == ["demo-ben.trec"]
    before = snapshot(demo_target)
    cases = [
        (["--out", out], "--out: expected a new or empty folder (--force writes into a non-empty one)"),
        (["--out", out / "qrels" / "demo-ben.trec"], "expected a folder (new or empty)"),
        (["--out", tmp_path / "two", "--source", "nobody"], "--source: expected a label source of the store"),
        (["--out", tmp_path / "two", "--table", "battles"], "--table is not for release exports"),
    ]
    for options, message in cases:
        proc = run_cli("export", "release", *options, db=demo_target)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / "two").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no partial folder left
    assert snapshot(demo_target) == before
    forced = run_cli("export", "release", "--out", out, "--force", db=demo_target)
    assert forced.returncode == 0 and len(list((out / "qrels").iterdir())) == 4
    assert run_cli("export", "qrels", "--source", "demo-ann", "--force", db=demo_target).returncode == 2


@pytest.mark.realdata
@pytest.mark.scale
def test_ikat_2024_bundle_within_30_seconds(tmp_path):
    import time

    import ir_datasets

    from tests.conftest import shared_file
    from tests.ikat_store import IKAT2024_IMPORTS, add_shared_runs, build_ikat2024

    for entry in IKAT2024_IMPORTS:
        shared_file("data", *entry[1].split("/"))
    target = build_ikat2024(tmp_path / "ikat.db")
    add_shared_runs(target)
    out = tmp_path / "bundle"
    start = time.perf_counter()
    proc = run_cli("export", "release", "--out", out, db=target)
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    assert seconds < 30, f"export release took {seconds:.1f} s"
    ds = ir_datasets.create_dataset(qrels_trec=str(out / "qrels" / "nist.trec"))
    assert sum(1 for _ in ds.qrels_iter()) == len(
        _store(target, "SELECT grade FROM passage_labels WHERE source = 'nist'")
    )


@pytest.mark.postgresql
def test_postgresql_bundle_matches_sqlites(demo_copy, pg_url, tmp_path):
    import pyarrow.parquet as pq

    from store.db import rows as all_rows
    from store.db import stream

    sqlite_db = demo_copy(tmp_path / "demo.db")
    pg_db = demo_copy(pg_url)
    with open_db(pg_db) as db:  # streamed in chunks smaller than the result: the same rows, in order
        sql = "SELECT id, text FROM passages ORDER BY id"
        assert list(stream(db, sql, size=7)) == all_rows(db, sql)
    outs = {}
    for name, target in (("sqlite", sqlite_db), ("postgresql", pg_db)):
        outs[name] = tmp_path / name
        proc = run_cli("export", "release", "--out", outs[name], db=target)
        assert proc.returncode == 0, proc.stderr
    for path in ("docs.tsv", "queries.tsv", "qrels/demo-ann.trec", "qrels/llm_demo-gpt.trec"):
        assert (outs["sqlite"] / path).read_bytes() == (outs["postgresql"] / path).read_bytes(), path
    columns = ["task", "source", "turn_id", "item", "value", "changes", "first_value"]
    tables = [pq.read_table(outs[n] / "labels.parquet", columns=columns).to_pylist() for n in outs]
    assert tables[0] == tables[1] and len(tables[0]) == 1321
