"""Terminal safety of the command line: data reaches a terminal with every control, bidi, zero-width and
separator character escaped visibly (assess.text.terminal_text through the CLI's TerminalStream); --json
output stays the same JSON; a data file written to a pipe is unchanged."""

from __future__ import annotations

import json
import os
import unicodedata

import pytest

from assess.text import terminal_text
from store import labels, open_db
from store.db import now, run, write
from store.sources import ensure_source
from tests.helpers import ROOT
from tests.helpers import run_cli_process as run_cli

# What a hostile import or another client of the database could leave in a name: a window-title sequence,
# a screen clear, a colour, BEL, a carriage return that overwrites the line, C1 CSI, a right-to-left
# override, a zero-width space, an isolate and a hidden tag character.
HOSTILE_ACCOUNT = "evil\x1b]0;pwned\x07\x1b[2J\rok"
NUGGET_TEXT = "Plans \u202eseeks 01 tsal\u202c \x85 with a\u200b gap"
HOSTILE_SOURCE = "src\x1b[31mred\x9b\u202eevil\u200b\u2066\U000e0041"


def raw_controls(text: str) -> list[str]:
    """The characters of ``text`` a terminal must not receive raw (tab and newline aside)."""
    return [c for c in text if c not in "\t\n" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain ascii, tab\tand newline\n", "plain ascii, tab\tand newline\n"),
        ("é ü 王芳 محمد 👍", "é ü 王芳 محمد 👍"),  # printable text of any script stays
        ("\x1b[31mred", "\\u001b[31mred"),
        ("a\rb\x00c\x7fd", "a\\u000db\\u0000c\\u007fd"),
        ("\x85\x9b", "\\u0085\\u009b"),
        ("\u202eabc\u2066\u200b\u200f", "\\u202eabc\\u2066\\u200b\\u200f"),
        ("a\u2028b\u2029", "a\\u2028b\\u2029"),
        ("\U000e0041", "\\udb40\\udc41"),  # above U+FFFF: a JSON surrogate pair
        ("\ud800", "\\ud800"),
        (None, ""),
    ],
)
def test_terminal_text_escapes_controls_visibly(text, shown):
    assert terminal_text(text) == shown
    assert not raw_controls(terminal_text(text))


def test_escaped_text_inside_a_json_string_is_the_same_string():
    value = HOSTILE_SOURCE + "\x85 é"
    document = json.dumps({"name": value}, ensure_ascii=False)
    assert json.loads(terminal_text(document)) == {"name": value}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, demo_copy):
    """The demo plus an account and a label source whose names carry terminal sequences, written past the
    name rule (as another client of the database could)."""
    path = demo_copy(tmp_path_factory.mktemp("terminal") / "t.db")
    with open_db(path) as db:
        with write(db):
            run(
                db,
                "INSERT INTO accounts (name, role, created_at, changed_at) VALUES (:n, 'assessor', :t, :t)",
                {"n": HOSTILE_ACCOUNT, "t": now()},
            )
            ensure_source(db, HOSTILE_SOURCE, "import")
        labels.save(db, "passage", HOSTILE_SOURCE, ("101_1", "demo-doc-001:0"), 2, mode="import", via=None)
        labels.save(db, "passage", HOSTILE_SOURCE, ("101_1", "demo-doc-001:0"), 3, mode="key", via="key\x1b[2J")
        with write(db):
            run(
                db,
                "UPDATE nuggets SET text = :t WHERE key = '[1]' AND turn_id = '101_1' AND source = 'gold'",
                {"t": NUGGET_TEXT},
            )
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["users", "list"],
        ["stats"],
        ["history", "--source", HOSTILE_SOURCE, "--turn", "101_1", "--item", "demo-doc-001:0"],
        ["agreement", "--task", "passage", "--a", HOSTILE_SOURCE, "--b", "demo-ann"],
        ["audit", "agreement"],
    ],
    ids=["users-list", "stats", "history", "agreement", "audit-agreement"],
)
def test_text_output_never_carries_a_raw_control_character(hostile, argv):
    proc = run_cli(*argv, db=hostile)
    assert proc.returncode == 0, proc.stderr
    assert not raw_controls(proc.stdout) and not raw_controls(proc.stderr)
    assert "\\u001b" in proc.stdout  # the data is there, escaped


def test_users_list_and_stats_show_the_names_escaped(hostile):
    listed = run_cli("users", "list", db=hostile).stdout
    assert "evil\\u001b]0;pwned\\u0007\\u001b[2J\\u000dok" in listed
    stats = run_cli("stats", db=hostile).stdout
    assert "src\\u001b[31mred\\u009b\\u202eevil\\u200b\\u2066\\udb40\\udc41" in stats


def test_json_output_is_the_same_json_with_the_names_intact(hostile):
    proc = run_cli("users", "list", "--json", db=hostile)
    assert not raw_controls(proc.stdout)
    assert HOSTILE_ACCOUNT in [a["name"] for a in json.loads(proc.stdout)]
    proc = run_cli("stats", "--json", db=hostile)
    assert not raw_controls(proc.stdout)
    assert HOSTILE_SOURCE in json.loads(proc.stdout)["passage_labels"]


def test_an_error_line_quoting_data_is_escaped(hostile):
    proc = run_cli("history", "--source", "x\x1b[2Jy", "--turn", "101_1", "--item", "demo-doc-001:0", db=hostile)
    assert not raw_controls(proc.stdout + proc.stderr)


def on_a_terminal(*argv: str) -> str:
    """What ``python -m assess ARGV`` writes when its standard output and error are a terminal (a pty)."""
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "assess", *argv],
        cwd=ROOT,
        env=env,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=120) == 0
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")  # the terminal's own line ends


def test_on_a_terminal_the_output_is_escaped_too(hostile):
    seen = on_a_terminal("users", "list", "--db", str(hostile))
    assert "\\u001b]0;pwned" in seen and not raw_controls(seen)


def test_an_export_to_a_pipe_is_the_file_unchanged_and_escaped_on_a_terminal(hostile):
    piped = run_cli("export", "nuggets", "--source", "gold", db=hostile)
    assert piped.returncode == 0, piped.stderr
    assert "\u202e" in piped.stdout  # the data file as it is
    assert json.loads(piped.stdout)["101_1"]["[1]"]["text"] == NUGGET_TEXT
    seen = on_a_terminal("export", "nuggets", "--source", "gold", "--db", str(hostile))
    assert not raw_controls(seen) and "\\u202e" in seen
    assert json.loads(seen)["101_1"]["[1]"]["text"] == NUGGET_TEXT  # still the same JSON


def test_a_progress_bar_still_draws_with_its_own_carriage_returns(tmp_path, monkeypatch):
    # The bar (numbers only) writes to stderr itself: escaped, each redraw would be a "\u000d" on one long line.
    from tests.stub_llm import StubLLM

    for var in ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_MODEL", "ASSESS_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    db = tmp_path / "demo.db"
    run_cli("init", "--demo", db=db, check=True)
    with StubLLM() as stub:
        proc = run_cli(
            "prejudge", "--task", "ptkb", "--source", "llm:stub", "--model", "m", "--base-url", stub.base_url, db=db
        )
    assert proc.returncode == 0, proc.stderr
    assert "item/s" in proc.stderr and "\\u000d" not in proc.stderr
