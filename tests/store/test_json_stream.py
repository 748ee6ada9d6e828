"""JSON and JSONL inputs read incrementally (issue 21): records come one at a time, before the rest of
the file is read; errors still name the file, the line (or JSON path) and expected vs found, as the
whole-file parser does; an import that fails in a later block leaves the store unchanged.

Memory itself is measured by tests/benchmarks/bench_json.py, not here."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assess.errors import FormatError
from assess.formats import reading
from assess.formats.ikat import iter_topics
from assess.formats.reading import JsonRecords, json_path_line, parse_json_text
from assess.formats.responses import iter_rag_answers
from assess.services.loading import load_file, load_upload
from store import open_db
from store.db import value
from tests.helpers import snapshot


class Recording(io.BytesIO):
    """A binary file object that remembers how far it has been read."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self.furthest = 0

    def read(self, size: int = -1) -> bytes:
        data = super().read(size)
        self.furthest = max(self.furthest, self.tell())
        return data


def conversation(number: int, turns: int = 3, text: str = "x" * 500) -> dict:
    return {
        "number": number,
        "title": f"c{number}",
        "ptkb": {"1": "I like tea.", "2": "I live in Delft."},
        "turns": [
            {"turn_id": t, "utterance": "u", "resolved_utterance": "r", "response": text, "ptkb_provenance": [1]}
            for t in range(1, turns + 1)
        ],
    }


def topics_bytes(count: int, **kwargs) -> bytes:
    return json.dumps([conversation(n, **kwargs) for n in range(count)], indent=1).encode()


# ------------------------------------------------------------------------------- incrementality


def test_the_first_conversation_comes_before_the_end_of_the_file_is_read():
    data = topics_bytes(3000)  # about 5.5 MB
    upload = Recording(data)
    conversations = iter_topics(upload, name="big.json")
    first = next(conversations)
    assert first.id == "0" and len(first.turns) == 3
    assert upload.furthest <= 2 * reading.BLOCK_BYTES < len(data)
    assert sum(1 for _ in conversations) == 2999  # and the rest is there
    assert upload.furthest == len(data)


def test_records_are_read_a_block_at_a_time_from_a_file_object():
    data = json.dumps({f"t{i}": {"[1]": "n" * 300} for i in range(30_000)}).encode()  # about 10 MB
    upload = Recording(data)
    records = iter(JsonRecords(upload, "nuggets.json"))
    for seen, _record in enumerate(records, start=1):
        if seen == 10_000:
            break
    assert upload.furthest < len(data) * 0.5  # a third of the records, well under half the file read


def test_a_jsonl_answer_file_gives_its_first_answer_before_a_bad_last_line_is_read(tmp_path):
    path = tmp_path / "answers.jsonl"
    line = {"run_id": "r", "topic_id": "t0", "references": ["p"], "answer": [{"text": "A.", "citations": [0]}]}
    with open(path, "w") as out:
        for n in range(20_000):  # about 2 MB: more than one block of lines
            out.write(json.dumps({**line, "topic_id": f"t{n}"}) + "\n")
        out.write("{not json\n")
    answers = iter_rag_answers(path)
    assert next(answers).turn_id == "t0"  # given before the broken line at the end is read
    with pytest.raises(FormatError, match=r"answers.jsonl:20001: expected one JSON object per line"):
        list(answers)


# ------------------------------------------------------------------ the same values and errors


@pytest.fixture(params=[1, 2, 3, 7, 64, 2**20], ids=lambda n: f"reads-of-{n}")
def small_reads(request, monkeypatch):
    """Read the file this many bytes at a time, so that records, strings, escapes and UTF-8 characters
    are cut at every possible place between two reads."""
    monkeypatch.setattr(reading, "BLOCK_BYTES", request.param)
    return request.param


def records_of(data: bytes, name: str = "f.json") -> tuple[type, list]:
    with JsonRecords(io.BytesIO(data), name) as records:
        return records.kind, [(key, value) for key, value, _check in records]


