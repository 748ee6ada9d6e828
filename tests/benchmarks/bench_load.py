"""Load benchmark measured the way browsers use the app: N crowd workers answering and M assessors
judging at once, each a client speaking Streamlit's websocket protocol as a browser tab does
(tests/benchmarks/st_client.py; not AppTest in-process), against 1 or more ``streamlit run app.py``
processes on one store (2 or more behind nginx with deploy/nginx.conf, sticky by cookie, as
tests/deploy/test_deploy.py runs it).

Per configuration: the store (a SQLite file, or a ``postgresql://`` URL) gets the demo (and with
--ikat the iKAT 2024 NIST pool, assigned to every assessor), one account per assessor
(``python -m assess users add … --password-stdin``) and a demo NtR crowd study
(``python -m assess crowd create --demo NAME``). Assessors open /judge and sign in with the
sidebar form (or their personal sign-in link, --sign-in link); crowd workers open the study link
``/crowd?study=NAME&worker=ID``, tick the consent box and press Start. Once every client is ready
the clock starts: each waits a think time (uniform, mean --think seconds) and presses a key (a
grade 0-4; Y or N), until --seconds have passed. A crowd worker who finishes a batch leaves and a
new worker takes their place. Measured per press: the time from sending the widget change to the
ForwardMsg delta that shows the next item (judge: ``Passage `ID` (n of N)`` of another passage;
crowd: ``Item n+1 of N`` or the thank-you), and to the end of the script run. Then the store is
checked: every answer a client saw acknowledged (the next item shown) is stored once, with the value
pressed (0 lost, 0 duplicated).

Everything listens on 127.0.0.1 only and is bounded: at most 500 clients, 3600 s, a timeout on
every wait (--timeout); the app processes and nginx are stopped at the end. Exit 1 when a press was
lost or duplicated or a client failed.

The assessors sign in at the same moment (a class at 9:00); a turned-away sign-in is an error. After the
configurations, the same load runs against a bare Streamlit app (tests/benchmarks/floor_load_app.py: the
same widgets and texts, one fragment rerun and one SQLite insert per answer) and each configuration's CPU
per answer is reported as a multiple of that floor's (``floor_ratio``; --no-floor skips it).

Run: python tests/benchmarks/bench_load.py [--processes 1 2] [--workers 20] [--assessors 5]
     [--seconds 30] [--think 2] [--db FILE|postgresql://…] [--ikat] [--sign-in password|link] [--no-floor]
     [--json [FILE]]  (without FILE the JSON is printed on stdout, the table on stderr)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import json
import os
import pwd
import random
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.benchmarks.st_client import (  # noqa: E402
    StreamlitClient,
    app_server,
    element_text,
    free_port,
    stop_process,
    streamlit_app,
)

DATA = ROOT.parent / "shared" / "data"
TOPICS = DATA / "irlabamsterdam-iKAT/2024/data/2024_test_topics.json"
NIST = DATA / "gyeozai-CFDA-TREC-iKAT2025/DATA/topics/2024_test_qrels.trec"
NGINX = Path(os.environ.get("ASSESS_E2E_NGINX", "/usr/sbin/nginx"))
SITE = ROOT / "deploy" / "nginx.conf"
FLOOR_APP = "tests/benchmarks/floor_load_app.py"
MAX_CLIENTS, MAX_SECONDS = 500, 3600

PASSAGE = re.compile(r"^Passage (`+) ?(.*?) ?\1 \((\d+) of (\d+)\)$")
TURN = re.compile(r"^Turn (.+?): \d+ / \d+ judged")
ITEM = re.compile(r"^Item (\d+) of (\d+)$")
THANKS = re.compile(r"^Thank you: you have answered every item")
NO_WORK = re.compile(r"^There is no more work for you")


@dataclass
class Press:
    """One key press and what the client saw."""

    kind: str  # judge | crowd
    who: str  # assessor name | crowd worker id
    item: str  # judge: 'turn passage'; crowd: the position in the batch
    value: int
    sent_at: float
    shown_s: float | None = None  # seconds to the delta showing the next item (None: never shown)
    finished_s: float | None = None  # seconds to the end of the script run
    error: str | None = None


@dataclass
class Load:
    """Shared state of one load run."""

    url: str
    seconds: float
    think: float
    timeout: float
    seed: int
    presses: list[Press] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    ready: int = 0  # clients signed in (or consented) and waiting for the clock
    queue_sizes: list[int] = field(default_factory=list)  # each assessor's queue length, as the page says
    loads: int = 0  # pages opened during the measured window (new crowd workers)
    turned_away: int = 0
    batches_done: int = 0
    start: asyncio.Event = field(default_factory=asyncio.Event)
    on_start: Callable[[], None] | None = None  # called just before the clock starts
    client_cpu_s: float = 0.0  # CPU time of this (client) process during the measured window
    started_at: float = 0.0
    stop_at: float = 0.0

    def think_time(self, rng: random.Random) -> float:
        return rng.uniform(0.5 * self.think, 1.5 * self.think) if self.think else 0.0


# ------------------------------------------------------------------------------------------- clients


def judge_position(texts) -> tuple[str, str, int, int] | None:
    """(turn, passage, position, total) of the passage a judge page shows."""
    turn = passage = None
    for text in texts:
        if turn is None and (m := TURN.match(text)):
            turn = html.unescape(m.group(1))
        if passage is None and (m := PASSAGE.match(text)):
            passage = (html.unescape(m.group(2)), int(m.group(3)), int(m.group(4)))
    return (turn, *passage) if turn is not None and passage is not None else None


async def assessor(load: Load, name: str, sign_in: tuple[str, str], delay: float) -> None:
    rng = random.Random(f"{load.seed}:{name}")
    await asyncio.sleep(delay)
    how, secret = sign_in
    if how == "link":
        client = StreamlitClient(load.url, "", f"signin={secret}", timeout=load.timeout)
    else:
        client = StreamlitClient(load.url, "judge", timeout=load.timeout)
    try:
        await client.open()
        if how == "link":
            await client.switch_page("judge")
        else:
            await client.submit("account_sign_in", {"account_name": name, "account_password": secret})
        shown = judge_position(client.texts())
        if shown is None:
            raise RuntimeError(f"{name}: no passage on the judge page after signing in: {client.texts()[:3]}")
        load.queue_sizes.append(shown[3])
        load.ready += 1
        await asyncio.wait_for(load.start.wait(), load.timeout * 4)
        while True:
            await asyncio.sleep(load.think_time(rng))
            if time.perf_counter() >= load.stop_at or shown[2] >= shown[3]:
                break
            grade = rng.randrange(5)
            press = Press("judge", name, f"{shown[0]} {shown[1]}", grade, time.perf_counter())
            load.presses.append(press)
            try:
                run = await client.click(f"g{grade}")
            except Exception as exc:
                press.error = f"{type(exc).__name__}: {exc}"
                break
            press.finished_s = run.finished_at - run.sent_at
            for at, found in _matches(run, PASSAGE):
                if (html.unescape(found.group(2)), int(found.group(3))) != shown[1:3]:
                    press.shown_s = at - run.sent_at
                    break
            if run.errors:
                press.error = "; ".join(run.errors)
            now = judge_position(client.texts())
            if now is None:
                press.error = press.error or "the judge page shows no passage"
                break
            shown = now
    except Exception as exc:
        load.errors.append(f"assessor {name}: {type(exc).__name__}: {exc}")
    finally:
        await client.close()


async def crowd_worker(load: Load, study: str, slot: str, delay: float) -> None:
    """One crowd worker's seat: a worker takes a batch and answers it; when done, a new worker comes."""
    rng = random.Random(f"{load.seed}:{slot}")
    await asyncio.sleep(delay)
    for n in range(10_000):
        if load.start.is_set() and time.perf_counter() >= load.stop_at:
            return
        worker = f"{slot}-{n}"
        client = StreamlitClient(load.url, "crowd", f"study={study}&worker={worker}", timeout=load.timeout)
        try:
            if load.start.is_set():
                load.loads += 1
            await client.open()
            if any(NO_WORK.match(t) for t in client.texts()):
                load.turned_away += 1
                return
            await client.set_value("crowd_agree", True)
            await client.click("crowd_start")
            position = _crowd_position(client)
            if position is None:
                raise RuntimeError(f"{worker}: no item after consent: {client.texts()[:3]}")
            if not load.start.is_set():
                load.ready += 1
            await asyncio.wait_for(load.start.wait(), load.timeout * 4)
            while True:
                await asyncio.sleep(load.think_time(rng))
                if time.perf_counter() >= load.stop_at:
                    return
                value = rng.randrange(2)
                press = Press("crowd", worker, str(position), value, time.perf_counter())
                load.presses.append(press)
                try:
                    run = await client.click("crowd_yes" if value else "crowd_no")
                except Exception as exc:
                    press.error = f"{type(exc).__name__}: {exc}"
                    return
                press.finished_s = run.finished_at - run.sent_at
                for at, found in _matches(run, ITEM, THANKS):
                    if found.re is THANKS or int(found.group(1)) == position + 1:
                        press.shown_s = at - run.sent_at
                        break
                if run.errors:
                    press.error = "; ".join(run.errors)
                if any(THANKS.match(t) for t in client.texts()):
                    load.batches_done += 1
                    break
                now = _crowd_position(client)
                if now is None:
                    press.error = press.error or "the crowd page shows no item"
                    return
                position = now
        except Exception as exc:
            load.errors.append(f"crowd worker {worker}: {type(exc).__name__}: {exc}")
            return
        finally:
            await client.close()


