"""Files and words of crowd studies: the organizer's known answers (a --known spec or a file, CONE-RAG's TSV layout
for NtR), NtR answers written as words, and a platform's exported NtR labels (CONE-RAG's MTurk file). Pure (no
SQL); the rules they feed live in :mod:`assess.crowd.rules`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from assess.crowd.rules import SUPPORT_WORDS, WORKER_ID, YES_NO_WORDS, KnownAnswer
from assess.errors import AssessError, FormatError
from assess.formats import read_lines
from assess.formats.nuggetizer import ASSIGNMENTS, SUPPORT_NAMES
from assess.formats.nuggets import read_ntr_lines


def parse_known_spec(spec: str, *, graded: bool = False) -> KnownAnswer:
    """Read ``TURN,RUN,KEY,VALUE`` (KEY: nugget key like [2] or 2, or a criterion).

    VALUE is an integer; for NtR also a word: yes / no on a yes/no study, support / partial_support /
    not_support on a graded one (``graded``). A word of the other kind is refused, never converted.
    """
    parts = [p.strip() for p in spec.split(",")]
    if len(parts) != 4 or not all(parts):
        raise AssessError(f"--known expects TURN,RUN,KEY,VALUE (e.g. 101_1,demo-bm25,[1],0), not {spec!r}")
    turn, run, key, value = parts
    word = ntr_answer_word(value, graded=graded)
    if word is not None:
        return KnownAnswer(turn, run, _nugget_key(key), word)
    try:
        number = int(value)
    except ValueError:
        raise AssessError(f"--known {spec!r}: the value must be an integer, not {value!r}") from None
    return KnownAnswer(turn, run, _nugget_key(key), number)


def support_word(value: int) -> str:
    """A graded NtR value as the word graded files carry (nuggetizer's: support, partial_support, not_support)."""
    return SUPPORT_NAMES[value]


def ntr_answer_word(text: str, *, graded: bool) -> int | None:
    """The value of an NtR answer written as a word (None: not a word); a word of the other kind of study
    (a yes/no word on a graded study, a graded word on a yes/no one) is refused with what is expected."""
    word = text.strip().lower().replace(" ", "_").replace("-", "_")
    own, other = (SUPPORT_WORDS, YES_NO_WORDS) if graded else (YES_NO_WORDS, SUPPORT_WORDS)
    if word in own:
        return own[word]
    if word in other:
        if graded:
            raise AssessError(
                f"{text!r} is a yes/no answer, but the study is graded: expected support, partial_support or "
                "not_support (2, 1, 0)"
            )
        raise AssessError(
            f"{text!r} is a graded answer, but the study is yes/no: expected yes or no (1, 0); "
            "create the study with --graded for support / partial support / no support"
        )
    return None


def _nugget_key(key: str) -> str:
    return f"[{key}]" if key.isdigit() else key


def parse_known_file(path: str | Path, task: str, *, graded: bool = False) -> list[KnownAnswer]:
    """Read known answers: for NtR the CONE-RAG TSV layout (``<batch>_<conv>_<turn>_<k>_<run>  0|1``,
    the batch field ignored; a graded study's file writes the answer as a word, support /
    partial_support / not_support, so a yes/no file is never read as graded); for response studies
    ``TURN RUN CRITERION VALUE`` per line."""
    out = []
    expected = "support|partial_support|not_support (a graded study)" if graded else "0|1"
    if task == "ntr":

        def bad(number: int, text: str, fields: list[str]) -> FormatError:
            return FormatError(path, number, f"<batch>_<conv>_<turn>_<k>_<run> then {expected}", repr(text[:60]))

        for r in read_ntr_lines(path, bad_width=bad, bad_id=bad):
            value = _known_ntr_value(path, r.line, r.rest[0], graded)
            out.append(KnownAnswer(r.turn_id, r.run, r.nugget_key, value, r.line))
    else:
        for number, text in _lines(path):
            fields = text.split()
            if len(fields) != 4 or not re.fullmatch(r"[0-9]{1,9}", fields[3]):
                raise FormatError(path, number, "TURN RUN CRITERION VALUE (VALUE in ASCII digits)", repr(text[:60]))
            out.append(KnownAnswer(fields[0], fields[1], fields[2], int(fields[3]), number))
    if not out:
        raise FormatError(path, None, "at least one known answer", "an empty file")
    return out


def _known_ntr_value(path, number: int, text: str, graded: bool) -> int:
    """The answer field of a known-answer line: 0|1 on a yes/no study, a support word on a graded one."""
    if graded:
        if text.strip().lower() in SUPPORT_WORDS:
            return SUPPORT_WORDS[text.strip().lower()]
        found = (
            f"{text[:20]!r} (a yes/no answer)"
            if text in ("0", "1") or text.lower() in YES_NO_WORDS
            else repr(text[:20])
        )
        raise FormatError(path, number, "support, partial_support or not_support (the study is graded)", found)
    if text in ("0", "1"):
        return int(text)
    found = f"{text[:20]!r} (a graded answer)" if text.lower() in SUPPORT_WORDS or text == "2" else repr(text[:20])
    raise FormatError(path, number, "0|1 (the study is yes/no; --graded for support words)", found)


class CrowdNtrRow(NamedTuple):
    """One line of a crowd NtR file: CONE-RAG layout, optionally a third column naming the worker."""

    batch: str
    turn_id: str
    nugget_key: str
    run: str
    value: int
    worker: str | None
    line: int
    graded: bool = False  # the label was written as a support word (a graded study's file)


def parse_crowd_ntr(path: str | Path) -> list[CrowdNtrRow]:
    """Read ``<batch>_<conv>_<turn>_<k>_<run>\\t0|1[\\tworker]`` lines (2 fields: one aggregated label per
    pair, as in the public CONE-RAG file; 3 fields: one row per worker answer). A graded study's file
    writes the label as support / partial_support / not_support (2 / 1 / 0); every line of a file
    answers the same way (yes/no or graded)."""
    out = []
    lines = read_ntr_lines(
        path,
        widths=(2, 3),
        bad_width=lambda number, text, fields: FormatError(
            path, number, "2 or 3 fields (<batch>_<conv>_<turn>_<k>_<run>, 0|1[, worker])", f"{len(fields)} fields"
        ),
        bad_id=lambda number, text, fields: FormatError(
            path, number, "an id <batch>_<conv>_<turn>_<k>_<run>", repr(fields[0][:60])
        ),
    )
    for r in lines:
        label, number = r.rest[0], r.line
        if label in ("0", "1"):
            value, graded = int(label), False
        elif label in ASSIGNMENTS:
            value, graded = ASSIGNMENTS[label], True
        else:
            raise FormatError(
                path, number, "a label 0 or 1 (graded: support, partial_support or not_support)", repr(label[:20])
            )
        worker = r.rest[1] if len(r.rest) == 2 else None
        if worker is not None and not WORKER_ID.match(worker):
            raise FormatError(path, number, "a worker id of letters, digits and ._:@-", repr(worker[:60]))
        out.append(CrowdNtrRow(r.batch, r.turn_id, r.nugget_key, r.run, value, worker, number, graded))
    if not out:
        raise FormatError(path, None, "at least one label line", "an empty file")
    if len({r.worker is None for r in out}) > 1:
        first = next(r for r in out if (r.worker is None) != (out[0].worker is None))
        raise FormatError(path, first.line, "the same number of fields on every line", "a change")
    if len({r.graded for r in out}) > 1:
        first = next(r for r in out if r.graded != out[0].graded)
        kinds = ("0|1 (yes/no)", "support|partial_support|not_support (graded)")
        raise FormatError(
            path,
            first.line,
            f"the same kind of label on every line (line {out[0].line}: {kinds[out[0].graded]})",
            f"{kinds[first.graded]}",
        )
    return out


def _lines(path: str | Path) -> list[tuple[int, str]]:
    return read_lines(path, fields=True)