VALID = [
    b"[]",
    b" {}\n",
    b'[1, -2.5e3, "a", true, null, {"k": [1, {"x": "y"}]}, []]',
    '\ufeff[{"t\u00e9": "caf\u00e9 \U0001f600 \\u00e9 \\" \\\\ ] } [ {"}]'.encode(),
    b'{"a": {"b": 1},\n "c": [1, 2, 3],\n "d": "\\\\"}',
    b'{"a": 1, "a": 1}',  # the same value twice: given once
    b'\n\n  [\n  {"deep": ' + b"[" * 150 + b"]" * 150 + b"}\n]\n",
    b'"just a string"',
    b"42",
]


@pytest.mark.parametrize("data", VALID, ids=range(len(VALID)))
def test_records_are_the_values_the_whole_file_parser_gives(data, small_reads):
    whole = parse_json_text("f.json", data.decode("utf-8-sig"))
    kind, records = records_of(data)
    assert kind is type(whole)
    if isinstance(whole, list):
        assert [value for _index, value in records] == whole
        assert [index for index, _value in records] == list(range(len(whole)))
    elif isinstance(whole, dict):
        assert dict(records) == whole and len(records) == len(whole)
    else:
        assert records == []


# (bytes, the line named, words of the message): each as the whole-file parser says it
MALFORMED = [
    (b"", 1, "expected complete, valid JSON, found the end of the file"),
    (b'[\n{"a": 1},\n{"b": 2}', 3, "found the end of the file"),
    (b'[\n{"a": 1},\n{"b": "unfinished', 3, "found Unterminated string starting at"),
    (b'[\n{"a": 1}\n{"b": 2}]', 3, "Expecting ',' delimiter"),
    (b'[\n{"a": 1},\n{"b" 2}]', 3, "Expecting ':' delimiter"),
    (b'[\n{"a": 1},\n]', 3, "Expecting value"),
    (b'{\n"a": 1,\n2: 3}', 3, "Expecting property name"),
    (b'{\n"a": 1\n"b": 2}', 3, "Expecting ',' delimiter"),
    (b"[1]\n\nx", 3, "Extra data"),
    (b'[\n{"a": 1},\n{"b": NaN}]', 3, "NaN and Infinity are not JSON"),
    (b'[\n{"a": 1},\n{"b": 1e999}]', 3, "a finite number"),
    (b'[\n{"a": 1},\n{"b": 99999999999999999999}]', 3, "at most 19 digits"),
    (b'[\n1,\n{"b": 1,\n "b": 2}]', 3, "the key 'b' twice with different values"),
    (b'{"a": 1,\n "b": 2,\n "a": 3}', 1, "the key 'a' twice with different values (again on line 3)"),
    (b'[\n1,\n"\\ud800"]', 3, "text without lone surrogates"),
    (b'{"x": 1,\n"\\udc00": 1}', 2, "keys without lone surrogates"),
    (b'[\n1,\n"a\\u0000"]', 3, "text without NUL characters"),
    (b'[\n1,\n"\xff"]', 3, "expected UTF-8 text, found the byte 0xff at column 2"),
    (b'[\n1,\n "\xc3\xa9\xc3"]', 3, "found the byte 0xc3 at column 5"),
    (b"[\n1,\n" + b"[" * 250 + b"]" * 250 + b"]", 3, "nested at most 200 levels"),
    (b'{"a":\n' + b'{"a":' * 200 + b"1" + b"}" * 201, 2, "nested at most 200 levels"),
    (b'[\n1,\n"a\tb"]', 3, "Invalid control character"),
]


@pytest.mark.parametrize(("data", "line", "words"), MALFORMED, ids=range(len(MALFORMED)))
def test_a_malformed_file_is_refused_naming_its_line(data, line, words, small_reads):
    with pytest.raises(FormatError) as err:
        records_of(data)
    assert err.value.line == line, str(err.value)
    assert str(err.value).startswith(f"f.json:{line}: expected ")
    assert words in str(err.value)


# where the stream says more than the whole-file parser: the line of the second key, the line of a
# scalar record itself (the whole-file parser names the line of the list holding it)
SAYS_MORE = {b'{"a": 1,\n "b": 2,\n "a": 3}', b'[\n1,\n"\\ud800"]', b'{"x": 1,\n"\\udc00": 1}'}


