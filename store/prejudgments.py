"""LLM pre-judgments in the store: the items a task covers, the cache, one transaction per result
(the raw outcome and, when it parsed, the source's label), jobs, adaptive pooling and the audit
queries (raw outputs beside labels, anchoring after reveal)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlite_utils import Database

from assess.errors import AssessError
from store.db import BUSY_TIMEOUT_MS, write
from store.imports import ensure_source, now

LABELLED_STATUSES = ("ok", "repaired")  # a parsed answer becomes a label; 'unparseable' and 'error' never do


@dataclass(frozen=True)
class Prejudgment:
    """One stored outcome of asking a model about one item."""

    source: str
    task: str
    turn_id: str
    item_id: str
    model: str
    prompt_version: str
    input_hash: str
    raw_output: str | None
    parse_status: str
    parsed: Any = None
    note: str | None = None
    error: str | None = None
    latency_ms: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    attempts: int | None = None
    cached_from: int | None = None
    job_id: int | None = None


# ------------------------------------------------------------------------------------------- sources, prompts


def check_llm_source(db: Database, source: str, model: str) -> None:
    """Refuse a source name with spaces, one that belongs to another kind of source, or to another model.

    Any name is accepted for a new LLM source (``llm:MODEL`` is the convention and the default).
    """
    if not source or any(c.isspace() for c in source):
        raise AssessError(f"an LLM label source name has no spaces (e.g. llm:{model}), not {source!r}")
    row = db.conn.execute("SELECT kind, model FROM sources WHERE name = ?", (source,)).fetchone()
    if row and row[0] != "llm":
        raise AssessError(f"{source!r} is a source of kind {row[0]}, not an LLM source")
    if row and row[1] and row[1] != model:
        has = db.conn.execute("SELECT 1 FROM prejudgments WHERE source = ? LIMIT 1", (source,)).fetchone()
        if has:
            raise AssessError(
                f"source {source!r} holds pre-judgments of model {row[1]!r}, not {model!r}; "
                f"name another source (e.g. llm:{model})"
            )


def ensure_llm_source(db: Database, source: str, model: str, prompt_version: str) -> None:
    """Create the LLM source (after :func:`check_llm_source`) and record its model and latest prompt version."""
    check_llm_source(db, source, model)
    with write(db):
        ensure_source(db, source, "llm", model=model, prompt_version=prompt_version, description="LLM pre-judgments")
        db.conn.execute(
            "UPDATE sources SET model = ?, prompt_version = ? WHERE name = ?", (model, prompt_version, source)
        )


def record_prompt(db: Database, version: str, name: str, task: str, system: str, template: str) -> None:
    """Keep the text of a prompt version (once) so every stored answer can be read with its prompt."""
    with write(db):
        db.conn.execute(
            "INSERT INTO llm_prompts (version, name, task, system, template, created_at) "
            "VALUES (?,?,?,?,?,?) ON CONFLICT(version) DO NOTHING",
            (version, name, task, system, template, now()),
        )


def prompt_text(db: Database, version: str) -> dict | None:
    row = db.conn.execute(
        "SELECT name, task, system, template FROM llm_prompts WHERE version = ?", (version,)
    ).fetchone()
    return None if row is None else dict(zip(("name", "task", "system", "template"), row))


# ------------------------------------------------------------------------------------------- items


def turn_contexts(db: Database) -> dict[str, dict]:
    """Every turn's conversation so far, utterances and PTKB (one query per table, not per turn)."""
    turns = db.conn.execute(
        "SELECT id, conversation_id, position, utterance, resolved_utterance, response FROM turns "
        "ORDER BY conversation_id, position"
    ).fetchall()
    ptkb: dict[str, list] = {}
    for conv, sid, text in db.conn.execute(
        "SELECT conversation_id, statement_id, text FROM ptkb_statements "
        "ORDER BY conversation_id, CAST(statement_id AS INTEGER), statement_id"
    ):
        ptkb.setdefault(conv, []).append({"id": sid, "text": text})
    out, history = {}, {}
    for tid, conv, _, utt, resolved, response in turns:
        past = history.setdefault(conv, [])
        out[tid] = {
            "turn_id": tid,
            "conversation_id": conv,
            "utterance": utt,
            "resolved_utterance": resolved,
            "history": list(past),
            "ptkb": ptkb.get(conv, []),
        }
        past.append({"turn_id": tid, "utterance": utt, "response": response})
    return out


