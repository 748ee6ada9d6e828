"""Generated responses with citations in and out of the store (``import`` / ``export`` ikat-responses and
rag-answers, ``stats``): real-data counts, round trips on both engines, idempotent re-import, changed
responses refused unless replaced, malformed files refused with exit 2 and the store unchanged."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assess.errors import AssessError, FormatError
from assess.formats.responses import parse_ikat_responses, parse_rag_answers
from assess.services import response_files
from assess.services.loading import load_file
from store import open_db
from store import responses as stored
from tests.conftest import shared_file
from tests.helpers import rows, run_cli, snapshot

TOPICS_2025 = ("data", "irlabamsterdam-iKAT", "2025", "data", "2025_test_topics.json")

TOPICS = [
    {
        "number": "1-1",
        "title": "Tea",
        "ptkb": ["I like tea."],
        "responses": [
            {
                "turn_id": 1,
                "user_utterance": "Is tea healthy?",
                "resolved_utterance": "Is tea healthy?",
                "response": "Tea has caffeine. Dr. Lee says it is fine! Drink it.",
                "relevant_ptkbs": [],
                "citations": ["doc-a:1", "doc-b:2", "doc-a:1"],  # one passage cited twice, as the 2025 file does
            },
            {
                "turn_id": 2,
                "user_utterance": "Which one?",
                "resolved_utterance": "Which tea?",
                "response": "Green tea.",
                "relevant_ptkbs": [1],
                "citations": [],
            },
            {"turn_id": 3, "user_utterance": "Thanks", "resolved_utterance": "Thanks"},
        ],
    },
    {
        "number": "2-1",
        "title": "Ski",
        "ptkb": ["I ski."],
        "responses": [
            {
                "turn_id": 1,
                "user_utterance": "Where?",
                "resolved_utterance": "Where to ski?",
                "response": "Try the Alps.\nOr Norway…",
                "relevant_ptkbs": [],
                "citations": ["doc-c:0"],
            }
        ],
    },
]

# TREC RAG answers in the writer's own form (keys in its order, references and answer last), so that an
# export can equal the file byte for byte: a 2024 answer with an uncited reference and response_length,
# a 2025 answer (metadata, a citation given as a segment id), and a second run.
ANSWERS = [
    {
        "run_id": "rag-a",
        "topic_id": "1-1_1",
        "topic": "Is tea healthy?",
        "response_length": 9,
        "references": ["doc-a:1", "doc-x:9", "doc-b:2"],
        "answer": [{"text": "Tea has caffeine [0].", "citations": [0, 2]}, {"text": "It is fine.", "citations": []}],
    },
    {
        "metadata": {"team_id": "t", "run_id": "rag-a", "type": "automatic", "narrative_id": "1-1_2"},
        "references": ["doc-b:2"],
        "answer": [{"text": "Green tea.", "citations": ["doc-b:2"]}],
    },
    {
        "run_id": "rag-b",
        "topic_id": "2-1_1",
        "references": ["doc-c:0", "new-doc:3"],
        "answer": [{"text": "The Alps.", "citations": [1, 0]}],
    },
]


def canonical(answers: list[dict]) -> str:
    """The lines as the RAG writer writes them (a 2025 answer with segment ids is written as indices)."""
    out = []
    for a in answers:
        a = json.loads(json.dumps(a))
        for sentence in a["answer"]:
            sentence["citations"] = [
                a["references"].index(c) if isinstance(c, str) else c for c in sentence["citations"]
            ]
        out.append(json.dumps(a, ensure_ascii=False) + "\n")
    return "".join(out)


@pytest.fixture
def files(tmp_path):
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps(TOPICS, indent=1), encoding="utf-8")
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(a, ensure_ascii=False) + "\n" for a in ANSWERS), encoding="utf-8")
    return topics, answers


@pytest.fixture
def target(store_target, files):
    """A store with the topics (turns 1-1_1..3, 2-1_1), on each engine."""
    run_cli("import", "topics", files[0], db=store_target, check=True)
    return store_target


def cli_json(*args, db) -> dict:
    return json.loads(run_cli(*args, "--json", db=db, check=True).stdout)


def refused(*args, db, names: tuple[str, ...]) -> str:
    """Run a command that must be refused: exit 2, one line naming ``names``, nothing written."""
    before = snapshot(db)
    proc = run_cli(*args, db=db)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    message = proc.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for name in names:
        assert name in message, (name, message)
    assert snapshot(db) == before
    return message


# ------------------------------------------------------------------------------------------- real data


def test_the_2025_topics_import_with_every_citation_and_export_back(tmp_path):
    topics = shared_file(*TOPICS_2025)
    db = tmp_path / "real.db"
    run_cli("import", "topics", topics, db=db, check=True)
    summary = cli_json("import", "ikat-responses", topics, db=db)
    assert summary == {
        "responses": 188,
        "with_citations": 157,
        "citations": 398,
        "new": 188,
        "replaced": 0,
        "unchanged": 0,
        "runs": 1,
    }
    assert cli_json("stats", db=db)["responses"] == {"count": 188, "with_citations": 157, "citations": 398}
    assert rows(db, "SELECT COUNT(*) FROM response_sentences") == [(1032,)]  # the sentence rule's count
    # the passage 3-1_8 cites twice is stored twice, in order, and is one citation-support item
    assert rows(
        db, "SELECT position, passage_id FROM response_citations WHERE turn_id = '3-1_8' ORDER BY position"
    ) == [
        (0, "clueweb22-en0017-96-08323:6"),
        (1, "clueweb22-en0017-96-08323:6"),
    ]
    with open_db(db) as store:
        assert [i["passage_id"] for i in stored.citation_items(store, turn_id="3-1_8")] == [
            "clueweb22-en0017-96-08323:6"
        ]
    out = tmp_path / "export.json"
    run_cli("export", "ikat-responses", "--out", out, db=db, check=True)
    assert parse_ikat_responses(out) == parse_ikat_responses(topics)
    again = cli_json("import", "ikat-responses", out, db=db)
    assert (again["unchanged"], again["new"], again["replaced"]) == (188, 0, 0)


# ---------------------------------------------------------------------------------------- round trips


@pytest.mark.both_engines
def test_ikat_responses_round_trip_on_both_engines(target, files, tmp_path):
    topics = files[0]
    summary = cli_json("import", "ikat-responses", topics, "--run", "organizers-gpt", db=target)
    assert summary == {
        "responses": 3,
        "with_citations": 2,
        "citations": 4,
        "new": 3,
        "replaced": 0,
        "unchanged": 0,
        "runs": 1,
    }
    assert cli_json("stats", db=target)["responses"] == {"count": 3, "with_citations": 2, "citations": 4}
    # cited passages unknown to the store are added without text; the run is a response run
    assert rows(target, "SELECT id, text FROM passages ORDER BY id", {}) == [
        ("doc-a:1", None),
        ("doc-b:2", None),
        ("doc-c:0", None),
    ]
    assert rows(target, "SELECT name, kind FROM runs", {}) == [("organizers-gpt", "response")]
    assert rows(
        target, "SELECT sentence, text FROM response_sentences WHERE turn_id = '1-1_1' ORDER BY sentence", {}
    ) == [(1, "Tea has caffeine."), (2, "Dr. Lee says it is fine!"), (3, "Drink it.")]
    out = tmp_path / "out.json"
    run_cli("export", "ikat-responses", "--out", out, db=target, check=True)
    assert parse_ikat_responses(out, run="organizers-gpt") == parse_ikat_responses(topics, run="organizers-gpt")
    # file-level: the export of a store filled from an export is the same file
    second = tmp_path / "second.db" if "://" not in target else None
    if second is not None:
        run_cli("import", "topics", topics, db=second, check=True)
        run_cli("import", "ikat-responses", out, "--run", "organizers-gpt", db=second, check=True)
        again = tmp_path / "again.json"
        run_cli("export", "ikat-responses", "--out", again, db=second, check=True)
        assert again.read_bytes() == out.read_bytes()
    # an import by the CLI is an organizer action in the history
    assert rows(target, "SELECT COUNT(*) FROM label_history WHERE item LIKE 'ikat-responses %'", {}) == [(1,)]


@pytest.mark.both_engines
def test_rag_answers_round_trip_byte_for_byte_on_both_engines(target, files, tmp_path):
    answers = files[1]
    summary = cli_json("import", "rag-answers", answers, db=target)
    assert (summary["responses"], summary["with_citations"], summary["citations"], summary["runs"]) == (3, 3, 5, 2)
    out = tmp_path / "out.jsonl"
    proc = run_cli("export", "rag-answers", "--out", out, db=target, check=True)
    assert "count 3" in proc.stdout
    assert out.read_text(encoding="utf-8") == canonical(ANSWERS)
    assert parse_rag_answers(out) == parse_rag_answers(answers)
    # one run, and every answer in the other layout
    only = tmp_path / "b.jsonl"
    run_cli(
        "export", "rag-answers", "--out", only, "--run", "rag-b", "--layout", "trec-rag-2025", db=target, check=True
    )
    (b,) = parse_rag_answers(only)
    assert (b.run, b.turn_id, b.layout, b.references) == ("rag-b", "2-1_1", "trec-rag-2025", ("doc-c:0", "new-doc:3"))
    assert [s.citations for s in b.sentences] == [("new-doc:3", "doc-c:0")]


def test_a_rag_run_imported_under_another_name_exports_under_it(target, tmp_path):
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(ANSWERS[2]) + "\n", encoding="utf-8")
    run_cli("import", "rag-answers", one, "--run", "renamed", db=target, check=True)
    out = tmp_path / "out.jsonl"
    run_cli("export", "rag-answers", "--out", out, db=target, check=True)
    assert json.loads(out.read_text())["run_id"] == "renamed"


# ------------------------------------------------------------------------------- again, or different


def test_a_second_import_of_the_same_file_changes_nothing(target, files):
    cli_json("import", "rag-answers", files[1], db=target)
    before = rows(
        target, "SELECT run, turn_id, text, imported_from, layout, file_fields FROM responses ORDER BY run, turn_id", {}
    )
    citations = rows(target, "SELECT * FROM response_citations ORDER BY run, turn_id, sentence, position", {})
    again = cli_json("import", "rag-answers", files[1], db=target)
    assert (again["new"], again["replaced"], again["unchanged"]) == (0, 0, 3)
    assert (
        rows(
            target,
            "SELECT run, turn_id, text, imported_from, layout, file_fields FROM responses ORDER BY run, turn_id",
            {},
        )
        == before
    )
    assert rows(target, "SELECT * FROM response_citations ORDER BY run, turn_id, sentence, position", {}) == citations


def test_a_different_response_is_refused_unless_replaced(target, files, tmp_path):
    cli_json("import", "rag-answers", files[1], db=target)
    changed = json.loads(json.dumps(ANSWERS))
    changed[2]["answer"][0]["citations"] = [0]
    other = tmp_path / "changed.jsonl"
    other.write_text("".join(json.dumps(a) + "\n" for a in changed), encoding="utf-8")
    message = refused(
        "import", "rag-answers", other, db=target, names=("changed.jsonl:3", "rag-b", "2-1_1", "answers.jsonl")
    )
    assert "other citations of sentence 1" in message
    summary = cli_json("import", "rag-answers", other, "--replace", db=target)
    assert (summary["new"], summary["replaced"], summary["unchanged"]) == (0, 1, 2)
    assert rows(target, "SELECT passage_id FROM response_citations WHERE run = 'rag-b'", {}) == [("doc-c:0",)]


# ------------------------------------------------------------------------------------------ refused

MALFORMED = {
    "citation index past the references": (
        "rag-answers",
        '{"run_id": "r", "topic_id": "1-1_1", "references": ["d:1"], "answer": [{"text": "A.", "citations": [0]}]}\n'
        '{"run_id": "r", "topic_id": "1-1_2", "references": ["d:1"], "answer": [{"text": "B.", "citations": [1]}]}\n',
        (":2", "['answer'][0]['citations'][0]", "an index into references"),
    ),
    "cited id not among the references": (
        "rag-answers",
        '{"metadata": {"run_id": "r", "narrative_id": "1-1_1"}, "references": ["d:1"], '
        '"answer": [{"text": "A.", "citations": ["d:2"]}]}\n',
        (":1", "a segment id listed in references"),
    ),
    "empty answer": (
        "rag-answers",
        '{"run_id": "r", "topic_id": "1-1_1", "references": [], "answer": []}\n',
        (":1", "at least one answer sentence"),
    ),
    "not JSON": ("rag-answers", '{"run_id": "r",\n', (":1", "one JSON object per line")),
    "a turn the store lacks": (
        "rag-answers",
        '{"run_id": "r", "topic_id": "9-9_9", "references": [], "answer": [{"text": "A.", "citations": []}]}\n',
        (":1", "a turn id present in the store", "9-9_9"),
    ),
    "two runs under one name": (
        "rag-answers",
        '{"run_id": "r", "topic_id": "1-1_1", "references": [], "answer": [{"text": "A."}]}\n'
        '{"run_id": "s", "topic_id": "1-1_2", "references": [], "answer": [{"text": "B."}]}\n',
        ("answers of one run",),
    ),
    "citation with a space": (
        "ikat-responses",
        '[{"number": "1-1", "responses": [{"turn_id": 1, "response": "A.", "citations": ["p 1"]}]}]',
        (":1", "[0]['responses'][0]['citations'][0]", "a passage id"),
    ),
    "not a list of conversations": ("ikat-responses", '{"number": "1-1"}', ("a list of conversations",)),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_malformed_files_are_refused_naming_file_and_place(store_target, files, tmp_path, case):
    kind, text, names = MALFORMED[case]
    run_cli("import", "topics", files[0], db=store_target, check=True)
    bad = tmp_path / "bad.file"
    bad.write_text(text, encoding="utf-8")
    extra = ("--run", "one") if case == "two runs under one name" else ()
    refused("import", kind, bad, *extra, db=store_target, names=("bad.file", *names))


def test_exports_that_cannot_be_written_are_refused(tmp_path, files):
    db = tmp_path / "s.db"
    run_cli("import", "topics", files[0], db=db, check=True)
    out = tmp_path / "never.jsonl"
    refused("export", "rag-answers", "--out", out, db=db, names=("no responses are stored",))
    run_cli("import", "ikat-responses", files[0], db=db, check=True)
    run_cli("import", "rag-answers", files[1], db=db, check=True)
    # whole-response citations have no place in the RAG layout: refused, no half-written file
    refused("export", "rag-answers", "--out", out, db=db, names=("citations given per sentence", "'topics'"))
    assert not out.exists()
    refused("export", "ikat-responses", "--out", out, db=db, names=("one run", "rag-a", "topics"))
    refused("export", "rag-answers", "--out", out, "--run", "nope", db=db, names=("'nope'", "rag-a, rag-b, topics"))
    refused("export", "rag-answers", db=db, names=("--out FILE",))
    refused("export", "qrels", "--source", "nist", "--run", "rag-a", db=db, names=("--run",))
    refused("import", "qrels", files[1], "--replace", db=db, names=("--replace",))


# --------------------------------------------------------------------------------- in-process fuzz

_serial = itertools.count()
texts = st.text(st.characters(codec="utf-8", min_codepoint=32, exclude_characters="\x85\u2028\u2029"), max_size=20)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(texts.filter(str.strip).map(str.strip), st.lists(st.integers(0, 3), max_size=3)),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from(["trec-rag-2024", "trec-rag-2025"]),
)
def test_any_rag_answer_comes_back_equal(tmp_path_factory, sentences, layout):
    """Whatever the sentences and citations (repeats included), import then export gives equal records."""
    db_path, folder = fuzz_store(tmp_path_factory)
    name = f"fuzz{next(_serial)}"
    head = {"run_id": name, "topic_id": "1-1_1"}
    if layout == "trec-rag-2025":
        head = {"metadata": {"run_id": name, "narrative_id": "1-1_1", "type": "manual"}}
    line = {
        **head,
        "references": ["d:0", "d:1", "d:2", "d:3"],
        "answer": [{"text": t, "citations": c} for t, c in sentences],
    }
    source = folder / f"{name}.jsonl"
    source.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    with open_db(db_path) as db:
        load_file(db, "rag-answers", source)
        out = folder / f"{name}.out.jsonl"
        response_files.export_file(db, "rag-answers", out, runs=[name])
        assert parse_rag_answers(out) == parse_rag_answers(source)
        assert load_file(db, "rag-answers", out)["unchanged"] == 1


_FUZZ: dict = {}


def fuzz_store(factory):
    if not _FUZZ:
        folder = factory.mktemp("fuzz")
        topics = folder / "topics.json"
        topics.write_text(json.dumps(TOPICS), encoding="utf-8")
        with open_db(folder / "fuzz.db") as db:
            load_file(db, "topics", topics)
        _FUZZ.update(db=folder / "fuzz.db", folder=folder)
    return _FUZZ["db"], _FUZZ["folder"]


def test_the_service_refuses_an_unknown_kind_and_a_missing_run(tmp_path, files):
    with open_db(tmp_path / "s.db") as db:
        load_file(db, "topics", files[0])
        with pytest.raises(ValueError, match="unknown response file kind"):
            response_files.read("answers", files[1])
        with pytest.raises(AssessError, match="no responses are stored"):
            response_files.records(db)
        with pytest.raises(FormatError, match="answers of one run"):
            response_files.read("rag-answers", files[1], run="x")
        with pytest.raises(AssessError, match="is not an id: U\\+0020"):
            response_files.read("ikat-responses", files[0], run="two words")


def test_an_upload_on_the_import_page_path_names_the_upload(tmp_path, files):
    """The Import & export page's call (load_upload with the run name and replace box): stored under the run,
    recorded as the organizer's import; a changed upload is refused naming the upload, not a temporary file."""
    from assess.services.loading import load_upload

    with open_db(tmp_path / "s.db") as db:
        load_file(db, "topics", files[0])
        data = files[0].read_bytes()
        summary = load_upload(db, "ikat-responses", "topics 2025.json", data, run="gpt", replace=False, by="olga")
        assert (summary["responses"], summary["new"]) == (3, 3)
        assert [r["run"] for r in stored.responses(db)] == ["gpt", "gpt", "gpt"]
        changed = data.replace(b"Green tea.", b"Black tea.")
        with pytest.raises(FormatError) as caught:
            load_upload(db, "ikat-responses", "topics 2025.json", changed, run="gpt", replace=False, by="olga")
        assert str(caught.value).startswith("topics 2025.json: expected the response stored for run 'gpt'")
        assert "a different text" in str(caught.value) and "/tmp" not in str(caught.value)
        assert load_upload(db, "ikat-responses", "t.json", changed, run="gpt", replace=True)["replaced"] == 1
        assert stored.response(db, "gpt", "1-1_2")["text"] == "Black tea."
