"""RAGTIME nugget banks (questions, answers, matches) and DRAGUN rubrics (questions, short answers, judgments).

Schema: store/schema/nugget_banks.py. Every write is one transaction that checks who writes
(:func:`store.rights.check_writer`; a bank's questions and answers are the organizers' curated set, the
``curation`` action, while matches are any assessor's labels) and appends what changed to ``label_history`` (``bank-nugget``,
``bank-answer``, ``rubric``; ``bank_matches`` by its history triggers, as a label table) with who made the change; an import is also an organizer action.
The match and judgment files are imported by :mod:`store.bank_imports` (staged, then one switch).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from assess.errors import AssessError, FormatError, UnknownItem
from assess.formats.banks import (
    AGGREGATORS,
    BankAnswer,
    BankMatch,
    BankNugget,
    NuggetBank,
    Rubric,
)
from assess.formats.sentences import split_sentences
from assess.tasks import Label, Task, label_kind
from store import labels
from store.db import Store, now, row, rows, run, value, write
from store.history import record_action
from store.rights import check_writer
from store.sources import ensure_source

UNKNOWN_ACTOR = "unknown"


def _json(v: object) -> str | None:
    return None if v is None else json.dumps(v, ensure_ascii=False)


def _history(
    db: Store, kind: str, by: str | None, item: str, old: object, new: object, *, mode: str | None, via: str | None
) -> None:
    def text(v: object) -> str | None:
        return None if v is None else v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)

    run(
        db,
        "INSERT INTO label_history (label_table, source, item, old_value, new_value, mode, via, at) "
        "VALUES (:kind, :source, :item, :old, :new, :mode, :via, :at)",
        {"kind": kind, "source": by or UNKNOWN_ACTOR, "item": item, "old": text(old), "new": text(new),
         "mode": mode, "via": via, "at": now()},
    )  # fmt: skip


# ------------------------------------------------------------------------------------------- banks


def _bank_rows(bank: NuggetBank) -> tuple[list[dict], list[dict]]:
    nuggets, answers = [], []
    for n, nugget in enumerate(bank.nuggets, start=1):
        nuggets.append(
            {"topic": bank.topic_id, "nugget": n, "question": nugget.question, "aggregator": nugget.aggregator,
             "importance": _json(nugget.importance), "metadata": _json(nugget.metadata)}
        )  # fmt: skip
        for k, a in enumerate(nugget.answers, start=1):
            answers.append(
                {"topic": bank.topic_id, "nugget": n, "answer": k, "text": a.answer,
                 "refs": _json(list(a.references)), "metadata": _json(a.metadata)}
            )  # fmt: skip
    return nuggets, answers


def import_banks(db: Store, banks: Sequence[NuggetBank], file: str, *, by: str | None, replace: bool = False) -> dict:
    """Store imported banks (origin ``original``). A topic already stored with another bank is refused
    (naming the file, its line and the topic) unless ``replace`` (which drops its matches too); an equal
    one is left as it is. One transaction; returns counts."""
    counts = {"banks": len(banks), "new": 0, "replaced": 0, "unchanged": 0, "nuggets": 0, "answers": 0}
    with write(db):
        check_writer(db, by, action="import")
        at = now()
        for bank in banks:
            stored = bank_of(db, bank.topic_id)
            if stored is not None:
                if stored.nuggets == bank.nuggets and dict(stored.metadata) == dict(bank.metadata):
                    counts["unchanged"] += 1
                    continue
                if not replace:
                    raise FormatError(
                        file,
                        bank.line,
                        f"a bank equal to the stored one of topic {bank.topic_id!r} (or --replace)",
                        "a different bank",
                    )
                run(db, "DELETE FROM bank_topics WHERE topic_id = :t", {"t": bank.topic_id})
                counts["replaced"] += 1
            else:
                counts["new"] += 1
            run(
                db,
                "INSERT INTO bank_topics (topic_id, metadata, imported_from, updated_at) VALUES (:t, :m, :f, :at)",
                {"t": bank.topic_id, "m": json.dumps(dict(bank.metadata), ensure_ascii=False), "f": file, "at": at},
            )
            nuggets, answers = _bank_rows(bank)
            for r in nuggets:
                run(
                    db,
                    "INSERT INTO bank_nuggets (topic_id, nugget, question, aggregator, importance, metadata, origin, "
                    "created_by, updated_at) VALUES (:topic, :nugget, :question, :aggregator, :importance, :metadata, "
                    "'original', :by, :at)",
                    {**r, "by": by, "at": at},
                )
            for r in answers:
                run(
                    db,
                    "INSERT INTO bank_answers (topic_id, nugget, answer, text, refs, metadata, origin, created_by, "
                    "updated_at) VALUES (:topic, :nugget, :answer, :text, :refs, :metadata, 'original', :by, :at)",
                    {**r, "by": by, "at": at},
                )
            counts["nuggets"] += len(nuggets)
            counts["answers"] += len(answers)
        record_action(db, by, "import", f"nugget-bank {file}", None, counts, via="file", writer_checked=True)
    return counts


def topics(db: Store) -> list[str]:
    """The topics with a stored bank, in order."""
    return [r["topic_id"] for r in rows(db, "SELECT topic_id FROM bank_topics ORDER BY topic_id")]


def bank_of(db: Store, topic: str) -> NuggetBank | None:
    """The stored bank of ``topic`` (as the layout writes it), None when there is none."""
    found = banks(db, [topic])
    return found[0] if found else None


def banks(db: Store, only: Iterable[str] | None = None) -> list[NuggetBank]:
    """The stored banks (of the topics in ``only``), topic by topic, nuggets and answers in their order."""
    wanted = None if only is None else set(only)
    heads = [
        r
        for r in rows(db, "SELECT topic_id, metadata FROM bank_topics ORDER BY topic_id")
        if wanted is None or r["topic_id"] in wanted
    ]
    out = []
    for head in heads:
        t = {"t": head["topic_id"]}
        answers: dict[int, list[BankAnswer]] = {}
        for a in rows(
            db, "SELECT nugget, text, refs, metadata FROM bank_answers WHERE topic_id = :t ORDER BY nugget, answer", t
        ):
            meta = json.loads(a["metadata"]) if a["metadata"] is not None else None
            answers.setdefault(a["nugget"], []).append(BankAnswer(a["text"], tuple(json.loads(a["refs"])), meta))
        nuggets = tuple(
            BankNugget(
                n["question"],
                n["aggregator"],
                tuple(answers.get(n["nugget"], ())),
                json.loads(n["importance"]) if n["importance"] is not None else None,
                json.loads(n["metadata"]) if n["metadata"] is not None else None,
            )
            for n in rows(db, "SELECT * FROM bank_nuggets WHERE topic_id = :t ORDER BY nugget", t)
        )
        out.append(NuggetBank(head["topic_id"], json.loads(head["metadata"]), nuggets))
    return out


def bank_table(db: Store, topic: str) -> list[dict]:
    """One topic's questions and answers as rows (numbers, texts, references, aggregator, importance, origin,
    who), for the editing page."""
    return rows(
        db,
        "SELECT n.nugget, n.question, n.aggregator, n.importance, n.origin AS question_origin, "
        "n.created_by AS question_by, a.answer, a.text AS answer_text, a.refs, a.origin AS answer_origin, "
        "a.created_by AS answer_by FROM bank_nuggets n LEFT JOIN bank_answers a "
        "ON a.topic_id = n.topic_id AND a.nugget = n.nugget WHERE n.topic_id = :t ORDER BY n.nugget, a.answer",
        {"t": topic},
    )


def _require_topic(db: Store, topic: str) -> None:
    if row(db, "SELECT 1 AS x FROM bank_topics WHERE topic_id = :t", {"t": topic}) is None:
        raise UnknownItem(f"no nugget bank for topic {topic!r}")


def save_question(
    db: Store, topic: str, nugget: int | None, question: str, aggregator: str, importance: object, *, by: str
) -> int:
    """Write a bank question as a post-edit: a new one (``nugget`` None: numbered after the last) or a change
    of question ``nugget``; its history row holds the old and new values and who wrote them. Returns its number."""
    if not question.strip():
        raise AssessError("a nugget question needs a text")
    if aggregator not in AGGREGATORS:
        raise AssessError(f"an aggregator is AND or OR, not {aggregator!r}")
    with write(db):
        check_writer(db, by, action="curation")
        _require_topic(db, topic)
        at = now()
        new = {"question": question, "aggregator": aggregator, "importance": importance}
        if nugget is None:
            nugget = int(
                value(
                    db, "SELECT COALESCE(MAX(nugget), 0) + 1 AS n FROM bank_nuggets WHERE topic_id = :t", {"t": topic}
                )
            )
            old = None
            run(
                db,
                "INSERT INTO bank_nuggets (topic_id, nugget, question, aggregator, importance, metadata, origin, "
                "created_by, updated_at) VALUES (:t, :n, :q, :a, :i, NULL, 'post-edit', :by, :at)",
                {"t": topic, "n": nugget, "q": question, "a": aggregator, "i": _json(importance), "by": by, "at": at},
            )
        else:
            found = row(
                db,
                "SELECT question, aggregator, importance FROM bank_nuggets WHERE topic_id = :t AND nugget = :n",
                {"t": topic, "n": nugget},
            )
            if found is None:
                raise UnknownItem(f"topic {topic!r} has no nugget {nugget}")
            old = {**found, "importance": json.loads(found["importance"]) if found["importance"] is not None else None}
            if old == new:
                return nugget
            run(
                db,
                "UPDATE bank_nuggets SET question = :q, aggregator = :a, importance = :i, origin = 'post-edit', "
                "created_by = :by, updated_at = :at WHERE topic_id = :t AND nugget = :n",
                {"t": topic, "n": nugget, "q": question, "a": aggregator, "i": _json(importance), "by": by, "at": at},
            )
        _history(db, "bank-nugget", by, f"{topic} {nugget}", old, new, mode="post-edit", via="page")
    return nugget


def save_answer(
    db: Store, topic: str, nugget: int, answer: int | None, text: str, refs: Sequence[str], *, by: str
) -> int:
    """Write an answer of question ``nugget`` as a post-edit, with its supporting documents (a new one when
    ``answer`` is None); history as :func:`save_question`. Returns its number."""
    if not text.strip():
        raise AssessError("an answer needs a text")
    refs = [r.strip() for r in refs if r.strip()]
    with write(db):
        check_writer(db, by, action="curation")
        if (
            row(db, "SELECT 1 AS x FROM bank_nuggets WHERE topic_id = :t AND nugget = :n", {"t": topic, "n": nugget})
            is None
        ):
            raise UnknownItem(f"topic {topic!r} has no nugget {nugget}")
        at = now()
        new = {"answer": text, "references": refs}
        params = {"t": topic, "n": nugget, "text": text, "refs": _json(refs), "by": by, "at": at}
        if answer is None:
            answer = int(
                value(
                    db,
                    "SELECT COALESCE(MAX(answer), 0) + 1 AS n FROM bank_answers WHERE topic_id = :t AND nugget = :n",
                    {"t": topic, "n": nugget},
                )
            )
            old = None
            run(
                db,
                "INSERT INTO bank_answers (topic_id, nugget, answer, text, refs, metadata, origin, created_by, updated_at) "
                "VALUES (:t, :n, :k, :text, :refs, NULL, 'post-edit', :by, :at)",
                {**params, "k": answer},
            )
        else:
            found = row(
                db,
                "SELECT text, refs FROM bank_answers WHERE topic_id = :t AND nugget = :n AND answer = :k",
                {"t": topic, "n": nugget, "k": answer},
            )
            if found is None:
                raise UnknownItem(f"nugget {nugget} of topic {topic!r} has no answer {answer}")
            old = {"answer": found["text"], "references": json.loads(found["refs"])}
            if old == new:
                return answer
            run(
                db,
                "UPDATE bank_answers SET text = :text, refs = :refs, origin = 'post-edit', created_by = :by, "
                "updated_at = :at WHERE topic_id = :t AND nugget = :n AND answer = :k",
                {**params, "k": answer},
            )
        _history(db, "bank-answer", by, f"{topic} {nugget} {answer}", old, new, mode="post-edit", via="page")
    return answer


# ------------------------------------------------------------------------------------------- matches


def check_match(db: Store, topic: str, run_name: str, nugget: int, answer: int, sentences: Sequence[int]) -> None:
    """Refuse a match the store has no item for (UnknownItem): the bank answer, the response, its sentences."""
    if (
        row(
            db,
            "SELECT 1 AS x FROM bank_answers WHERE topic_id = :t AND nugget = :n AND answer = :k",
            {"t": topic, "n": nugget, "k": answer},
        )
        is None
    ):
        raise UnknownItem(f"the bank of topic {topic!r} has no answer {answer} of nugget {nugget}")
    if row(db, "SELECT 1 AS x FROM responses WHERE run = :r AND turn_id = :t", {"r": run_name, "t": topic}) is None:
        raise UnknownItem(f"no response of run {run_name!r} to topic {topic!r}")
    if sentences:
        count = value(
            db,
            "SELECT COUNT(*) AS n FROM response_sentences WHERE run = :r AND turn_id = :t",
            {"r": run_name, "t": topic},
        )
        if count and max(sentences) > count:
            raise UnknownItem(
                f"the response of run {run_name!r} to topic {topic!r} has {count} sentences, not {max(sentences)}"
            )


UNCHECKED = object()
"""``expected`` of a match write that replaces whatever is stored (imports, LLM answers)."""


def shown_match(contains: bool, sentences: Iterable[int]) -> dict:
    """A match as a form shows it and :func:`save_matches` compares it: ``{contains, sentences}``."""
    return {"contains": int(contains), "sentences": sorted(set(sentences))}


def _stale_match(source: str, m: BankMatch, found: dict) -> labels.StaleLabel:
    stored = Label(Task.BANK_MATCH, source, (m.topic_id, m.run, m.nugget, m.answer), found["contains"])
    said = ", ".join(map(str, json.loads(found["sentences"]))) or "none"
    return labels.StaleLabel(
        label_kind(Task.BANK_MATCH),
        source,
        stored,
        found["updated_at"],
        then=f"answer {m.nugget}.{m.answer}, sentences {said}: nothing saved; the form now shows it, save again to "
        "replace it",
    )


def _write_match(
    db: Store, source: str, m: BankMatch, *, mode: str, via: str | None, expected: object = UNCHECKED
) -> bool:
    """``expected``: what the page showed of the source's match (None: none), compared under the write lock with
    the stored one: a match stored meanwhile that differs from it is not replaced (:class:`store.labels.StaleLabel`;
    as on the judging pages, none stored is no conflict)."""
    key = {"s": source, "t": m.topic_id, "r": m.run, "n": m.nugget, "k": m.answer}
    found = row(
        db,
        "SELECT contains, sentences, updated_at FROM bank_matches "
        "WHERE source = :s AND turn_id = :t AND run = :r AND nugget = :n AND answer = :k",
        key,
    )
    new = {"contains": int(m.contains), "sentences": list(m.sentences)}
    old = None if found is None else shown_match(found["contains"], json.loads(found["sentences"]))
    if old == shown_match(**new):
        return False
    if expected is not UNCHECKED and old is not None and old != expected:
        raise _stale_match(source, m, found)
    run(
        db,
        "INSERT INTO bank_matches (source, turn_id, run, nugget, answer, contains, sentences, mode, via, updated_at) "
        "VALUES (:s, :t, :r, :n, :k, :c, :sent, :mode, :via, :at) ON CONFLICT (source, turn_id, run, nugget, answer) "
        "DO UPDATE SET contains = excluded.contains, sentences = excluded.sentences, mode = excluded.mode, "
        "via = excluded.via, updated_at = excluded.updated_at",
        {**key, "c": int(m.contains), "sent": json.dumps(list(m.sentences)), "mode": mode, "via": via, "at": now()},
    )
    return True  # the table's history triggers record the change


def save_match(
    db: Store, source: str, match: BankMatch, *, kind: str = "assessor", mode: str = "blind", via: str | None = "page"
) -> bool:
    """An assessor's (or, with ``kind`` llm, a model's) decision whether a response contains one bank answer,
    with the sentences stating it; one transaction with its history row. Returns whether anything changed."""
    with write(db):
        check_writer(db, source)
        ensure_source(db, source, kind)
        check_match(db, match.topic_id, match.run, match.nugget, match.answer, match.sentences)
        return _write_match(db, source, match, mode=mode, via=via)


def save_matches(db: Store, source: str, decided: Sequence[tuple[BankMatch, dict | None]]) -> int:
    """A form's decisions, each with what the form showed of the source's stored match (:func:`shown_match`,
    None: none), in one transaction: when any stored match is not the one shown (another tab or device saved
    it meanwhile), nothing is written (:class:`store.labels.StaleLabel` for the first). How many changed."""
    with write(db):
        check_writer(db, source)
        ensure_source(db, source, "assessor")
        changed = 0
        for match, shown in decided:
            check_match(db, match.topic_id, match.run, match.nugget, match.answer, match.sentences)
            changed += _write_match(db, source, match, mode="blind", via="page", expected=shown)
        return changed


def write_llm_match(db: Store, source: str, match: BankMatch) -> bool:
    """An LLM's bank-match answer as its source's label (mode and via ``llm``), in the caller's transaction: as
    :func:`save_match` writes a person's, with the sentences; whether anything changed."""
    with write(db):
        check_writer(db, source)
        return _write_match(db, source, match, mode="llm", via="llm")


