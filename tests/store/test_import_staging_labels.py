"""Label imports staged like the large ones (issue 33): ``import ptkb-qrels``, the nuggetizer imports, bank
matches, rubric judgments and battles write
their blocks into temporary tables without the write lock and make them visible in one switch. On both engines:
another connection's press between two blocks is saved at once and sees nothing of the import; a bad last record
is refused with its line after the blocks before it were staged, the store unchanged. (Before, these imports held
the write lock from their first block: the press gave up after its wait with nothing saved.)"""

from __future__ import annotations

import json

import pytest

from assess.errors import FormatError
from assess.formats.banks import read_bank_matches, read_rubric_judgments
from assess.formats.trec import parse_ptkb_qrels
from assess.services import banks, battles, loading, nuggetizer_files
from store import bank_imports, label_imports, open_db, rag_imports
from store import battles as battle_store
from tests.helpers import ROOT, rows, snapshot
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


BANKS = ROOT / "assets" / "demo" / "banks"


def bank_counts(target) -> tuple[int, ...]:
    found = rows(
        target,
        "SELECT (SELECT COUNT(*) FROM bank_matches WHERE source = 'big-matches') AS m, "
        "(SELECT COUNT(*) FROM rubric_labels WHERE source = 'big-dragun') AS r, "
        "(SELECT COUNT(*) FROM label_history WHERE source = 'big-dragun') AS h",
    )
    return tuple(found[0])


@pytest.fixture
def banked(demo_target):
    with open_db(demo_target) as db:
        loading.load_file(db, "rag-answers", BANKS / "answers.jsonl")
        banks.import_bank_file(db, BANKS / "bank.jsonl", by=None)
        banks.import_rubric_file(db, BANKS / "rubrics", by=None)
    return demo_target


def test_bank_matches_and_rubric_judgments_staged(banked, tmp_path, monkeypatch):
    """Bank matches and rubric judgments (one row per response and answer: an LLM's judging of a campaign) staged
    two rows a block here: a press between two blocks is saved at once and sees neither; the switch writes them
    with their history (a ``rubric`` row per judgment, ``bank_matches``' triggers); a bad last row is refused
    with its line, the store unchanged."""
    monkeypatch.setattr(bank_imports, "ROWS_PER_BLOCK", 2)
    matches, judgments = read_bank_matches(BANKS / "matches.jsonl"), read_rubric_judgments(BANKS / "judgments.csv")
    seen: list = []
    with open_db(banked) as db:
        press = pressed_mid_import(matches, 4, banked, seen, look=bank_counts)
        assert bank_imports.import_matches(db, press, "m.jsonl", "big-matches", by=None)["changed"] == len(matches)
        press = pressed_mid_import(judgments, 4, banked, seen, look=bank_counts)
        summary = bank_imports.import_rubric_judgments(db, press, "j.csv", "big-dragun", by=None)
    assert seen == [(0, 0, 0), (len(matches), 0, 0)]
    assert rows(banked, "SELECT grade FROM passage_labels WHERE source = 'mid-import'") == [(3,)]
    assert summary == {"judgments": len(judgments), "changed": len(judgments), "source": "big-dragun"}
    assert bank_counts(banked) == (len(matches), len(judgments), len(judgments))
    stored = rows(banked, "SELECT topic_id, run, answer_id, judgment FROM rubric_labels WHERE source = 'big-dragun'")
    assert sorted(stored) == sorted((j.topic_id, j.run, j.answer_id, j.judgment) for j in judgments)
    history = rows(banked, "SELECT item, old_value, new_value FROM label_history WHERE source = 'big-dragun'")
    assert sorted(history) == sorted((f"{j.topic_id} {j.run} {j.answer_id}", None, str(j.judgment)) for j in judgments)

    with open_db(banked) as db:  # again, one judgment changed: one history row, the rest untouched
        changed = [judgments[0]._replace(judgment=0 if judgments[0].judgment else 2), *judgments[1:]]
        assert bank_imports.import_rubric_judgments(db, changed, "j.csv", "big-dragun", by=None)["changed"] == 1
    assert bank_counts(banked)[2] == len(judgments) + 1

    before = snapshot(banked)
    bad_matches = tmp_path / "bad-matches.jsonl"
    last = {"topic_id": "101_1", "run_id": "rt-alpha", "nugget": 9, "answer": 1}
    bad_matches.write_text((BANKS / "matches.jsonl").read_text().rstrip("\n") + "\n" + json.dumps(last) + "\n")
    bad_judgments = tmp_path / "bad-judgments.csv"
    bad_judgments.write_text((BANKS / "judgments.csv").read_text().rstrip("\n") + "\n101_1,rt-alpha,q,nope,supports\n")
    with open_db(banked) as db:
        with pytest.raises(FormatError, match="has no answer 1 of nugget 9") as refused:
            banks.import_match_file(db, bad_matches, "other-matches", by=None)
        assert f"{bad_matches}:{len(matches) + 1}:" in str(refused.value)
        with pytest.raises(FormatError, match="an answer of a stored rubric") as refused:
            banks.import_rubric_judgment_file(db, bad_judgments, "other-dragun", by=None)
        assert f"{bad_judgments}:{len(judgments) + 2}:" in str(refused.value)  # the header is line 1
    assert snapshot(banked) == before


def arena(target) -> tuple[int, ...]:
    return tuple(rows(target, "SELECT COUNT(*) AS n FROM battles WHERE source = 'big-arena'")[0])


def test_battles_staged_in_the_files_order(demo_target, tmp_path, monkeypatch):
    """A battle file staged two battles a block: a press between two blocks is saved at once and sees none; the
    switch keeps the file's order (each battle stamped a millisecond after the one before) and the features; a
    bad last line is refused with its line, the store unchanged."""
    monkeypatch.setattr(battle_store, "BATTLES_PER_BLOCK", 2)
    lines = [
        {"topic_id": f"t{k % 3}", "run_a": "x", "run_b": "y", "winner": "abab"[k % 4], "features_a": {"n": k},
         "features_b": {"n": 0}}
        for k in range(12)
    ]  # fmt: skip
    path = tmp_path / "battles.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    seen: list = []
    reader = battles.iter_battles
    monkeypatch.setattr(battles, "iter_battles", lambda p: pressed_mid_import(reader(p), 4, demo_target, seen, arena))
    with open_db(demo_target) as db:
        summary = battles.import_file(db, path, "big-arena")
    assert seen == [(0,)]
    assert rows(demo_target, "SELECT grade FROM passage_labels WHERE source = 'mid-import'") == [(3,)]
    assert summary == {"battles": 12, "new": 12, "changed": 0, "topics": 3, "runs": 2}
    with open_db(demo_target) as db:
        got = battle_store.battles(db, "big-arena")
        features = battle_store.battle_features(db, "big-arena")
    assert [(b["turn_id"], b["occurrence"], b["winner"]) for b in got] == [
        (f"t{k % 3}", k // 3, "abab"[k % 4]) for k in range(12)
    ]
    assert features[("t1", "x", "y", 1)] == ({"n": 4}, {"n": 0})

    monkeypatch.setattr(battles, "iter_battles", reader)
    before = snapshot(demo_target)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text() + '{"topic_id": "t0", "run_a": "x", "run_b": "y", "winner": "c"}\n')
    with open_db(demo_target) as db, pytest.raises(FormatError) as refused:
        battles.import_file(db, bad, "other-arena")
    assert f"{bad}:13:" in str(refused.value)
    assert snapshot(demo_target) == before
