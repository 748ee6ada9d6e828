"""Fuzz every reader with arbitrary bytes and arbitrary JSON: the outcome is a FormatError or a valid
import, never another exception, and a refused import leaves the store file byte for byte as it was."""

from __future__ import annotations

import functools
import json
import sqlite3
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assess.errors import FormatError
from assess.formats.reading import id_problem
from assess.services.loading import load_file
from store import open_db
from tests.helpers import ROOT, snapshot

DEMO = ROOT / "assets" / "demo"
KINDS = ("topics", "qrels", "ptkb-qrels", "run", "passages", "nuggets", "responses", "ntr-labels")
OPTIONS = {"ntr-labels": {"nugget_source": "gold"}}


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory, demo_copy):
    path = demo_copy(tmp_path_factory.mktemp("fuzz") / "demo.db")
    db = open_db(path)
    db.raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # SQLite only: these tests compare the file's bytes
    db.close()
    return path


@functools.cache
def demo_snapshot(demo_db) -> str:
    """The digest of the demo store's rows, computed once: every example starts from an exact copy of it."""
    return snapshot(demo_db)


def attempt(demo_db, tmp_path, kind: str, content: bytes) -> None:
    """Import ``content`` as ``kind`` into a copy of the demo store: refused cleanly or imported."""
    db_path = tmp_path / "f.db"
    db_path.unlink(missing_ok=True)
    src, dst = sqlite3.connect(demo_db), sqlite3.connect(db_path)
    src.backup(dst)
    src.close()
    dst.close()
    before_bytes, before = db_path.read_bytes(), demo_snapshot(demo_db)  # the copy's rows are the demo's
    path = tmp_path / f"input.{kind}"
    path.write_bytes(content)
    db = open_db(db_path)
    try:
        load_file(db, kind, path, source="fuzz", **OPTIONS.get(kind, {}))
    except FormatError as exc:
        assert str(exc).startswith(str(path)) or str(exc).startswith("--"), exc  # the input is named
        db.close()
        # The store unchanged: the file byte for byte as it was (no write-ahead log beside it) holds the demo's
        # rows; any other file must hold them too (a snapshot is the costly half of an example, taken only then).
        same_file = db_path.read_bytes() == before_bytes and not Path(f"{db_path}-wal").exists()
        assert same_file or snapshot(db_path) == before
    else:
        db.close()


# bytes near the formats: fragments of good lines, separators, digits of other scripts, controls
_PIECES = st.sampled_from(
    [
        b"101_1",
        b"102_3",
        b" ",
        b"\t",
        b"\n",
        b"\r\n",
        b"0",
        b"Q0",
        b"3",
        b"-0",
        b"+2",
        "٢".encode(),
        "\u00a0".encode(),
        b"\x00",
        b"\x0b",
        b"demo-doc-001:0",
        b"0_101_1_1_demo-bm25",
        b"1.5",
        b"1e309",
        b"nan",
        b"\xff",
        b"\xef\xbb\xbf",
        b"{",
        b"}",
        b"[",
        b'"',
        b":",
        b",",
        b"\\ud800",
    ]
)
_BYTES = st.one_of(st.binary(max_size=200), st.lists(_PIECES, max_size=40).map(b"".join))

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(["101_1", "[1]", "1", "demo-bm25"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.one_of(st.text(max_size=8), st.sampled_from(["101_1", "[1]", "text", "turns"])), children, max_size=4
        )
    ),
    max_leaves=20,
)

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("kind", KINDS)
@FUZZ
@given(content=_BYTES)
def test_arbitrary_bytes(demo_db, tmp_path, kind, content):
    attempt(demo_db, tmp_path, kind, content)


@pytest.mark.parametrize("kind", ("topics", "nuggets", "responses", "passages"))
@FUZZ
@given(value=_JSON)
def test_arbitrary_json(demo_db, tmp_path, kind, value):
    text = json.dumps(value) if kind != "passages" else "\n".join(json.dumps(v) for v in (value, value))
    attempt(demo_db, tmp_path, kind, text.encode())