def matches(db: Store, source: str) -> list[dict]:
    """The source's match labels: topic, run, nugget, answer, contains, sentences (a list)."""
    out = rows(
        db,
        "SELECT turn_id AS topic_id, run, nugget, answer, contains, sentences FROM bank_matches WHERE source = :s "
        "ORDER BY turn_id, run, nugget, answer",
        {"s": source},
    )
    for r in out:
        r["sentences"] = json.loads(r["sentences"])
    return out


def match_sources(db: Store) -> list[str]:
    return [r["source"] for r in rows(db, "SELECT DISTINCT source FROM bank_matches ORDER BY source")]


def responses_of(db: Store, topic_list: Sequence[str]) -> list[dict]:
    """The stored responses (run, topic, text) to the given topics, in topic and run order."""
    found = rows(db, "SELECT run, turn_id AS topic_id, text FROM responses ORDER BY turn_id, run")
    wanted = set(topic_list)
    return [r for r in found if r["topic_id"] in wanted]


def sentences_of(db: Store, run_name: str, topic: str) -> list[str]:
    """A response's stored sentences (numbered from 1 in order); empty when it has none."""
    return [
        r["text"]
        for r in rows(
            db,
            "SELECT text FROM response_sentences WHERE run = :r AND turn_id = :t ORDER BY sentence",
            {"r": run_name, "t": topic},
        )
    ]


