"""Label imports staged like the large ones (issue 33): ``import ptkb-qrels`` and the nuggetizer imports write
their blocks into temporary tables without the write lock and make them visible in one switch. On both engines:
another connection's press between two blocks is saved at once and sees nothing of the import; a bad last record
is refused with its line after the blocks before it were staged, the store unchanged. (Before, these imports held
the write lock from their first block: the press gave up after its wait with nothing saved.)"""

from __future__ import annotations

import json

import pytest

from assess.errors import FormatError
from assess.formats.trec import parse_ptkb_qrels
from assess.services import loading, nuggetizer_files
from store import label_imports, open_db, rag_imports
from tests.helpers import rows, snapshot
from tests.store.test_import_staging import pressed_mid_import

BLOCK = 5  # records per staged block here: the demo's files are small, so blocks are made small


def counts(target) -> tuple[int, ...]:
    """What the test imports have made visible: PTKB labels, nuggetizer nuggets and their importance labels,
    support labels, and the importance labels added to the demo's gold set."""
    found = rows(
        target,
        "SELECT (SELECT COUNT(*) FROM ptkb_labels WHERE source = 'big-ptkb') AS p, "
        "(SELECT COUNT(*) FROM nuggets WHERE source = 'big-nuggetizer') AS n, "
        "(SELECT COUNT(*) FROM nugget_importance_labels WHERE source = 'big-nuggetizer') AS i, "
        "(SELECT COUNT(*) FROM ntr_support_labels WHERE source = 'big-support') AS s, "
        "(SELECT COUNT(*) FROM nugget_importance_labels WHERE source = 'gold') AS g",
    )
    return tuple(found[0])


def pressed(target, seen):
    """A reader's output with a press between its second and third staged blocks."""
    return lambda records: pressed_mid_import(records, 2 * BLOCK, target, seen, look=counts)


def assert_press_saved(target, seen):
    assert seen == [(0, 0, 0, 0, 0)]  # the press came after two blocks were staged, and saw none of them
    assert rows(target, "SELECT grade FROM passage_labels WHERE source = 'mid-import'") == [(3,)]


def test_ptkb_qrels_staged(demo_target, tmp_path, monkeypatch):
    monkeypatch.setattr(label_imports, "PTKB_PER_BLOCK", BLOCK)
    pairs = rows(
        demo_target,
        "SELECT t.id, s.statement_id FROM turns t JOIN ptkb_statements s ON s.conversation_id = t.conversation_id "
        "ORDER BY t.id, s.statement_id",
    )
    path = tmp_path / "big.ptkb.qrels"
    path.write_text("".join(f"{t} 0 {s} {k % 2}\n" for k, (t, s) in enumerate(pairs)))
    assert len(pairs) > 3 * BLOCK
    seen: list = []
    with open_db(demo_target) as db:
        records = pressed(demo_target, seen)(parse_ptkb_qrels(path))
        summary = label_imports.import_ptkb_qrels(db, str(path), records, source="big-ptkb")
    assert_press_saved(demo_target, seen)
    assert summary["labels"] == len(pairs) and counts(demo_target)[0] == len(pairs)
    stored = rows(demo_target, "SELECT turn_id, statement_id, relevant FROM ptkb_labels WHERE source = 'big-ptkb'")
    assert sorted(stored) == sorted((t, s, k % 2) for k, (t, s) in enumerate(pairs))

    before = snapshot(demo_target)  # a statement the conversation lacks, on the last line
    bad = tmp_path / "bad.ptkb.qrels"
    bad.write_text("".join(f"{t} 0 {s} 1\n" for t, s in pairs) + f"{pairs[0][0]} 0 999 1\n")
    with open_db(demo_target) as db, pytest.raises(FormatError, match="a PTKB statement number") as refused:
        loading.load_file(db, "ptkb-qrels", bad, source="other-ptkb")
    assert f"{bad}:{len(pairs) + 1}:" in str(refused.value)
    assert snapshot(demo_target) == before


def nuggetizer_nuggets(path, turns: list[str], per_turn: int, *, unknown_last: bool = False):
    with path.open("w") as out:
        for t in [*turns, *(["no-such-turn"] if unknown_last else [])]:
            nuggets = [{"text": f"big {k} of {t}", "importance": ("vital", "okay")[k % 2]} for k in range(per_turn)]
            out.write(json.dumps({"qid": t, "query": "q", "nuggets": nuggets}) + "\n")
    return path


