"""docs/reference.md, written from the registries themselves (cf. ir_measures' docs built from its registry):
the label kinds (``assess.tasks.LABEL_KINDS``), the import and export kinds (``loading.IMPORT_KINDS``,
``exports.EXPORTERS``), the leaderboard's measures (``leaderboards``) and the ASSESS_* settings (read from
``assess/settings.py``, their one reader). ``tests/docs/test_reference.py`` writes it again and fails when the
committed file differs, so the reference cannot drift from the code; ``python -m assess.services.reference``
rewrites it."""

from __future__ import annotations

import ast
import inspect
import re
import sys
from pathlib import Path

from assess import settings, tasks
from assess.services.audit import ESTIMATE_MEASURES
from assess.services.exports import EXPORTERS, STREAM_KINDS
from assess.services.leaderboards import BANK_MEASURES, CITATION_MEASURES, NUGGET_MEASURES, RUBRIC_MEASURES
from assess.services.loading import IMPORT_KINDS, REPLACE_KINDS, TOPIC_KINDS

PATH = Path(__file__).resolve().parents[2] / "docs" / "reference.md"


def _cell(text: object) -> str:
    """One Markdown table cell: pipes escaped, lines joined."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(header: tuple[str, ...], rows: list[tuple]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _label_kinds() -> list[str]:
    rows = []
    for kind in tasks.LABEL_KINDS.values():  # read at each call: a test may patch the registry
        scale = ", ".join(f"{value} {name}" for value, name in sorted(kind.scale.names.items()))
        if kind.scale.missing:
            scale += f"; none: {kind.scale.missing}"
        page = f"/{kind.page.url_path} (`{kind.page.script}`)" if kind.page else ""
        rows.append(
            (
                f"`{kind.task.value}`",
                f"`{kind.table}`",
                ", ".join(kind.item_columns),
                f"{kind.value_column}: {scale}",
                page,
                kind.description,
            )
        )
    return _table(("kind", "table", "item", "value and scale", "page", "what it judges"), rows)


def _import_kinds() -> list[str]:
    rows = [
        (
            f"`{kind.name}`",
            ", ".join(f"`--{o.replace('_', '-')}`" for o in kind.options),
            kind.default_source or "",
            "yes" if kind.name in REPLACE_KINDS else "",
            "yes" if kind.name in TOPIC_KINDS else "",
        )
        for kind in IMPORT_KINDS.values()
    ]
    return _table(("kind", "options", "default source", "may replace stored texts", "brings topics"), rows)


def _export_kinds() -> list[str]:
    rows = [
        (f"`{name}`", "a stream (standard output or a file)" if name in STREAM_KINDS else "a file")
        for name in EXPORTERS
    ]
    return _table(("kind", "written to"), rows)


def _measures() -> list[str]:
    groups = (
        ("nugget scores, per turn", NUGGET_MEASURES),
        ("citation scores, per response", CITATION_MEASURES),
        ("nugget bank coverage, per topic", BANK_MEASURES),
        ("rubric judgments, per topic", RUBRIC_MEASURES),
        ("corrected estimates (`audit estimate`)", ESTIMATE_MEASURES),
    )
    return _table(("measures", "names"), [(what, ", ".join(f"`{m}`" for m in names)) for what, names in groups])


def _settings() -> list[str]:
    """Each public function of assess/settings.py with the ASSESS_* variables it reads, and its docstring."""
    rows = []
    for node in ast.parse(inspect.getsource(settings)).body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        names = sorted(
            {
                c.value
                for c in ast.walk(node)
                if isinstance(c, ast.Constant) and re.fullmatch(r"ASSESS_[A-Z_]+", str(c.value))
            }
        )
        if names:
            doc = " ".join((ast.get_docstring(node) or "").split())
            rows.append((", ".join(f"`{n}`" for n in names), f"`settings.{node.name}`", doc))
    return _table(("variable", "read by", "meaning"), rows)


def reference() -> str:
    """The text of docs/reference.md."""
    sections = (
        ("Label kinds", "`assess.tasks.LABEL_KINDS`", _label_kinds()),
        (
            "Import kinds",
            "`assess.services.loading.IMPORT_KINDS` (`python -m assess import KIND FILE`)",
            _import_kinds(),
        ),
        ("Export kinds", "`assess.services.exports.EXPORTERS` (`python -m assess export KIND`)", _export_kinds()),
        ("Measures", "`assess.services.leaderboards` and `assess.services.audit`", _measures()),
        ("Settings", "`assess/settings.py`, the one reader of the environment", _settings()),
    )
    out = [
        "# Reference",
        "",
        "Written from the registries by `python -m assess.services.reference`; do not edit by hand",
        "(`tests/docs/test_reference.py` fails when this file and the code differ).",
    ]
    for title, source, table in sections:
        out += ["", f"## {title}", "", f"From {source}.", "", *table]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    PATH.write_text(reference(), encoding="utf-8")
    sys.exit(0)
