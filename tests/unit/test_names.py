"""The name rule for assessor and account names (assess.text, used by store.sources.sign_in and store.accounts.add):
NFKC-normalised, printable characters only, and no look-alike of a reserved source or of an existing name."""

from __future__ import annotations

import pytest

from assess.errors import AssessError
from assess.text import look_alike, name_problem, normal_name, skeleton
from store import accounts, open_db
from store.sources import sign_in
from tests.helpers import rows, run_cli, snapshot

# Names carrying a character a page or a terminal must never be handed raw, or that draws nothing.
UNPRINTABLE = [
    "a\x00b",  # NUL: PostgreSQL refuses it in text, the page used to crash there
    "ann\x1b[31m",  # ESC: a terminal colour sequence
    "a\x07b",  # BEL
    "a\x85b",  # C1 next line
    "\u202eann",  # RIGHT-TO-LEFT OVERRIDE
    "an\u2066n",  # LEFT-TO-RIGHT ISOLATE
    "a\u200bnn",  # ZERO WIDTH SPACE
    "a\u200dnn",  # ZERO WIDTH JOINER
    "a\u2060nn",  # WORD JOINER
    "\ufeffann",  # BYTE ORDER MARK
    "a\u00adnn",  # SOFT HYPHEN
    "ann\U000e0041",  # TAG LATIN CAPITAL LETTER A (hidden text)
    "a\ue000nn",  # private use
    "a\u3164nn",  # HANGUL FILLER (a letter that draws nothing)
    "a\u2800nn",  # BRAILLE PATTERN BLANK
    "a\u2028nn",  # LINE SEPARATOR
    "a\ud800nn",  # a lone surrogate
    "a\u0378nn",  # unassigned
    "an n",  # a space
    "an\u00a0n",  # NO-BREAK SPACE
    "a\tnn",
    "",
    "x" * 65,
]

# Names that pass for a reserved source.
RESERVED_ALIKES = [
    "nіst",  # Cyrillic i
    "ｎｉｓｔ",  # fullwidth: NFKC makes it nist
    "NIST",
    "n1st",
    "nlst",
    "ΝΙЅΤ",  # Greek and Cyrillic capitals
    "nist\u0301",  # a combining accent
    "hυman",  # Greek upsilon
    "humаn",  # Cyrillic a
    "adjudicatіon",
    "gоld",
    "𝐧𝐢𝐬𝐭",  # mathematical bold
    "llm꞉gpt",  # modifier-letter colon
    "llm∶gpt",  # ratio sign
    "crowd︓mturk",  # vertical-form colon (NFKC: ':')
]


@pytest.mark.parametrize("name", UNPRINTABLE)
def test_the_rule_refuses_unprintable_and_invisible_characters(name):
    problem = name_problem(normal_name(name))
    assert problem and problem.startswith("an assessor name is 1-64 characters")
    assert "\x1b" not in problem and "\x00" not in problem and "\u202e" not in problem  # named, never shown raw


@pytest.mark.parametrize(
    "name", ["ann", "demo-ben", "José", "Zoë_2", "mārtiņš", "Łukasz", "王芳", "محمد", "user.name@x"]
)
def test_ordinary_names_of_any_script_pass(name):
    assert name_problem(normal_name(name)) is None


def test_names_are_kept_nfkc_normalised():
    assert normal_name("  ｊｏｓé ") == "josé"
    assert normal_name("Jose\u0301") == "José"  # decomposed accent composed
    assert normal_name("ﬁona") == "fiona"


@pytest.mark.parametrize("name", RESERVED_ALIKES)
def test_look_alikes_of_reserved_sources_are_found(name):
    from assess.tasks import RESERVED_SOURCE_PREFIXES, RESERVED_SOURCES, reserved_source

    kept = normal_name(name)
    assert reserved_source(kept) or look_alike(kept, RESERVED_SOURCES, RESERVED_SOURCE_PREFIXES)