def test_nuggetizer_nuggets_staged_with_their_importance(demo_target, tmp_path, monkeypatch):
    monkeypatch.setattr(rag_imports, "NUGGETS_PER_BLOCK", BLOCK)
    turns = sorted(t for (t,) in rows(demo_target, "SELECT id FROM turns"))
    path = nuggetizer_nuggets(tmp_path / "nuggets.jsonl", turns, 3)
    seen: list = []
    reader = nuggetizer_files.iter_nuggetizer_nuggets
    monkeypatch.setattr(nuggetizer_files, "iter_nuggetizer_nuggets", lambda p: pressed(demo_target, seen)(reader(p)))
    with open_db(demo_target) as db:
        summary = nuggetizer_files.import_nuggets(db, path, source="big-nuggetizer")
    assert_press_saved(demo_target, seen)
    assert summary == {"nuggets": 36, "turns": 12, "vital": 24, "okay": 12, "source": "big-nuggetizer"}
    assert counts(demo_target)[1:3] == (36, 36)
    stored = rows(
        demo_target,
        "SELECT n.turn_id, n.key, l.importance FROM nuggets n JOIN nugget_importance_labels l ON l.nugget_id = n.id "
        "AND l.source = n.source AND l.turn_id = n.turn_id WHERE n.source = 'big-nuggetizer'",
    )
    assert sorted(stored) == sorted((t, f"[{k + 1}]", 1 - k % 2) for t in turns for k in range(3))

    monkeypatch.setattr(nuggetizer_files, "iter_nuggetizer_nuggets", reader)
    before = snapshot(demo_target)
    bad = nuggetizer_nuggets(tmp_path / "bad.jsonl", turns, 3, unknown_last=True)
    with open_db(demo_target) as db, pytest.raises(FormatError, match="no-such-turn") as refused:
        nuggetizer_files.import_nuggets(db, bad, source="other-nuggetizer")
    assert f"{bad}:{len(turns) + 1}:" in str(refused.value)
    assert snapshot(demo_target) == before


def assignments(path, responses, texts, *, bad_last: bool = False):
    """An assignment file: every stored response judged on its turn's gold nuggets (support cycling)."""
    levels = ("support", "partial_support", "not_support")
    with path.open("w") as out:
        for i, (run, turn) in enumerate(responses):
            nuggets = [
                {"text": text, "importance": "vital", "assignment": levels[(i + k) % 3]}
                for k, text in enumerate(texts[turn])
            ]
            out.write(json.dumps({"qid": turn, "run_id": run, "answer_text": "a", "nuggets": nuggets}) + "\n")
        if bad_last:
            turn = responses[0][1]
            nuggets = [{"text": texts[turn][0], "importance": "vital", "assignment": "support"}]
            out.write(json.dumps({"qid": turn, "run_id": "no-such-run", "nuggets": nuggets}) + "\n")
    return path


def test_nuggetizer_assignments_staged(demo_target, tmp_path, monkeypatch):
    monkeypatch.setattr(nuggetizer_files, "ASSIGNMENTS_PER_BLOCK", BLOCK)
    responses = rows(demo_target, "SELECT run, turn_id FROM responses ORDER BY run, turn_id")
    texts: dict[str, list[str]] = {}
    for turn, text in rows(demo_target, "SELECT turn_id, text FROM nuggets WHERE source = 'gold' ORDER BY id"):
        texts.setdefault(turn, []).append(text)
    responses = [(r, t) for r, t in responses if t in texts]
    assert len(responses) > 3 * BLOCK
    expected = {(t, text, r): (i + k) % 3 for i, (r, t) in enumerate(responses) for k, text in enumerate(texts[t])}
    path = assignments(tmp_path / "assign.jsonl", responses, texts)
    seen: list = []
    reader = nuggetizer_files.iter_nuggetizer_assignment_records
    records = pressed(demo_target, seen)
    monkeypatch.setattr(nuggetizer_files, "iter_nuggetizer_assignment_records", lambda p: records(reader(p)))
    with open_db(demo_target) as db:
        summary = nuggetizer_files.import_assignments(db, path, source="big-support", nugget_source="gold")
    assert_press_saved(demo_target, seen)
    gold = sum(len(texts[t]) for t in {t for _r, t in responses})
    assert (summary["labels"], summary["importance_added"], summary["runs"]) == (len(expected), gold, 3)
    assert counts(demo_target)[3:] == (len(expected), gold)
    stored = rows(
        demo_target,
        "SELECT l.turn_id, n.text, l.run, l.support FROM ntr_support_labels l JOIN nuggets n ON n.id = l.nugget_id "
        "WHERE l.source = 'big-support'",
    )
    assert {(t, text, r): 2 - s for t, text, r, s in stored} == expected  # 'support' is 2, 'not_support' 0

    monkeypatch.setattr(nuggetizer_files, "iter_nuggetizer_assignment_records", reader)
    before = snapshot(demo_target)
    bad = assignments(tmp_path / "bad.jsonl", responses, texts, bad_last=True)
    with open_db(demo_target) as db, pytest.raises(FormatError, match="no-such-run") as refused:
        nuggetizer_files.import_assignments(db, bad, source="other-support", nugget_source="gold")
    assert f"{bad}:{len(responses) + 1}:" in str(refused.value)
    assert snapshot(demo_target) == before