def response_sentences(db: Store, run_name: str, topic: str) -> list[str]:
    """A response's sentences as matches number them: the stored ones, else its text cut by the sentence rule
    (:func:`assess.formats.sentences.split_sentences`); empty for a response the store lacks."""

    stored = sentences_of(db, run_name, topic)
    if stored:
        return stored
    found = row(db, "SELECT text FROM responses WHERE run = :r AND turn_id = :t", {"r": run_name, "t": topic})
    text = found["text"] if found else ""
    return [text[a:b] for a, b in split_sentences(text)] or ([text] if text.strip() else [])


def match_items(db: Store) -> list[dict]:
    """Every (bank answer, response to its topic) pair an LLM may judge: topic, run, nugget, answer, the
    question, the answer's text and the response's sentences, in topic, run, nugget and answer order."""
    out = []
    for bank in banks(db):
        for r in rows(db, "SELECT run FROM responses WHERE turn_id = :t ORDER BY run", {"t": bank.topic_id}):
            sentences = response_sentences(db, r["run"], bank.topic_id)
            for n, nugget in enumerate(bank.nuggets, start=1):
                for k, answer in enumerate(nugget.answers, start=1):
                    out.append(
                        {"topic_id": bank.topic_id, "run": r["run"], "nugget": n, "answer": k, "question": nugget.question,
                         "answer_text": answer.answer, "sentences": sentences}
                    )  # fmt: skip
    return out