def _crowd_position(client: StreamlitClient) -> int | None:
    found = client.find(ITEM)
    return int(found.group(1)) if found else None


def _matches(run, *patterns):
    """(arrival time, match) of each delta matching one of ``patterns``, in arrival order."""
    for at, msg in run.messages:
        if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
            text = element_text(msg.delta.new_element)
            for pattern in patterns:
                if found := pattern.match(text):
                    yield at, found
                    break


async def run_clients(load: Load, study: str, assessors: dict[str, tuple[str, str]], workers: int, tag: str) -> None:
    """Open every client, start the clock once all are ready, wait for them (bounded)."""
    # The assessors sign in at once, as a class does at 9:00 (none may be turned away); crowd workers arrive
    # one every 50 ms after them.
    tasks = [asyncio.create_task(assessor(load, name, secret, 0.0)) for name, secret in assessors.items()]
    tasks += [asyncio.create_task(crowd_worker(load, study, f"{tag}-w{i:03d}", 0.05 * (i + 1))) for i in range(workers)]
    # Ready: every client waits for the start or has given up; bounded by the open timeouts.
    deadline = time.monotonic() + load.timeout * 3 + 0.05 * len(tasks)
    while time.monotonic() < deadline and load.ready + sum(t.done() for t in tasks) < len(tasks):
        await asyncio.sleep(0.1)
    if load.on_start is not None:
        load.on_start()
    client_cpu = time.process_time()
    load.started_at = time.perf_counter()
    load.stop_at = load.started_at + load.seconds
    load.start.set()
    _done, pending = await asyncio.wait(tasks, timeout=load.seconds + load.timeout * 2 + 30)
    for task in pending:  # a client stuck past every timeout: counted, then cancelled
        load.errors.append("a client did not finish in time")
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    load.client_cpu_s = time.process_time() - client_cpu