@pytest.mark.parametrize(("data", "line", "words"), MALFORMED, ids=range(len(MALFORMED)))
def test_the_error_is_the_whole_file_parsers(data, line, words, small_reads):
    with pytest.raises(FormatError) as whole:
        parse_json_text("f.json", reading._decode("f.json", data))
    with pytest.raises(FormatError) as streamed:
        records_of(data)
    if data in SAYS_MORE:
        assert str(streamed.value).startswith(str(whole.value).split(":", 2)[0])
    else:
        assert str(streamed.value) == str(whole.value)


def test_wrong_shapes_name_the_line_and_the_json_path(tmp_path, small_reads):
    path = tmp_path / "t.json"
    good = json.dumps(conversation(1), indent=1)
    bad = json.dumps(conversation(2), indent=1).replace('"turn_id": 3', '"turn_id": -3')
    text = "[" + good + ",\n" + bad + "]"
    path.write_text(text)
    with pytest.raises(FormatError) as err:
        list(iter_topics(path))
    # the line the whole-file reader named: where the turn holding the value starts
    assert err.value.line == reading.json_line(text, (1, "turns", 2, "turn_id")) == 64
    assert "an integer turn id 0..1,000,000,000 at [1]['turns'][2]['turn_id'], found int '-3'" in str(err.value)
    assert json_path_line(path, (1, "turns", 2, "turn_id")) == err.value.line
    path.write_text('{"not": "a list"}')
    with pytest.raises(FormatError, match=r"t.json:1: expected a list of conversations at the top level, found dict"):
        list(iter_topics(path))
    path.write_text("[\n\n3]")
    with pytest.raises(FormatError, match=r"t.json:3: expected a conversation object at \[0\], found int '3'"):
        list(iter_topics(path))
    path.write_text("  []")
    with pytest.raises(FormatError, match=r"t.json:1: expected at least one conversation at the top level"):
        list(iter_topics(path))


def test_the_size_limit_holds_for_a_file_object(monkeypatch):
    monkeypatch.setattr(reading, "MAX_JSON_BYTES", 1000)
    with pytest.raises(FormatError, match=r"big.json: expected a file of at most 0 MiB"):
        records_of(b"[" + b"1, " * 1000 + b"1]", "big.json")