# ------------------------------------------------------------------------------------------- rubrics


def import_rubrics(db: Store, rubrics: Sequence[Rubric], file: str, *, by: str | None, replace: bool = False) -> dict:
    """Store imported rubrics (the file's object kept for export); a topic stored with another rubric is
    refused unless ``replace`` (which drops its judgments). One transaction."""
    counts = {"rubrics": len(rubrics), "new": 0, "replaced": 0, "unchanged": 0, "questions": 0, "answers": 0}
    with write(db):
        check_writer(db, by, action="import")
        at = now()
        for rubric in rubrics:
            document = json.dumps(dict(rubric.document), ensure_ascii=False)
            stored = row(db, "SELECT document FROM rubric_topics WHERE topic_id = :t", {"t": rubric.topic_id})
            if stored is not None:
                if json.loads(stored["document"]) == dict(rubric.document):
                    counts["unchanged"] += 1
                    continue
                if not replace:
                    raise FormatError(
                        rubric.file or file,
                        None,
                        f"a rubric equal to the stored one of topic {rubric.topic_id!r} (or --replace)",
                        "a different rubric",
                    )
                run(db, "DELETE FROM rubric_topics WHERE topic_id = :t", {"t": rubric.topic_id})
                counts["replaced"] += 1
            else:
                counts["new"] += 1
            run(
                db,
                "INSERT INTO rubric_topics (topic_id, document, imported_from, updated_at) VALUES (:t, :d, :f, :at)",
                {"t": rubric.topic_id, "d": document, "f": rubric.file or file, "at": at},
            )
            for i, q in enumerate(rubric.questions, start=1):
                run(
                    db,
                    "INSERT INTO rubric_questions (topic_id, question_id, position, text, importance) "
                    "VALUES (:t, :q, :p, :text, :imp)",
                    {"t": rubric.topic_id, "q": q.question_id, "p": i, "text": q.text, "imp": q.importance},
                )
                for k, a in enumerate(q.answers, start=1):
                    run(
                        db,
                        "INSERT INTO rubric_answers (topic_id, question_id, answer_id, position, text) "
                        "VALUES (:t, :q, :a, :p, :text)",
                        {"t": rubric.topic_id, "q": q.question_id, "a": a.answer_id, "p": k, "text": a.text},
                    )
                    counts["answers"] += 1
                counts["questions"] += 1
        record_action(db, by, "import", f"rubrics {file}", None, counts, via="file", writer_checked=True)
    return counts


