"""docs/measures.md "Peers": every measure name of the registries appears in the table, and every test file the
table names exists (issue 34: every figure has a named peer or a hand-worked check)."""

from __future__ import annotations

import re

from assess.crowd.crowdkit import METHODS
from assess.measures.agreement import MATRIX_STATISTICS
from assess.measures.sampling import DESIGNS
from assess.services.audit.estimates import ESTIMATE_MEASURES
from assess.services.banks import RUN_SUPPORT_MEASURES, TOPIC_SUPPORT_MEASURES
from assess.services.leaderboards import OWN_MEASURES
from tests.helpers import ROOT

REGISTRIES = {
    "leaderboards.OWN_MEASURES": OWN_MEASURES,
    "banks.RUN_SUPPORT_MEASURES": RUN_SUPPORT_MEASURES,
    "banks.TOPIC_SUPPORT_MEASURES": TOPIC_SUPPORT_MEASURES,
    "agreement.MATRIX_STATISTICS": MATRIX_STATISTICS,
    "estimates.ESTIMATE_MEASURES": ESTIMATE_MEASURES,
    "crowdkit.METHODS": METHODS,
    "sampling.DESIGNS": DESIGNS,
}


def _table() -> list[str]:
    text = (ROOT / "docs" / "measures.md").read_text(encoding="utf-8")
    section = text.split("\n## Peers\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_every_registered_measure_has_a_row():
    named = {m for line in _table() for m in re.findall(r"`([^`]+)`", line.split(" | ")[1] + line.split(" | ")[2])}
    missing = {where: [m for m in names if m not in named] for where, names in REGISTRIES.items()}
    assert {k: v for k, v in missing.items() if v} == {}, "add these measures to docs/measures.md#peers"


def test_every_row_names_a_test_file_that_exists():
    rows = _table()
    assert len(rows) >= 25
    for line in rows:
        paths = re.findall(r"`(tests/[^`]+\.py)`", line.rsplit(" | ", 1)[1])
        assert paths, f"a row without a test file: {line[:80]}"
        assert [p for p in paths if not (ROOT / p).is_file()] == [], line[:80]