def test_one_large_record_is_refused_in_bounded_memory(tmp_path):
    """Issue 33 N5: a 28 MB conversation was parsed whole (641 MB); it is refused once it passes the record limit,
    naming the file, its line and JSON path, with memory bounded by the limit, not the record."""
    import tracemalloc

    path = tmp_path / "big.json"
    small = json.dumps(conversation(1), indent=1)
    path.write_text(f"[\n{small},\n" + json.dumps(conversation(2, text="x" * 28_000_000)) + "\n]")
    tracemalloc.start()
    try:
        with pytest.raises(FormatError) as err:
            list(iter_topics(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    line = small.count("\n") + 3
    assert str(err.value) == (
        f"{path}:{line}: expected a record of at most 4 MiB at [1], found one running past 4,194,304 characters"
    )
    assert peak < 40 * 2**20, peak  # the limit and a read or two around it


def test_records_just_under_the_limit_and_long_runs_of_spaces_are_read(tmp_path):
    import tracemalloc

    near = conversation(1, turns=1, text="y" * (reading.MAX_RECORD_CHARS - 2_000))
    path = tmp_path / "near.json"
    path.write_text("[" + " " * 20_000_000 + json.dumps(near) + "]")
    tracemalloc.start()
    try:
        (read,) = list(iter_topics(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert read.turns[0].response == near["turns"][0]["response"]
    assert peak < 60 * 2**20, peak  # the 20 MB of spaces are not held


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.one_of(
        st.lists(st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(), st.lists)),
        st.dictionaries(
            st.text(), st.recursive(st.integers(0, 9) | st.text(), lambda c: st.dictionaries(st.text(), c))
        ),
    ),
    indent=st.sampled_from([None, 0, 1, 4]),
    ascii_only=st.booleans(),
    read=st.integers(1, 40),
)
def test_any_document_streams_to_the_values_parsed_whole(value, indent, ascii_only, read, monkeypatch):
    monkeypatch.setattr(reading, "BLOCK_BYTES", read)
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    try:
        whole = parse_json_text("f.json", text)
    except FormatError as exc:  # lone surrogates, NUL: the stream refuses them on the same line
        with pytest.raises(FormatError) as err:
            records_of(text.encode("utf-8", "surrogatepass"))
        assert err.value.line == exc.line
        return
    kind, records = records_of(text.encode())
    assert kind is type(whole)
    assert (dict(records) if kind is dict else [v for _k, v in records]) == whole


# ------------------------------------------------------------------------- imports in blocks


def test_a_topics_import_refused_in_a_later_block_leaves_the_store_unchanged(store_target, tmp_path, monkeypatch):
    from store import imports

    monkeypatch.setattr(imports, "TOPICS_PER_BLOCK", 2)
    db = open_db(store_target)
    path = tmp_path / "topics.json"
    path.write_bytes(topics_bytes(3))
    assert load_file(db, "topics", path)["conversations"] == 3
    before = snapshot(store_target)
    bad = [conversation(n) for n in range(10, 15)] + [{**conversation(15), "ptkb": ["a list"]}]
    path.write_text(json.dumps(bad, indent=1))
    with pytest.raises(FormatError, match=r"topics.json:\d+: expected a dict at \[5\]\['ptkb'\]"):
        load_file(db, "topics", path)  # blocks of 2: four conversations were written before the error
    missing_parent = [conversation(n) for n in range(20, 25)]
    missing_parent[4]["turns"][1]["parent"] = 9
    path.write_text(json.dumps(missing_parent, indent=1))
    with pytest.raises(FormatError) as err:
        load_file(db, "topics", path)
    assert "a parent turn given in the file or already stored" in str(err.value)
    assert err.value.line == json_path_line(path, (4, "turns", 1, "parent"))
    db.close()
    assert snapshot(store_target) == before


def test_a_rag_import_refused_in_a_later_block_leaves_the_store_unchanged(store_target, tmp_path, monkeypatch):
    from assess.services import response_files

    monkeypatch.setattr(response_files, "RESPONSES_PER_BLOCK", 2)
    db = open_db(store_target)
    topics = tmp_path / "topics.json"
    topics.write_bytes(topics_bytes(2))
    load_file(db, "topics", topics)
    answers = tmp_path / "answers.jsonl"
    lines = [
        {"run_id": "r", "topic_id": f"{c}_{t}", "references": ["p:1"], "answer": [{"text": "A.", "citations": [0]}]}
        for c in range(2)
        for t in range(1, 4)
    ]
    answers.write_text("".join(json.dumps(line) + "\n" for line in lines[:5]))
    summary = load_file(db, "rag-answers", answers)
    assert summary == {
        "responses": 5,
        "with_citations": 5,
        "citations": 5,
        "new": 5,
        "replaced": 0,
        "unchanged": 0,
        "runs": 1,
    }
    before = snapshot(store_target)
    changed = {**lines[4], "answer": [{"text": "B.", "citations": [0]}]}
    answers.write_text("".join(json.dumps(line) + "\n" for line in [lines[5], *lines[:4], changed]))
    with pytest.raises(FormatError, match=r"answers.jsonl:6: expected the response stored for run 'r'"):
        load_file(db, "rag-answers", answers)  # the new response of line 1 was written in the first block
    answers.write_text("".join(json.dumps(line) + "\n" for line in [lines[5], *lines[:4]]) + '{"run_id": 1}\n')
    with pytest.raises(FormatError, match=r"answers.jsonl:6: "):
        load_file(db, "rag-answers", answers)
    db.close()
    assert snapshot(store_target) == before


def test_an_upload_is_read_from_its_file_object(tmp_path):
    db = open_db(tmp_path / "s.db")
    upload = Recording(topics_bytes(4))
    assert load_upload(db, "topics", "my topics.json", upload)["turns"] == 12
    bad = Recording(b"[\n" + json.dumps(conversation(9)).encode() + b",\n{]")
    with pytest.raises(FormatError, match=r"^my topics.json:3: expected complete, valid JSON"):
        load_upload(db, "topics", "my topics.json", bad)
    db.close()


# --------------------------------------------------------------- CONE-RAG nuggets and responses


@pytest.fixture
def recorded_files(monkeypatch):
    """Every file the readers open comes as a :class:`Recording`: the test sees how far each was read."""
    opened: list[Recording] = []
    real = reading.open_regular

    def recording(path, limit=None):
        with real(path, limit) as handle:
            file = Recording(handle.read())
        opened.append(file)
        return file

    monkeypatch.setattr(reading, "open_regular", recording)
    return opened


def nugget_file(turns: int, per_turn: int = 10) -> dict:
    return {
        f"{c}_{t}": {
            f"[{k}]": {"text": f"nugget {k} of {c}_{t} " + "n" * 80, "relevance": "2"} for k in range(1, per_turn + 1)
        }
        for c in range(turns // 3 + 1)
        for t in range(1, 4)
        if c * 3 + t <= turns
    }


def test_nuggets_come_one_turn_at_a_time(tmp_path, recorded_files):
    from assess.formats.nuggets import iter_nuggets

    path = tmp_path / "nuggets.json"
    path.write_text(json.dumps(nugget_file(6000), indent=1))  # about 7 MB
    nuggets = iter_nuggets(path)
    first = next(nuggets)
    assert (first.turn_id, first.key, first.relevance) == ("0_1", "[1]", 2)
    (file,) = recorded_files
    assert file.furthest <= 2 * reading.BLOCK_BYTES < path.stat().st_size
    assert sum(1 for _ in nuggets) == 59_999


def test_cone_rag_responses_come_one_turn_at_a_time(tmp_path, recorded_files):
    from assess.formats.ikat import iter_responses

    path = tmp_path / "responses.json"
    document = {f"{c}_1": {"run-a": "r" * 500, "run-b": {"response": "s" * 500}} for c in range(8000)}
    path.write_text(json.dumps(document, indent=1))  # about 8 MB
    responses = iter_responses(path)
    assert next(responses)[:3] == ("0_1", "run-a", "r" * 500)
    assert recorded_files[0].furthest <= 2 * reading.BLOCK_BYTES < path.stat().st_size
    assert sum(1 for _ in responses) == 15_999


def test_an_error_line_is_found_reading_only_up_to_its_turn(tmp_path, recorded_files):
    """The line helpers of errors found after parsing (an unknown turn, an entry given twice) read the file
    one turn at a time and stop at the turn they look for: a big file costs no more memory than its import."""
    from assess.formats.nuggets import entry_line, raw_entries, turn_line
    from assess.formats.reading import json_line
    from assess.formats.responses import ikat_turn_line

    path = tmp_path / "nuggets.json"
    path.write_text(json.dumps(nugget_file(6000), indent=1))
    text = path.read_text()
    assert turn_line(path, "1_2") == json_line(text, ("1_2",))
    assert entry_line(path, ("1_2", "[3]")) == json_line(text, ("1_2", "[3]"))
    assert [file.furthest <= 2 * reading.BLOCK_BYTES < len(text) for file in recorded_files] == [True, True]
    assert raw_entries(path, "1_2", "[3]") == [
        ("1_2", "[3]")
    ]  # every spelling of the turn: to the end, a turn at a time
    topics = tmp_path / "topics.json"
    topics.write_bytes(topics_bytes(3000))
    recorded_files.clear()
    assert ikat_turn_line(topics, "2_3") == json_line(topics.read_text(), (2, "turns", 2))
    assert recorded_files[0].furthest <= 2 * reading.BLOCK_BYTES < topics.stat().st_size


def test_a_nugget_given_again_under_a_turn_id_spelt_otherwise_later_in_the_file(tmp_path):
    """Only the current turn's keys are kept while reading: a turn id met again later (with spaces
    around it) has its earlier keys read again, so a key given twice is still refused, or given once
    when the nugget is the same."""
    from assess.formats.nuggets import parse_nuggets

    path = tmp_path / "n.json"
    body = json.dumps({"text": "a nugget", "relevance": 1})
    other = json.dumps({"text": "another nugget", "relevance": 1})
    path.write_text('{"t1": {"[1]": A},\n "t2": {"[1]": A},\n " t1": {"[2]": A,\n  "[1]": A}}'.replace("A", body))
    with pytest.raises(FormatError, match=r"n.json:4: expected one nugget per turn and key \(\['t1'\]\['\[1\]'\] and"):
        parse_nuggets(path)
    path.write_text('{"t1": {"[1]": A},\n "t2": {"[1]": A},\n " t1": {"1": A}}'.replace("A", body))
    assert [(n.turn_id, n.key) for n in parse_nuggets(path)] == [("t1", "[1]"), ("t2", "[1]")]
    path.write_text('{"t1": {"[1]": A},\n "t2": {},\n " t1": {"1": B}}'.replace("A", body).replace("B", other))
    with pytest.raises(FormatError, match=r"n.json:3: expected one nugget per key \(\[1\] is given twice"):
        parse_nuggets(path)


def test_a_nugget_import_refused_in_a_later_block_leaves_the_store_unchanged(store_target, tmp_path, monkeypatch):
    from store import rag_imports

    monkeypatch.setattr(rag_imports, "NUGGETS_PER_BLOCK", 3)
    db = open_db(store_target)
    topics = tmp_path / "topics.json"
    topics.write_bytes(topics_bytes(3))
    load_file(db, "topics", topics)
    path = tmp_path / "nuggets.json"
    path.write_text(json.dumps(nugget_file(3, per_turn=2), indent=1))
    assert load_file(db, "nuggets", path, source="s") == {"nuggets": 6, "turns": 3, "source": "s"}
    before = snapshot(store_target)
    later = nugget_file(9, per_turn=2)  # 18 nuggets: blocks of 3, the new turns' first
    later = {
        **{k: v for k, v in later.items() if k not in ("0_1",)},
        "0_1": {"[1]": {"text": "changed", "relevance": "2"}},
    }
    path.write_text(json.dumps(later, indent=1))
    with pytest.raises(FormatError, match=r"nuggets.json:\d+: expected the text stored for nugget \[1\] of turn '0_1'"):
        load_file(db, "nuggets", path, source="s")
    later["0_1"] = {"[1]": {"text": "x", "relevance": "9"}}
    path.write_text(json.dumps(later, indent=1))
    with pytest.raises(FormatError, match=r"nuggets.json:\d+: expected a relevance"):
        load_file(db, "nuggets", path, source="s")
    later["0_1"] = {"[1]": {"text": "x"}}
    path.write_text(json.dumps({**later, "9_9": {"[1]": "on no turn"}}, indent=1))
    with pytest.raises(FormatError) as err:
        load_file(db, "nuggets", path, source="s")
    assert "a turn id present in the store" in str(err.value) and err.value.line == json_path_line(path, ("9_9",))
    db.close()
    assert snapshot(store_target) == before


def test_a_dedup_import_in_blocks_keeps_the_file_nuggets_of_each_turn(tmp_path, monkeypatch):
    from store import rag_imports
    from store.db import rows

    monkeypatch.setattr(rag_imports, "NUGGETS_PER_BLOCK", 2)
    db = open_db(tmp_path / "s.db")
    topics = tmp_path / "topics.json"
    topics.write_bytes(topics_bytes(2))
    load_file(db, "topics", topics)
    full, subset = tmp_path / "full.json", tmp_path / "dedup.json"
    whole = nugget_file(4, per_turn=3)
    full.write_text(json.dumps(whole))
    load_file(db, "nuggets", full, source="s")
    # turn 0_1 keeps [1] and [3], split over two blocks and two spellings of its id; 0_2 keeps [2]; 0_3 and 1_1 untouched
    kept = {
        "0_1": {"[1]": whole["0_1"]["[1]"]},
        "0_2": {"[2]": whole["0_2"]["[2]"]},
        " 0_1": {"3": whole["0_1"]["[3]"]},
    }
    subset.write_text(json.dumps(kept))
    assert load_file(db, "nuggets", subset, source="s", dedup=True) == {"nuggets": 3, "turns": 2, "source": "s"}
    flags = {(r["turn_id"], r["key"]): r["in_dedup"] for r in rows(db, "SELECT turn_id, key, in_dedup FROM nuggets")}
    assert flags == {
        ("0_1", "[1]"): 1, ("0_1", "[2]"): 0, ("0_1", "[3]"): 1,
        ("0_2", "[1]"): 0, ("0_2", "[2]"): 1, ("0_2", "[3]"): 0,
        ("0_3", "[1]"): None, ("0_3", "[2]"): None, ("0_3", "[3]"): None,
        ("1_1", "[1]"): None, ("1_1", "[2]"): None, ("1_1", "[3]"): None,
    }  # fmt: skip
    db.close()


def test_a_responses_import_refused_in_a_later_block_leaves_the_store_unchanged(store_target, tmp_path, monkeypatch):
    from store import rag_imports

    monkeypatch.setattr(rag_imports, "NUGGETS_PER_BLOCK", 2)
    db = open_db(store_target)
    topics = tmp_path / "topics.json"
    topics.write_bytes(topics_bytes(2))
    load_file(db, "topics", topics)
    path = tmp_path / "responses.json"
    first = {f"{c}_{t}": {"r1": f"response {c} {t}"} for c in range(2) for t in range(1, 3)}
    path.write_text(json.dumps(first, indent=1))
    assert load_file(db, "responses", path) == {"responses": 4, "runs": 1}
    before = snapshot(store_target)
    again = {"1_3": {"r2": "new", "r1": "new"}, "0_3": {"r1": "new"}, **first, "1_2": {"r1": "changed"}}
    path.write_text(json.dumps(again, indent=1))
    with pytest.raises(FormatError, match=r"responses.json:\d+: expected the text stored for the response of run 'r1'"):
        load_file(db, "responses", path)  # three new responses were written in the first two blocks
    path.write_text(json.dumps({**again, "1_2": {"r1": "response 1 2", " r1": "response 1 2"}}, indent=1))
    with pytest.raises(FormatError, match=r"responses.json:\d+: expected one response per turn and key"):
        load_file(db, "responses", path)
    gold = {"1_3": {"manual": "g"}, "0_3": {"manual": "g"}, "0_1": {"manual": "g"}, " 1_3": {"other": "g"}}
    path.write_text(json.dumps(gold, indent=1))
    with pytest.raises(FormatError, match=r"responses.json:12: expected one gold response per turn \(turn '1_3'"):
        load_file(db, "responses", path, gold=True)
    db.close()
    assert snapshot(store_target) == before


def test_nuggetizer_nuggets_stream_line_by_line(tmp_path, store_target, monkeypatch):
    from assess.formats.nuggetizer import iter_nuggetizer_nuggets
    from store import rag_imports
    from store.db import rows

    path = tmp_path / "nuggets.jsonl"
    line = {"query": "q", "nuggets": [{"text": "n" * 100, "importance": "vital"}, {"text": "m", "importance": "okay"}]}
    with open(path, "w") as out:
        for n in range(20_000):  # about 3 MB: more than one block of lines
            out.write(json.dumps({**line, "qid": f"{n}_1"}) + "\n")
        out.write('{"qid": "0_1", "nuggets": []}\n')
    nuggets = iter_nuggetizer_nuggets(path)
    assert next(nuggets)[:2] == ("0_1", "[1]")  # given before the qid repeated on the last line is read
    with pytest.raises(FormatError, match=r"nuggets.jsonl:20001: expected each qid once \(qid '0_1' is on line 1\)"):
        list(nuggets)
    monkeypatch.setattr(rag_imports, "NUGGETS_PER_BLOCK", 3)
    db = open_db(store_target)
    topics = tmp_path / "topics.json"
    topics.write_bytes(topics_bytes(2))
    load_file(db, "topics", topics)
    before = snapshot(store_target)
    path.write_text("".join(json.dumps({**line, "qid": q}) + "\n" for q in ("0_1", "0_2", "1_1", "7_7")))
    with pytest.raises(FormatError, match=r"nuggets.jsonl:4: expected a turn id present in the store"):
        load_file(db, "nuggetizer-nuggets", path, source="s")  # the first two blocks were written, labels too
    assert snapshot(store_target) == before
    path.write_text("".join(json.dumps({**line, "qid": q}) + "\n" for q in ("0_1", "0_2", "1_1")))
    summary = load_file(db, "nuggetizer-nuggets", path, source="s")
    assert summary == {"nuggets": 6, "turns": 3, "vital": 3, "okay": 3, "source": "s"}
    sql = "SELECT n.turn_id, n.key, l.importance FROM nuggets n JOIN nugget_importance_labels l ON l.nugget_id = n.id"
    assert sorted(tuple(r.values()) for r in rows(db, sql)) == [
        (t, k, 1 if k == "[1]" else 0) for t in ("0_1", "0_2", "1_1") for k in ("[1]", "[2]")
    ]
    db.close()


def test_rag_answers_replace_streams_too(tmp_path, recorded_files, monkeypatch):
    """``rag-answers --replace`` stages each block (and records its replaced responses) before the rest of
    the file is read: the first block is staged when only about a block of lines has been read."""
    from assess.services import response_files

    monkeypatch.setattr(response_files, "RESPONSES_PER_BLOCK", 50)
    db = open_db(tmp_path / "s.db")
    topics = tmp_path / "topics.json"
    topics.write_bytes(topics_bytes(700, text="x"))
    load_file(db, "topics", topics)
    line = {"run_id": "r", "references": ["p:1"], "answer": [{"text": "A" * 1200 + ".", "citations": [0]}]}
    ids = [f"{c}_{t}" for c in range(700) for t in range(1, 4)]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({**line, "topic_id": i}) + "\n" for i in ids))  # about 2.7 MB
    load_file(db, "rag-answers", answers)
    changed = {**line, "answer": [{"text": "B.", "citations": [0]}]}
    answers.write_text(
        "".join(json.dumps({**(changed if n % 500 == 0 else line), "topic_id": i}) + "\n" for n, i in enumerate(ids))
    )
    read_when_writing: list[int] = []
    real = response_files.stored.stage_responses

    def stage_responses(*args, **kwargs):
        read_when_writing.append(recorded_files[-1].furthest)
        return real(*args, **kwargs)

    monkeypatch.setattr(response_files.stored, "stage_responses", stage_responses)
    recorded_files.clear()
    summary = load_file(db, "rag-answers", answers, replace=True)
    assert (summary["responses"], summary["replaced"], summary["unchanged"]) == (2100, 5, 2095)
    assert summary["labels_on_replaced"] == {}
    assert read_when_writing[0] <= 2 * reading.BLOCK_BYTES < answers.stat().st_size
    assert len(read_when_writing) == 42
    db.close()


def test_nuggetizer_assignments_stream_and_a_refusal_in_a_later_block_leaves_the_store_unchanged(tmp_path):
    """An assignment file is read and stored a block of records at a time, inside one transaction."""
    from assess.formats.nuggetizer import iter_nuggetizer_assignment_records
    from assess.services import nuggetizer_files

    path = tmp_path / "run.jsonl"
    record = {"run_id": "r", "nuggets": [{"text": "n" * 100, "importance": "vital", "assignment": "support"}]}
    with open(path, "w") as out:
        for n in range(20_000):  # about 3 MB: more than one block of lines
            out.write(json.dumps({**record, "qid": f"{n}_1"}) + "\n")
        out.write('{"qid": "0_1", "run_id": "r", "nuggets": []}\n')
    records = iter_nuggetizer_assignment_records(path)
    assert next(records).qid == "0_1"  # given before the pair repeated on the last line is read
    with pytest.raises(FormatError, match=r"run.jsonl:20001: expected each \(run_id, qid\) once"):
        list(records)

    db = open_db(tmp_path / "a.db")
    from assess.services.loading import load_demo

    load_demo(db)
    gold_turn = value(db, "SELECT turn_id FROM nuggets WHERE source = 'gold' ORDER BY turn_id LIMIT 1")
    text = value(db, "SELECT text FROM nuggets WHERE source = 'gold' AND turn_id = :t ORDER BY id", {"t": gold_turn})
    run = value(db, "SELECT run FROM responses WHERE turn_id = :t ORDER BY run LIMIT 1", {"t": gold_turn})
    good = {"qid": gold_turn, "run_id": run, "nuggets": [{"text": text, "importance": "okay", "assignment": "support"}]}
    bad = {**good, "run_id": "no-such-run"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    nuggetizer_files.ASSIGNMENTS_PER_BLOCK = 1
    try:
        before = snapshot(tmp_path / "a.db")
        with pytest.raises(FormatError, match=r"run.jsonl:2: expected a run_id and qid whose response is stored"):
            nuggetizer_files.import_assignments(db, path, source="amy", nugget_source="gold")
        assert snapshot(tmp_path / "a.db") == before  # the first block's label rolled back with the rest
        path.write_text(json.dumps(good) + "\n")
        summary = nuggetizer_files.import_assignments(db, path, source="amy", nugget_source="gold")
    finally:
        nuggetizer_files.ASSIGNMENTS_PER_BLOCK = 2_000
    assert summary["labels"] + summary["unknown_nuggets"] == 1
    db.close()
