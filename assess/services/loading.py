"""The import kinds, one entry each (reader, options, store writer), and the one entry point that reads a file of
a given kind and imports it: used by the CLI, the app and the demo."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, BinaryIO

from assess.errors import AssessError, FormatError
from assess.formats.ikat import Conversation, Turn, iter_responses, iter_topics
from assess.formats.nuggets import iter_nuggets, parse_ntr_labels
from assess.formats.rag_topics import iter_rag_topics
from assess.formats.reading import id_problem, short
from assess.formats.trec import PassageStream, QrelsStream, RunStream, parse_ptkb_qrels, parse_qrels
from assess.services import nuggetizer_files, response_files
from assess.tasks import DEFAULT_SOURCES, REPLACE_KINDS, TOPIC_KINDS
from store import imports, label_imports, labels, rag_imports, sources, stats
from store.accounts import DEMO_COLLECTION
from store.db import write
from store.demo import DemoInStore, demo_turns, drop, holdings
from store.history import record_action

if TYPE_CHECKING:  # the store is imported where a file is written: building the CLI's parser stays light
    from store import Store


@dataclass(frozen=True)
class ImportOptions:
    """What an import may be told besides its file; each kind reads the options its entry names."""

    source: str | None = None
    depth: int = 10
    name: str | None = None
    dedup: bool = False
    nugget_source: str = "human"
    gold: bool = False
    year: int | None = None
    collection: str | None = None
    run: str | None = None
    replace: bool = False
    by: str | None = None
    layout: str | None = None
    topics: str | None = None


@dataclass(frozen=True)
class ImportKind:
    """One kind of file ``import`` reads: ``read(path, options)`` gives its records (None: the writer reads the
    file itself), ``write(db, path, records, options)`` stores them and returns the summary. ``options``: the
    :class:`ImportOptions` it reads (``source`` defaulting to ``default_source``); ``replaces``: it may replace
    stored texts when asked (``--replace``); the others never change one."""

    name: str
    read: Callable[[str | Path, ImportOptions], Iterable[Any]] | None
    write: Callable[..., dict]
    options: tuple[str, ...] = ()
    replaces: bool = False

    @property
    def default_source(self) -> str | None:
        """The label source the file's labels go to when none is named."""
        return DEFAULT_SOURCES.get(self.name)


def _topics(path: str | Path, o: ImportOptions):
    return iter_topics(path, year=o.year)


def _qrels(path: str | Path, o: ImportOptions):
    return QrelsStream(path)


def _ptkb_qrels(path: str | Path, o: ImportOptions):
    return parse_ptkb_qrels(path)


def _run(path: str | Path, o: ImportOptions):
    return RunStream(path)


def _passages(path: str | Path, o: ImportOptions):
    return PassageStream(path)


def _nuggets(path: str | Path, o: ImportOptions):
    return iter_nuggets(path)


def _responses(path: str | Path, o: ImportOptions):
    return iter_responses(path)


def _ntr_labels(path: str | Path, o: ImportOptions):
    return parse_ntr_labels(path)


def _response_file(kind: str):
    def write(db: Store, path: str | Path, records, o: ImportOptions) -> dict:
        topics = None
        if o.topics is not None:
            topics = {t.topic_id: t for t in iter_rag_topics(o.topics)}
        return response_files.import_file(
            db, kind, path, run=o.run, replace=o.replace, who=o.by, layout=o.layout, topics=topics
        )

    return write


def _rag_topics(path: str | Path, o: ImportOptions):
    """A TREC RAG topics TSV or AutoJudge requests JSONL as conversations of one turn each: the topic id is
    both (so answers name it as their turn), the topic text the turn's utterance."""

    for t in iter_rag_topics(path):
        yield Conversation(t.topic_id, t.topic_id, None, None, {}, (Turn(t.topic_id, 1, t.text, None, None, (), ()),))


def _nuggetizer_nuggets(db: Store, path: str | Path, records, o: ImportOptions) -> dict:
    return nuggetizer_files.import_nuggets(db, path, source=o.source)


