"""The API's request and answer bodies (pydantic): what /openapi.json describes and FastAPI validates (422)."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

ItemId = Annotated[str, Field(min_length=1, max_length=300)]
Grade = Annotated[StrictInt, Field(ge=0, le=4)]
# the tasks of assess.services.api_campaign.QUEUE_TASKS: a Literal so that /openapi.json lists them
QueueTask = Literal["passage", "ptkb", "citation"]
KindTask = Literal["ptkb", "citation"]


class Seen(BaseModel):
    """A stored label the client saw: its grade (null: cannot judge)."""

    model_config = ConfigDict(extra="forbid")
    grade: Grade | None


class SeenValue(BaseModel):
    """A stored label the client saw: its value (null: cannot judge)."""

    model_config = ConfigDict(extra="forbid")
    value: StrictInt | None


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


class KindLabelIn(BaseModel):
    """A label of another task: ``item`` as the queue spells it, ``value`` on the task's scale."""

    model_config = ConfigDict(extra="forbid")
    task: KindTask
    turn: ItemId
    item: ItemId
    value: StrictInt | None = Field(description="on the task's scale (docs/api.md); null: 'cannot judge' where allowed")
    seen: SeenValue | None = Field(default=None, description="as for passage labels")


AnyLabelIn = Annotated[LabelIn | KindLabelIn, Field(discriminator="task")]


class Item(BaseModel):
    """A queue item: a passage task's ``passage``, another task's ``item``."""

    turn: str
    passage: str | None = None
    item: str | None = None


class QueueOut(BaseModel):
    items: list[Item]
    judged: int
    total: int


class LabelOut(BaseModel):
    task: str
    turn: str
    passage: str | None = None
    item: str | None = None
    grade: int | None = None
    value: int | None = None
    source: str


class StoredLabel(BaseModel):
    task: str
    source: str
    turn: str
    item: str
    value: int | None
    mode: str | None
    via: str | None
    at: str


class LabelsOut(BaseModel):
    labels: list[StoredLabel]
    next_offset: int | None = Field(description="the offset of the next page; null: this was the last")


class Person(BaseModel):
    name: str
    role: str


class AssignmentsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    assessor: Annotated[str, Field(min_length=1, max_length=200)]
    turns: Annotated[list[ItemId], Field(min_length=1, max_length=10_000)]


class Assignment(BaseModel):
    assessor: str
    turn_id: str
    conversation_id: str
    assigned_at: str
