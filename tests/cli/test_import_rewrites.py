"""Imports never rewrite silently (issue 21): changed texts of stored nuggets, responses and passages are
refused unless --replace (which records each change and the labels on it); keys are validated; every unknown
turn names its line; crowd guideline files are checked against their documented shape."""

from __future__ import annotations

import json

import pytest

from tests.helpers import ROOT, rows, run_cli, snapshot

DEMO = ROOT / "assets" / "demo"


def refused(*args, db, names: tuple[str, ...]) -> str:
    """Run a command that must be refused: exit 2, one line naming ``names``, the store unchanged."""
    before = snapshot(db)
    proc = run_cli(*args, db=db)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    message = proc.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for name in names:
        assert name in message, (name, message)
    assert snapshot(db) == before
    return message


def write_json(path, data) -> str:
    path.write_text(json.dumps(data, indent=4, ensure_ascii=False), encoding="utf-8")
    return str(path)


@pytest.fixture
def demo(demo_target):
    return demo_target


@pytest.fixture
def topics(tmp_path):
    """A SQLite store with the demo topics only (turns 101_1 .. 102_6)."""
    db = tmp_path / "t.db"
    run_cli("import", "topics", DEMO / "topics.json", db=db, check=True)
    return db


def _without_import_actions(db) -> list:
    return rows(
        db,
        "SELECT label_table, source, item, old_value, new_value FROM label_history WHERE label_table != 'import'",
        {},
    )


# ------------------------------------------------------------------------------------------------ nuggets


def test_a_labelled_nugget_text_is_not_rewritten_without_replace(demo, tmp_path):
    data = json.loads((DEMO / "nuggets.json").read_text(encoding="utf-8"))
    old = data["101_1"]["[1]"]["text"]
    data["101_1"]["[1]"]["text"] = "Beginner plans take a year"
    path = write_json(tmp_path / "gold-v2.json", data)
    (nugget_id, ntr) = rows(
        demo,
        "SELECT n.id, COUNT(l.run) FROM nuggets n JOIN ntr_labels l ON l.nugget_id = n.id "
        "WHERE n.source = 'gold' AND n.turn_id = '101_1' AND n.key = '[1]' GROUP BY n.id",
        {},
    )[0]
    assert ntr > 0  # the demo's LLM NtR labels are on it
    message = refused(
        "import", "nuggets", path, "--source", "gold", db=demo, names=("gold-v2.json:3", "[1]", "101_1", "--replace")
    )
    assert f"{ntr} ntr labels" in message

    history_before = len(_without_import_actions(demo))
    proc = run_cli("import", "nuggets", path, "--source", "gold", "--replace", "--json", db=demo, check=True)
    summary = json.loads(proc.stdout)
    assert summary["replaced"] == 1 and summary["labels_on_replaced"] == {"ntr": ntr}
    assert f"ntr {ntr}" in proc.stderr  # the warning says which labels now sit on a new text
    assert rows(demo, "SELECT text FROM nuggets WHERE id = :id", {"id": nugget_id}) == [("Beginner plans take a year",)]
    added = _without_import_actions(demo)[history_before:]
    replace = [r for r in added if r[0] == "replace"]
    assert len(replace) == 1 and replace[0][2] == "nugget gold 101_1 [1]"
    assert json.loads(replace[0][3])["text"] == old
    assert json.loads(replace[0][4]) == {
        "text": "Beginner plans take a year",
        "relevance": 4,
        "labels": {"ntr": ntr},
    }
    assert any(r[0] == "nugget" for r in added)  # the nugget's own history row (trigger) is there too

    # importing the same text again changes nothing, with or without --replace
    before = snapshot_but_imports(demo)
    run_cli("import", "nuggets", path, "--source", "gold", db=demo, check=True)
    run_cli("import", "nuggets", path, "--source", "gold", "--replace", db=demo, check=True)
    assert snapshot_but_imports(demo) == before


def snapshot_but_imports(db) -> list:
    return [
        rows(db, "SELECT id, turn_id, key, text, relevance, in_dedup FROM nuggets ORDER BY id", {}),
        _without_import_actions(db),
    ]


def test_an_unlabelled_nugget_text_is_not_rewritten_either(topics, tmp_path):
    first = write_json(tmp_path / "a.json", {"101_1": {"[1]": {"text": "One", "relevance": "2"}}})
    run_cli("import", "nuggets", first, "--source", "mine", db=topics, check=True)
    second = write_json(tmp_path / "b.json", {"101_1": {"[1]": {"text": "One", "relevance": "3"}}})
    refused("import", "nuggets", second, "--source", "mine", db=topics, names=("b.json:3", "[1]", "relevance"))