def _nuggetizer_assignments(db: Store, path: str | Path, records, o: ImportOptions) -> dict:
    return nuggetizer_files.import_assignments(db, path, source=o.source, nugget_source=o.nugget_source)


_KINDS = (
    ImportKind(
        "topics",
        _topics,
        lambda db, path, records, o: imports.import_topics(db, str(path), records, collection=o.collection),
        ("year", "collection"),
    ),
    ImportKind(
        "qrels",
        _qrels,
        lambda db, path, records, o: imports.import_passage_qrels(db, str(path), records, source=o.source),
        ("source",),
    ),
    ImportKind(
        "ptkb-qrels",
        _ptkb_qrels,
        lambda db, path, records, o: label_imports.import_ptkb_qrels(db, str(path), records, source=o.source),
        ("source",),
    ),
    ImportKind(
        "run",
        _run,
        lambda db, path, records, o: imports.import_run(db, str(path), records, name=o.name, depth=o.depth),
        ("name", "depth"),
    ),
    ImportKind(
        "passages",
        _passages,
        lambda db, path, records, o: imports.import_passages(db, str(path), records, replace=o.replace, by=o.by),
        ("replace",),
        replaces=True,
    ),
    ImportKind(
        "nuggets",
        _nuggets,
        lambda db, path, records, o: rag_imports.import_nuggets(
            db, str(path), records, source=o.source, dedup=o.dedup, replace=o.replace, by=o.by
        ),
        ("source", "dedup", "replace"),
        replaces=True,
    ),
    ImportKind(
        "responses",
        _responses,
        lambda db, path, records, o: rag_imports.import_responses(
            db, str(path), records, gold_source=(o.source or "gold") if o.gold else None, replace=o.replace, by=o.by
        ),
        ("source", "gold", "replace"),
        replaces=True,
    ),
    ImportKind(
        "rag-topics",
        _rag_topics,
        lambda db, path, records, o: imports.import_topics(
            db, str(path), records, collection=o.collection or "trec-rag"
        ),
        ("collection",),
    ),
    ImportKind("ikat-responses", None, _response_file("ikat-responses"), ("run", "replace"), replaces=True),
    ImportKind(
        "rag-answers", None, _response_file("rag-answers"), ("run", "replace", "layout", "topics"), replaces=True
    ),
    ImportKind(
        "ntr-labels",
        _ntr_labels,
        lambda db, path, records, o: rag_imports.import_ntr_labels(
            db, str(path), records, source=o.source, nugget_source=o.nugget_source
        ),
        ("source", "nugget_source"),
    ),
    ImportKind("nuggetizer-nuggets", None, _nuggetizer_nuggets, ("source",)),
    ImportKind("nuggetizer-assignments", None, _nuggetizer_assignments, ("source", "nugget_source")),
)

IMPORT_KINDS: MappingProxyType[str, ImportKind] = MappingProxyType({k.name: k for k in _KINDS})
"""The kinds of file ``import`` (and the Import page) reads, in the order they are offered."""


DEMO_DIR = Path(__file__).resolve().parents[2] / "assets" / "demo"
DEMO_LLM = "llm:demo-gpt"


def import_kind(kind: str) -> ImportKind:
    """The entry of ``kind``; an unknown kind is refused (ValueError naming the kinds)."""
    try:
        return IMPORT_KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown import kind {kind!r}; choose one of {', '.join(IMPORT_KINDS)}") from None


