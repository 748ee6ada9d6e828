"""One entry point that reads a file of a given kind and imports it: used by the CLI, the app and the demo."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from assess import formats
from assess.errors import AssessError, FormatError
from assess.formats.ikat import iter_responses
from assess.formats.nuggets import iter_nuggets
from assess.formats.trec import PassageStream, QrelsStream, RunStream
from assess.tasks import DEFAULT_SOURCES, IMPORT_KINDS, NUGGETIZER_FILE_KINDS, RESPONSE_FILE_KINDS
from store import Store, imports, sources, stats

REPLACE_KINDS = (*RESPONSE_FILE_KINDS, "nuggets", "responses", "passages")
"""The imports that may replace stored texts when asked (``--replace``); the others never change one."""

DEMO_DIR = Path(__file__).resolve().parents[2] / "assets" / "demo"
DEMO_LLM = "llm:demo-gpt"


def load_file(
    db: Store,
    kind: str,
    path: str | Path,
    *,
    source: str | None = None,
    depth: int = 10,
    name: str | None = None,
    dedup: bool = False,
    nugget_source: str = "human",
    gold: bool = False,
    year: int | None = None,
    collection: str | None = None,
    run: str | None = None,
    replace: bool = False,
    by: str | None = None,
) -> dict:
    """Parse ``path`` as ``kind`` and import it; raises FormatError (nothing written) on bad input.

    ``run`` is for the response files with citations (``ikat-responses``, ``rag-answers``:
    :func:`assess.services.response_files.import_file`): the run name to store them under. ``replace``
    (those kinds and :data:`REPLACE_KINDS`): a stored text that the file changes is replaced, each change
    recorded in the history with the labels on the item; else the import is refused (FormatError naming
    the file, the line and the first changed item; nothing written).

    ``by`` (the organizer's name; the CLI gives ``cli:<login>``) records the import in the history as an
    organizer action: what was imported, from which file, with the summary. It is written right after the
    import's own transaction (a bulk import runs alone for its memory and speed settings)."""
    summary = _load_file(
        db,
        kind,
        path,
        source=source,
        depth=depth,
        name=name,
        dedup=dedup,
        nugget_source=nugget_source,
        gold=gold,
        year=year,
        collection=collection,
        run=run,
        replace=replace,
        by=by,
    )
    if by is not None:
        from store.history import record_action

        record_action(db, by, "import", f"{kind} {Path(path).name}", None, summary, via=source or kind)
    return summary


def _load_file(
    db: Store,
    kind: str,
    path: str | Path,
    *,
    source,
    depth,
    name,
    dedup,
    nugget_source,
    gold,
    year,
    collection,
    run=None,
    replace=False,
    by=None,
) -> dict:
    if replace and kind not in REPLACE_KINDS:
        raise AssessError(f"replacing stored texts is for {', '.join(REPLACE_KINDS)} imports, not {kind}")
    file = str(path)
    source = source or DEFAULT_SOURCES.get(kind)
    if kind == "topics":
        return imports.import_topics(db, file, formats.iter_topics(path, year=year), collection=collection)
    if kind == "qrels":
        return imports.import_passage_qrels(db, file, QrelsStream(path), source=source)
    if kind == "ptkb-qrels":
        return imports.import_ptkb_qrels(db, file, formats.parse_ptkb_qrels(path), source=source)
    if kind == "run":
        return imports.import_run(db, file, RunStream(path), name=name, depth=depth)
    if kind == "passages":
        return imports.import_passages(db, file, PassageStream(path), replace=replace, by=by)
    if kind == "nuggets":
        return imports.import_nuggets(db, file, iter_nuggets(path), source=source, dedup=dedup, replace=replace, by=by)
    if kind == "responses":
        return imports.import_responses(
            db,
            file,
            iter_responses(path),
            gold_source=(source or "gold") if gold else None,
            replace=replace,
            by=by,
        )
    if kind in RESPONSE_FILE_KINDS:
        from assess.services import response_files

        return response_files.import_file(db, kind, path, run=run, replace=replace, who=by)
    if kind in NUGGETIZER_FILE_KINDS:
        from assess.services import nuggetizer_files

        if kind == nuggetizer_files.NUGGETS:
            return nuggetizer_files.import_nuggets(db, path, source=source)
        return nuggetizer_files.import_assignments(db, path, source=source, nugget_source=nugget_source)
    if kind == "ntr-labels":
        return imports.import_ntr_labels(
            db, file, formats.parse_ntr_labels(path), source=source, nugget_source=nugget_source
        )
    raise ValueError(f"unknown import kind {kind!r}; choose one of {', '.join(IMPORT_KINDS)}")


def load_demo(db: Store) -> dict:
    """Load the embedded demo (assets/demo): topics, passages, 3 runs pooled at depth 10, nuggets,
    responses, and precomputed LLM pre-judgments under the source ``llm:demo-gpt``."""
    from store.db import write

    with write(db):  # all or nothing: a half-loaded demo would never be retried
        return _load_demo(db, DEMO_DIR)


def load_demo_if_empty(db: Store) -> bool:
    """Load the embedded demo when the store is empty; False when it is not. The emptiness check runs under
    the write lock, so app processes starting on one new store at once load the demo exactly once."""
    from store.db import write

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
    from assess.formats.trec import parse_ptkb_qrels, parse_qrels
    from store import labels

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


def is_empty(db: Store) -> bool:
    """True before anything has been imported (the app then loads the demo)."""
    return stats.is_empty(db)


def upload_name(filename: str) -> str:
    """The base name of an uploaded file, safe to use as a file name and to show: the last path part
    (``/`` or ``\\``), stripped; empty, ``.``, ``..``, over-long names or names with control
    characters are refused (FormatError naming the upload)."""
    from assess.formats.reading import id_problem, short

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
