"""Hostile files, each refused by `python -m assess import` with exit 2, one line naming the file and
the place (line or JSON path), no traceback, and the store byte for byte as before."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3

import pytest

from tests.helpers import ROOT, run_cli, snapshot

DEMO = ROOT / "assets" / "demo"
Q = "101_1 0 demo-doc-001:0 3\n"  # a good qrels line of the demo
RUN_LINES = b"".join(b"101_1 Q0 p%d 1 1 r\n" % n for n in range(60_000))  # 1.1 MB: more than one block


def deep(levels: int) -> bytes:
    return ("[" * levels + "]" * levels).encode()


def topics(turn: dict | None = None, **conv) -> bytes:
    body = {"number": 7, "title": "t", "ptkb": {"1": "s"}, "turns": [turn or {"turn_id": 1, "utterance": "u"}]}
    body.update(conv)
    return json.dumps([body], indent=1).encode()


# (case id, import kind, file content, extra arguments, expected line (None: no line), words in the message)
HOSTILE = [
    # reading: what the file is
    ("empty-qrels", "qrels", b"", [], None, "at least one qrels line"),
    ("blank-qrels", "qrels", b"\n  \n\t\n", [], None, "at least one qrels line"),
    ("empty-topics", "topics", b"", [], 1, "complete, valid JSON"),
    ("empty-run", "run", b"", [], None, "at least one run line"),
    # encoding
    ("invalid-utf8", "qrels", Q.encode() + b"101_1 0 \xff 1\n", [], 2, "UTF-8"),
    ("encoded-surrogate", "qrels", Q.encode() + b"101_1 0 \xed\xa0\x80 1\n", [], 2, "UTF-8"),
    ("overlong-utf8", "run", b"101_1 Q0 \xc0\xaf 1 1 r\n", [], 1, "UTF-8"),
    ("bom-mid-file", "qrels", Q.encode() + "\ufeff101_1 0 x 1\n".encode(), [], 2, "U+FEFF"),
    ("lone-surrogate-topics", "topics", topics(title="\\ud800x").replace(b"\\\\", b"\\"), [], 2, "lone surrogates"),
    ("lone-surrogate-nuggets", "nuggets", b'{"101_1": {"[1]": {"text": "a\\udc00"}}}', [], 1, "lone surrogates"),
    # JSON structure and numbers
    ("deep-json-topics", "topics", deep(100_000), [], 1, "nested at most 200 levels"),
    ("deep-json-500", "nuggets", b'{"101_1": ' + deep(500) + b"}", [], 1, "nested at most 200 levels"),
    ("deep-json-responses", "responses", b'{"a":' * 3000 + b"1" + b"}" * 3000, [], 1, "nested at most 200 levels"),
    ("float-overflow", "topics", topics(year=1).replace(b'"year": 1', b'"year": 1e309'), [], 14, "a finite number"),
    ("nan-literal", "nuggets", b'{"101_1": {"[1]": {"text": "a", "relevance": NaN}}}', [], 1, "NaN and Infinity"),
    ("infinity-literal", "responses", b'{"101_1": {"r": -Infinity}}', [], 1, "NaN and Infinity"),
    ("huge-integer", "topics", topics().replace(b'"number": 7', b'"number": ' + b"9" * 5000), [], 3, "19 digits"),
    (
        "int-beyond-64-bits",
        "nuggets",
        b'{"101_1": {"[1]": {"text": "a", "relevance": 9999999999999999999}}}',
        [],
        1,
        "64 bits",
    ),
    ("25-digit-turn-id", "topics", topics({"turn_id": "1234567890123456789012345"}), [], 9, "an integer turn id"),
    ("negative-turn-id", "topics", topics({"turn_id": -3}), [], 9, "an integer turn id"),
    ("arabic-turn-id", "topics", topics({"turn_id": "٣"}), [], 9, "an integer turn id"),
    ("bool-turn-id", "topics", topics({"turn_id": True}), [], 9, "an integer turn id"),
    (
        "repeated-json-key",
        "responses",
        b'{"101_1": {"r": "a"},\n "101_1": {"r": "b"}}',
        [],
        1,
        "twice with different values",
    ),
    (
        "ptkb-key-twice",
        "topics",
        b'[{"number": 7, "ptkb": {"1": "a", "1 ": "b"}, "turns": []}]',
        [],
        1,
        "one text per PTKB",
    ),
    ("record-over-4-mib", "topics", topics(title="x" * 5_000_000), [], 2, "a record of at most 4 MiB at [0]"),
    (
        "nugget-turn-over-4-mib",
        "nuggets",
        b'{"101_1": {"[1]": "' + b"n" * 5_000_000 + b'"}}',
        [],
        1,
        "MiB at ['101_1']",
    ),
    ("truncated-json", "topics", b'[{"number": 7,\n', [], 2, "complete, valid JSON"),
    # grades and numbers in line files
    ("grade-minus-zero", "qrels", Q.encode() + b"101_1 0 x -0\n", [], 2, "no sign"),
    ("grade-plus-two", "qrels", Q.encode() + b"101_1 0 x +2\n", [], 2, "no sign"),
    ("grade-arabic-digit", "qrels", Q.encode() + "101_1 0 x ٢\n".encode(), [], 2, "ASCII digits"),
    ("grade-fullwidth-digit", "qrels", Q.encode() + "101_1 0 x ２\n".encode(), [], 2, "ASCII digits"),
    ("grade-5000-digits", "qrels", Q.encode() + b"101_1 0 x " + b"1" * 5000 + b"\n", [], 2, "a grade 0..4"),
    ("grade-out-of-range", "qrels", Q.encode() + b"101_1 0 x 5\n", [], 2, "a grade 0..4"),
    ("ptkb-grade-5", "ptkb-qrels", b"101_1 0 1 5\n", [], 1, "a grade 0..4"),
    ("rank-negative", "run", b"101_1 Q0 a -1 1.0 r\n", [], 1, "an integer rank"),
    ("score-nan", "run", b"101_1 Q0 a 1 nan r\n", [], 1, "a numeric score"),
    ("score-overflow", "run", b"101_1 Q0 a 1 1e309 r\n", [], 1, "finite"),
    ("score-underscore", "run", b"101_1 Q0 a 1 1_000 r\n", [], 1, "a numeric score"),
    ("ntr-label-2", "ntr-labels", b"0_101_1_1_demo-bm25\t2\n", ["--nuggets", "gold"], 1, "a label 0 or 1"),
    # separators, control characters, ids
    ("nbsp-separator", "qrels", Q.encode() + "101_1\u00a00 x 1\n".encode(), [], 2, "U+00A0"),
    ("vertical-tab-separator", "qrels", Q.encode() + b"101_1\x0b0 x 1\n", [], 2, "U+000B"),
    ("unit-separator", "run", b"101_1\x1fQ0 a 1 1 r\n", [], 1, "U+001F"),
    ("em-space-separator", "ntr-labels", "0_101_1_1_demo-bm25\u20031\n".encode(), ["--nuggets", "gold"], 1, "U+2003"),
    ("nul-in-id", "qrels", Q.encode() + b"101_1 0 x\x00y 1\n", [], 2, "U+0000"),
    ("zero-width-in-id", "run", "101_1 Q0 a\u200bb 1 1 r\n".encode(), [], 1, "U+200B"),
    ("lone-cr", "qrels", Q.encode() + b"101_1 0 x 1\r101_1 0 y 1\n", [], 2, "carriage return"),
    ("nul-in-passage-id", "passages", b'{"id": "a\\u0000b", "contents": "t"}\n', [], 1, "U+0000"),
    ("space-in-passage-id", "passages", b'{"id": "a b", "contents": "t"}\n', [], 1, "U+0020"),
    ("bool-passage-id", "passages", b'{"id": true, "contents": "t"}\n', [], 1, "string ids"),
    ("tab-in-turn-key", "nuggets", b'{"101\\t1": {"[1]": "a"}}', [], 1, "a turn id"),
    ("empty-run-name-in-json", "responses", b'{"101_1": {"": "a"}}', [], 1, "an empty id"),
    # repeated keys with different values
    (
        "passage-twice",
        "passages",
        b'{"id": "p", "contents": "a"}\n{"id": "p", "contents": "b"}\n',
        [],
        2,
        "one text per passage",
    ),
    ("nugget-1-and-[1]", "nuggets", b'{"101_1": {"[1]": "a", "1": "b"}}', [], 1, "one nugget per key"),
    ("nugget-relevance-3.9", "nuggets", b'{"101_1": {"[1]": {"text": "a", "relevance": 3.9}}}', [], 1, "(an integer)"),
    (
        "nugget-relevance-bool",
        "nuggets",
        b'{"101_1": {"[1]": {"text": "a", "relevance": true}}}',
        [],
        1,
        "(an integer)",
    ),
    ("qrels-conflict", "qrels", Q.encode() + b"101_1 0 demo-doc-001:0 2\n", [], 2, "one value per item"),
    ("run-repeat", "run", b"101_1 Q0 a 1 2 r\n101_1 Q0 a 2 1 r\n", [], 2, "each passage once per turn"),
    # runs are streamed: a repeat is found whatever block its first line was in, and under --name
    ("run-repeat-across-blocks", "run", RUN_LINES + b"101_1 Q0 p0 9 1 r\n", [], 60_001, "(it is on line 1)"),
    ("run-repeat-under-one-name", "run", b"101_1 Q0 a 1 2 r\n101_1 Q0 a 1 1 s\n", ["--name", "m"], 2, "on line 1)"),
    ("run-bad-line-before-unknown-turn", "run", b"999_9 Q0 a 1 2 r\n101_1 Q0 b 1 x r\n", [], 2, "a numeric score"),
    # references: errors name the file, never the database
    ("missing-parent-turn", "topics", topics({"turn_id": 2, "parent": 1}), [], 9, "a parent turn"),
    ("unknown-turn", "qrels", Q.encode() + b"999_1 0 x 1\n", [], 2, "a turn id present in the store"),
    ("unknown-nugget", "ntr-labels", b"0_101_1_99_demo-bm25\t1\n", ["--nuggets", "gold"], 1, "no such nugget"),
    # options
    ("depth-negative", "run", b"101_1 Q0 a 1 2 r\n", ["--depth", "-5"], None, "--depth: expected a number >= 0"),
    ("empty-run-name", "run", b"101_1 Q0 a 1 2 r\n", ["--name", ""], None, "--name: expected an id"),
    ("run-name-with-space", "run", b"101_1 Q0 a 1 2 r\n", ["--name", "my run"], None, "--name: expected an id"),
    ("source-with-newline", "qrels", Q.encode(), ["--source", "a\nb"], None, "--source: expected an id"),
]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory, demo_copy):
    return demo_copy(tmp_path_factory.mktemp("hostile") / "demo.db")


def copy_of(demo_db, tmp_path):
    db = tmp_path / "copy.db"
    src, dst = sqlite3.connect(demo_db), sqlite3.connect(db)
    src.backup(dst)
    src.close()
    dst.close()
    return db


def assert_refused(proc, db, before_bytes, before, where: str, words: str):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr  # one line
    assert lines[0].startswith(f"error: {where}"), lines[0]
    assert words in lines[0], lines[0]
    assert str(db) not in lines[0]  # the input is named, never the database
    assert db.read_bytes() == before_bytes and snapshot(db) == before


def test_there_are_at_least_forty_hostile_files():
    assert len(HOSTILE) >= 40 and len({case[0] for case in HOSTILE}) == len(HOSTILE)


@pytest.mark.parametrize("case, kind, content, extra, line, words", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_file_is_refused_cleanly(demo_db, tmp_path, case, kind, content, extra, line, words):
    db = copy_of(demo_db, tmp_path)
    path = tmp_path / f"{case}.in"
    path.write_bytes(content)
    before_bytes, before = db.read_bytes(), snapshot(db)
    proc = run_cli("import", kind, path, *extra, db=db, timeout=60)
    if "--" in words:  # an option is named, not the file
        where = words.split(":")[0]
    else:
        where = f"{path}:{line}:" if line is not None else f"{path}:"
    assert_refused(proc, db, before_bytes, before, where, words)


@pytest.mark.parametrize("special", ["fifo", "dev-zero", "directory", "symlink-to-fifo"])
def test_non_regular_files_are_refused_before_reading(demo_db, tmp_path, special):
    db = copy_of(demo_db, tmp_path)
    path = tmp_path / special
    if special == "fifo":
        os.mkfifo(path)
        found = "a FIFO"
    elif special == "symlink-to-fifo":
        os.mkfifo(tmp_path / "pipe")
        path.symlink_to(tmp_path / "pipe")
        found = "a FIFO"
    elif special == "dev-zero":
        path = "/dev/zero"
        found = "a character device"
    else:
        path.mkdir()
        found = "a directory"
    before_bytes, before = db.read_bytes(), snapshot(db)
    for kind in ("qrels", "topics", "passages"):
        proc = run_cli("import", kind, path, db=db, timeout=20)  # a FIFO or /dev/zero read would hang or fill memory
        assert_refused(proc, db, before_bytes, before, f"{path}: expected a regular file, found {found}", found)


def test_over_long_line_is_refused_without_reading_on(demo_db, tmp_path):
    from assess.formats.reading import MAX_LINE_BYTES

    db = copy_of(demo_db, tmp_path)
    path = tmp_path / "long.qrels"
    with open(path, "wb") as handle:
        handle.write(Q.encode())
        handle.write(b"x" * (MAX_LINE_BYTES + 10))
    before_bytes, before = db.read_bytes(), snapshot(db)
    proc = run_cli("import", "qrels", path, db=db)
    assert_refused(proc, db, before_bytes, before, f"{path}:2:", "lines of at most 4 MiB")


def test_bom_at_the_start_is_accepted_and_elsewhere_refused(demo_db, tmp_path):
    db = copy_of(demo_db, tmp_path)
    path = tmp_path / "bom.qrels"
    path.write_bytes(b"\xef\xbb\xbf" + Q.encode())
    proc = run_cli("import", "qrels", path, "--source", "bomtest", "--json", db=db, check=True)
    assert json.loads(proc.stdout)["labels"] == 1


def test_qrels_conflict_across_blocks_is_refused(demo_db, tmp_path, monkeypatch):
    """A repeat far apart (different read blocks) is found once the file is read; verbatim repeats are kept once."""
    from assess.errors import FormatError
    from assess.formats import reading, trec

    monkeypatch.setattr(reading, "BLOCK_BYTES", 64)
    path = tmp_path / "far.qrels"
    lines = [f"101_1 0 p:{i} {i % 5}\n" for i in range(40)]
    path.write_text("".join(lines) + "101_1 0 p:3 3\n" + "101_1 0 p:4 4\n")
    assert len(trec.parse_qrels(path)) == 40  # both repeats verbatim: kept once
    path.write_text("".join(lines) + "101_1 0 p:3 3\n" + "101_1 0 p:7 0\n" + "101_1 0 p:9 1\n")
    with pytest.raises(FormatError) as err:
        trec.parse_qrels(path)
    assert err.value.line == 42 and "one value per item (101_1 p:7 is 2 on line 8)" in str(err.value)


def test_upload_names_are_reduced_to_a_safe_base_name(tmp_path):
    from assess.errors import FormatError
    from assess.services.loading import load_upload, upload_name
    from store import open_db

    assert upload_name("../../etc/x.qrels") == "x.qrels"
    assert upload_name("C:\\Users\\me\\q.qrels") == "q.qrels"
    for bad in (".", "..", "", "dir/..", "a/", "x\x00y.qrels", "…" * 300):
        with pytest.raises(FormatError):
            upload_name(bad)
    db = open_db(tmp_path / "u.db")
    with pytest.raises(FormatError) as err:
        load_upload(db, "topics", "../deep.json", deep(50_000))
    assert str(err.value).startswith("deep.json:1: expected JSON nested at most 200 levels")
    assert str(tmp_path) not in str(err.value) and "/tmp" not in str(err.value)


def test_the_help_states_the_limits():
    out = run_cli("import", "--help", check=True).stdout
    flat = " ".join(out.split())
    assert "at most 256 MiB and 200 levels deep" in flat and "no line may exceed 4 MiB" in flat


def test_a_good_file_still_imports(demo_db, tmp_path):
    shutil.copy(DEMO / "llm-passages.qrels", tmp_path / "good.qrels")
    db = copy_of(demo_db, tmp_path)
    proc = run_cli("import", "qrels", tmp_path / "good.qrels", "--source", "again", "--json", db=db, check=True)
    assert json.loads(proc.stdout)["labels"] == 214


def test_score_runs_with_a_measure_pytrec_eval_lacks_is_exit_2_without_traceback():
    run = sorted((ROOT / "assets" / "demo" / "runs").glob("*.run"))[0]
    proc = run_cli(
        "score", "runs", "--qrels", ROOT / "assets/demo/llm-passages.qrels", "--run", run, "--measure", "Judged@10"
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: measure 'Judged@10' is not computed here (pytrec_eval); use e.g. nDCG@k, P@k, R@k, AP, RR, P(rel=2)@k"
    ]


# ------------------------------------------------------------------------------ people: names, e-mails, who acts

ADD = ["users", "add", "eve", "--role", "assessor", "--no-password"]
PEOPLE = [
    ("email-escape", [*ADD, "--email", "eve\x1b[31m@x.org"], "found U+001B"),
    ("email-bidi-override", [*ADD, "--email", "\u202egro.x@eve"], "found U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("email-newline", [*ADD, "--email", "eve@x.org\nbcc@y.org"], "found U+000A"),
    ("email-two-at", [*ADD, "--email", "eve@x@y.org"], "found 2 '@'"),
    ("email-mixed-script", [*ADD, "--email", "eve@exаmple.org"], "found Cyrillic and Latin"),
    ("by-escape", [*ADD, "--by", "me\x1b[2J"], "--by: expected who acts"),
    ("by-bidi-override", [*ADD, "--by", "\u202ebob"], "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("by-zero-width", [*ADD, "--by", "da\u200bve"], "U+200B ZERO WIDTH SPACE"),
    ("by-mixed-script", [*ADD, "--by", "d\u13aave"], "found Cherokee and Latin"),
    ("by-on-role-change", ["users", "role", "dave", "--role", "assessor", "--by", "x\x07"], "--by: expected who acts"),
    # who acts may not pass for an account they are not (issue 33): case, capitals, another script
    ("by-case-of-an-account", [*ADD, "--by", "Dave"], "no account's looks like ('dave'), found 'Dave'"),
    ("by-capitals-of-an-account", [*ADD, "--by", "DAVE"], "no account's looks like ('dave')"),
    ("by-cherokee-look-alike", [*ADD, "--by", "\u13a0\u13aa\u13d9\u13ac"], "no account's looks like ('dave')"),
    (
        "cherokee-look-alike",
        ["users", "add", "\u13a0\u13aa\u13d9\u13ac", "--role", "assessor", "--no-password"],
        "looks like the existing name 'dave'",
    ),
    (
        "lisu-look-alike",
        ["users", "add", "\ua4d3\ua4ee\ua4e6\ua4f0", "--role", "assessor", "--no-password"],
        "looks like the existing name 'dave'",
    ),
    (
        "mixed-script-name",
        ["users", "add", "m\u13aary", "--role", "assessor", "--no-password"],
        "mixes the letters of two scripts (Cherokee and Latin)",
    ),
]


@pytest.fixture(scope="module")
def people_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("people") / "people.db"
    run_cli("users", "add", "dave", "--role", "organizer", "--no-password", db=db, check=True)
    return db


@pytest.mark.parametrize("case, argv, words", PEOPLE, ids=[p[0] for p in PEOPLE])
def test_hostile_names_emails_and_actors_are_refused(people_db, tmp_path, case, argv, words):
    db = copy_of(people_db, tmp_path)
    before_bytes, before = db.read_bytes(), snapshot(db)
    proc = run_cli(*argv, db=db)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert words in proc.stderr, proc.stderr
    assert not set(proc.stderr) & {"\x1b", "\x07", "\u202e", "\u200b"}  # named, never passed to the terminal
    assert db.read_bytes() == before_bytes and snapshot(db) == before


def test_an_account_acting_under_its_own_name_passes(people_db, tmp_path):
    db = copy_of(people_db, tmp_path)
    run_cli("users", "add", "fay", "--role", "assessor", "--no-password", "--by", "dave", db=db, check=True)
    with sqlite3.connect(db) as conn:
        found = conn.execute("SELECT name, role FROM accounts ORDER BY name").fetchall()
    assert found == [("dave", "organizer"), ("fay", "assessor")]


def test_ordinary_people_still_pass(people_db, tmp_path):
    db = copy_of(people_db, tmp_path)
    ordinary = (("王芳", "wang@example.cn"), ("田中たなかTanaka", "tanaka@example.jp"), ("José", "jose@x.org"))
    for name, email in ordinary:
        run_cli(
            "users",
            "add",
            name,
            "--role",
            "assessor",
            "--no-password",
            "--email",
            email,
            "--by",
            "dave",
            db=db,
            check=True,
        )
    listed = json.loads(run_cli("users", "list", "--json", db=db, check=True).stdout)
    assert {(p["name"], p["email"], p["role"]) for p in listed} == {("dave", None, "organizer")} | {
        (name, email, "assessor") for name, email in ordinary
    }  # stored as given, not just counted


def test_a_3000_character_host_is_refused_in_one_short_line():
    host = "a" * 3000
    for url in (
        f"postgresql://u@{host}:5432/db",
        f"postgresql://u@h/db?host=x,{host}",
        f"postgresql://u@{'b' * 64}.org/db",
    ):
        proc = run_cli("users", "list", db=url)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and len(lines[0]) < 400, proc.stderr
        assert "not a valid postgresql:// URL: a host name" in lines[0]


# ------------------------------------------------------------------------------ banks, rubrics and their judgments


def bank(topic="101_1", **nugget) -> bytes:
    item = {"question": "q", "aggregator_type": "AND", "answers": [{"answer": "a", "references": ["d"]}], **nugget}
    return json.dumps({"metadata": {"topic_id": topic}, "nugget_bank": [item]}).encode() + b"\n"


def rubric(topic="101_1") -> bytes:
    question = {"question_id": "q1", "importance": "A: Have to Know", "short_answers": [{"answer_id": "a1"}]}
    return json.dumps({"topic_id": topic, "rubrics": [question]}).encode()


def judgments(topic="101_1", run="r", answer="a1") -> bytes:
    return f"topic_id,run_tag,answer_id,annotation\n{topic},{run},{answer},supports\n".encode()


def match(topic="101_1", run="r") -> bytes:
    return json.dumps({"topic_id": topic, "run_id": run, "nugget": 1, "answer": 1}).encode() + b"\n"


BANK = ["nuggets", "bank", "import"]
MATCHES = ["nuggets", "bank", "import-matches", "--source", "m"]
RUBRIC = ["rubrics", "import"]
JUDGED = ["rubrics", "import-judgments", "--source", "j"]
# (case id, command, file content, expected line, words in the message)
BANK_FILES = [
    ("bank-deep-json", BANK, deep(5000), 1, "nested at most 200 levels"),
    ("bank-deep-json-lines", BANK, b"[\n" * 5000 + b"]\n" * 5000, 201, "nested at most 200 levels"),
    ("rubric-deep-json", RUBRIC, b'{"topic_id": "1", "rubrics": ' + deep(5000) + b"}", 1, "nested at most 200"),
    ("judgments-200000-character-field", JUDGED, judgments(run="r" * 200_000), 2, "at most 131,072 characters"),
    ("bank-topic-escape", BANK, bank("101\x1b[2J"), 1, "U+001B"),
    ("bank-topic-bidi-override", BANK, bank("\u202e1_101"), 1, "U+202E"),
    ("bank-topic-space", BANK, bank("101 3"), 1, "U+0020"),
    ("bank-topic-trailing-space", BANK, bank("101_1") + bank("101_1 "), 2, "U+0020"),
    ("bank-topic-number", BANK, bank(101), 1, "a str at ['metadata']['topic_id']"),
    ("rubric-topic-trailing-space", RUBRIC, rubric("101_3 "), 1, "['topic_id']"),
    ("rubric-question-text-number", RUBRIC, rubric().replace(b'"q1",', b'"q1", "question_text": 7,'), 1, "a str at"),
    ("rubric-topic-escape", RUBRIC, rubric("1\x1b]0;x\x07"), 1, "U+001B"),
    ("bank-importance-negative", BANK, bank(importance=-1), 1, "a number from 0 to 1,000,000"),
    ("bank-importance-1e308", BANK, bank(importance=1e308), 1, "a number from 0 to 1,000,000"),
    ("bank-importance-nan-text", BANK, bank(importance="NaN"), 1, "a number from 0 to 1,000,000"),
    ("bank-importance-list", BANK, bank(importance=[1]), 1, "an importance"),
    ("bank-importance-escape", BANK, bank(importance="vital\x1b[8m"), 1, "U+001B"),
    ("judgments-nul-run-tag", JUDGED, judgments(run="r\x00x"), 2, "U+0000"),
    ("judgments-escape-run-tag", JUDGED, judgments(run="r\x1b[31m"), 2, "U+001B"),
    ("judgments-bidi-topic", JUDGED, judgments(topic="\u202e101_1"), 2, "U+202E"),
    ("matches-escape-run", MATCHES, match(run="r\x1b[2J"), 1, "U+001B"),
    ("matches-topic-trailing-space", MATCHES, match(topic="101_1 "), 1, "U+0020"),
]


@pytest.mark.parametrize("case, command, content, line, words", BANK_FILES, ids=[b[0] for b in BANK_FILES])
def test_hostile_bank_rubric_and_judgment_files_are_refused(demo_db, tmp_path, case, command, content, line, words):
    db = copy_of(demo_db, tmp_path)
    path = tmp_path / f"{case}.{'csv' if command is JUDGED else 'jsonl'}"
    path.write_bytes(content)
    before_bytes, before = db.read_bytes(), snapshot(db)
    words_end = next((i for i, a in enumerate(command) if a.startswith("--")), len(command))
    proc = run_cli(*command[:words_end], path, *command[words_end:], db=db, timeout=60)
    assert_refused(proc, db, before_bytes, before, f"{path}:{line}:", words)
    assert not set(proc.stderr) & {"\x1b", "\x00", "\u202e", "\x07"}
