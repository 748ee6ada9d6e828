"""``export release``: a campaign's judgments as one bundle that the field's loaders read (docs/release.md).

The bundle (a folder): ``docs.tsv`` and ``queries.tsv`` (``ir_datasets``' TsvDocs / TsvQueries: ``id TAB text``,
no header), ``qrels/<source>.trec`` per source with passage labels (TREC qrels), Parquet tables (``labels``,
``nuggets``, ``battles``, ``responses``) for Hugging Face ``datasets``, the AutoJudge leaderboards per source
(``leaderboards/<source>.txt``, the ir_measures layout), ``croissant.json`` (Croissant 1.1 with its
Responsible-AI fields) and a dataset card ``README.md``.

It is written into a temporary folder beside ``--out`` and moved in only once complete, so a failed export
leaves ``--out`` as it was. Every table is read row by row and written in blocks (:data:`BLOCK` rows).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from assess.errors import AssessError, FormatError
from assess.formats.leaderboard import leaderboard_text
from assess.services.leaderboards import BANK_MEASURES, CITATION_MEASURES, NUGGET_MEASURES, RUBRIC_MEASURES, leaderboard
from assess.text import code_span, showable
from store import labels, release

BLOCK = 20_000  # rows per Parquet row group: bounded memory on any store
CROISSANT = "http://mlcommons.org/croissant/1.1"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_BREAKS = re.compile(r"[\t\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")

# The Parquet tables: column name and Arrow type name (string or int64), in order.
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "labels": tuple(
        (c, "int64" if c in ("value", "guideline_version", "changes") else "string")
        for c in (
            "task",
            "source",
            "turn_id",
            "item",
            "value",
            "note",
            "mode",
            "via",
            "updated_at",
            "guideline_version",
            "changes",
            "first_at",
            "first_value",
        )
    ),
    "nuggets": (
        ("source", "string"),
        ("turn_id", "string"),
        ("key", "string"),
        ("text", "string"),
        ("relevance", "int64"),
        ("passage_id", "string"),
        ("start_char", "int64"),
        ("end_char", "int64"),
        ("in_dedup", "int64"),
        ("created_at", "string"),
    ),
    "battles": (
        ("source", "string"),
        ("turn_id", "string"),
        ("run_a", "string"),
        ("run_b", "string"),
        ("occurrence", "int64"),
        ("outcome", "int64"),
        ("reshow", "int64"),
        ("note", "string"),
        ("mode", "string"),
        ("via", "string"),
        ("updated_at", "string"),
        ("changes", "int64"),
    ),
    "responses": (("run", "string"), ("turn_id", "string"), ("text", "string"), ("layout", "string")),
}
TABLE_DESCRIPTIONS = {
    "labels": "every label of every kind but battles, one row per source and item, with its history summary",
    "nuggets": "the nuggets of the sources, with their importance and span",
    "battles": "pairwise preferences between runs' responses (outcome 1 A, 2 B, 0 tie, -1 both bad)",
    "responses": "the runs' responses per turn",
}


def safe_name(source: str) -> str:
    """A source's name as a file name: every character outside ``A-Z a-z 0-9 . _ -`` becomes ``_``, and a
    leading ``.`` (a hidden file) too: ``llm:demo-gpt`` -> ``llm_demo-gpt``."""
    name = _UNSAFE.sub("_", source)
    return "_" + name[1:] if name.startswith(".") else name


def file_names(sources: Sequence[str]) -> dict[str, str]:
    """Each source's file name (:func:`safe_name`); two sources whose safe names collide each get the first 8
    hex digits of their name's SHA-256 appended, so no file replaces another."""
    names = {s: safe_name(s) for s in sources}
    taken: dict[str, int] = {}
    for name in names.values():
        taken[name.lower()] = taken.get(name.lower(), 0) + 1  # case-insensitive file systems
    return {
        s: n if taken[n.lower()] == 1 else f"{n}-{hashlib.sha256(s.encode()).hexdigest()[:8]}" for s, n in names.items()
    }