NUGGET_FILES = {
    "[1] and [01]": ({"101_1": {"[1]": "One", "[01]": "Two"}}, ("[01]", "without leading zeros")),
    "[01] alone": ({"101_1": {"[01]": "One"}}, ("[01]",)),
    "empty text": ({"101_1": {"[1]": {"text": ""}}}, ("['101_1']['[1]']['text']", "a non-empty text")),
    "blank text": ({"101_1": {"[1]": "  \n "}}, ("['101_1']['[1]']", "a non-empty text")),
    "keys differing by whitespace": ({"101_1": {"[1]": "One", " [1]": "One"}}, ("' [1]'", "whitespace")),
    "turns differing by whitespace": ({"101_1": {"[1]": "One"}, "101_1 ": {"[1]": "Two"}}, ("'101_1 '", "whitespace")),
    "an unknown turn": ({"101_1": {"[1]": "One"}, "999_9": {"[1]": "Two"}}, (".json:5", "999_9", "a turn id present")),
}


@pytest.mark.parametrize("case", NUGGET_FILES, ids=list(NUGGET_FILES))
def test_bad_nugget_files_are_refused_naming_place(topics, tmp_path, case):
    data, names = NUGGET_FILES[case]
    path = write_json(tmp_path / "n.json", data)
    refused("import", "nuggets", path, "--source", "gold", db=topics, names=("n.json", *names))


# ---------------------------------------------------------------------------------------------- responses


RESPONSE_FILES = {
    "runs differing by whitespace": ({"101_1": {"bm25": "A.", "bm25 ": "B."}}, ("'bm25 '", "whitespace")),
    "turns differing by whitespace": ({"101_1": {"bm25": "A."}, " 101_1": {"bm25": "B."}}, ("' 101_1'", "whitespace")),
    "an unknown turn": ({"101_1": {"bm25": "A."}, "999_9": {"bm25": "B."}}, ("r.json:5", "999_9", "a turn id present")),
}


@pytest.mark.parametrize("case", RESPONSE_FILES, ids=list(RESPONSE_FILES))
def test_bad_response_files_are_refused_naming_place(topics, tmp_path, case):
    data, names = RESPONSE_FILES[case]
    path = write_json(tmp_path / "r.json", data)
    refused("import", "responses", path, db=topics, names=("r.json", *names))


def test_a_labelled_response_text_is_not_rewritten_without_replace(demo, tmp_path):
    data = json.loads((DEMO / "responses.json").read_text(encoding="utf-8"))
    data["101_1"]["demo-bm25"] = "A different answer."
    path = write_json(tmp_path / "responses-v2.json", data)
    ntr = rows(demo, "SELECT COUNT(*) FROM ntr_labels WHERE run = 'demo-bm25' AND turn_id = '101_1'", {})[0][0]
    assert ntr > 0
    message = refused(
        "import", "responses", path, db=demo, names=("responses-v2.json:3", "demo-bm25", "101_1", "--replace")
    )
    assert f"{ntr} ntr labels" in message
    summary = json.loads(run_cli("import", "responses", path, "--replace", "--json", db=demo, check=True).stdout)
    assert summary["replaced"] == 1 and summary["labels_on_replaced"] == {"ntr": ntr}
    assert rows(demo, "SELECT text FROM responses WHERE run = 'demo-bm25' AND turn_id = '101_1'", {}) == [
        ("A different answer.",)
    ]
    replace = [r for r in _without_import_actions(demo) if r[0] == "replace"]
    assert [r[2] for r in replace] == ["response demo-bm25 101_1"]


def test_a_gold_response_text_is_not_rewritten_without_replace(topics, tmp_path):
    first = write_json(tmp_path / "g.json", {"101_1": {"manual": "Gold answer."}})
    run_cli("import", "responses", first, "--gold", "--source", "gold", db=topics, check=True)
    run_cli("import", "responses", first, "--gold", "--source", "gold", db=topics, check=True)  # same: fine
    second = write_json(tmp_path / "g2.json", {"101_1": {"manual": "Another gold answer."}})
    refused("import", "responses", second, "--gold", "--source", "gold", db=topics, names=("g2.json:3", "101_1"))
    run_cli("import", "responses", second, "--gold", "--source", "gold", "--replace", db=topics, check=True)
    assert rows(topics, "SELECT text FROM gold_responses", {}) == [("Another gold answer.",)]


def test_an_ikat_responses_file_names_the_line_of_an_unknown_turn(topics, tmp_path):
    text = [{"number": "101", "responses": [{"turn_id": 1, "response": "A."}, {"turn_id": 77, "response": "B."}]}]
    path = write_json(tmp_path / "topics25.json", text)
    refused("import", "ikat-responses", path, db=topics, names=("topics25.json:9", "101_77", "a turn id present"))


# ----------------------------------------------------------------------------------------------- passages


