"""Issue 35 item 5: docs/reference.md is written from the registries (assess/services/reference.py); the
committed file must be what the code writes now, so a new kind, measure or setting cannot leave it behind."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from assess import tasks
from assess.services import reference


def test_the_committed_reference_is_the_registries():
    written = reference.reference()
    committed = reference.PATH.read_text(encoding="utf-8")
    assert committed == written, (
        "docs/reference.md differs from the registries: run python -m assess.services.reference"
    )


def test_a_new_kind_changes_the_reference(monkeypatch):
    """A kind added to the registry is written into the reference, so the committed file no longer matches."""
    toy = dataclasses.replace(tasks.LABEL_KINDS[tasks.Task.PASSAGE], table="toy_labels", description="a toy kind")
    monkeypatch.setattr(tasks, "LABEL_KINDS", MappingProxyType({**tasks.LABEL_KINDS, "toy": toy}))
    written = reference.reference()
    assert "| `toy_labels` |" in written and "a toy kind |" in written
    assert written != reference.PATH.read_text(encoding="utf-8")


def test_the_reference_names_every_registry_entry():
    text = reference.PATH.read_text(encoding="utf-8")
    for kind in tasks.LABEL_KINDS.values():
        assert f"| `{kind.task.value}` | `{kind.table}` |" in text
    for name in tasks.IMPORT_FILE_KINDS + tasks.EXPORT_FILE_KINDS:
        assert f"| `{name}` |" in text
    assert "| `ASSESS_DB` | `settings.db_given` |" in text
