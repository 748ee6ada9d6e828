"""``data export``: one export request, checked and written by the exporter of its kind.

Every kind has one exporter in :data:`EXPORTERS`: the label kinds written to a stream (TREC qrels of the
passage and PTKB tasks, nuggets JSON, a label table as CSV or Parquet) and the file kinds of the registry
(:data:`assess.tasks.RESPONSE_FILE_KINDS` through :mod:`assess.services.response_files`,
:data:`assess.tasks.NUGGETIZER_FILE_KINDS` through :mod:`assess.services.nuggetizer_files`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from assess import formats
from assess.errors import AssessError
from assess.formats.inert_csv import frame_csv
from assess.formats.responses import ANSWER_LAYOUTS
from assess.services import nuggetizer_files
from assess.services.leaderboards import export_leaderboard
from assess.services.response_files import export_file
from assess.tasks import NUGGETIZER_FILE_KINDS, RESPONSE_FILE_KINDS
from store import exports

STREAM_KINDS: tuple[str, ...] = ("qrels", "ptkb-qrels", "nuggets", "table")  # written to a stream (or a file)


@dataclass(frozen=True)
class ExportRequest:
    """The options of one ``data export`` (the command's flags, by the same names; ``runs`` is ``--run``)."""

    kind: str
    source: str | None = None
    dedup: bool = False
    nugget_source: str | None = None
    table: str | None = None
    output: str | None = None
    runs: tuple[str, ...] = ()
    layout: str | None = None
    measures: tuple[str, ...] = ()


def _qrels(db, request: ExportRequest, out: TextIO) -> None:
    read = exports.passage_qrels if request.kind == "qrels" else exports.ptkb_qrels
    out.writelines(formats.format_qrels(read(db, request.source)))


def _nuggets(db, request: ExportRequest, out: TextIO) -> None:
    json.dump(
        formats.nuggets_to_json(exports.nuggets(db, request.source, dedup=request.dedup)),
        out,
        indent=1,
        ensure_ascii=False,
    )
    out.write("\n")


def _table(db, request: ExportRequest, out: TextIO) -> None:
    if not request.table:
        raise AssessError("export table needs --table NAME")
    frame = exports.table_frame(db, request.table, request.source)
    if request.output and request.output.endswith(".parquet"):
        frame.to_parquet(request.output, index=False)  # typed columns: no spreadsheet reads a formula there
    else:
        frame_csv(frame, request.output or out)


def _responses(db, request: ExportRequest, _out: TextIO) -> dict:
    if not request.output:
        raise AssessError(f"export {request.kind} needs --out FILE")
    if request.layout and request.kind != "rag-answers":
        raise AssessError("--layout is for rag-answers exports")
    if request.layout and request.layout not in ANSWER_LAYOUTS:
        raise AssessError(f"--layout {request.layout} is not an answer layout: {', '.join(ANSWER_LAYOUTS)}")
    return export_file(db, request.kind, request.output, runs=list(request.runs), layout=request.layout)


def _nuggetizer(db, request: ExportRequest, _out: TextIO) -> dict:
    if not request.output:
        raise AssessError(f"export {request.kind} needs --out FILE")
    if not request.source:
        raise AssessError(f"export {request.kind} needs --source NAME")
    if request.layout:
        raise AssessError(f"--layout is for rag-answers exports, not {request.kind}")
    if request.kind == nuggetizer_files.NUGGETS:
        if request.runs:
            raise AssessError(f"--run is for response and assignment exports, not {request.kind}")
        return nuggetizer_files.export_nuggets(db, request.output, source=request.source, dedup=request.dedup)
    if request.dedup:
        raise AssessError(f"--dedup is for nuggets exports, not {request.kind}")
    return nuggetizer_files.export_assignments(
        db, request.output, source=request.source, nugget_source=request.nugget_source, runs=list(request.runs)
    )


def _leaderboard(db, request: ExportRequest, out: TextIO) -> dict | None:
    if request.dedup:
        raise AssessError("--dedup is for nuggets exports, not leaderboard")
    return export_leaderboard(
        db,
        request.layout or "",
        measures=request.measures,
        source=request.source or "",
        output=request.output,
        out=out,
        runs=request.runs,
    )


EXPORTERS: dict[str, Callable[..., dict | None]] = {
    "qrels": _qrels,
    "ptkb-qrels": _qrels,
    "nuggets": _nuggets,
    "table": _table,
    **dict.fromkeys(RESPONSE_FILE_KINDS, _responses),
    **dict.fromkeys(NUGGETIZER_FILE_KINDS, _nuggetizer),
    "leaderboard": _leaderboard,
}
EXPORT_KINDS: tuple[str, ...] = tuple(EXPORTERS)
_NEEDS_SOURCE = ("qrels", "ptkb-qrels", "nuggets")


def export(db, request: ExportRequest, out: TextIO) -> dict | None:
    """Write the export of ``request``: a stream kind to ``out`` (or ``--output`` for a table), a file kind to
    ``request.output``. Returns what a file kind wrote (counts by name), None for a stream kind. Raises
    :class:`AssessError` on an option that does not fit the kind."""
    if request.nugget_source and request.kind != "nuggetizer-assignments":
        raise AssessError(f"--nugget-source is for nuggetizer-assignments exports, not {request.kind}")
    if request.measures and request.kind != "leaderboard":
        raise AssessError(f"--measure is for leaderboard exports, not {request.kind}")
    if request.kind in STREAM_KINDS:
        if request.runs or request.layout:
            raise AssessError(
                f"--run and --layout are for {' and '.join(RESPONSE_FILE_KINDS)} exports, not {request.kind}"
            )
        if request.kind in _NEEDS_SOURCE and not request.source:
            raise AssessError(f"export {request.kind} needs --source NAME")
    return EXPORTERS[request.kind](db, request, out)