def rubric_documents(db: Store, only: Iterable[str] | None = None) -> list[tuple[str, dict]]:
    """(topic, the rubric file's object) of every stored rubric (of the topics in ``only``), in topic order."""
    wanted = None if only is None else set(only)
    return [
        (r["topic_id"], json.loads(r["document"]))
        for r in rows(db, "SELECT topic_id, document FROM rubric_topics ORDER BY topic_id")
        if wanted is None or r["topic_id"] in wanted
    ]


def rubric_questions(db: Store) -> list[dict]:
    """Every stored rubric question that has a short answer (the track's maximum counts only those): topic,
    question id, importance label."""
    return rows(
        db,
        # the answered questions once (the answers' key is (topic, answer): a subquery per question would read
        # every answer of its topic)
        "SELECT q.topic_id, q.question_id, q.importance FROM rubric_questions q "
        "JOIN (SELECT DISTINCT topic_id, question_id FROM rubric_answers) a "
        "ON a.topic_id = q.topic_id AND a.question_id = q.question_id ORDER BY q.topic_id, q.position",
    )


def rubric_judgments(db: Store, source: str) -> list[dict]:
    """The source's rubric labels with their question: topic, run, question id, answer id, judgment (half units)."""
    return rows(
        db,
        "SELECT l.topic_id, l.run, a.question_id, l.answer_id, l.judgment FROM rubric_labels l "
        "JOIN rubric_answers a ON a.topic_id = l.topic_id AND a.answer_id = l.answer_id "
        "JOIN rubric_questions q ON q.topic_id = a.topic_id AND q.question_id = a.question_id "
        "WHERE l.source = :s ORDER BY l.topic_id, l.run, q.position, a.position",
        {"s": source},
    )