def load_file(
    db: Store, kind: str, path: str | Path, *, by: str | None = None, demo: str | None = None, **options
) -> dict:
    """Parse ``path`` as ``kind`` and import it; raises FormatError (nothing written) on bad input.

    ``options`` are :class:`ImportOptions` fields; the kind reads those of its entry. ``run`` is for the
    response files with citations (``ikat-responses``, ``rag-answers``:
    :func:`assess.services.response_files.import_file`): the run name to store them under. ``replace``
    (:data:`REPLACE_KINDS`): a stored text that the file changes is replaced, each change recorded in the
    history with the labels on the item; else the import is refused (FormatError naming the file, the line
    and the first changed item; nothing written).

    ``by`` (the organizer's name; the CLI gives ``cli:<login>``) records the import in the history as an
    organizer action: what was imported, from which file, with the summary. It is written right after the
    import's own transaction (a bulk import runs alone for its memory and speed settings).

    ``demo`` (:data:`DEMO_CHOICES`; the CLI and the Import page pass one, a library call None: no check): topics
    of one's own imported into a store that holds the embedded demo (:func:`demo_in_the_way`) are refused with
    ``ask`` (:class:`store.demo.DemoInStore`, nothing written; a bad file is refused for its own error first),
    imported after the demo is removed in the same transaction with ``drop`` (:func:`drop_demo`; a bad file
    leaves the demo in place), beside it with ``keep``."""
    if demo is not None and demo not in DEMO_CHOICES:
        raise AssessError(f"the demo choice is one of {', '.join(DEMO_CHOICES)}, not {demo!r}")
    if demo is not None and demo != "keep" and demo_in_the_way(db, kind, options.get("collection")):
        with write(db):  # one transaction: a file refused on its way in leaves the demo in place
            if demo == "drop":
                drop_demo(db, by=by)
            summary = load_file(db, kind, path, by=by, **options)
            if demo == "ask":  # asked only of a file that would go in: its own errors come first; rolled back
                raise DemoInStore(
                    f"{db.location} holds the embedded demo: importing {kind} of your own would put the demo's "
                    "items in the queues beside yours. Import into a new store instead (--db new.db), or say "
                    "what to do with the demo: --drop-demo (remove it and everything it seeded) or --keep-demo "
                    "(keep both). Nothing was imported"
                )
        return summary
    given = ImportOptions(by=by, **options)
    if given.replace and kind not in REPLACE_KINDS:
        raise AssessError(f"replacing stored texts is for {', '.join(REPLACE_KINDS)} imports, not {kind}")
    entry = import_kind(kind)
    given = dataclasses.replace(given, source=given.source or entry.default_source)
    records = entry.read(path, given) if entry.read is not None else None
    summary = entry.write(db, path, records, given)
    if by is not None:
        record_action(db, by, "import", f"{kind} {Path(path).name}", None, summary, via=options.get("source") or kind)
    return summary


def load_demo(db: Store) -> dict:
    """Load the embedded demo (assets/demo): topics, passages, 3 runs pooled at depth 10, nuggets,
    responses, and precomputed LLM pre-judgments under the source ``llm:demo-gpt``."""

    with write(db):  # all or nothing: a half-loaded demo would never be retried
        return _load_demo(db, DEMO_DIR)


def load_demo_if_empty(db: Store) -> bool:
    """Load the embedded demo when the store is empty; False when it is not. The emptiness check runs under
    the write lock, so app processes starting on one new store at once load the demo exactly once."""

    with write(db):
        if not is_empty(db):
            return False
        _load_demo(db, DEMO_DIR)
    return True


def _load_demo(db: Store, d: Path) -> dict:
    done = {"topics": load_file(db, "topics", d / "topics.json", collection="demo")}
    done["passages"] = load_file(db, "passages", d / "passages.jsonl")
    for run in sorted((d / "runs").glob("*.run")):
        done[run.stem] = load_file(db, "run", run, depth=10)
    done["nuggets"] = load_file(db, "nuggets", d / "nuggets.json", source="gold")
    done["responses"] = load_file(db, "responses", d / "responses.json")
    done["llm-passages"] = load_file(db, "qrels", d / "llm-passages.qrels", source=DEMO_LLM)
    done["llm-ptkb"] = load_file(db, "ptkb-qrels", d / "llm-ptkb.qrels", source=DEMO_LLM)
    done["llm-ntr"] = load_file(db, "ntr-labels", d / "llm-ntr.tsv", source=DEMO_LLM, nugget_source="gold")
    # Two simulated assessors (overlapping turns, so human-human agreement exists), demo-ann's PTKB labels
    # and a second LLM (assets/demo/README.md says how they were simulated); the labels are read from files.

    for name in DEMO_ASSESSORS:
        sources.sign_in(db, name)
        grades = [((q.turn_id, q.item_id), q.grade) for q in parse_qrels(d / f"{name}.qrels")]
        done[name] = labels.save_many(db, "passage", name, grades, mode="import", via=None)
    statements = [((q.turn_id, q.item_id), q.grade) for q in parse_ptkb_qrels(d / "demo-ann-ptkb.qrels")]
    done["demo-ann-ptkb"] = labels.save_many(db, "ptkb", DEMO_ASSESSORS[0], statements, mode="import", via=None)
    done["llm-llama"] = load_file(db, "qrels", d / "llm-llama-passages.qrels", source=DEMO_SECOND_LLM)
    return done