_TURN_ORDER = "JOIN turns t ON t.id = x.turn_id JOIN conversations c ON c.id = t.conversation_id"


def passage_items(db: Database, *, depth: int | None = None) -> list[tuple[str, str, str | None]]:
    """(turn, passage, text) of the pool in queue order; with ``depth``, the top ``depth`` of every run instead."""
    if depth:
        sql = (
            "SELECT x.turn_id, x.passage_id, p.text FROM (SELECT turn_id, passage_id FROM rankings "
            f"WHERE rank <= ? GROUP BY turn_id, passage_id) x {_TURN_ORDER} JOIN passages p ON p.id = x.passage_id "
            "ORDER BY c.rowid, t.position, x.passage_id"
        )
        return db.conn.execute(sql, (depth,)).fetchall()
    return db.conn.execute(
        f"SELECT x.turn_id, x.passage_id, p.text FROM pool x {_TURN_ORDER} "
        "JOIN passages p ON p.id = x.passage_id ORDER BY c.rowid, t.position, x.passage_id"
    ).fetchall()


def relevant_passage_items(db: Database, qrels: str, threshold: int) -> list[tuple[str, str, str | None, int]]:
    """(turn, passage, text, grade) of the passages ``qrels`` graded >= threshold (nugget extraction input)."""
    return db.conn.execute(
        f"SELECT x.turn_id, x.passage_id, p.text, x.grade FROM passage_labels x {_TURN_ORDER} "
        "JOIN passages p ON p.id = x.passage_id WHERE x.source = ? AND x.grade >= ? "
        "ORDER BY c.rowid, t.position, x.passage_id",
        (qrels, threshold),
    ).fetchall()


def ptkb_items(db: Database) -> list[tuple[str, str, str]]:
    """(turn, statement id, statement) for every turn and every PTKB statement of its conversation."""
    return db.conn.execute(
        "SELECT t.id, s.statement_id, s.text FROM turns t JOIN ptkb_statements s ON s.conversation_id = t.conversation_id "
        "JOIN conversations c ON c.id = t.conversation_id "
        "ORDER BY c.rowid, t.position, CAST(s.statement_id AS INTEGER), s.statement_id"
    ).fetchall()


def response_items(db: Database) -> list[tuple[str, str, str]]:
    """(turn, run, response text) of every stored system response."""
    return db.conn.execute(
        f"SELECT x.turn_id, x.run, x.text FROM responses x {_TURN_ORDER} ORDER BY c.rowid, t.position, x.run"
    ).fetchall()


def nugget_sources(db: Database) -> list[str]:
    return [r[0] for r in db.conn.execute("SELECT DISTINCT source FROM nuggets ORDER BY source")]


def ntr_items(db: Database, nugget_source: str, *, dedup: bool = False) -> list[tuple[str, int, str, str, str]]:
    """(turn, nugget id, nugget text, run, response) for every response × every nugget of its turn."""
    where = " AND n.in_dedup = 1" if dedup else ""
    return db.conn.execute(
        "SELECT r.turn_id, n.id, n.text, r.run, r.text FROM responses r JOIN nuggets n ON n.turn_id = r.turn_id "
        f"JOIN turns t ON t.id = r.turn_id JOIN conversations c ON c.id = t.conversation_id WHERE n.source = ?{where} "
        "ORDER BY c.rowid, t.position, r.run, n.id",
        (nugget_source,),
    ).fetchall()


# ------------------------------------------------------------------------------------------- cache


def judged(db: Database, source: str, task: str, model: str, prompt_version: str) -> set[tuple[str, str, str]]:
    """(turn, item, input hash) the source already has a non-error answer for, under this model and prompt."""
    return set(
        db.conn.execute(
            "SELECT turn_id, item_id, input_hash FROM prejudgments WHERE source = ? AND task = ? AND model = ? "
            "AND prompt_version = ? AND parse_status != 'error'",
            (source, task, model, prompt_version),
        )
    )