_BAD_CATEGORIES = {"Cc", "Cf", "Cs", "Zs", "Zl", "Zp"}


@settings(max_examples=500, deadline=None)
@given(st.text(min_size=1, max_size=30))
def test_the_id_rule_refuses_every_control_format_surrogate_or_space_character(text):
    bad = any(unicodedata.category(c) in _BAD_CATEGORIES or c.isspace() for c in text)
    assert (id_problem(text) is not None) == bad


def test_the_id_rule_over_all_of_unicode():
    """Every code point: refused as an id exactly when it is a control, format, surrogate or space character."""
    wrong = [
        hex(code)
        for code in range(0x110000)
        if (id_problem(chr(code)) is not None)
        != (unicodedata.category(chr(code)) in _BAD_CATEGORIES or chr(code).isspace())
    ]
    assert wrong == []


_RUN_PIECES = st.sampled_from(
    [b"101_1", b"101_2", b"999_9", b" ", b"\t", b"\n", b"Q0", b"demo-doc-001:0", b"demo-doc-002:1", b"1", b"-1"]
    + [b"2.5", b"1e309", b"-0", b"x", b"demo-bm25", b"other", b"\xc3\xa9", b"\x00", b"\r\n"]
)
_RUN_LINE = st.one_of(
    st.lists(_RUN_PIECES, min_size=1, max_size=8).map(b" ".join),
    st.tuples(  # a well-formed line (its turn may be unknown, its key a repeat)
        st.sampled_from([b"101_1", b"101_2", b"101_2", b"999_9"]),
        st.sampled_from([b"demo-doc-001:0", b"demo-doc-002:1", b"d:\xc3\xa9", b"z"]),
        st.sampled_from([b"1", b"20"]),
        st.sampled_from([b"2.5", b"-0", b"1e300", b"2.50"]),
        st.sampled_from([b"demo-bm25", b"other"]),
    ).map(lambda f: b"%s Q0 %s %s %s %s" % f),
)