# ------------------------------------------------------------------------------------------- the store


SECRET_KEY = secrets.token_urlsafe(32)  # signs the sign-in links, for the CLI and the app processes alike


def cli(*args: str, db: str, stdin: str | None = None, timeout: float = 600) -> str:
    """``python -m assess ARGS --db DB``; its output (raises on a failure)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSESS_")}
    env["ASSESS_SECRET_KEY"] = SECRET_KEY
    done = subprocess.run(
        [sys.executable, "-m", "assess", *args, "--db", db],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if done.returncode != 0:
        raise RuntimeError(f"python -m assess {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def prepare(db: str, *, tag: str, assessors: int, workers: int, ikat: bool, sign_in: str) -> tuple[str, dict]:
    """Demo (+ iKAT pool), accounts and the crowd study; returns (study, {assessor: ("password", password)})."""
    cli("init", "--demo", db=db)
    names = [f"{tag}-a{i:02d}" for i in range(assessors)]
    if ikat and not count(db, "SELECT COUNT(*) AS n FROM conversations WHERE collection IS DISTINCT FROM 'demo'"):
        cli("import", "topics", str(TOPICS), db=db)
        cli("import", "qrels", str(NIST), "--source", "nist", db=db)
    passwords = {name: secrets.token_urlsafe(12) for name in names}

    def add(name: str) -> None:
        if sign_in == "link":
            cli("users", "add", name, "--role", "assessor", "--no-password", db=db)
        else:
            cli("users", "add", name, "--role", "assessor", "--password-stdin", db=db, stdin=passwords[name] + "\n")
        if ikat:
            conversations = [
                r["id"]
                for r in query(db, "SELECT id FROM conversations WHERE collection IS DISTINCT FROM 'demo' ORDER BY id")
            ]
            cli("assign", "--assessor", name, "--conversation", *conversations, db=db)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(add, names))
    batches = 19  # the demo NtR study: 186 items in batches of 10
    k = max(3, -(-workers * 3 // batches))  # 19 k slots: room for three batches per crowd seat
    study = f"{tag}-study"
    cli("crowd", "create", "--demo", study, "--k", str(k), db=db)
    return study, {name: ("password", passwords[name]) for name in names}


def links(db: str, base_url: str, names) -> dict:
    """A personal sign-in link for each assessor (the token only)."""
    out = {}
    for name in names:
        link = cli("users", "link", name, "--base-url", base_url, db=db).strip().splitlines()[-1]
        out[name] = ("link", urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["signin"][0])
    return out


def query(db: str, sql: str, params: dict | None = None) -> list[dict]:
    from store.db import Store
    from store.db import rows as store_rows

    with Store(db) as store:
        return [dict(r) for r in store_rows(store, sql, params or {})]


def count(db: str, sql: str, params: dict | None = None) -> int:
    found = query(db, sql, params)
    return int(next(iter(found[0].values()))) if found else 0


def check_store(db: str, load: Load, study: str, names) -> dict:
    """Every acknowledged answer stored once with its value: lost, duplicated, stored without acknowledgement."""
    lost = duplicated = unacknowledged = history_missing = 0
    acked_judge: dict[str, dict[str, int]] = {}
    for p in load.presses:
        if p.kind == "judge" and p.shown_s is not None:
            acked_judge.setdefault(p.who, {})[p.item] = p.value
    for name in names:
        stored = {
            f"{r['turn_id']} {r['passage_id']}": r["grade"]
            for r in query(db, "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = :s", {"s": name})
        }
        inserts = {
            r["item"]: r["n"]
            for r in query(
                db,
                "SELECT item, COUNT(*) AS n FROM label_history WHERE source = :s AND label_table = 'passage' "
                "AND old_value IS NULL GROUP BY item",
                {"s": name},
            )
        }
        acked = acked_judge.get(name, {})
        lost += sum(1 for item, value in acked.items() if item not in stored or stored[item] != value)
        duplicated += sum(n - 1 for n in inserts.values() if n > 1)
        history_missing += sum(1 for item in acked if item not in inserts)
        unacknowledged += sum(1 for item in stored if item not in acked)
    # crowd: per worker the values pressed and acknowledged, in order, against the stored answers in order
    acked_crowd: dict[str, list[int]] = {}
    for p in load.presses:
        if p.kind == "crowd" and p.shown_s is not None:
            acked_crowd.setdefault(p.who, []).append(p.value)
    stored_crowd: dict[str, list[int]] = {}
    for r in query(
        db,
        "SELECT a.worker AS worker, x.value AS value, x.item_id AS item FROM crowd_assignments a "
        "JOIN crowd_answers x ON x.assignment_id = a.id WHERE a.study = :study ORDER BY a.worker, x.answered_at, x.item_id",
        {"study": study},
    ):
        stored_crowd.setdefault(r["worker"], []).append(r["value"])
    pairs = query(
        db,
        "SELECT COUNT(*) AS n FROM crowd_answers x JOIN crowd_assignments a ON a.id = x.assignment_id "
        "WHERE a.study = :study GROUP BY x.assignment_id, x.item_id HAVING COUNT(*) > 1",
        {"study": study},
    )
    duplicated += sum(r["n"] - 1 for r in pairs)
    for worker, values in acked_crowd.items():
        stored = stored_crowd.get(worker, [])
        lost += sum(1 for i, v in enumerate(values) if i >= len(stored) or stored[i] != v)
    for worker, stored in stored_crowd.items():
        unacknowledged += max(0, len(stored) - len(acked_crowd.get(worker, [])))
    return {
        "lost": lost,
        "duplicated": duplicated,
        "stored_unacknowledged": unacknowledged,
        "history_missing": history_missing,
    }


# ------------------------------------------------------------------------------------------- nginx


def site_config(listen_port: int, app_urls: list[str]) -> str:
    """deploy/nginx.conf with its listen port and upstream servers replaced (as tests/deploy/test_deploy.py does)."""
    text = SITE.read_text(encoding="utf-8")
    text, n_listen = re.subn(r"(?m)^(\s*)listen 80;$", rf"\1listen 127.0.0.1:{listen_port};", text)
    upstream = re.compile(r"(?m)^(\s*)server 127\.0\.0\.1:\d+( [^;\n]*)?;\n")
    servers = upstream.findall(text)
    if n_listen != 1 or not servers:
        raise RuntimeError(f"{SITE}: expected one 'listen 80;' and upstream server lines")
    indent, options = servers[0]
    lines = "".join(f"{indent}server {url.removeprefix('http://')}{options};\n" for url in app_urls)
    text = upstream.sub("", text, count=len(servers) - 1)
    return upstream.sub(lambda _m: lines, text, count=1)


@contextlib.contextmanager
def nginx_proxy(tmp: Path, app_urls: list[str], connections: int):
    """nginx (this user, files in ``tmp``, ``daemon off``) in front of ``app_urls`` on a free port of
    127.0.0.1; yields (proxy URL, access log)."""
    if not NGINX.exists():
        raise RuntimeError(f"{NGINX} is absent: several processes need nginx in front (apt-get install nginx)")
    tmp.mkdir(parents=True, exist_ok=True)
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};\n" if os.geteuid() == 0 else ""
    temps = "".join(
        f"    {k}_temp_path {tmp / (k + '_temp')};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    for _attempt in range(3):
        port = free_port()
        site, conf = tmp / "site.conf", tmp / "nginx.conf"
        site.write_text(site_config(port, app_urls), encoding="utf-8")
        conf.write_text(
            f"{user}daemon off;\nworker_processes 1;\npid {tmp / 'nginx.pid'};\nerror_log {tmp / 'error.log'} notice;\n"
            f"events {{ worker_connections {connections}; }}\nhttp {{\n{temps}"
            "    log_format load 'upstream=$upstream_addr status=$status \"$request\"';\n"
            f"    access_log {tmp / 'access.log'} load;\n    include {site};\n}}\n",
            encoding="utf-8",
        )
        args = [str(NGINX), "-p", str(tmp), "-e", str(tmp / "error.log"), "-c", str(conf)]
        check = subprocess.run([*args, "-t"], capture_output=True, text=True, timeout=30)
        if check.returncode != 0:
            raise RuntimeError(f"nginx -t refused the configuration:\n{check.stderr}")
        with open(tmp / "nginx.out", "ab") as out:
            proc = subprocess.Popen(
                args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while proc.poll() is None and time.monotonic() < deadline and not _ok(url + "/_stcore/health"):
                time.sleep(0.1)
            if proc.poll() is None and _ok(url + "/_stcore/health"):
                yield url, tmp / "access.log"
                return
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGQUIT)  # graceful: the access log is complete
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    stop_process(proc)
    raise RuntimeError(f"nginx did not serve the app; see {tmp / 'error.log'}")


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def sessions_per_process(log: Path) -> dict[str, int]:
    """Websocket sessions (status 101) per app process, from nginx's access log."""
    seen: dict[str, int] = {}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        m = re.match(r'^upstream=(\S+) status=101 "GET /_stcore/stream ', line)
        if m:
            seen[m.group(1)] = seen.get(m.group(1), 0) + 1
    return seen