def cached(db: Database, model: str, prompt_version: str, hashes: Iterable[str]) -> dict[str, dict]:
    """Earlier non-error answers (any source) to the same model, prompt version and input, by input hash."""
    wanted = set(hashes)
    if not wanted:
        return {}
    out = {}
    for row in db.conn.execute(
        "SELECT id, input_hash, raw_output, parse_status, parsed, note, latency_ms, prompt_tokens, "
        "completion_tokens, attempts FROM prejudgments WHERE model = ? AND prompt_version = ? "
        "AND parse_status != 'error' AND cached_from IS NULL ORDER BY id",
        (model, prompt_version),
    ):
        if row[1] in wanted and row[1] not in out:
            out[row[1]] = dict(
                zip(
                    (
                        "id",
                        "input_hash",
                        "raw_output",
                        "parse_status",
                        "parsed",
                        "note",
                        "latency_ms",
                        "prompt_tokens",
                        "completion_tokens",
                        "attempts",
                    ),
                    row,
                )
            )
            out[row[1]]["parsed"] = json.loads(row[4]) if row[4] is not None else None
    return out


def median_latency_ms(db: Database, model: str) -> float | None:
    """The median latency of this model's successful stored calls (for time estimates), or None.

    Failed calls are left out: a timeout or a refused key says nothing about how long an answer takes."""
    rows = [
        r[0]
        for r in db.conn.execute(
            "SELECT latency_ms FROM prejudgments WHERE model = ? AND cached_from IS NULL AND latency_ms IS NOT NULL "
            "AND parse_status != 'error' "
            "ORDER BY id DESC LIMIT 500",
            (model,),
        )
    ]
    if not rows:
        return None
    rows.sort()
    return float(rows[len(rows) // 2])


# ------------------------------------------------------------------------------------------- writing


def save(db: Database, p: Prejudgment, *, label_context: dict | None = None) -> int | None:
    """Store one outcome and, when it parsed, the source's label: one transaction, at once.

    Returns the new row id, or None when the same answer was already stored (a second writer).
    """
    with write(db):
        cur = db.conn.execute(
            "INSERT OR IGNORE INTO prejudgments (source, task, turn_id, item_id, model, prompt_version, input_hash, "
            "raw_output, parse_status, parsed, note, error, latency_ms, prompt_tokens, completion_tokens, attempts, "
            "cached_from, job_id, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                p.source,
                p.task,
                p.turn_id,
                p.item_id,
                p.model,
                p.prompt_version,
                p.input_hash,
                p.raw_output,
                p.parse_status,
                None if p.parsed is None else json.dumps(p.parsed, ensure_ascii=False),
                p.note,
                p.error,
                p.latency_ms,
                p.prompt_tokens,
                p.completion_tokens,
                p.attempts,
                p.cached_from,
                p.job_id,
                now(),
            ),
        )
        row_id = cur.lastrowid if cur.rowcount else None
        if row_id and p.parse_status in LABELLED_STATUSES:
            _write_label(db, p, label_context or {})
        if p.job_id is not None and row_id:
            db.conn.execute(
                "UPDATE prejudge_jobs SET done = done + 1, unparseable = unparseable + ?, errors = errors + ?, "
                "cached = cached + ?, heartbeat_at = ? WHERE id = ?",
                (
                    int(p.parse_status == "unparseable"),
                    int(p.parse_status == "error"),
                    int(p.cached_from is not None),
                    now(),
                    p.job_id,
                ),
            )
    return row_id


def _write_label(db: Database, p: Prejudgment, ctx: dict) -> None:
    stamp = now()
    c = db.conn
    if p.task == "passage":
        c.execute(
            "INSERT INTO passage_labels (source, turn_id, passage_id, grade, mode, via, updated_at) "
            "VALUES (?,?,?,?,'llm','llm',?) ON CONFLICT(turn_id, passage_id, source) DO UPDATE SET "
            "grade=excluded.grade, mode='llm', via='llm', updated_at=excluded.updated_at "
            "WHERE grade IS NOT excluded.grade",
            (p.source, p.turn_id, p.item_id, int(p.parsed), stamp),
        )
    elif p.task == "ptkb":
        c.execute(
            "INSERT INTO ptkb_labels (source, turn_id, conversation_id, statement_id, relevant, mode, via, "
            "updated_at) VALUES (?,?,(SELECT conversation_id FROM turns WHERE id = ?),?,?,'llm','llm',?) "
            "ON CONFLICT(source, turn_id, statement_id) DO UPDATE SET relevant=excluded.relevant, mode='llm', "
            "via='llm', updated_at=excluded.updated_at WHERE relevant IS NOT excluded.relevant",
            (p.source, p.turn_id, p.turn_id, p.item_id, int(p.parsed), stamp),
        )
    elif p.task == "ntr":
        nugget_id, run = p.item_id.split(" ", 1)
        c.execute(
            "INSERT INTO ntr_labels (source, nugget_id, run, turn_id, match, mode, via, updated_at) "
            "VALUES (?,?,?,?,?,'llm','llm',?) ON CONFLICT(source, nugget_id, run) DO UPDATE SET "
            "match=excluded.match, mode='llm', via='llm', updated_at=excluded.updated_at "
            "WHERE match IS NOT excluded.match",
            (p.source, int(nugget_id), run, p.turn_id, int(p.parsed), stamp),
        )
    elif p.task == "nuggets":
        c.executemany(
            "INSERT INTO nuggets (source, turn_id, key, text, relevance, passage_id, start_char, end_char, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(source, turn_id, key) DO NOTHING",
            [
                (
                    p.source,
                    p.turn_id,
                    f"{p.item_id}@{s['start']}-{s['end']}",
                    s["text"],
                    ctx.get("grade"),
                    p.item_id,
                    s["start"],
                    s["end"],
                    stamp,
                )
                for s in p.parsed["spans"]
            ],
        )
    # response nuggets and AEPD aspects have no label table: they live in prejudgments.parsed


# ------------------------------------------------------------------------------------------- jobs

JOB_COLUMNS = (
    "id",
    "source",
    "task",
    "model",
    "prompt_version",
    "base_url",
    "concurrency",
    "status",
    "planned",
    "done",
    "unparseable",
    "errors",
    "cached",
    "skipped",
    "message",
    "started_at",
    "finished_at",
    "pid",
    "host",
    "heartbeat_at",
    "stale_after_s",
)
MIN_STALE_S = 60.0  # a running job without a heartbeat for this long (at least) was killed
HEARTBEAT_EVERY_S = 10.0  # how often a running job says it is alive, results or not


def _seconds_since(stamp: str | None) -> float | None:
    if not stamp:
        return None
    then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return (datetime.now(UTC) - then).total_seconds()


def process_alive(pid: int) -> bool:
    """Is process ``pid`` of this host alive? (A zombie is not; where it cannot be told, assume it is.)"""
    if os.name != "posix" or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process: it exists
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


def stale_reason(job_: dict) -> str | None:
    """Why a 'running' job is in fact dead (its process is gone, or no heartbeat for too long), or None."""
    if job_["pid"] and job_["host"] == socket.gethostname() and not process_alive(int(job_["pid"])):
        return f"process {job_['pid']} on {job_['host']} is gone"
    age = _seconds_since(job_["heartbeat_at"] or job_["started_at"])
    limit = max(MIN_STALE_S, job_["stale_after_s"] or 0)
    if age is not None and age > limit:
        return f"no heartbeat for {age:.0f} s (limit {limit:.0f} s)"
    return None


def reap_stale_jobs(db: Database) -> list[int]:
    """Mark 'interrupted' every 'running' job that was killed (see :func:`stale_reason`); return their ids."""
    running = [
        dict(zip(JOB_COLUMNS, r))
        for r in db.conn.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM prejudge_jobs WHERE status = 'running'")
    ]
    dead = [(j, why) for j in running if (why := stale_reason(j))]
    if dead:
        with write(db):
            for j, why in dead:
                db.conn.execute(
                    "UPDATE prejudge_jobs SET status = 'interrupted', message = ?, finished_at = ? "
                    "WHERE id = ? AND status = 'running'",
                    (f"interrupted: {why}; after {j['done']} of {j['planned']}", now(), j["id"]),
                )
    return [j["id"] for j, _ in dead]


def _running(db: Database, source: str, task: str) -> dict | None:
    row = db.conn.execute(
        f"SELECT {', '.join(JOB_COLUMNS)} FROM prejudge_jobs WHERE status = 'running' AND "
        "source = ? AND task = ? ORDER BY id LIMIT 1",
        (source, task),
    ).fetchone()
    return None if row is None else dict(zip(JOB_COLUMNS, row))


def _busy_message(j: dict) -> str:
    age = _seconds_since(j["heartbeat_at"] or j["started_at"])
    beat = "" if age is None else f", last heartbeat {age:.0f} s ago"
    return (
        f"job {j['id']} is already pre-judging {j['task']} for {j['source']} (pid {j['pid']} on {j['host']}"
        f"{beat}): wait for it or stop it; a killed job counts as interrupted after "
        f"{max(MIN_STALE_S, j['stale_after_s'] or 0):.0f} s without a heartbeat"
    )


def check_not_running(db: Database, source: str, task: str) -> None:
    """Refuse (:class:`AssessError`, one line) when a live job of the same source and task runs."""
    reap_stale_jobs(db)
    other = _running(db, source, task)
    if other is not None:
        raise AssessError(_busy_message(other))


def start_job(
    db: Database,
    *,
    source: str,
    task: str,
    model: str,
    prompt_version: str,
    base_url: str | None,
    concurrency: int,
    planned: int,
    skipped: int,
    stale_after_s: float = MIN_STALE_S,
) -> int:
    """Record a running job of this process. Refused while a live job of the same source and task runs
    (checked and recorded in one transaction, so two processes never both start); dead ones are reaped first."""
    reap_stale_jobs(db)
    with write(db):
        other = _running(db, source, task)
        if other is not None and stale_reason(other) is None:
            raise AssessError(_busy_message(other))
        stamp = now()
        return db.conn.execute(
            "INSERT INTO prejudge_jobs (source, task, model, prompt_version, base_url, concurrency, status, planned, "
            "skipped, started_at, pid, host, heartbeat_at, stale_after_s) VALUES (?,?,?,?,?,?,'running',?,?,?,?,?,?,?)",
            (
                source,
                task,
                model,
                prompt_version,
                base_url,
                concurrency,
                planned,
                skipped,
                stamp,
                os.getpid(),
                socket.gethostname(),
                stamp,
                max(MIN_STALE_S, stale_after_s),
            ),
        ).lastrowid


@contextlib.contextmanager
def heartbeat(db: Database, job_id: int, every: float = HEARTBEAT_EVERY_S) -> Iterator[None]:
    """Refresh the job's heartbeat every ``every`` seconds from a background thread (its own connection)
    while the block runs, so a slow endpoint with no result for minutes does not look like a dead job."""
    path = db.conn.execute("PRAGMA database_list").fetchone()[2]
    if not path:  # an in-memory store: no other process can see the job anyway
        yield
        return
    stop = threading.Event()

    def loop():
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
        try:
            while not stop.wait(every):
                try:
                    conn.execute(
                        "UPDATE prejudge_jobs SET heartbeat_at = ? WHERE id = ? AND status = 'running'", (now(), job_id)
                    )
                except sqlite3.Error:  # locked for longer than the busy timeout: try at the next beat
                    pass
        finally:
            conn.close()

    thread = threading.Thread(target=loop, daemon=True, name=f"prejudge-job-{job_id}-heartbeat")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def finish_job(db: Database, job_id: int, status: str, message: str | None = None) -> None:
    with write(db):
        db.conn.execute(
            "UPDATE prejudge_jobs SET status = ?, message = ?, finished_at = ?, heartbeat_at = ? WHERE id = ?",
            (status, message, now(), now(), job_id),
        )


def jobs(db: Database, limit: int = 20) -> list[dict]:
    """The latest pre-judging jobs, newest first (killed ones marked 'interrupted' first)."""
    reap_stale_jobs(db)
    return [
        dict(zip(JOB_COLUMNS, r))
        for r in db.conn.execute(
            f"SELECT {', '.join(JOB_COLUMNS)} FROM prejudge_jobs ORDER BY id DESC LIMIT ?", (limit,)
        )
    ]


def job(db: Database, job_id: int) -> dict:
    row = db.conn.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM prejudge_jobs WHERE id = ?", (job_id,)).fetchone()
    return dict(zip(JOB_COLUMNS, row))


def status_counts(db: Database, source: str, task: str | None = None) -> dict[str, int]:
    """How many stored answers of the source came out ok / repaired / unparseable / error."""
    sql, params = "SELECT parse_status, COUNT(*) FROM prejudgments WHERE source = ?", [source]
    if task:
        sql, params = sql + " AND task = ?", params + [task]
    return dict(db.conn.execute(sql + " GROUP BY parse_status", params).fetchall())


def rows(db: Database, source: str, task: str | None = None, limit: int = 1000) -> list[dict]:
    """Stored answers of a source (newest first) with every recorded field."""
    cols = (
        "id",
        "task",
        "turn_id",
        "item_id",
        "model",
        "prompt_version",
        "parse_status",
        "parsed",
        "raw_output",
        "note",
        "error",
        "latency_ms",
        "prompt_tokens",
        "completion_tokens",
        "attempts",
        "cached_from",
        "job_id",
    )
    sql, params = f"SELECT {', '.join(cols)} FROM prejudgments WHERE source = ?", [source]
    if task:
        sql, params = sql + " AND task = ?", params + [task]
    return [dict(zip(cols, r)) for r in db.conn.execute(sql + " ORDER BY id DESC LIMIT ?", params + [limit])]


def llm_sources(db: Database) -> list[str]:
    return [r[0] for r in db.conn.execute("SELECT name FROM sources WHERE kind = 'llm' ORDER BY name")]


# ------------------------------------------------------------------------------------------- audit


def raw_outputs(db: Database, source: str, task: str) -> dict[tuple, str]:
    """The latest answer text of ``source`` per item, keyed like :func:`store.compare.label_pairs` items.

    Passage and PTKB items are (turn, item); NtR items are (turn, nugget text, run).
    """
    if task == "ntr":
        sql = (
            "SELECT p.turn_id, n.text, substr(p.item_id, instr(p.item_id, ' ') + 1), p.raw_output "
            "FROM prejudgments p JOIN nuggets n ON n.id = CAST(substr(p.item_id, 1, instr(p.item_id, ' ') - 1) "
            "AS INTEGER) WHERE p.source = ? AND p.task = 'ntr' AND p.parse_status != 'error' ORDER BY p.id"
        )
    else:
        sql = (
            "SELECT turn_id, item_id, raw_output FROM prejudgments WHERE source = ? AND task = ? "
            "AND parse_status != 'error' ORDER BY id"
        )
    out = {}
    for r in db.conn.execute(sql, (source,) if task == "ntr" else (source, task)):
        out[tuple(r[:-1])] = r[-1]
    return out


def rationale(db: Database, source: str, task: str, turn_id: str, item_id: str) -> str | None:
    """The latest raw answer of an LLM source for one item (what the model said, as its rationale)."""
    row = db.conn.execute(
        "SELECT raw_output FROM prejudgments WHERE source = ? AND task = ? AND turn_id = ? AND "
        "item_id = ? AND parse_status != 'error' ORDER BY id DESC LIMIT 1",
        (source, task, turn_id, item_id),
    ).fetchone()
    return row[0] if row else None


def revealed_with_rationale(db: Database, assessor: str, task: str, turn_id: str, item_id: str) -> list[dict]:
    """:func:`store.queue.revealed_labels` (blind-then-reveal rules unchanged) plus each LLM's raw answer."""
    from store.queue import revealed_labels

    out = []
    for label in revealed_labels(db, assessor, task, turn_id, item_id):
        out.append({**label, "rationale": rationale(db, label["source"], task, turn_id, item_id)})
    return out


def disagreements(db: Database, task: str, a: str, b: str, *, limit: int = 500) -> list[dict]:
    """Items where two sources differ, with both labels and each LLM source's raw answer."""
    from store.compare import label_pairs

    pairs = label_pairs(db, task, a, b)
    raw = {s: raw_outputs(db, s, task) for s in (a, b) if s.startswith("llm:")}
    out = []
    for item, la, lb in zip(pairs.items, pairs.a, pairs.b):
        if la == lb:
            continue
        row = {"turn_id": item[0], "item": " ".join(str(x) for x in item[1:]), a: la, b: lb}
        for s, outputs in raw.items():
            row[f"{s} said"] = outputs.get(tuple(item))
        out.append(row)
        if len(out) >= limit:
            break
    return out


def anchoring(db: Database, task: str = "passage", *, assessor: str | None = None) -> list[dict]:
    """Did assessors move toward the LLM after a reveal? Per assessor and LLM source, over items first labelled
    in 'reveal' mode and later changed (final label differs from the first; 'cannot judge' and removed labels
    left out): how many changes moved toward the LLM's grade (closer than before), away, or kept the distance,
    and how many landed on it.
    """
    kind, table, col, val = {
        "passage": ("passage", "passage_labels", "passage_id", "grade"),
        "ptkb": ("ptkb", "ptkb_labels", "statement_id", "relevant"),
    }[task]
    sql = (
        "SELECT h.source, h.item, h.old_value, h.new_value, h.mode FROM label_history h JOIN sources s "
        "ON s.name = h.source AND s.kind = 'assessor' WHERE h.label_table = ?"
    )
    params: list = [kind]
    if assessor:
        sql, params = sql + " AND h.source = ?", params + [assessor]
    first: dict[tuple, str | None] = {}
    last: dict[tuple, str | None] = {}
    for source, item, old, new, mode in db.conn.execute(sql + " ORDER BY h.id", params):
        key = (source, item)
        if key not in first:
            if old is None and mode == "reveal":
                first[key] = new
            else:
                first[key] = "-"  # first labelled in another mode: not part of the study
        last[key] = new
    llm: dict[tuple, dict[str, int]] = {}
    for src, turn, item, value in db.conn.execute(
        f"SELECT l.source, l.turn_id, l.{col}, l.{val} FROM {table} l JOIN sources s ON s.name = l.source "
        f"AND s.kind = 'llm' WHERE l.{val} IS NOT NULL"
    ):
        llm.setdefault((turn, str(item)), {})[src] = int(value)
    report: dict[tuple, dict] = {}
    for (source, item), start in first.items():
        end = last[(source, item)]
        if start in ("-", None, "cannot-judge") or end in (None, "cannot-judge") or start == end:
            continue
        turn, item_id = item.split(" ", 1)
        for src, grade in llm.get((turn, item_id), {}).items():
            r = report.setdefault(
                (source, src),
                {
                    "assessor": source,
                    "llm": src,
                    "changed": 0,
                    "toward": 0,
                    "away": 0,
                    "same_distance": 0,
                    "landed_on_llm": 0,
                },
            )
            before, after = abs(int(start) - grade), abs(int(end) - grade)
            r["changed"] += 1
            r["toward" if after < before else "away" if after > before else "same_distance"] += 1
            r["landed_on_llm"] += int(int(end) == grade)
    for r in report.values():
        r["toward_share"] = r["toward"] / r["changed"] if r["changed"] else None
    return sorted(report.values(), key=lambda r: (r["assessor"], r["llm"]))


# ------------------------------------------------------------------------------------------- adaptive pooling


def adaptive_pool(
    db: Database,
    source: str,
    threshold: int,
    always: int = 5,
    depth: int = 30,
    *,
    qrels: str | None = None,
    relevant: int = 2,
    apply: bool = False,
) -> dict:
    """Adaptive pooling as in iKAT 2024: ranks 1..``always`` of every run enter the pool; ranks
    ``always``+1..``depth`` only when ``source`` (an LLM) grades the passage >= ``threshold``.

    Returns the depth pool (union of every run's top ``depth``), the adaptive pool, how many pairs
    that saves, how many candidates the LLM has not graded (they stay out), and with ``qrels`` (a
    human source) how many of its relevant pairs (grade >= ``relevant``) the filter drops.
    Without stored runs the report covers the pairs both sources judged instead (no rank known:
    every pair is treated as below rank ``always``). ``apply`` adds the adaptive pool to the pool
    (method 'adaptive'); pairs already pooled stay.
    """
    c = db.conn
    if threshold < 0 or always < 0 or depth < always:
        raise AssessError(f"need threshold >= 0 and 0 <= always <= depth, got {threshold}, {always}, {depth}")
    if not c.execute("SELECT 1 FROM passage_labels WHERE source = ? LIMIT 1", (source,)).fetchone():
        raise AssessError(f"source {source!r} has no passage labels (pre-judge the candidates first)")
    human = {}
    if qrels:
        if not c.execute("SELECT 1 FROM passage_labels WHERE source = ? LIMIT 1", (qrels,)).fetchone():
            raise AssessError(f"source {qrels!r} has no passage labels")
        human = {
            (t, p): g
            for t, p, g in c.execute(
                "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = ? AND grade IS NOT NULL", (qrels,)
            )
        }
    grades = {
        (t, p): g
        for t, p, g in c.execute(
            "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = ? AND grade IS NOT NULL", (source,)
        )
    }
    runs = c.execute("SELECT COUNT(DISTINCT run) FROM rankings").fetchone()[0]
    report: dict[str, Any] = {
        "source": source,
        "threshold": threshold,
        "always": always,
        "depth": depth,
        "qrels": qrels,
        "relevant": relevant,
        "relevant_grade": relevant,
        "runs": runs,
    }
    if runs:
        best = dict(
            ((t, p), r)
            for t, p, r in c.execute(
                "SELECT turn_id, passage_id, MIN(rank) FROM rankings WHERE rank <= ? GROUP BY turn_id, passage_id",
                (depth,),
            )
        )
        kept = {k: r for k, r in best.items() if r <= always or grades.get(k, -1) >= threshold}
        report.update(
            mode="runs",
            depth_pool=len(best),
            always_in=sum(r <= always for r in best.values()),
            adaptive_pool=len(kept),
            saved=len(best) - len(kept),
            ungraded=sum(1 for k, r in best.items() if r > always and k not in grades),
        )
        candidates = best
    else:
        both = [k for k in grades if not qrels or k in human]
        kept = {k: None for k in both if grades[k] >= threshold}
        report.update(mode="judged pairs", pairs=len(both), kept=len(kept), saved=len(both) - len(kept))
        candidates = dict.fromkeys(both)
    report["saved_share"] = report["saved"] / len(candidates) if candidates else None
    if qrels:
        rel = [k for k in candidates if human.get(k, -1) >= relevant]
        dropped = [k for k in rel if k not in kept]
        report.update(
            judged_by_qrels=sum(1 for k in candidates if k in human),
            relevant=len(rel),
            relevant_dropped=len(dropped),
            relevant_dropped_share=len(dropped) / len(rel) if rel else None,
            relevant_dropped_by_grade={
                g: sum(1 for k in dropped if human[k] == g) for g in sorted({human[k] for k in dropped})
            },
        )
    if apply and runs:
        stamp = now()
        detail = f"adaptive {source} >= {threshold}, always top {always}, depth {depth}"
        with write(db):
            before = db.conn.total_changes
            c.executemany(
                "INSERT INTO pool (turn_id, passage_id, method, detail, best_rank, added_at) "
                "VALUES (?,?,'adaptive',?,?,?) ON CONFLICT(turn_id, passage_id) DO NOTHING",
                [(t, p, detail, r, stamp) for (t, p), r in sorted(kept.items())],
            )
            report["added_to_pool"] = db.conn.total_changes - before
    return report


def adaptive_filter(db: Database, source: str, threshold: int, always: int = 5):
    """A ``pool_filter(turn_id, passage_id, rank)`` for :func:`store.imports.import_run`: the top ``always``
    ranks, and below them the passages ``source`` graded >= ``threshold``."""
    grades = {
        (t, p): g
        for t, p, g in db.conn.execute(
            "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = ? AND grade IS NOT NULL", (source,)
        )
    }
    return lambda turn_id, passage_id, rank: rank <= always or grades.get((turn_id, passage_id), -1) >= threshold