def label_sources(db: Store, table: str) -> list[str]:
    """The sources with labels in ``table`` (bank_matches, rubric_labels or citation_labels), by name."""
    if table not in ("bank_matches", "rubric_labels", "citation_labels"):
        raise AssessError(f"{table!r} is not a table of this module")
    return [r["source"] for r in rows(db, f"SELECT DISTINCT source FROM {table} ORDER BY source")]


def source_counts(db: Store, table: str) -> dict[str, int]:
    """{source: its rows in ``table``} (bank_matches, rubric_labels or citation_labels): what a picker's default
    weighs."""
    if table not in ("bank_matches", "rubric_labels", "citation_labels"):
        raise AssessError(f"{table!r} is not a table of this module")
    return {r["source"]: r["n"] for r in rows(db, f"SELECT source, COUNT(*) AS n FROM {table} GROUP BY source")}


def rubric_sources(db: Store) -> list[str]:
    return [r["source"] for r in rows(db, "SELECT DISTINCT source FROM rubric_labels ORDER BY source")]


def require_source(db: Store, table: str, source: str) -> None:
    """Refuse a source without labels in ``table`` (bank_matches, rubric_labels, citation_labels or
    passage_labels), naming those that have some."""
    if table not in ("bank_matches", "rubric_labels", "citation_labels", "passage_labels"):
        raise AssessError(f"{table!r} is not a table of this module")
    if row(db, f"SELECT 1 AS x FROM {table} WHERE source = :s LIMIT 1", {"s": source}) is None:
        have = [r["source"] for r in rows(db, f"SELECT DISTINCT source FROM {table} ORDER BY source")]
        raise UnknownItem(f"no labels of source {source!r} in {table} (sources with some: {', '.join(have) or 'none'})")