def field_text(text: object) -> str:
    """Text for one TSV field: control characters shown as U+FFFD, tabs and line breaks as spaces (a loader
    splits on them)."""
    return _BREAKS.sub(" ", showable(text))


def check_out(out: str | Path, *, force: bool) -> Path:
    """The folder ``out`` a bundle may be written to: not a file, and empty or new unless ``force``."""
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise FormatError("--out", None, "a folder (new or empty)", f"the file {folder}")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise FormatError(
            "--out",
            None,
            "a new or empty folder (--force writes into a non-empty one)",
            f"{folder} holds {sum(1 for _ in folder.iterdir())} entries",
        )
    return folder


def check_sources(db, sources: Sequence[str]) -> list[str]:
    """``sources`` without repeats, each known to the store (else refused, listing the store's names); all the
    store's sources when none is given."""

    known = release.known_sources(db)
    for source in sources:
        if source not in known:
            raise FormatError("--source", None, f"a label source of the store ({', '.join(known) or 'none'})", source)
    return list(dict.fromkeys(sources)) or known


class _Hashed:
    """A text file written line by line, its SHA-256 and size kept for the Croissant metadata."""

    def __init__(self, path: Path):
        self.path, self.sha, self.size = path, hashlib.sha256(), 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("wb")

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        self.sha.update(data)
        self.size += len(data)
        self._file.write(data)

    def close(self) -> dict:
        self._file.close()
        return {"sha256": self.sha.hexdigest(), "size": self.size}


def _file_digest(path: Path) -> dict:
    sha, size = hashlib.sha256(), 0
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            sha.update(block)
            size += len(block)
    return {"sha256": sha.hexdigest(), "size": size}


def _blocks(records: Iterable[dict], size: int = BLOCK) -> Iterator[list[dict]]:
    block: list[dict] = []
    for record in records:
        block.append(record)
        if len(block) == size:
            yield block
            block = []
    if block:
        yield block


