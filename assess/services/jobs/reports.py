"""Jobs and their results for people: the job listing and its workers, run summaries, progress captions and
the adaptive pooling report."""

from __future__ import annotations

import json

from assess.tasks import (
    LABELLED_STATUSES,
    JobStatus,
)
from store import jobs as store_jobs
from store import labels, prejudgments


def latest_jobs(db, limit: int = 20) -> list[dict]:
    """The latest jobs, newest first, as the store lists them (:func:`store.jobs.jobs`: killed ones marked first)."""
    return store_jobs.jobs(db, limit=limit)


def job_listing(db, limit: int = 20) -> list[dict]:
    """The latest jobs, newest first (:func:`store.jobs.jobs`); a shared job (``prejudge --join``) also carries its
    planner's state (``planning``: items read so far, None once its list is complete) and its ``workers``."""
    out = []
    for j in store_jobs.jobs(db, limit=limit):
        shared = store_jobs.shared_job(db, j["id"])
        if shared["shared"]:
            j = j | {
                "planning": None if shared["planned_at"] else shared["scanned"],
                "block_size": shared["block_size"],
                "lease_s": shared["lease_s"],
                "workers": store_jobs.workers(db, j["id"]),
            }
        out.append(j)
    return out


def worker_rows(db, job_ids: list[int]) -> list[dict]:
    """The workers of the shared jobs among ``job_ids``, one row each with captions for a table (the /llm page)."""
    out = []
    for job_id in job_ids:
        if not store_jobs.shared_job(db, job_id)["shared"]:
            continue
        for w in store_jobs.workers(db, job_id):
            out.append(
                {
                    "job": job_id,
                    "worker": w["id"],
                    "host": w["host"],
                    "pid": w["pid"],
                    "status": w["status"],
                    "blocks claimed": w["claimed"],
                    "items held": w["holding"],
                    "stored": w["done"],
                    "failed": w["errors"],
                    "last heartbeat": w["heartbeat_at"],
                }
            )
    return out


def describe_worker(w: dict) -> str:
    """One worker of a shared job as a line for people."""
    held = f", holding {w['holding']} items" if w["holding"] else ""
    failed = f" ({w['errors']} failed)" if w["errors"] else ""
    note = f"; {w['message']}" if w["message"] and w["status"] != JobStatus.RUNNING.value else ""
    return (
        f"worker {w['id']} {w['status']}: pid {w['pid']} on {w['host']}, {w['claimed']} blocks claimed{held}, "
        f"{w['done']} stored{failed}, last heartbeat {w['heartbeat_at']}{note}"
    )


def aepd_document(db, source: str) -> dict:
    """The source's parsed AEPD aspects as an AEPD input document (``score aepd`` / :func:`assess.measures.aepd.score_aepd_document`)."""
    turns = []
    for row in reversed(prejudgments.stored(db, source, "aepd", limit=1_000_000)):
        if row["parse_status"] in LABELLED_STATUSES and row["parsed"]:
            aspects = json.loads(row["parsed"])["aspects"]
            turns.append(
                {
                    "id": f"{row['item_id']}/{row['turn_id']}",
                    "system": row["item_id"],
                    "aspects": [{"aspect": a["aspect"], "ptkb": a["ptkb"], "text": a["text"]} for a in aspects],
                }
            )
    latest = {t["id"]: t for t in turns}  # the newest answer per run and turn
    return {"turns": list(latest.values())}


def describe_adaptive(r: dict) -> str:
    """An adaptive pooling report (:func:`assess.services.pooling.adaptive_pool`) as lines for people."""
    if r["mode"] == "runs":
        lines = [
            f"{r['runs']} runs, depth {r['depth']}: {r['depth_pool']} pairs; adaptive pool (top {r['always']} + "
            f"{r['source']} >= {r['threshold']}): {r['adaptive_pool']} pairs, {r['saved']} saved "
            f"({r['saved_share']:.1%}); {r['ungraded']} candidates not graded by {r['source']} left out"
        ]
    else:
        share = "n/a" if r["saved_share"] is None else f"{r['saved_share']:.1%}"
        both = f" and {r['qrels']}" if r["qrels"] else ""
        lines = [
            f"no stored runs: over the {r['pairs']} pairs judged by {r['source']}{both}, {r['source']} >= "
            f"{r['threshold']} keeps {r['kept']} and drops {r['saved']} ({share})"
        ]
    if r.get("qrels"):
        share = "n/a" if r["relevant_dropped_share"] is None else f"{r['relevant_dropped_share']:.1%}"
        lines.append(
            f"{r['qrels']}: {r['relevant']} relevant pairs (grade >= {r['relevant_grade']}), "
            f"{r['relevant_dropped']} dropped by the filter ({share}); dropped by grade "
            f"{r['relevant_dropped_by_grade']}"
        )
    if "added_to_pool" in r:
        lines.append(f"added {r['added_to_pool']} pairs to the pool (method adaptive)")
    return "\n".join(lines)


def describe_stored(s: dict) -> str:
    """What a run stored, by parse status: the part of a run summary the CLI and the LLM page share."""
    return (
        f"{s['asked'] + s['copied']} stored ({s['ok']} ok, {s['repaired']} repaired, {s['unparseable']} "
        f"unparseable, {s['error']} failed), {s['copied']} from cache"
    )


def describe_progress(done: int, total: int, counts: dict) -> tuple[float, str]:
    """A running job's progress as a fraction and a caption."""
    return (
        done / total if total else 1.0,
        f"{done} / {total} stored · {counts['unparseable']} unparseable · {counts['error']} failed",
    )


def adaptive_sources(db) -> tuple[list[str], list[str]]:
    """The LLM sources that can drive adaptive pooling, and the other passage label sources (human qrels)."""
    llm = prejudgments.llm_sources(db)
    return llm, [s for s in labels.sources(db, "passage") if s not in llm]


def adaptive_metrics(r: dict) -> dict[str, int]:
    """The headline numbers of an adaptive pooling report, by caption."""
    runs = r["mode"] == "runs"
    shown = {
        "Pool before (depth pool)" if runs else "Pairs judged": r["depth_pool"] if runs else r["pairs"],
        "Pool after (adaptive)": r["adaptive_pool"] if runs else r["kept"],
        "Saved": r["saved"],
    }
    if runs:
        shown["Not graded (left out)"] = r["ungraded"]
    if r.get("qrels"):
        shown[f"Relevant in {r['qrels']}"] = r["relevant"]
        shown["Relevant dropped"] = r["relevant_dropped"]
    return shown
