"""Machine annotators declared: every LLM source with its model, prompt version, engine and date.

A source that ran here (``python -m assess prejudge``) has them in its jobs (``prejudge_jobs``: model, prompt
version, the endpoint it called, when it started); an imported file of an LLM's labels has none, so an organizer
declares them (:func:`declare`), which also makes an imported source a machine one (kind ``llm``) for every
figure that keeps people and machines apart. A declared field wins over what the jobs say.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date as calendar_date

from assess.errors import AssessError
from assess.tasks import SourceKind
from store.db import Store, row, rows, run, write
from store.history import record_action

FIELDS = ("model", "prompt_version", "engine", "date")

# What a declaration may turn into a machine: an imported file's labels. People's, adjudicated and crowd labels
# stay what they are.
_DECLARABLE = (SourceKind.IMPORT.value, SourceKind.LLM.value)


def _check_text(field: str, value: str) -> str:
    """A declared field: 1-200 printable characters (no control or format character: it reaches terminals and
    pages)."""
    value = (value or "").strip()
    bad = next((c for c in value if not c.isprintable() or unicodedata.category(c) == "Cf"), None)
    if not value or len(value) > 200 or bad is not None:
        found = f"U+{ord(bad):04X}" if bad is not None else f"{len(value)} characters"
        raise AssessError(f"--{field.replace('_', '-')}: 1-200 printable characters, found {found}")
    return value


def declare(db: Store, source: str, *, model: str, prompt_version: str, engine: str, date: str, by: str | None) -> dict:
    """Record a machine source's model, prompt version, engine and date (an ISO date, YYYY-MM-DD), making an
    imported source kind ``llm``; one organizer action in the history (old and new). Refused, nothing written:
    an unknown source, one of a person, adjudication or the crowd, a blank or unprintable field, a bad date."""
    fields = {
        "model": _check_text("model", model),
        "prompt_version": _check_text("prompt_version", prompt_version),
        "engine": _check_text("engine", engine),
    }
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date or ""):
        raise AssessError(f"--date: an ISO date YYYY-MM-DD, not {date!r}")
    try:
        calendar_date.fromisoformat(date)
    except ValueError:
        raise AssessError(f"--date: an ISO date YYYY-MM-DD, not {date!r}") from None
    with write(db):
        found = row(
            db,
            "SELECT kind, model, prompt_version, engine, model_date FROM sources WHERE name = :name",
            {"name": source},
        )
        if found is None:
            raise AssessError(
                f"no label source {source!r} (import its labels first: python -m assess import qrels ...)"
            )
        if found["kind"] not in _DECLARABLE:
            raise AssessError(
                f"{source!r} is a source of kind {found['kind']}: only imported labels or an LLM's are declared machine"
            )
        before = {"kind": found["kind"], **{f: found["model_date" if f == "date" else f] for f in FIELDS}}
        run(
            db,
            "UPDATE sources SET kind = 'llm', model = :model, prompt_version = :prompt_version, engine = :engine, "
            "model_date = :date WHERE name = :name",
            {**fields, "date": date, "name": source},
        )
        after = {"kind": SourceKind.LLM.value, **fields, "date": date}
        record_action(db, by, "import", f"machine {source}", before, after, via="declare")
    return {"source": source, **after}


def roster(db: Store) -> list[dict]:
    """Every machine source (kind ``llm``, NLI judges among them) by name: model, prompt_version, engine, date,
    each with where it comes from (``from``: 'declared', 'job N' (its latest job), or None: unknown), and
    ``missing``: the fields nobody gave."""
    jobs = {
        r["source"]: r
        for r in rows(
            db,
            "SELECT j.source AS source, j.id AS id, j.model AS model, j.prompt_version AS prompt_version, "
            "j.base_url AS base_url, j.started_at AS started_at FROM prejudge_jobs j "
            "WHERE j.id = (SELECT MAX(k.id) FROM prejudge_jobs k WHERE k.source = j.source)",
        )
    }
    out = []
    for s in rows(
        db,
        "SELECT name, model, prompt_version, engine, model_date FROM sources WHERE kind = 'llm' ORDER BY name",
    ):
        job = jobs.get(s["name"])
        declared = {
            "model": s["model"],
            "prompt_version": s["prompt_version"],
            "engine": s["engine"],
            "date": s["model_date"],
        }
        ran = (
            {
                "model": job["model"],
                "prompt_version": job["prompt_version"],
                "engine": job["base_url"] or None,
                "date": (job["started_at"] or "")[:10] or None,
            }
            if job
            else {}
        )
        # a declaration sets all four (only it sets engine and date); else the latest job's, else the row's
        stored = {"model": s["model"], "prompt_version": s["prompt_version"]}
        chosen = (
            (declared, "declared")
            if s["engine"] is not None or s["model_date"] is not None
            else (ran, f"job {job['id']}")
            if job
            else (stored, "source")
        )
        entry = {"source": s["name"], "from": {}}
        for field in FIELDS:
            entry[field] = chosen[0].get(field)
            entry["from"][field] = chosen[1] if entry[field] is not None else None
        entry["missing"] = [f for f in FIELDS if entry[f] is None]
        out.append(entry)
    return out


def machine_names(db: Store) -> frozenset[str]:
    """The names of every machine source (kind ``llm``): what the crowd's aggregation leaves out as a worker."""
    return frozenset(r["name"] for r in rows(db, "SELECT name FROM sources WHERE kind = 'llm'"))
