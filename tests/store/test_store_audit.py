"""Schema 9's judge-audit storage on both engines: K answers per item and the label they give (self-consistency),
outcomes kept per prompt version (persona sensitivity), budgeted human samples with inclusion probabilities in
the assessors' queues, and a PostgreSQL store of schema 8 migrated with its answers kept."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assess.errors import AssessError, UnknownItem
from assess.tasks import Task, consensus
from store import labels, open_db, queue, samples
from store import prejudgments as pj
from store.db import rows, value, write
from store.sources import ensure_source

MODEL = "judge-model"
TURN = "101_1"
PASSAGES = ["demo-doc-001:0", "demo-doc-002:3", "demo-doc-003:0"]


@pytest.fixture
def db(demo_target):
    database = open_db(demo_target)
    yield database
    database.close()


_ids = itertools.count()


def answer(source, item_id, value_, *, sample=0, version="passage@v1", input_hash="h", task="passage", status="ok"):
    return pj.Prejudgment(
        source=source,
        task=task,
        turn_id=TURN,
        item_id=item_id,
        model=MODEL,
        prompt_version=version,
        input_hash=f"{input_hash}-{item_id}",
        raw_output=f'{{"grade": {value_}}}',
        parse_status=status,
        parsed=value_,
        sample=sample,
    )


def llm(db, name="llm:judge") -> str:
    pj.ensure_llm_source(db, name, MODEL, "passage@v1")
    return name


# ------------------------------------------------------------------------------------------ consensus


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([3], 3),
        ([3, 3, 1], 3),  # majority
        ([2, 3], 3),  # tie: mean 2.5 rounded half up
        ([0, 1, 2], 1),  # three-way tie: mean 1
        ([0, 0, 4, 4], 2),  # tie: mean 2
        ([-1, -1, 2], -1),  # -1 is an answer (citation irrelevant), counted like any other
        ([-1, 2], 1),  # tie: mean 0.5 rounds up to 1
        ([1, 0], 1),
    ],
)
def test_consensus_by_hand(values, expected):
    assert consensus(values) == expected


@given(st.lists(st.integers(-1, 4), min_size=1, max_size=9))
def test_consensus_lies_between_the_answers_and_keeps_unanimity(values):
    got = consensus(values)
    assert min(values) <= got <= max(values)
    assert consensus([values[0]] * len(values)) == values[0]
    assert consensus(sorted(values)) == got  # the order answers arrive in does not matter


def test_consensus_of_nothing_is_an_error():
    with pytest.raises(AssessError):
        consensus([])


# ------------------------------------------------------------------------------------------ K answers


def test_k_answers_are_kept_apart_and_the_label_is_their_consensus(db):
    source = llm(db)
    item = (TURN, PASSAGES[0])
    assert pj.save(db, answer(source, PASSAGES[0], 2, sample=0)) is not None
    assert labels.get(db, Task.PASSAGE, source, item).value == 2
    pj.save(db, answer(source, PASSAGES[0], 3, sample=1))
    assert labels.get(db, Task.PASSAGE, source, item).value == 3  # tie 2/3: mean 2.5 rounds to 3
    pj.save(db, answer(source, PASSAGES[0], 2, sample=2))
    assert labels.get(db, Task.PASSAGE, source, item).value == 2  # 2, 3, 2: majority
    # an unparseable answer is kept but does not vote; the same sample twice is stored once
    pj.save(db, answer(source, PASSAGES[0], None, sample=3, status="unparseable"))
    assert pj.save(db, answer(source, PASSAGES[0], 3, sample=1)) is None
    assert labels.get(db, Task.PASSAGE, source, item).value == 2
    assert pj.sample_answers(db, source, "passage") == {item: [2, 3, 2]}
    stored = rows(
        db,
        "SELECT sample, parse_status FROM prejudgments WHERE source = :s ORDER BY sample",
        {"s": source},
    )
    assert stored == [
        {"sample": 0, "parse_status": "ok"},
        {"sample": 1, "parse_status": "ok"},
        {"sample": 2, "parse_status": "ok"},
        {"sample": 3, "parse_status": "unparseable"},
    ]
    # judged / cached are per answer number: answer 4 of this input has not been asked yet
    assert pj.judged(db, source, "passage", MODEL, "passage@v1", sample=1) == {(TURN, PASSAGES[0], f"h-{PASSAGES[0]}")}
    assert pj.judged(db, source, "passage", MODEL, "passage@v1", sample=4) == set()
    hits = pj.cached(db, MODEL, "passage@v1", [f"h-{PASSAGES[0]}"], sample=1)
    assert [h["parsed"] for h in hits.values()] == [3]


def test_a_single_answer_gives_its_label_as_before_and_a_new_input_starts_afresh(db):
    source = llm(db)
    item = (TURN, PASSAGES[1])
    pj.save(db, answer(source, PASSAGES[1], 4))
    pj.save(db, answer(source, PASSAGES[1], 1, sample=1))
    assert labels.get(db, Task.PASSAGE, source, item).value == 3  # 4, 1: mean 2.5 rounds to 3
    # the passage text changed: a new input, whose one answer alone is the label
    pj.save(db, answer(source, PASSAGES[1], 0, input_hash="changed"))
    assert labels.get(db, Task.PASSAGE, source, item).value == 0
    assert pj.sample_answers(db, source, "passage") == {item: [0]}


def test_ntr_and_citation_answers_become_labels_of_their_items(db):
    source = llm(db)
    pj.save(db, answer(source, "1 demo-bm25", 2, task="ntr-support", version="ntr-support@v1"))
    pj.save(db, answer(source, "1 demo-bm25", 1, task="ntr-support", version="ntr-support@v1", sample=1))
    assert labels.values(db, Task.NTR_SUPPORT, source) == {(TURN, 1, "demo-bm25"): 2}  # 2, 1: mean 1.5 -> 2
    assert pj.label_item("citation", TURN, "my run 3 demo-doc-001:0") == (TURN, "my run", 3, "demo-doc-001:0")
    assert pj.label_item("importance", TURN, "7") == (TURN, 7)
    assert pj.label_item("response", TURN, "demo-bm25 relevance") == (TURN, "demo-bm25", "relevance")


def test_outcomes_of_two_prompt_versions_of_the_same_items_are_both_kept(db):
    """Persona sensitivity: the same items with and without the PTKB statements (two prompt versions)."""
    with_ptkb, without = "passage@with-ptkb", "passage@no-ptkb"
    source = llm(db)
    for passage, a, b in zip(PASSAGES, (3, 2, 0), (3, 1, 1), strict=True):
        pj.save(db, answer(source, passage, a, version=with_ptkb))
        pj.save(db, answer(source, passage, b, version=without))
    pj.save(db, answer(source, PASSAGES[2], 2, version=without, sample=1))  # 1, 2: mean 1.5 -> 2
    pj.save(db, answer(source, PASSAGES[0], 4, version="passage@other"))  # another version: left out
    found = pj.answers_by_prompt_version(db, "passage", [with_ptkb, without], source=source)
    assert found == {
        (TURN, PASSAGES[0]): {with_ptkb: 3, without: 3},
        (TURN, PASSAGES[1]): {with_ptkb: 2, without: 1},
        (TURN, PASSAGES[2]): {with_ptkb: 0, without: 2},
    }
    assert pj.answers_by_prompt_version(db, "passage", [without], model=MODEL)[(TURN, PASSAGES[1])] == {without: 1}
    assert pj.answers_by_prompt_version(db, "passage", []) == {}
    # the label table holds one value per source (the last version written); the outcomes hold both
    assert labels.get(db, Task.PASSAGE, source, (TURN, PASSAGES[2])).value == 2
    assert pj.sample_answers(db, source, "passage", prompt_version=with_ptkb)[(TURN, PASSAGES[2])] == [0]


# ------------------------------------------------------------------------------------------ samples


def assessor(db, name: str) -> str:
    with write(db):
        ensure_source(db, name, "assessor")
    return name


def sampled(db) -> dict:
    return {
        "samples": rows(db, "SELECT * FROM samples ORDER BY name"),
        "items": rows(db, "SELECT * FROM sample_items ORDER BY sample, turn_id, item_id"),
        "history": value(db, "SELECT COUNT(*) AS n FROM label_history"),
    }


def test_a_budgeted_sample_is_stored_read_back_and_leads_the_assessors_queues(db):
    amy, bob = assessor(db, "amy"), assessor(db, "bob")
    before = queue.queue_order(db, amy)
    version = queue.queue_version(db, amy)
    unpooled = value(
        db, "SELECT id FROM passages WHERE id NOT IN (SELECT passage_id FROM pool WHERE turn_id = '101_2') LIMIT 1"
    )
    outside = ("101_2", unpooled)  # an item of the population that is not in the pool
    items = [
        samples.SampledItem(*outside, 0.25, "llm=3", amy),
        samples.SampledItem(TURN, PASSAGES[2], 0.5, "llm=0", amy),
        samples.SampledItem(TURN, PASSAGES[1], 1.0, "llm=0", bob),
    ]
    summary = samples.create_sample(
        db,
        "budget-3",
        task="passage",
        design="stratified-llm",
        population=40,
        items=items,
        details={"source": "llm:demo-gpt", "seed": 7},
        by="olga",
    )
    assert summary == {"sample": "budget-3", "items": 3, "assessors": ["amy", "bob"]}
    assert samples.inclusion_probabilities(db, "budget-3") == {
        outside: 0.25,
        (TURN, PASSAGES[2]): 0.5,
        (TURN, PASSAGES[1]): 1.0,
    }
    (info,) = samples.samples(db)
    assert (info["design"], info["population"], info["budget"], info["created_by"]) == ("stratified-llm", 40, 3, "olga")
    assert info["details"] == {"source": "llm:demo-gpt", "seed": 7}
    assert [(i["assessor"], i["position"], i["stratum"]) for i in samples.sample_items(db, "budget-3")] == [
        ("amy", 0, "llm=3"),
        ("amy", 1, "llm=0"),
        ("bob", 0, "llm=0"),
    ]
    # amy's queue: her sampled items first, in order, then the rest of her queue without repeats
    order = queue.queue_order(db, amy)
    assert order.items[:2] == (outside, (TURN, PASSAGES[2]))
    assert set(order.items[2:]) == set(before.items) - {(TURN, PASSAGES[2])}
    assert len(order.items) == len(set(order.items))
    assert queue.queue_version(db, amy) != version
    assert samples.sampled_order(db, bob).items == ((TURN, PASSAGES[1]),)
    # amy may label the sampled passage outside the pool; bob may not (it is not in his sample)
    queue.save_passage_label(db, amy, *outside, 2)
    assert labels.get(db, Task.PASSAGE, amy, outside).value == 2
    with pytest.raises(UnknownItem):
        queue.save_passage_label(db, assessor(db, "bob"), *outside, 2)
    history = rows(db, "SELECT source, item, via FROM label_history WHERE label_table = 'assignment'")
    assert history == [{"source": "olga", "item": "sample budget-3", "via": "stratified-llm"}]


REFUSED = {
    "blank name": ({"name": " "}, "name"),
    "unknown task": ({"task": "colour"}, "unknown task"),
    "population smaller than the sample": ({"population": 0}, "population"),
    "an item twice": ({"items": [samples.SampledItem(TURN, "d:1", 0.5)] * 2}, "drawn twice"),
    "zero probability": ({"items": [samples.SampledItem(TURN, "d:1", 0.0)]}, "inclusion probability"),
    "probability above one": ({"items": [samples.SampledItem(TURN, "d:1", 1.5)]}, "inclusion probability"),
    "probability not a number": ({"items": [samples.SampledItem(TURN, "d:1", float("nan"))]}, "inclusion probability"),
    "unknown turn": ({"items": [samples.SampledItem("999_9", "d:1", 0.5)]}, "999_9"),
    "not an assessor": ({"items": [samples.SampledItem(TURN, "d:1", 0.5, assessor="llm:demo-gpt")]}, "not an assessor"),
    "name in use": ({"name": "taken"}, "exists already"),
}


def test_a_sequential_round_extends_a_sample_and_raises_its_inclusion_probabilities(db):
    amy = assessor(db, "amy")
    first = [samples.SampledItem(TURN, PASSAGES[0], 0.25, "active 1", amy)]
    samples.create_sample(db, "seq", task="passage", design="active", population=8, items=first, details={"round": 1})
    more = [samples.SampledItem(TURN, PASSAGES[1], 0.5, "active 1", amy)]
    before = sampled(db)
    with pytest.raises(AssessError, match="holds 1 items, not 2"):  # another round was added meanwhile
        samples.extend_sample(db, "seq", more, inclusion={"active 1": 0.5}, details={"round": 2}, expected=2)
    with pytest.raises(AssessError, match="already"):
        samples.extend_sample(db, "seq", first, inclusion={"active 1": 0.5}, details={"round": 2}, expected=1)
    assert sampled(db) == before
    got = samples.extend_sample(
        db, "seq", more, inclusion={"active 1": 0.5}, details={"round": 2}, expected=1, by="olga"
    )
    assert got == {"sample": "seq", "items": 2, "added": 1}
    assert samples.inclusion_probabilities(db, "seq") == {(TURN, PASSAGES[0]): 0.5, (TURN, PASSAGES[1]): 0.5}
    assert [i["position"] for i in samples.sample_items(db, "seq")] == [0, 1]
    (info,) = samples.samples(db)
    assert info["budget"] == 2 and info["details"] == {"round": 2}
    assert samples.sampled_order(db, amy).items == ((TURN, PASSAGES[0]), (TURN, PASSAGES[1]))


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_refused_samples_leave_the_store_unchanged(db, case):
    samples.create_sample(
        db, "taken", task="passage", design="uniform", population=5, items=[samples.SampledItem(TURN, "d:9", 0.2)]
    )
    arguments = {
        "name": "new",
        "task": "passage",
        "design": "uniform",
        "population": 10,
        "items": [samples.SampledItem(TURN, "d:1", 0.5)],
    }
    change, expected = REFUSED[case]
    before = sampled(db)
    with pytest.raises(AssessError, match=expected):
        samples.create_sample(db, **(arguments | change))
    assert sampled(db) == before


# ------------------------------------------------------------------------------------------ upgrade


def test_a_postgresql_store_of_schema_8_is_migrated_with_its_answers(pg_url):
    from store.db import schema_version
    from store.schema import MIGRATIONS
    from store.schema.postgres import _BASELINE, BASELINE_VERSION

    raw = open_db(pg_url, migrate=False)
    try:
        with write(raw):
            raw.raw.execute(_BASELINE)
            for sql in (
                "INSERT INTO assess_schema (version, applied_at) VALUES (8, 'then')",
                "INSERT INTO conversations (id, number) VALUES ('1', '1')",
                "INSERT INTO turns (id, conversation_id, turn_number, position) VALUES ('1_1', '1', 1, 0)",
                "INSERT INTO sources (name, kind, created_at) VALUES ('llm:m', 'llm', 'x')",
                "INSERT INTO prejudgments (id, source, task, turn_id, item_id, model, prompt_version, input_hash, "
                "parse_status, parsed, created_at) VALUES (7, 'llm:m', 'passage', '1_1', 'd:1', 'm', 'v', 'h', 'ok', "
                "'3', 'x')",
            ):
                raw.raw.execute(sql)
    finally:
        raw.close()
    db = open_db(pg_url)
    try:
        # every migration after the baseline applied (9, 10 and whatever has shipped since)
        assert BASELINE_VERSION == 8 and schema_version(db) == len(MIGRATIONS) >= 10
        assert rows(db, "SELECT id, sample FROM prejudgments") == [{"id": 7, "sample": 0}]
        assert value(db, "SELECT COUNT(*) AS n FROM assess_schema") == 1 + len(MIGRATIONS) - BASELINE_VERSION
        pj.save(db, pj.Prejudgment("llm:m", "citation", "1_1", "r 1 d:1", "m", "v", "h2", "{}", "unparseable"))
        assert value(db, "SELECT COUNT(*) AS n FROM prejudgments WHERE task = 'citation'") == 1
    finally:
        db.close()


# ------------------------------------------------------------------------------------------ packed labels


def test_packed_labels_are_the_row_labels_with_each_item_joined(db, monkeypatch):
    """The agreement matrix's fast read gives the labels of the row read, each item's parts joined by PART;
    None for NtR and whenever an id holds a separator; the matrix is the same either way."""
    from assess.services import audit as service
    from store import audit as store_audit
    from store.db import run

    for task in ("passage", "ptkb"):
        names = labels.sources(db, task)
        by_rows = store_audit.task_labels(db, task, names)
        expected = {s: {store_audit.PART.join(item): v for item, v in got.items()} for s, got in by_rows.items()}
        assert store_audit.packed_task_labels(db, task, names) == expected
        assert sum(map(len, expected.values())) > 100
    assert store_audit.packed_task_labels(db, "ntr", labels.sources(db, "ntr")) is None

    fast = service.agreement_view(db, "passage", threshold=2, bootstrap=50)
    monkeypatch.setattr(store_audit, "packed_task_labels", lambda *_: None)
    assert service.agreement_view(db, "passage", threshold=2, bootstrap=50) == fast
    monkeypatch.undo()

    for odd in ("odd\x1eid", "odd\x1fid"):  # a store written by other means than the checked imports
        with write(db):
            run(db, "INSERT INTO passages (id) VALUES (:id)", {"id": odd})
        labels.save_many(db, "passage", "demo-ann", [((TURN, odd), 2)], mode="import", via=None)
        assert store_audit.packed_task_labels(db, "passage", ["demo-ben", "demo-ann"]) is None
        assert store_audit.task_labels(db, "passage", ["demo-ann"])["demo-ann"][(TURN, odd)] == 2
        with write(db):
            run(db, "DELETE FROM passage_labels WHERE passage_id = :id", {"id": odd})


def test_answers_saved_together_give_the_rows_labels_and_history_of_one_save_each(db):
    """prejudgments.save_many (a worker's group commit) against one save per answer: same ids' presence, labels,
    label history (each intermediate consensus a row) and job counts."""
    alone, together = llm(db, "llm:alone"), llm(db, "llm:together")
    for source in (alone, together):  # a label the answer repeats is left alone (no history row)
        labels.save(db, Task.PASSAGE, source, (TURN, PASSAGES[2]), 1, mode="llm", via="llm")
    script = [
        (PASSAGES[0], 2, 0, "ok"),
        (PASSAGES[0], 3, 1, "ok"),  # consensus of 2, 3 written before the third answer
        (PASSAGES[1], 4, 0, "ok"),
        (PASSAGES[0], 2, 2, "ok"),
        (PASSAGES[1], None, 1, "unparseable"),
        (PASSAGES[2], 1, 0, "ok"),
        (PASSAGES[0], 3, 1, "ok"),  # the same answer twice: stored once
    ]
    one_by_one = [pj.save(db, answer(alone, p, v, sample=k, status=s)) for p, v, k, s in script]
    saved = pj.save_many(db, [(answer(together, p, v, sample=k, status=s), None) for p, v, k, s in script])
    assert [i is None for i in saved] == [i is None for i in one_by_one] == [False] * 6 + [True]

    def trail(source):
        return rows(
            db,
            "SELECT item, old_value, new_value FROM label_history WHERE source = :s AND label_table = 'passage' "
            "ORDER BY id",
            {"s": source},
        )

    assert trail(together) == trail(alone) and len(trail(alone)) == 5  # 1 (set by hand), 2, 3, 4, 2
    for p in PASSAGES:
        assert (
            labels.get(db, Task.PASSAGE, together, (TURN, p)).value
            == labels.get(db, Task.PASSAGE, alone, (TURN, p)).value
        )
    assert pj.status_counts(db, together) == pj.status_counts(db, alone) == {"ok": 5, "unparseable": 1}