@FUZZ
@given(lines=st.lists(_RUN_LINE, max_size=30), block=st.sampled_from([8, 32, 200]))
def test_run_shaped_bytes_in_small_blocks(demo_db, tmp_path, lines, block):
    """Runs are streamed block by block: with blocks of a few bytes too, a FormatError (store unchanged) or an import."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("assess.formats.reading.BLOCK_BYTES", block)
        attempt(demo_db, tmp_path, "run", b"\n".join(lines))


# ------------------------------------------------------------- responses with citations (issue 16)
# The readers of assess/formats/responses.py: arbitrary bytes, arbitrary JSON and RAG-shaped lines
# give records or a FormatError naming the file, never another exception.

_RAG_JSON = st.fixed_dictionaries(
    {},
    optional={
        "run_id": st.sampled_from(["r1", "", " r", 1, None]),
        "topic_id": st.sampled_from(["1", 2, True, "a b", None]),
        "metadata": st.one_of(_JSON, st.fixed_dictionaries({"run_id": st.just("r"), "narrative_id": st.just(1)})),
        "references": st.one_of(_JSON, st.lists(st.sampled_from(["p:1", "p:2", "", "p 3", 4]), max_size=4)),
        "answer": st.one_of(
            _JSON,
            st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "text": st.one_of(st.text(max_size=20), st.integers()),
                        "citations": st.lists(
                            st.one_of(st.integers(-2, 5), st.sampled_from(["p:1", "p:9", True, 1.5])), max_size=4
                        ),
                    },
                ),
                max_size=3,
            ),
        ),
    },
)


def _read_responses(reader, path):
    from assess.formats import responses

    try:
        records = getattr(responses, reader)(path)
    except FormatError as exc:
        assert str(exc).startswith(str(path)), exc
        return
    for record in records:  # what is read is consistent
        assert all(record.text[s.start : s.end] == s.text for s in record.sentences)


@pytest.mark.parametrize("reader", ("parse_rag_answers", "parse_ikat_responses"))
@FUZZ
@given(content=_BYTES)
def test_response_readers_on_arbitrary_bytes(tmp_path, reader, content):
    path = tmp_path / "responses.in"
    path.write_bytes(content)
    _read_responses(reader, path)


@pytest.mark.parametrize("reader", ("parse_rag_answers", "parse_ikat_responses"))
@FUZZ
@given(value=_JSON)
def test_response_readers_on_arbitrary_json(tmp_path, reader, value):
    path = tmp_path / "responses.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    _read_responses(reader, path)


@FUZZ
@given(lines=st.lists(_RAG_JSON, min_size=1, max_size=3))
def test_rag_answer_reader_on_answer_shaped_lines(tmp_path, lines):
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    _read_responses("parse_rag_answers", path)


# ------------------------------------------------------------- score inputs: nuggetizer layouts and NtN

_NUGGETIZER_NUGGET = st.fixed_dictionaries(
    {
        "text": st.one_of(st.sampled_from(["a", "b", "", " "]), st.integers(), st.none()),
        "importance": st.sampled_from(["vital", "okay", "high", 1]),
    },
    optional={"assignment": st.sampled_from(["support", "partial_support", "not_support", "maybe", 2])},
)
_NUGGETIZER_LINE = st.fixed_dictionaries(
    {},
    optional={
        "qid": st.sampled_from(["0_1", "0_2", "", "a b", 7]),
        "run_id": st.sampled_from(["r1", "r2", None, "", 3]),
        "nuggets": st.one_of(st.lists(_NUGGETIZER_NUGGET, max_size=4), st.text(max_size=3), st.none()),
    },
)


def _read_score_input(reader: str, path) -> None:
    """A score input reader: records, or a FormatError naming the file; never another exception."""
    from assess.formats import nuggetizer

    try:
        records = getattr(nuggetizer, reader)(path)
    except FormatError as exc:
        assert str(exc).startswith(str(path)), exc
        return
    for record in records:
        assert record.importance in ("vital", "okay") and record.text.strip() and record.key.startswith("[")


@pytest.mark.parametrize("reader", ("parse_nuggetizer_nuggets", "parse_nuggetizer_assignments"))
@FUZZ
@given(content=_BYTES)
def test_nuggetizer_readers_on_arbitrary_bytes(tmp_path, reader, content):
    path = tmp_path / "nuggetizer.jsonl"
    path.write_bytes(content)
    _read_score_input(reader, path)


@pytest.mark.parametrize("reader", ("parse_nuggetizer_nuggets", "parse_nuggetizer_assignments"))
@FUZZ
@given(lines=st.lists(st.one_of(_NUGGETIZER_LINE, _JSON), min_size=1, max_size=4))
def test_nuggetizer_readers_on_layout_shaped_lines(tmp_path, reader, lines):
    path = tmp_path / "nuggetizer.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    _read_score_input(reader, path)


_NTN_ENTRY = st.one_of(
    _JSON,
    st.fixed_dictionaries(
        {"response": st.one_of(st.lists(st.sampled_from(["r1", "r2", "", 5]), max_size=3), st.text(max_size=3))},
        optional={
            "pairs": st.lists(st.lists(st.sampled_from(["r1", "r2", "[1]", 0]), max_size=3), max_size=3),
            "extra": st.none(),
        },
    ),
)


@FUZZ
@given(
    value=st.one_of(
        _JSON,
        st.dictionaries(st.sampled_from(["runA", ""]), st.dictionaries(st.sampled_from(["0_1", "a b"]), _NTN_ENTRY)),
    )
)
def test_ntn_reader_on_arbitrary_json(tmp_path, value):
    from assess.services.scores import ntn_matches

    path = tmp_path / "ntn.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    try:
        runs = ntn_matches(str(path))
    except FormatError as exc:
        assert str(exc).startswith(str(path)), exc
        return
    for turns in runs.values():
        for entry in turns.values():  # what is read is consistent: lists of ids, pairs on listed ids
            assert isinstance(entry.response, list) and len(set(entry.response)) == len(entry.response)
            assert all(r in entry.response for r, _ in entry.pairs)
