"""The API's routes. Every request reads its token's account and that account's current role (a token never
carries one); every write goes through the services the pages use, with their rights and stale-write checks,
and a refused request writes nothing.

The token check and the label writes run on the event loop itself (``async def`` calling the store): each is a
few indexed statements of about a millisecond, and one store takes one write at a time anyway, so handing them
to the thread pool cost more than the work (20 clients writing on SQLite: 330 writes/s and 2.7 ms of server CPU
a write through the pool, 910 writes/s and 1.0 ms on the loop; tests/benchmarks/bench_api.py). The queue read,
which reads a whole queue on a campaign's store, runs in the thread pool (``def``) so it never holds the loop."""

# no `from __future__ import annotations`: FastAPI reads the routes' annotations, which name create_app's locals
import threading
from typing import Annotated

from fastapi import Body, Depends, FastAPI, HTTPException, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from assess.api import routes
from assess.api.models import AnyLabelIn, Item, LabelIn, LabelOut, LabelsOut, Person, QueueOut, QueueTask
from assess.errors import AssessError
from assess.services import api_campaign, api_judging, tokens
from assess.settings import db_target
from assess.tasks import NOTHING_SHOWN, Shown

_STATUS = (
    (tokens.TokenRefused, 401),
    (tokens.AccountRefused, 403),
    (api_judging.NotAllowed, 403),
    (api_judging.NotInQueue, 403),
    (api_campaign.Forbidden, 403),
    (api_campaign.NotFound, 404),
)
_TASK_TAGS = frozenset(("passage", "ptkb", "citation"))


def _flat(errors) -> list[dict]:
    """Pydantic's errors with the label union's tag left out of ``loc`` (``["body", "grade"]``, not
    ``["body", "passage", "grade"]``), and a task no union member takes named as ``["body", "task"]``."""
    out = []
    for e in errors:
        loc = list(e.get("loc", ()))
        if len(loc) > 2 and loc[0] == "body" and loc[1] in _TASK_TAGS:
            loc = ["body", *loc[2:]]
        if e.get("type") in ("union_tag_invalid", "union_tag_not_found"):
            loc = ["body", "task"]
        out.append({**e, "loc": loc})
    return out


def _item(task: str, turn: str, item: str) -> Item:
    return Item(turn=turn, passage=item) if task == "passage" else Item(turn=turn, item=item)


def create_app(target: str) -> FastAPI:
    """The API over the store at ``target`` (a SQLite file or a PostgreSQL URL); each worker thread keeps its own
    handle of the store (a handle's transaction state is not shared between threads)."""
    app = FastAPI(
        title="assess API",
        version="1",
        description="Queues and labels of the assessment workbench (docs/api.md).",
    )
    local = threading.local()
    bearer = HTTPBearer(auto_error=False, description="a personal token: python -m assess users token NAME")

    def store():
        if getattr(local, "db", None) is None:
            local.db = api_judging.open_store(target)
        return local.db

    async def holder(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> tokens.TokenHolder:
        return tokens.token_holder(store(), credentials.credentials if credentials else None)

    Holder = Annotated[tokens.TokenHolder, Depends(holder)]

    @app.exception_handler(AssessError)
    async def refused(request: Request, exc: AssessError) -> JSONResponse:
        if isinstance(exc, api_judging.StaleLabel):
            stored = None
            if exc.stored is not None:
                key = "grade" if exc.task == "passage" else "value"
                stored = {key: exc.stored.value, "source": exc.source, "at": exc.at}
            return JSONResponse({"detail": str(exc), "stored": stored}, status_code=409)
        if isinstance(exc, api_campaign.FieldRefused):
            error = {"loc": list(exc.loc), "msg": str(exc), "type": "value_error"}
            return JSONResponse({"detail": [error]}, status_code=422)
        status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 400)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return JSONResponse({"detail": str(exc)}, status_code=status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": jsonable_encoder(_flat(exc.errors()))}, status_code=422)

    @app.get("/v1/me", response_model=Person, summary="the token's account and its current role")
    async def me(person: Holder) -> Person:
        return Person(name=person.name, role=person.role.value)

    @app.get(
        "/v1/queue",
        response_model=QueueOut,
        response_model_exclude_none=True,
        summary="the person's next unjudged items of a task, as its page orders them",
    )
    def next_items(
        person: Holder,
        task: QueueTask = "passage",
        limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ) -> QueueOut:
        items, judged, total = api_campaign.next_items(store(), person.name, task, limit=limit)
        return QueueOut(items=[_item(task, t, i) for t, i in items], judged=judged, total=total)

    @app.post(
        "/v1/labels",
        status_code=201,
        response_model=LabelOut,
        response_model_exclude_none=True,
        summary="store a label under the token's person",
    )
    async def save_label(label: Annotated[AnyLabelIn, Body()], person: Holder) -> LabelOut:
        if "seen" not in label.model_fields_set:
            seen = None
        elif label.seen is None:
            seen = NOTHING_SHOWN
        else:
            seen = Shown(True, label.seen.grade if isinstance(label, LabelIn) else label.seen.value)
        if isinstance(label, LabelIn):
            api_judging.save_passage(store(), person.name, label.turn, label.passage, label.grade, seen=seen)
            return LabelOut(
                task=label.task, turn=label.turn, passage=label.passage, grade=label.grade, source=person.name
            )
        api_campaign.save_label(store(), person.name, label.task, label.turn, label.item, label.value, seen=seen)
        return LabelOut(task=label.task, turn=label.turn, item=label.item, value=label.value, source=person.name)

    @app.delete(
        "/v1/labels/latest",
        response_model=Item,
        response_model_exclude_none=True,
        summary="undo the person's latest label change of a task (the pages' U)",
    )
    async def undo(person: Holder, task: QueueTask = "passage") -> Item:
        touched = api_campaign.undo_latest(store(), person.name, task)
        if touched is None:
            raise HTTPException(404, "nothing to undo")
        return _item(task, *touched)

    @app.get("/v1/labels", response_model=LabelsOut, summary="a page of stored labels (a person's own; any: organizer)")
    def list_labels(
        person: Holder,
        task: QueueTask = "passage",
        source: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
        turn: Annotated[str | None, Query(min_length=1, max_length=300)] = None,
        offset: Annotated[int, Query(ge=0)] = 0,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    ) -> LabelsOut:
        found = api_campaign.list_labels(
            store(), person.name, person.role, task, source=source, turn_id=turn, offset=offset, limit=limit + 1
        )
        return LabelsOut(labels=found[:limit], next_offset=offset + limit if len(found) > limit else None)

    routes.add_routes(app, target, store, Holder)
    return app


def app_from_environment() -> FastAPI:
    """The app over $ASSESS_DB: what each of several uvicorn worker processes builds (`api --workers N`)."""

    return create_app(db_target())
