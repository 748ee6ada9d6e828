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
from typing import Annotated, Literal

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from assess.errors import AssessError
from assess.services import api_judging, tokens
from assess.settings import db_target
from assess.tasks import NOTHING_SHOWN, Shown

ItemId = Annotated[str, Field(min_length=1, max_length=300)]
Grade = Annotated[StrictInt, Field(ge=0, le=4)]


class Seen(BaseModel):
    """A stored label the client saw: its grade (null: cannot judge)."""

    model_config = ConfigDict(extra="forbid")
    grade: Grade | None


class LabelIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: Literal["passage"]
    turn: ItemId
    passage: ItemId
    grade: Grade | None = Field(description="0-4, or null for 'cannot judge'")
    seen: Seen | None = Field(
        default=None,
        description="the person's stored label the client last saw (null: none); omitted: no stale-write check",
    )


class Item(BaseModel):
    turn: str
    passage: str


class QueueOut(BaseModel):
    items: list[Item]
    judged: int
    total: int


class LabelOut(BaseModel):
    task: str
    turn: str
    passage: str
    grade: int | None
    source: str


class Person(BaseModel):
    name: str
    role: str


_STATUS = (
    (tokens.TokenRefused, 401),
    (tokens.AccountRefused, 403),
    (api_judging.NotAllowed, 403),
    (api_judging.NotInQueue, 403),
)


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
            stored = None if exc.stored is None else {"grade": exc.stored.value, "source": exc.source, "at": exc.at}
            return JSONResponse({"detail": str(exc), "stored": stored}, status_code=409)
        status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 400)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return JSONResponse({"detail": str(exc)}, status_code=status, headers=headers)

    @app.get("/v1/me", response_model=Person, summary="the token's account and its current role")
    async def me(person: Holder) -> Person:
        return Person(name=person.name, role=person.role.value)

    @app.get("/v1/queue", response_model=QueueOut, summary="the person's next unjudged items, as /judge orders them")
    def next_items(
        person: Holder,
        task: Literal["passage"] = "passage",
        limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ) -> QueueOut:
        items, judged, total = api_judging.next_items(store(), person.name, task, limit=limit)
        return QueueOut(items=[Item(turn=t, passage=p) for t, p in items], judged=judged, total=total)

    @app.post("/v1/labels", status_code=201, response_model=LabelOut, summary="store a label under the token's person")
    async def save_label(label: LabelIn, person: Holder) -> LabelOut:
        if "seen" not in label.model_fields_set:
            seen = None
        elif label.seen is None:
            seen = NOTHING_SHOWN
        else:
            seen = Shown(True, label.seen.grade)
        api_judging.save_passage(store(), person.name, label.turn, label.passage, label.grade, seen=seen)
        return LabelOut(task=label.task, turn=label.turn, passage=label.passage, grade=label.grade, source=person.name)

    @app.delete("/v1/labels/latest", response_model=Item, summary="undo the person's latest label change (/judge's U)")
    async def undo(person: Holder, task: Literal["passage"] = "passage") -> Item:
        touched = api_judging.undo_latest(store(), person.name, task)
        if touched is None:
            raise HTTPException(404, "nothing to undo")
        return Item(turn=touched[0], passage=touched[1])

    return app


def app_from_environment() -> FastAPI:
    """The app over $ASSESS_DB: what each of several uvicorn worker processes builds (`api --workers N`)."""

    return create_app(db_target())