def test_skeletons_join_look_alikes_and_keep_different_names_apart():
    assert skeleton("demo-ann") == skeleton("dеmo‐ann") == skeleton("DEMO-ANN")  # Cyrillic e, Unicode hyphen
    assert skeleton("derno-ann") == skeleton("demo-ann")  # rn passes for m
    assert skeleton("b0b") == skeleton("bob") and skeleton("bi11") == skeleton("bill")
    assert len({skeleton(n) for n in ("ann", "anne", "ben", "bob", "carol", "kim", "amy", "uma")}) == 8
    assert look_alike("ann", ["ann", "ben"]) is None  # a name is not its own look-alike


# ------------------------------------------------------------------------------------------- the store, both engines


@pytest.fixture
def db(store_target):
    """A new store holding two assessors and the default sources of imported qrels and adjudication."""
    from store.db import write
    from store.sources import ensure_source

    database = open_db(store_target)
    with write(database):
        for name in ("nist", "adjudication"):
            ensure_source(database, name)
    for name in ("demo-ann", "demo-ben"):
        sign_in(database, name)
    yield database
    database.close()


def _names(db) -> list[str]:
    from store.db import column

    return sorted(column(db, "SELECT name FROM sources")) + sorted(column(db, "SELECT name FROM accounts"))


def test_sign_in_refuses_unprintable_names_and_writes_nothing(db):
    before = _names(db)
    for name in UNPRINTABLE:
        for guest in (True, False):
            with pytest.raises(AssessError, match="an assessor name is 1-64 characters"):
                sign_in(db, name, guest=guest)
    assert _names(db) == before


def test_a_nul_name_in_open_mode_is_refused_on_either_engine_without_a_database_error(db):
    # PostgreSQL refused the NUL byte in the accounts query itself (a DataError, the page crashed).
    with pytest.raises(AssessError, match=r"found U\+0000"):
        sign_in(db, "amy\x00", guest=True)


def test_sign_in_refuses_look_alikes_of_reserved_sources(db):
    before = _names(db)
    for name in RESERVED_ALIKES:
        with pytest.raises(AssessError, match="reserved for the workbench"):
            sign_in(db, name, guest=True)
    assert _names(db) == before


def test_a_new_name_that_looks_like_an_existing_one_is_refused(db):
    assert sign_in(db, "amy") == "amy"
    accounts.add(db, "boss", "organizer", None, by="test")
    for alike, original in (
        ("аmy", "amy"),
        ("AMY", "amy"),
        ("b0ss", "boss"),
        ("derno-ann", "demo-ann"),
        ("dеmo-ben", "demo-ben"),
    ):
        with pytest.raises(AssessError, match=f"looks like the existing name {original!r}"):
            sign_in(db, alike, guest=True)
        with pytest.raises(AssessError, match=f"looks like the existing name {original!r}"):
            accounts.add(db, alike, "assessor", None, by="test")
    assert "аmy" not in _names(db) and "b0ss" not in _names(db)
    assert sign_in(db, "amy", guest=True) == "amy"  # the same name again is no look-alike of itself
    assert sign_in(db, "demo-ann") == "demo-ann"


def test_a_fullwidth_name_is_kept_in_its_normal_form(db):
    assert sign_in(db, "ｋｉｍ") == "kim"
    assert "kim" in _names(db) and "ｋｉｍ" not in _names(db)
    assert sign_in(db, "kim") == "kim"


# ------------------------------------------------------------------------------------------- the command line


def test_users_add_refuses_a_look_alike_with_one_line_and_the_store_unchanged(tmp_path):
    path = tmp_path / "u.db"
    with open_db(path) as database:
        accounts.add(database, "boss", "organizer", None, by="test")
    before = snapshot(path)
    for name, words in (("nіst", "reserved"), ("b0ss", "looks like the existing name 'boss'"), ("a\x1bb", "U+001B")):
        proc = run_cli("users", "add", name, "--role", "assessor", "--no-password", db=path)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and words in proc.stderr and "Traceback" not in proc.stderr
        assert "\x1b" not in proc.stderr
    assert snapshot(path) == before
    assert rows(path, "SELECT name FROM accounts") == [("boss",)]