def test_a_passage_text_is_not_rewritten_without_replace(demo, tmp_path):
    first = json.loads((DEMO / "passages.jsonl").read_text(encoding="utf-8").splitlines()[0])
    pid = f"{first['doc_id']}:{first['passage_id']}"
    labelled = rows(demo, "SELECT COUNT(*) FROM passage_labels WHERE passage_id = :p", {"p": pid})[0][0]
    assert labelled > 0
    same = tmp_path / "same.jsonl"
    same.write_text(json.dumps(first) + "\n", encoding="utf-8")
    before = rows(demo, "SELECT id, text FROM passages ORDER BY id", {})
    run_cli("import", "passages", same, db=demo, check=True)  # the same text: nothing to refuse
    assert rows(demo, "SELECT id, text FROM passages ORDER BY id", {}) == before
    changed = tmp_path / "changed.jsonl"
    other = {**first, "passage_text": "Another text altogether."}
    changed.write_text(
        json.dumps({**first, "passage_id": "new-one"}) + "\n" + json.dumps(other) + "\n", encoding="utf-8"
    )
    message = refused("import", "passages", changed, db=demo, names=("changed.jsonl:2", pid, "--replace"))
    assert f"{labelled} passage labels" in message
    summary = json.loads(run_cli("import", "passages", changed, "--replace", "--json", db=demo, check=True).stdout)
    assert summary["replaced"] == 1 and summary["labels_on_replaced"]["passage"] == labelled
    assert rows(demo, "SELECT text FROM passages WHERE id = :p", {"p": pid}) == [("Another text altogether.",)]
    assert [r[2] for r in _without_import_actions(demo) if r[0] == "replace"] == [f"passage {pid}"]


def test_replace_is_refused_for_kinds_that_never_rewrite(topics):
    proc = run_cli("import", "qrels", DEMO / "llm-passages.qrels", "--replace", db=topics)
    assert proc.returncode == 2 and "--replace" in proc.stderr


def test_the_page_upload_gives_the_same_refusal(tmp_path):
    """The Import & export page's call (load_upload): the refusal names the upload and the key; the page
    shows it with st.error (pages/data.py catches AssessError)."""
    from assess.errors import FormatError
    from assess.services.loading import load_file, load_upload
    from store import open_db

    with open_db(tmp_path / "s.db") as db:
        load_file(db, "topics", DEMO / "topics.json")
        load_upload(db, "nuggets", "gold nuggets.json", b'{"101_1": {"[1]": "One"}}', source="gold", by="olga")
        with pytest.raises(FormatError) as caught:
            load_upload(db, "nuggets", "gold nuggets.json", b'{"101_1": {"[1]": "Two"}}', source="gold", by="olga")
        message = str(caught.value)
        assert message.startswith("gold nuggets.json:1: expected the text stored for nugget [1] of turn '101_1'")
        assert "/tmp" not in message


# ------------------------------------------------------------------------------------------------- crowd


GUIDELINES = {
    "examples as a string": ({"examples": "xyz"}, ("['examples']", "a list of example objects")),
    "an example that is not an object": ({"examples": ["xyz"]}, ("['examples'][0]", "an example object")),
    "an example field of another type": ({"examples": [{"response": ["x"]}]}, ("['examples'][0]['response']", "a str")),
    "an unknown example field": ({"examples": [{"reply": "x"}]}, ("['examples'][0]", "'reply'")),
    "instructions as a list": ({"instructions": ["a"]}, ("['instructions']", "a str")),
}


@pytest.mark.parametrize("case", GUIDELINES, ids=list(GUIDELINES))
def test_a_guideline_file_of_the_wrong_shape_is_refused_at_create(tmp_path, case):
    db = tmp_path / "c.db"
    run_cli("init", "--demo", db=db, check=True)
    guide, names = GUIDELINES[case]
    path = write_json(tmp_path / "guide.json", guide)
    refused("crowd", "create", "s1", "--run", "demo-bm25", "--guideline", path, db=db, names=("guide.json", *names))


def test_replacing_ikat_responses_records_each_changed_response_once(topics, tmp_path):
    def topics_file(second: str) -> str:
        conversation = {
            "number": "101",
            "responses": [{"turn_id": 1, "response": "A."}, {"turn_id": 2, "response": second}],
        }
        return write_json(tmp_path / "t25.json", [conversation])

    run_cli("import", "ikat-responses", topics_file("B."), db=topics, check=True)
    refused("import", "ikat-responses", topics_file("C."), db=topics, names=("t25.json", "101_2", "a different text"))
    summary = json.loads(
        run_cli("import", "ikat-responses", topics_file("C."), "--replace", "--json", db=topics, check=True).stdout
    )
    assert (summary["replaced"], summary["unchanged"], summary["labels_on_replaced"]) == (1, 1, {})
    replace = [r for r in _without_import_actions(topics) if r[0] == "replace"]
    assert [(r[2], json.loads(r[3])["text"], json.loads(r[4])["text"]) for r in replace] == [
        ("response topics 101_2", "B.", "C.")
    ]


def test_two_gold_responses_for_one_turn_are_refused_not_merged(topics, tmp_path):
    path = write_json(tmp_path / "gold.json", {"101_1": {"manual": "One.", "other": "Two."}})
    refused(
        "import", "responses", path, "--gold", db=topics, names=("gold.json:4", "one gold response per turn", "other")
    )