# ------------------------------------------------------------------------------------------- one configuration


def _cpu(processes) -> list[float]:
    """CPU seconds (user + system) each process has used so far, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    out = []
    for proc in processes:
        try:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            out.append((int(fields[11]) + int(fields[12])) / ticks)
        except (OSError, IndexError, ValueError):
            out.append(float("nan"))
    return out


def percentile(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))] if ordered else None


def ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 1)


def engine_of(db: str) -> str:
    return "postgresql" if db.startswith(("postgresql:", "postgres:")) else "sqlite"


def run_configuration(args, processes: int, db: str | None, tmp: Path) -> dict:
    tag = f"L{secrets.token_hex(2)}p{processes}"
    target = db or str(tmp / "store.db")
    study, assessors = prepare(
        target, tag=tag, assessors=args.assessors, workers=args.workers, ikat=args.ikat, sign_in=args.sign_in
    )
    proxied = processes > 1 or args.nginx
    servers: list = []
    with contextlib.ExitStack() as stack:
        apps = [
            stack.enter_context(
                app_server(target, tmp / f"app{i}.log", processes=servers, ASSESS_SECRET_KEY=SECRET_KEY)
            )
            for i in range(processes)
        ]
        if proxied:
            url, access_log = stack.enter_context(
                nginx_proxy(tmp / "nginx", apps, connections=4 * (args.workers + args.assessors) + 64)
            )
        else:
            url, access_log = apps[0], None
        if args.sign_in == "link":
            assessors = links(target, url, assessors)
        cpu: dict = {}
        load = Load(url, args.seconds, args.think, args.timeout, args.seed)
        load.on_start = lambda: cpu.update(before=_cpu(servers), loadavg=os.getloadavg()[0])
        asyncio.run(run_clients(load, study, assessors, args.workers, tag))
        ended = time.perf_counter()
        server_cpu = [round(a - b, 1) for a, b in zip(_cpu(servers), cpu.get("before", []))]
    spread = sessions_per_process(access_log) if access_log else {apps[0]: None}
    checked = check_store(target, load, study, list(assessors))
    presses = load.presses
    acked = [p for p in presses if p.shown_s is not None]
    window = max([load.seconds] + [p.sent_at + (p.finished_s or 0) - load.started_at for p in presses])
    failed = [p for p in presses if p.error or p.shown_s is None]
    result = {
        "processes": processes,
        "proxy": "nginx" if proxied else "none",
        "engine": engine_of(target),
        "pool": "demo + iKAT 2024 NIST" if args.ikat else "demo",
        "judge_queue": sorted(set(load.queue_sizes)),
        "crowd_workers": args.workers,
        "assessors": args.assessors,
        "think_s": args.think,
        "seconds": round(window, 1),
        "presses": len(presses),
        "answers": len(acked),
        "judge_answers": sum(p.kind == "judge" for p in acked),
        "crowd_answers": sum(p.kind == "crowd" for p in acked),
        "answers_per_s": round(len(acked) / window, 2) if window else None,
        "p50_ms": ms(percentile([p.shown_s for p in acked], 0.5)),
        "p95_ms": ms(percentile([p.shown_s for p in acked], 0.95)),
        "max_ms": ms(max((p.shown_s for p in acked), default=None)),
        "judge_p50_ms": ms(percentile([p.shown_s for p in acked if p.kind == "judge"], 0.5)),
        "judge_p95_ms": ms(percentile([p.shown_s for p in acked if p.kind == "judge"], 0.95)),
        "crowd_p50_ms": ms(percentile([p.shown_s for p in acked if p.kind == "crowd"], 0.5)),
        "crowd_p95_ms": ms(percentile([p.shown_s for p in acked if p.kind == "crowd"], 0.95)),
        "run_p95_ms": ms(percentile([p.finished_s for p in acked if p.finished_s is not None], 0.95)),
        "errors": len(failed) + len(load.errors),
        **checked,
        "crowd_batches_done": load.batches_done,
        "crowd_pages_opened_in_window": load.loads,
        "turned_away": load.turned_away,
        "sessions_per_process": spread,
        "server_cpu_s": server_cpu,
        "cpu_ms_per_answer": cpu_per_answer(server_cpu, len(acked)),
        "client_cpu_s": round(load.client_cpu_s, 1),
        "loadavg_at_start": round(cpu.get("loadavg", 0.0), 2),
        "error_samples": [f"{p.who}: {p.error or 'next item never shown'}" for p in failed][:5] + load.errors[:5],
        "wall_s": round(ended - load.started_at, 1),
    }
    return result


def run_floor(args, tmp: Path) -> dict:
    """The same clients and load against the bare floor app (tests/benchmarks/floor_load_app.py, one process):
    its answers, server CPU and CPU per answer; every acknowledged answer must be one row of its file."""
    import sqlite3

    floor_db = tmp / "floor.db"
    names = {f"floor-a{i:02d}": ("password", "x") for i in range(args.assessors)}
    servers: list = []
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSESS_")}
    env.update(FLOOR_DB=str(floor_db), STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", PYTHONUNBUFFERED="1")
    with streamlit_app(FLOOR_APP, tmp / "floor.log", env) as (url, proc):
        servers.append(proc)
        cpu: dict = {}
        load = Load(url, args.seconds, args.think, args.timeout, args.seed)
        load.on_start = lambda: cpu.update(before=_cpu(servers))
        asyncio.run(run_clients(load, "floor", names, args.workers, "F"))
        server_cpu = [round(a - b, 1) for a, b in zip(_cpu(servers), cpu.get("before", []))]
    acked = [p for p in load.presses if p.shown_s is not None]
    with contextlib.closing(sqlite3.connect(floor_db)) as conn:
        stored = conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
    window = max([load.seconds] + [p.sent_at + (p.finished_s or 0) - load.started_at for p in load.presses])
    return {
        "answers": len(acked),
        "answers_per_s": round(len(acked) / window, 2) if window else None,
        "p50_ms": ms(percentile([p.shown_s for p in acked], 0.5)),
        "p95_ms": ms(percentile([p.shown_s for p in acked], 0.95)),
        "server_cpu_s": server_cpu,
        "cpu_ms_per_answer": cpu_per_answer(server_cpu, len(acked)),
        "stored_rows": stored,
        "errors": len([p for p in load.presses if p.error or p.shown_s is None]) + len(load.errors),
        "error_samples": load.errors[:3],
    }


def cpu_per_answer(server_cpu: list[float], answers: int) -> float | None:
    """Milliseconds of app-process CPU (all processes together) per acknowledged answer."""
    return round(1000 * sum(server_cpu) / answers, 2) if answers else None


COLUMNS = [
    ("processes", "processes"),
    ("engine", "store"),
    ("proxy", "proxy"),
    ("crowd_workers", "N crowd"),
    ("assessors", "M assessors"),
    ("seconds", "s"),
    ("answers", "answers"),
    ("answers_per_s", "answers/s"),
    ("p50_ms", "p50 ms"),
    ("p95_ms", "p95 ms"),
    ("judge_p95_ms", "judge p95"),
    ("crowd_p95_ms", "crowd p95"),
    ("errors", "errors"),
    ("lost", "lost"),
    ("duplicated", "duplicated"),
    ("server_cpu_s", "server CPU s"),
    ("cpu_ms_per_answer", "CPU ms/answer"),
    ("floor_ratio", "x floor"),
    ("loadavg_at_start", "load avg"),
]


def table(results: list[dict]) -> str:
    head = "| " + " | ".join(label for _k, label in COLUMNS) + " |"
    rule = "|" + "---|" * len(COLUMNS)
    body = ["| " + " | ".join(str(r.get(k, "")) for k, _l in COLUMNS) + " |" for r in results]
    return "\n".join([head, rule, *body])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=f"Bounded: at most {MAX_CLIENTS} clients and {MAX_SECONDS} s; 127.0.0.1 only.",
    )
    parser.add_argument(
        "--processes", type=int, nargs="+", default=[1, 2], help="app processes, one run per value (default: 1 2)"
    )
    parser.add_argument("--workers", type=int, default=20, help="crowd workers answering at once (N, default 20)")
    parser.add_argument("--assessors", type=int, default=5, help="assessors judging at once (M, default 5)")
    parser.add_argument("--seconds", type=float, default=30.0, help="measured time (default 30)")
    parser.add_argument("--think", type=float, default=2.0, help="mean think time before each key press, s (default 2)")
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="longest wait for one page or script run, s (default 60)"
    )
    parser.add_argument(
        "--db",
        help="the store: a SQLite file or a postgresql:// URL, shared by the runs under distinct names "
        "(default: a fresh temporary SQLite file per run); the word 'postgresql' starts a throwaway "
        "PostgreSQL cluster (tests/pg.py, Debian's server binaries) with a fresh database per run",
    )
    parser.add_argument(
        "--ikat", action="store_true", help="also load the iKAT 2024 NIST pool (../shared) and judge it"
    )
    parser.add_argument("--sign-in", choices=("password", "link"), default="password", help="how assessors sign in")
    parser.add_argument("--nginx", action="store_true", help="put nginx in front of a single process too")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--json",
        metavar="FILE",
        nargs="?",
        const="-",
        help="also write the results as JSON to FILE; without FILE, print them on stdout (the table goes to stderr)",
    )
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="skip the floor run (the same load on tests/benchmarks/floor_load_app.py, a bare Streamlit app)",
    )
    args = parser.parse_args()
    if not 0 <= args.workers + args.assessors <= MAX_CLIENTS or min(args.workers, args.assessors) < 0:
        parser.error(f"--workers + --assessors: 0 to {MAX_CLIENTS}")
    if not 0 < args.seconds <= MAX_SECONDS or not 0 < args.timeout <= 600 or args.think < 0:
        parser.error(f"--seconds: up to {MAX_SECONDS}; --timeout: up to 600; --think >= 0")
    if any(not 1 <= k <= 8 for k in args.processes):
        parser.error("--processes: 1 to 8")
    if args.ikat and not NIST.exists():
        parser.error(f"--ikat: {NIST} is absent")
    results = []
    cluster = None
    if args.db == "postgresql":
        from tests import pg

        if pg.find_bindir() is None:
            parser.error(f"--db postgresql: {pg.MISSING}")
        cluster = pg.start_cluster()
    try:
        for processes in args.processes:
            db = cluster.url(cluster.create_database()) if cluster else args.db
            with tempfile.TemporaryDirectory(prefix="bench_load_") as tmp:
                result = run_configuration(args, processes, db, Path(tmp))
            results.append(result)
            print(json.dumps(result), file=sys.stderr, flush=True)
        if not args.no_floor:
            with tempfile.TemporaryDirectory(prefix="bench_load_floor_") as tmp:
                floor = run_floor(args, Path(tmp))
            print(json.dumps({"floor": floor}), file=sys.stderr, flush=True)
            for result in results:
                result["floor"] = floor
                ours, bare = result["cpu_ms_per_answer"], floor["cpu_ms_per_answer"]
                result["floor_ratio"] = round(ours / bare, 2) if ours and bare else None
    finally:
        if cluster:
            pg.remove_cluster(cluster)
    report = sys.stderr if args.json == "-" else sys.stdout  # stdout holds only the JSON then
    print(table(results), file=report)
    if not args.no_floor:
        f = results[0]["floor"]
        print(
            f"floor (bare Streamlit app, 1 process, same load): {f['answers']} answers, {f['answers_per_s']}/s, "
            f"server CPU {f['server_cpu_s']} s, {f['cpu_ms_per_answer']} ms per answer, errors {f['errors']}",
            file=report,
        )
    if args.json == "-":
        print(json.dumps(results, indent=2))
    elif args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    bad = any(r["lost"] or r["duplicated"] or r["errors"] for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
