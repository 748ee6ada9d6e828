"""The API's reading and organizing routes: topics and turns, assignments, exports, jobs and the audit's figures
(the queue and label routes are in assess/api/app.py). Rights as the pages have them: assignments are an
organizer's to change; exports, jobs and the audit are an organizer's to read (assess/services/api_campaign.py).

Each route is a ``def``: FastAPI runs it in its thread pool, so a long read never holds the event loop."""

# no `from __future__ import annotations`: FastAPI reads the routes' annotations
from typing import Annotated, Literal

from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import PlainTextResponse, StreamingResponse

from assess.api.models import Assignment, AssignmentsIn
from assess.services import api_campaign

Name = Annotated[str, Query(min_length=1, max_length=200)]


def add_routes(app: FastAPI, target: str, store, Holder) -> None:
    """Add the routes to ``app``; ``store()`` is the request thread's store handle, ``Holder`` the token check."""

    @app.get("/v1/topics", summary="the topics (conversations) with their turn and pool counts")
    def topics(person: Holder) -> list[dict]:
        return api_campaign.topics(store())

    @app.get("/v1/topics/{topic}", summary="one topic's turns in order")
    def topic(person: Holder, topic: str) -> dict:
        return {"id": topic, "turns": api_campaign.topic_turns(store(), topic)}

    @app.get("/v1/turns/{turn}", summary="one turn as a judging screen shows it: utterances, history, PTKB")
    def turn(person: Holder, turn: str) -> dict:
        return api_campaign.turn(store(), turn)

    @app.get("/v1/assignments", response_model=list[Assignment], summary="assignments (a person's own; organizer: all)")
    def assignments(person: Holder, assessor: Name | None = None) -> list[dict]:
        return api_campaign.assignments(store(), person.name, person.role, assessor)

    @app.post("/v1/assignments", status_code=201, summary="assign turns to an assessor (organizer)")
    def assign(body: AssignmentsIn, person: Holder) -> dict:
        added = api_campaign.assign(store(), person.name, person.role, body.assessor, body.turns)
        return {"assessor": body.assessor, "added": added}

    @app.delete("/v1/assignments/{assessor}/{turn}", summary="take one turn away from an assessor (organizer)")
    def unassign(person: Holder, assessor: str, turn: str) -> dict:
        if not api_campaign.unassign(store(), person.name, person.role, assessor, turn):
            raise HTTPException(404, f"turn {turn!r} is not assigned to {assessor!r}")
        return {"assessor": assessor, "turn": turn}

    @app.get(
        "/v1/exports/qrels",
        response_class=StreamingResponse,
        summary="a source's TREC qrels, streamed row by row (organizer)",
    )
    def qrels(person: Holder, source: Name, task: Literal["passage", "ptkb"] = "passage") -> StreamingResponse:
        api_campaign.require_organizer(person.role, "exporting")
        api_campaign.check_source(store(), source)
        return StreamingResponse(
            api_campaign.qrels_chunks(target, source, task),
            media_type="text/plain; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{task}-qrels.txt"'},
        )

    @app.get("/v1/exports/nuggets", summary="a source's nuggets as CONE-RAG JSON (organizer)")
    def nuggets(person: Holder, source: Name, dedup: bool = False) -> PlainTextResponse:
        api_campaign.require_organizer(person.role, "exporting")
        text = api_campaign.export_text(store(), "nuggets", source=source, dedup=dedup)
        return PlainTextResponse(text, media_type="application/json")

    @app.get("/v1/exports/battles", summary="the battles table as CSV, one source's or all (organizer)")
    def battles(person: Holder, source: Name | None = None) -> PlainTextResponse:
        api_campaign.require_organizer(person.role, "exporting")
        text = api_campaign.export_text(store(), "table", table="battles", source=source)
        return PlainTextResponse(text, media_type="text/csv; charset=utf-8")

    @app.get("/v1/exports/leaderboards", summary="the runs' leaderboard (tot or ir_measures layout; organizer)")
    def leaderboards(
        person: Holder,
        source: Name,
        layout: Literal["tot", "ir_measures"] = "tot",
        measure: Annotated[list[str], Query(max_length=50)] = [],  # noqa: B006 (FastAPI copies the default)
    ) -> PlainTextResponse:
        api_campaign.require_organizer(person.role, "exporting")
        text = api_campaign.export_text(store(), "leaderboard", source=source, layout=layout, measures=tuple(measure))
        return PlainTextResponse(text)

    @app.get("/v1/jobs", summary="the latest pre-judging jobs with their state (organizer)")
    def jobs(person: Holder, limit: Annotated[int, Query(ge=1, le=1000)] = 20) -> list[dict]:
        api_campaign.require_organizer(person.role, "reading jobs")
        return api_campaign.jobs(store(), limit)

    @app.get("/v1/jobs/{job_id}", summary="one job's state (organizer)")
    def job(person: Holder, job_id: int) -> dict:
        api_campaign.require_organizer(person.role, "reading jobs")
        return api_campaign.job(store(), job_id)

    @app.get("/v1/audit/agreement", summary="`agreement --json`: two sources' agreement (organizer)")
    def agreement(
        person: Holder,
        a: Name,
        b: Name,
        task: Literal["passage", "ptkb", "ntr"] = "passage",
        weights: Literal["none", "linear", "quadratic"] = "none",
        threshold: float | None = None,
    ) -> dict:
        api_campaign.require_organizer(person.role, "the audit")
        return api_campaign.agreement(
            store(), task, a, b, weights=None if weights == "none" else weights, threshold=threshold
        )

    @app.get("/v1/audit/verdict", summary="`audit verdict --json`: can the judge replace the reference? (organizer)")
    def verdict(
        person: Holder,
        reference: Name | None = None,
        judge: Name | None = None,
        epsilon: Annotated[float | None, Query(gt=0, lt=1)] = None,
        width: Annotated[float | None, Query(gt=0, lt=1)] = None,
    ) -> dict:
        api_campaign.require_organizer(person.role, "the audit")
        return api_campaign.verdict(store(), reference, judge, epsilon=epsilon, width=width)
