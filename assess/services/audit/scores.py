"""What the Scores page shows, as plain values (no Streamlit here): GFRC2 and AEPD cases scored, and the
stored runs evaluated under two qrels sources."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assess.formats import json_object
from assess.measures.aepd import score_aepd_document
from assess.measures.gfrc import score_gfrc2_document
from assess.measures.rankings import compare_qrels
from store.compare import qrels_of, runs_of

DEMO = Path(__file__).resolve().parents[3] / "assets" / "demo"


def read_case(data: bytes, name: str) -> dict:
    """Parse an uploaded GFRC2 / AEPD input file (JSON), naming the file and line on error."""

    return json_object(data, name)


def demo_case(kind: str) -> tuple[dict, str]:
    """The demo's GFRC2 or AEPD input (assets/demo/gfrc2.json, aepd.json)."""
    path = DEMO / f"{kind}.json"
    return json.loads(path.read_text(encoding="utf-8")), path.name


def gfrc2_view(document: dict) -> dict[str, Any]:
    """Score a GFRC2 document and group it for plotting: {"table": rows, "by_conversation": {conv: {run: result}}}.

    Conversation ids of the form ``run/conversation`` are split so that runs of one conversation share
    a plot; any other id is its own conversation with the id as the run name.
    """

    results = score_gfrc2_document(document)
    table, grouped = [], {}
    for cid, res in results.items():
        run, _, conv = cid.partition("/") if "/" in cid else (cid, "", cid)
        grouped.setdefault(conv, {})[run] = res
        table.append(
            {
                "run": run,
                "conversation": conv,
                "EGNP": res["EGNP"],
                "GFRC2": res["GFRC2"],
                **{f"EGF {a}": v for a, v in res["EGF"].items()},
                "GFRC": res["GFRC"]["GFRC"],
            }
        )
    return {"table": table, "by_conversation": grouped}


def aepd_view(document: dict) -> dict[str, Any]:
    """Score an AEPD document; points carry the turn's ``system`` and ``conversation`` when given."""

    results = score_aepd_document(document)
    extra = {t.get("id"): t for t in document.get("turns", []) if isinstance(t, dict)}
    points = [
        {
            "id": tid,
            **scores,
            "system": extra.get(tid, {}).get("system", str(tid).partition("/")[0]),
            "conversation": extra.get(tid, {}).get("conversation"),
        }
        for tid, scores in results["turns"].items()
    ]
    return {"points": points, "tradeoff": results["tradeoff"]}


def ranking_view(db, source_a: str, source_b: str, measure: str = "nDCG@3", threshold: int = 2) -> dict[str, Any]:
    """Evaluate the stored runs under two qrels sources; return per-measure means and τ / ρ."""

    runs = runs_of(db)
    if not runs:
        return {}
    return compare_qrels(qrels_of(db, source_a), qrels_of(db, source_b), runs, threshold=threshold)
