"""`sources roster`, `sources declare` and the split lines of `audit agreement` / `agreement`, in process on a
copy of the demo: output equal to the services', refusals with exit 2 and nothing written."""

from __future__ import annotations

import json

from assess.services import audit, machines
from store import labels, open_db
from store.db import write
from store.sources import ensure_source
from tests.helpers import run_cli, snapshot


def test_declare_and_roster_from_the_command_line(demo_target):
    with open_db(demo_target) as db:
        with write(db):
            ensure_source(db, "gpt4-file")
        labels.save_many(
            db,
            "passage",
            "gpt4-file",
            list(labels.values(db, "passage", "llm:demo-gpt").items()),
            mode="import",
            via="bulk",
        )
    before = snapshot(demo_target)
    bad = run_cli("sources", "declare", "gpt4-file", "--model", "gpt-4", "--prompt-version", "p1", "--engine", "api", "--date", "2024-02-30", db=demo_target)  # fmt: skip
    assert (bad.returncode, bad.stdout) == (2, "")
    assert "error: --date: an ISO date YYYY-MM-DD, not '2024-02-30'" in bad.stderr and "Traceback" not in bad.stderr
    person = run_cli("sources", "declare", "demo-ann", "--model", "m", "--prompt-version", "p", "--engine", "e", "--date", "2024-07-01", db=demo_target)  # fmt: skip
    assert person.returncode == 2 and "'demo-ann' is a source of kind assessor" in person.stderr
    assert snapshot(demo_target) == before

    done = run_cli("sources", "declare", "gpt4-file", "--model", "gpt-4-0613", "--prompt-version", "umbrela-1", "--engine", "openai-api", "--date", "2024-07-01", "--by", "boss", db=demo_target)  # fmt: skip
    assert (
        done.stdout
        == "gpt4-file: a machine annotator (model gpt-4-0613, prompt umbrela-1, engine openai-api, 2024-07-01)\n"
    )
    shown = run_cli("sources", "roster", "--json", db=demo_target)
    with open_db(demo_target) as db:
        assert json.loads(shown.stdout) == {"sources": machines.roster(db)}
        matrix = audit.agreement_view(db, "passage", None, threshold=2, bootstrap=1000, seed=0)
    text = run_cli("sources", "roster", db=demo_target).stdout.splitlines()
    assert text[0].split() == ["source", "model", "prompt", "version", "engine", "date", "from", "missing"]
    assert text[1].split() == ["gpt4-file", "gpt-4-0613", "umbrela-1", "openai-api", "2024-07-01", "declared", "-"]

    table = run_cli("audit", "agreement", db=demo_target).stdout
    for name in ("human-human", "machine-machine", "human-machine", "pooled"):
        pooled = matrix["splits"][name]
        shown = "(every pair)" if name == "pooled" else name
        assert (
            f"pooled {shown} over {len(pooled['pairs'])} pair(s), n {pooled['n']}: kappa_quadratic "
            f"{pooled['kappa_quadratic']:.3f}"
        ) in table
    two = run_cli("agreement", "--a", "demo-ann", "--b", "gpt4-file", db=demo_target).stdout
    assert two.splitlines()[1] == "  pair             human-machine"