DEMO_ASSESSORS = ("demo-ann", "demo-ben")
DEMO_SECOND_LLM = "llm:demo-llama"

DEMO_CHOICES = ("ask", "drop", "keep")
"""What an import of topics of one's own does to a store holding the demo (:func:`load_file`'s ``demo``)."""


def demo_in_the_way(db: Store, kind: str, collection: str | None = None) -> bool:
    """Whether importing ``kind`` would mix the embedded demo with one's own conversations: topics (of any
    collection but the demo's own) into a store holding the demo."""

    return kind in TOPIC_KINDS and collection != DEMO_COLLECTION and holdings(db)["demo"] > 0


def demo_seeded() -> dict[str, list[str]]:
    """The runs, passages and label sources the demo's files seed (:func:`load_demo`)."""

    runs = sorted(DEMO_DIR.glob("runs/*.run"))
    passages = {p.passage_id for block in PassageStream(DEMO_DIR / "passages.jsonl") for p in block}
    passages |= {r.passage_id for run in runs for block in RunStream(run) for r in block}
    sources = {DEMO_LLM, DEMO_SECOND_LLM, *DEMO_ASSESSORS, "gold", "organizers"}  # organizers: the PTKB provenance
    return {"runs": [r.stem for r in runs], "passages": sorted(passages), "sources": sorted(sources)}


def drop_demo(db: Store, *, by: str | None) -> dict[str, int]:
    """Remove the embedded demo and everything it seeded, in one transaction with a history row
    (:func:`store.demo.drop`): the rows removed per table."""

    return drop(db, **demo_seeded(), by=by)


def demo_mix(db: Store, turns) -> bool:
    """Whether the turn ids ``turns`` (a queue's) hold both demo turns and turns of one's own."""

    demo = demo_turns(db)
    kinds = {t in demo for t in turns}
    return kinds == {True, False}


def is_empty(db: Store) -> bool:
    """True before anything has been imported (the app then loads the demo)."""

    return stats.is_empty(db)


def upload_name(filename: str) -> str:
    """The base name of an uploaded file, safe to use as a file name and to show: the last path part
    (``/`` or ``\\``), stripped; empty, ``.``, ``..``, over-long names or names with control
    characters are refused (FormatError naming the upload)."""

    base = str(filename).replace("\\", "/").rsplit("/", 1)[-1].strip()
    problem = (
        "an empty name"
        if not base
        else "a name that is only dots"
        if not base.strip(".")
        else "a name over 255 characters"
        if len(base) > 255
        else id_problem(base.replace(" ", "_"))
    )
    if problem:
        raise FormatError(f"upload {short(str(filename), 60)}", None, "a file name", problem)
    return base


def load_upload(
    db: Store, kind: str, filename: str, data: bytes | BinaryIO, *, by: str | None = None, **options
) -> dict:
    """Import an uploaded file: it is written to a temporary file named like the upload's base name
    (for messages, which then name the upload, never the temporary folder), then read from there as
    :func:`load_file` reads any file: JSON files one record at a time, line files block by block, so
    the upload is never parsed whole. ``data``: the upload's bytes or its binary file object (copied
    from where it stands, block by block, and not closed)."""
    import shutil
    import tempfile

    name = upload_name(filename)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        if isinstance(data, bytes | bytearray | memoryview):
            path.write_bytes(data)
        else:
            with path.open("wb") as copy:
                shutil.copyfileobj(data, copy, 2**20)
        try:
            return load_file(db, kind, path, by=by, **options)
        except FormatError as exc:
            exc.args = (str(exc).replace(str(path), name),)
            exc.file = name
            raise