def write_parquet(path: Path, table: str, records: Iterable[dict]) -> int:
    """Write ``records`` to ``path`` as the Parquet table ``table`` (:data:`TABLES`), one row group per block;
    returns the row count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = TABLES[table]
    schema = pa.schema([(name, pa.int64() if kind == "int64" else pa.string()) for name, kind in columns])
    count = 0
    with pq.ParquetWriter(path, schema) as writer:
        for block in _blocks(records):
            arrays = {
                name: [None if r.get(name) is None else (int if kind == "int64" else str)(r[name]) for r in block]
                for name, kind in columns
            }
            writer.write_table(pa.table(arrays, schema=schema))
            count += len(block)
    if not count:  # `datasets` cannot load a Parquet file without rows: an empty table is left out
        path.unlink()
    return count


def _labels(db, sources: Sequence[str]) -> Iterator[dict]:
    for task in release.label_kinds():
        for record in release.labels(db, task, sources):
            yield {"task": task, **record}


def _leaderboard_groups() -> tuple[tuple[str, ...], ...]:
    return (NUGGET_MEASURES, CITATION_MEASURES, BANK_MEASURES, RUBRIC_MEASURES, ("nDCG@10", "P(rel=2)@10"))


def _leaderboards(db, folder: Path, names: dict[str, str]) -> dict[str, int]:
    """Per source, the leaderboard of every measure group its labels give values for (a group without
    values is left out); returns the lines written per source."""

    written = {}
    for source, name in names.items():
        entries = []
        for group in _leaderboard_groups():
            try:
                entries += leaderboard(db, group, source)
            except AssessError:  # no labels of this kind, no runs: that group has no values
                continue
        if entries:
            (folder / "leaderboards").mkdir(exist_ok=True)
            path = folder / "leaderboards" / f"{name}.txt"
            path.write_text(leaderboard_text(entries, "ir_measures"), encoding="utf-8", newline="\n")
            written[source] = len(entries)
    return written


def export_release(db, out: str | Path, *, sources: Sequence[str] = (), force: bool = False) -> dict:
    """Write the release bundle of ``sources`` (every source when empty) to the folder ``out`` (module
    docstring). Returns the counts written (docs, queries, qrels per source, rows per table, leaderboards)."""

    target = check_out(out, force=force)
    chosen = check_sources(db, sources)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        files: dict[str, dict] = {}
        counts: dict = {"docs": 0, "docs_without_text": 0, "queries": 0}
        docs = _Hashed(work / "docs.tsv")
        for d in release.docs(db):
            counts["docs"] += 1
            counts["docs_without_text"] += d["text"] is None
            docs.write(f"{field_text(d['id'])}\t{field_text(d['text'] or '')}\n")
        files["docs.tsv"] = docs.close()
        queries = _Hashed(work / "queries.tsv")
        for q in release.queries(db):
            counts["queries"] += 1
            queries.write(f"{field_text(q['id'])}\t{field_text(q['resolved'] or q['utterance'] or '')}\n")
        files["queries.tsv"] = queries.close()

        with_passages = [s for s in labels.sources(db, "passage") if s in chosen]
        names = file_names(chosen)
        counts["qrels"] = {}
        for source in with_passages:
            qrels = _Hashed(work / "qrels" / f"{names[source]}.trec")
            n = 0
            for q in release.qrels(db, source):
                qrels.write(f"{q['turn_id']} 0 {q['passage_id']} {q['grade']}\n")
                n += 1
            files[f"qrels/{names[source]}.trec"] = qrels.close()
            counts["qrels"][source] = n

        readers = {
            "labels": lambda: _labels(db, chosen),
            "nuggets": lambda: release.nuggets(db, chosen),
            "battles": lambda: release.battles(db, chosen),
            "responses": lambda: release.responses(db),
        }
        for table, read in readers.items():
            if counts.setdefault(table, write_parquet(work / f"{table}.parquet", table, read())):
                files[f"{table}.parquet"] = _file_digest(work / f"{table}.parquet")

        counts["leaderboards"] = _leaderboards(db, work, names)
        for source in counts["leaderboards"]:
            path = f"leaderboards/{names[source]}.txt"
            files[path] = _file_digest(work / path)

        about = {
            "roster": release.roster(db, chosen),
            "guidelines": release.guideline_versions(db),
            "names": names,
            "counts": counts,
            "files": files,
            "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        (work / "croissant.json").write_text(
            json.dumps(croissant(about), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (work / "README.md").write_text(card(about), encoding="utf-8", newline="\n")
        _move_in(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return counts


def _move_in(work: Path, target: Path) -> None:
    """Move the finished bundle into ``target``: renamed as a whole when new, else file by file (replacing
    files of the same name, leaving others)."""
    if not target.exists():
        work.rename(target)
        return
    for path in sorted(p for p in work.rglob("*") if p.is_file()):
        dest = target / path.relative_to(work)
        dest.parent.mkdir(parents=True, exist_ok=True)
        path.replace(dest)


# ------------------------------------------------------------------------------------------- metadata


def _judges(roster: list[dict]) -> list[str]:
    out = []
    for r in roster:
        parts = [f"kind {r['kind']}"]
        if r["role"]:
            parts.append(f"account role {r['role']}")
        if r["model"]:
            parts.append(f"model {r['model']}")
        if r["prompt_version"]:
            parts.append(f"prompt {r['prompt_version']}")
        out.append(f"{r['name']} ({', '.join(parts)})")
    return out


def _guidelines(rows: list[dict]) -> str:
    if not rows:
        return "No guideline versions are stored: labels follow the task definitions of the workbench."
    listed = "; ".join(f"{g['task']} v{g['version']} ({g['created_at'][:10]})" for g in rows)
    return f"Guideline versions: {listed}. Each label row names the version it was made under (guideline_version)."


def _field(table: str, column: str, kind: str) -> dict:
    return {
        "@type": "cr:Field",
        "@id": f"{table}/{column}",
        "name": column,
        "dataType": "sc:Integer" if kind == "int64" else "sc:Text",
        "source": {"fileObject": {"@id": f"{table}.parquet"}, "extract": {"column": column}},
    }


def croissant(about: dict) -> dict:
    """The bundle's Croissant 1.1 metadata: its files (with SHA-256), a record set per Parquet table and the
    Responsible-AI fields (who judged, guideline versions, the LLM roster)."""
    encodings = {".tsv": "text/tab-separated-values", ".parquet": "application/x-parquet", ".trec": "text/plain"}
    distribution = [
        {
            "@type": "cr:FileObject",
            "@id": path,
            "name": path,
            "contentUrl": path,
            "encodingFormat": encodings.get(Path(path).suffix, "text/plain"),
            "contentSize": f"{meta['size']} B",
            "sha256": meta["sha256"],
        }
        for path, meta in about["files"].items()
    ]
    record_sets = [
        {
            "@type": "cr:RecordSet",
            "@id": table,
            "name": table,
            "description": TABLE_DESCRIPTIONS[table],
            "field": [_field(table, column, kind) for column, kind in columns],
        }
        for table, columns in TABLES.items()
        if f"{table}.parquet" in about["files"]
    ]
    llms = [r for r in about["roster"] if r["kind"] == "llm"]
    context = {
        "@language": "en",
        "@vocab": "https://schema.org/",
        "sc": "https://schema.org/",
        "cr": "http://mlcommons.org/croissant/",
        "rai": "http://mlcommons.org/croissant/RAI/",
        "dct": "http://purl.org/dc/terms/",
        "arrayShape": "cr:arrayShape",
        "containedIn": "cr:containedIn",
        "equivalentProperty": "cr:equivalentProperty",
        "fileProperty": "cr:fileProperty",
        "isArray": "cr:isArray",
        "samplingRate": "cr:samplingRate",
        "citeAs": "cr:citeAs",
        "column": "cr:column",
        "conformsTo": "dct:conformsTo",
        "data": {"@id": "cr:data", "@type": "@json"},
        "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
        "examples": {"@id": "cr:examples", "@type": "@json"},
        "extract": "cr:extract",
        "field": "cr:field",
        "fileObject": "cr:fileObject",
        "fileSet": "cr:fileSet",
        "format": "cr:format",
        "includes": "cr:includes",
        "isLiveDataset": "cr:isLiveDataset",
        "jsonPath": "cr:jsonPath",
        "key": "cr:key",
        "md5": "cr:md5",
        "parentField": "cr:parentField",
        "path": "cr:path",
        "recordSet": "cr:recordSet",
        "references": "cr:references",
        "regex": "cr:regex",
        "repeated": "cr:repeated",
        "replace": "cr:replace",
        "separator": "cr:separator",
        "source": "cr:source",
        "subField": "cr:subField",
        "transform": "cr:transform",
    }
    counts = about["counts"]
    return {
        "@context": context,
        "@type": "sc:Dataset",
        "conformsTo": CROISSANT,
        "name": "assess-release",
        "description": "Relevance judgments, nuggets, preferences and responses exported from the assess workbench.",
        "url": "README.md",
        "license": "See README.md: the labels' licence is the campaign's; passage texts keep their corpus' licence.",
        "datePublished": about["created"],
        "version": "1.0.0",
        "citeAs": "See README.md",
        "distribution": distribution,
        "recordSet": record_sets,
        "rai:dataCollection": "Labels of these sources: " + "; ".join(_judges(about["roster"])),
        "rai:dataCollectionType": sorted({f"{r['kind']} labels" for r in about["roster"]}),
        "rai:dataAnnotationProtocol": _guidelines(about["guidelines"]),
        "rai:dataAnnotationPlatform": "assess workbench (Streamlit pages, CLI imports, LLM jobs)",
        "rai:machineAnnotationTools": [
            f"{r['name']}: model {r['model'] or 'unknown'}, prompt {r['prompt_version'] or 'unknown'}" for r in llms
        ],
        "rai:annotationsPerItem": "One label per source and item; the labels table's 'changes' counts its history.",
        "rai:dataLimitations": f"{counts['docs_without_text']} of {counts['docs']} passages have no public text "
        "(their text column is empty).",
    }


def _cell(text: object) -> str:
    """A table cell of store text: a code span (no markdown forms), its pipes escaped (GitHub's tables split on
    them even inside code)."""
    return code_span(text).replace("|", "\\|") if text else "-"


def card(about: dict) -> str:
    """The dataset card (README.md). Names and descriptions from the store are code spans: inert markdown."""
    counts, names = about["counts"], about["names"]
    # Hugging Face reads the front matter's configs: load_dataset(DIR, "labels") gives that table.
    lines = ["---", "configs:"]
    tables = [t for t in TABLES if counts[t]]
    for table in tables:
        lines += [f"- config_name: {table}", f"  data_files: {table}.parquet"]
    lines += [
        "---",
        "",
        "# assess release bundle",
        "",
        f"Exported {about['created']} by `python -m assess export release`.",
        "",
        "## Files",
        "",
        f"- `docs.tsv`: {counts['docs']} passages, `id TAB text`, no header. "
        f"{counts['docs_without_text']} passages have no public text here: their text column is empty "
        "(the corpus' licence keeps it from the bundle; fetch it from the corpus by id).",
        f"- `queries.tsv`: {counts['queries']} turns, `id TAB resolved utterance` (the raw utterance where "
        "no resolved one is stored).",
        "- `qrels/<source>.trec`: TREC qrels (`turn 0 passage grade`) per source with passage labels; "
        "'cannot judge' labels are left out.",
    ]
    lines += [f"  - {code_span(s)} -> `qrels/{names[s]}.trec`: {n} qrels" for s, n in counts["qrels"].items()]
    lines += [f"- `{t}.parquet`: {counts[t]} rows, {TABLE_DESCRIPTIONS[t]}." for t in tables]
    if empty := [t for t in TABLES if not counts[t]]:
        lines.append(f"- No {', '.join(empty)}: the store has none, and no file is written for an empty table.")
    lines += [
        "- `leaderboards/<source>.txt`: AutoJudge leaderboards (ir_measures layout: run topic measure value) "
        "of each source whose labels give measure values."
    ]
    lines += [
        f"  - {code_span(s)} -> `leaderboards/{names[s]}.txt`: {n} lines" for s, n in counts["leaderboards"].items()
    ]
    lines += [
        "- `croissant.json`: Croissant 1.1 metadata with its Responsible-AI fields.",
        "",
        "## Who judged",
        "",
        "| source | kind | account role | model | prompt version | description |",
        "|---|---|---|---|---|---|",
    ]
    columns = ("name", "kind", "role", "model", "prompt_version", "description")
    lines += ["| " + " | ".join(_cell(r[c]) for c in columns) + " |" for r in about["roster"]]
    lines += ["", "## Guidelines", "", _guidelines(about["guidelines"]), "", "## Loading", ""]
    lines += [
        "```python",
        "import ir_datasets, datasets",
        'ds = ir_datasets.create_dataset(docs_tsv="docs.tsv", queries_tsv="queries.tsv", qrels_trec="qrels/NAME.trec")',
        'labels = datasets.load_dataset("parquet", data_files="labels.parquet", split="train")',
        'labels = datasets.load_dataset("path/to/this/folder", "labels", split="train")  # the same, by config',
        "```",
        "",
    ]
    return "\n".join(lines)
