"""CLI: LLM pre-judgments (prejudge), adaptive pooling (pool adaptive) and the reveal audit (anchoring)."""

from __future__ import annotations

import json
import sys

from assess import lazylibs
from assess.cli import add_db_argument, progress_output
from assess.cli.batch_submit import run_submit
from assess.cli.common import open_store
from assess.llm import probes
from assess.services import audit, batch_files, endpoints, jobs, pooling, prejudge, provider_batches
from assess.tasks import PREJUDGE_TASKS

TASKS = tuple(
    PREJUDGE_TASKS
)  # the registry's table (not the jobs service: building the parser stays free of the store)


def add_commands(sub) -> None:
    p = sub.add_parser(
        "prejudge",
        help="pre-judge items with an LLM (OpenAI-compatible endpoint) or a local NLI model",
        description="Ask a model about every item of a task and store each answer as it arrives (raw output, parse "
        "status, latency, tokens); parsed answers become labels of --source. Prints a cost and time "
        "estimate first (stderr), then a progress bar (stderr). Resumable: a second run asks only what "
        "is missing; answers are cached by (model, prompt version, input). Refused (exit 2) while "
        "another live job of the same source and task runs; a killed job (process gone, or no "
        "heartbeat for 2 x --timeout, at least 60 s) is marked interrupted. Endpoint: --base-url or "
        "ASSESS_LLM_BASE_URL (vLLM, Ollama: http://localhost:11434/v1), key from ASSESS_LLM_API_KEY "
        "or OPENAI_API_KEY (never a flag). Self-consistency: --samples K asks K times about every item (answers "
        "numbered 0..K-1, each stored as an outcome of its own) and the label is their consensus: the most "
        "frequent value, a tie broken by the mean of all K rounded half up; a later run with a larger K asks only "
        "for the new answers. Persona sensitivity: --no-ptkb grades passages with the prompt variant without the "
        "user's PTKB statements (its own prompt version, by default into the source llm:MODEL:no-ptkb).",
    )
    add_db_argument(p)
    p.add_argument(
        "--task",
        choices=TASKS,
        required=True,
        help="passage: pooled passages 0-4; ptkb: statement relevance; ntr: gold nugget in response "
        "yes/no; ntr-support: gold nugget in response as support / partial support / no support (2/1/0); "
        "importance: gold nugget vital / okay (1/0); citation: does a passage a response sentence cites support it "
        "(fully 2 / partially 1 / not 0 / citation irrelevant -1; cited passages without text are skipped and "
        "counted); nuggets: spans of passages; response-nuggets: spans of responses; aepd: aspects",
    )
    p.add_argument("--source", help="label source of the answers, llm:NAME (default llm:MODEL)")
    p.add_argument(
        "--model",
        help="model name at the endpoint (default $ASSESS_LLM_MODEL; NLI: a Hugging Face name or local directory)",
    )
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default $ASSESS_LLM_BASE_URL, else OpenAI)")
    p.add_argument(
        "--endpoint",
        dest="endpoints",
        action="append",
        default=[],
        metavar="URL[,key=ENV_VAR][,concurrency=N][,pause=S]",
        help="one of several OpenAI-compatible endpoints (repeat the option): calls go where there is free "
        "capacity; one that fails 3 times in a row (429/5xx/timeouts) is paused S seconds (default 30, doubled "
        "while it keeps failing) and its calls go to the others. key= names the environment variable holding its "
        "key (default $ASSESS_LLM_API_KEY); concurrency= its limit (default --concurrency)",
    )
    p.add_argument("--concurrency", type=int, default=None, help="calls in flight at once (default 16; per --endpoint)")
    p.add_argument("--limit", type=int, help="judge at most N items not judged yet (the rest on a later run)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per call before it is retried (default 60)")
    p.add_argument("--retries", type=int, default=4, help="retries of a call on 429/5xx/timeouts (default 4)")
    p.add_argument("--depth", type=int, help="passage/nuggets: the top K of every stored run instead of the pool")
    p.add_argument(
        "--nuggets",
        dest="nugget_source",
        help="ntr, ntr-support, importance: the gold nugget source (default: the only one)",
    )
    p.add_argument(
        "--dedup", action="store_true", help="ntr, ntr-support, importance: only the de-duplicated gold nuggets"
    )
    p.add_argument(
        "--samples",
        type=int,
        default=1,
        metavar="K",
        help="answers per item (1-20, default 1); the label is their consensus (most frequent value, a tie by "
        "the mean rounded half up); the labelling tasks only",
    )
    p.add_argument(
        "--temperature",
        type=float,
        default=None,
        metavar="T",
        help="sampling temperature sent with every call (0-2, default 0); part of the answer cache's key",
    )
    p.add_argument(
        "--no-ptkb",
        action="store_true",
        help="passage: the prompt variant without the user's PTKB statements (persona sensitivity); default "
        "source llm:MODEL:no-ptkb, so the with-PTKB labels of llm:MODEL stay as they are",
    )
    p.add_argument(
        "--contradicts",
        action="store_true",
        help="citation: the prompt variant that may also answer 'contradicts' (-2: the passage states the opposite "
        "of the sentence); default source llm:MODEL:contradicts, so the labels of llm:MODEL stay as they are",
    )
    p.add_argument("--qrels", help="nuggets: read only passages this source graded >= --relevant")
    p.add_argument("--relevant", type=int, default=2, help="nuggets: grade that counts as relevant (default 2)")
    p.add_argument("--price-in", type=float, help="USD per million input tokens (for the estimate)")
    p.add_argument("--price-out", type=float, help="USD per million output tokens (for the estimate)")
    p.add_argument("--estimate", action="store_true", help="print the estimate and stop")
    p.add_argument(
        "--backend",
        choices=("chat", "nli"),
        default="chat",
        help="chat: an LLM; nli: a local NLI cross-encoder (ntr only)",
    )
    p.add_argument("--device", help="nli: cpu, cuda, ... (default: cuda when available)")
    p.add_argument("--batch-size", type=int, default=32, help="nli: pairs per batch (default 32)")
    p.add_argument("--nli-threshold", type=float, default=0.5, help="nli: P(entailment) that counts as a match")
    p.add_argument(
        "--probe",
        metavar="KIND",
        help="instead of pre-judging: probe how easily the judge of --source is manipulated. KIND is injection "
        "(an instruction to grade 4 appended to the passage), stuffing (the turn's query terms appended, "
        "repeated), all, or a comma-separated list. Re-judges --sample graded passages of --source (task "
        "passage), each unaltered (control) and altered, and reports how often the grade rises vs the stored "
        "grade and vs the control. Probe answers are stored but never become labels or pool decisions",
    )
    p.add_argument("--sample", type=int, help="probe: how many graded passages to re-judge (default 50)")
    p.add_argument("--seed", type=int, default=0, help="probe: seed of the sample (default 0)")
    p.add_argument(
        "--batch-out",
        metavar="FILE",
        help="instead of asking: write the open requests to FILE in the OpenAI batch layout (JSONL; for a provider's "
        "batch service or vllm run-batch); needs --model, no endpoint",
    )
    p.add_argument(
        "--batch-in",
        metavar="FILE",
        help="instead of asking: store the results file of a --batch-out run (same options), parsed as live "
        "answers; resumable; a malformed line or a result of another job refuses the file (exit 2)",
    )
    p.add_argument(
        "--batch-submit",
        action="store_true",
        help="instead of asking: run the job through the provider's batch API to its end (split to its limits, "
        "upload, poll, store, ask again what failed or expired); run again after a stop or kill to resume; "
        "see docs/llm.md",
    )
    p.add_argument("--provider", choices=("openai", "anthropic"), default="openai", help="--batch-submit: the API")
    p.add_argument("--poll", type=float, metavar="S", help="--batch-submit: first wait between polls (default 30 s)")
    p.add_argument(
        "--join",
        action="store_true",
        help="work on the shared job of --source and --task with other processes, on this host or others sharing "
        "the store: start it when none runs, join it when one does (same model and options), resume it when its "
        "last worker stopped; each worker claims blocks of items under a lease (see docs/deploy.md)",
    )
    p.add_argument("--block-size", type=int, help="--join: items per claimed block of a new job (default 200)")
    p.add_argument(
        "--lease",
        type=float,
        metavar="SECONDS",
        help="--join: how long a claimed block stays with a worker that stopped renewing it (default 2 x --timeout, "
        "at least 60 s)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_prejudge)

    p = sub.add_parser(
        "jobs",
        help="pre-judging jobs, newest first (a killed one is shown as interrupted)",
        description="The latest pre-judging jobs with their status (running, done, stopped, failed, "
        "interrupted), progress, process and last heartbeat. A 'running' job whose process "
        "is gone or whose heartbeat is older than its limit is marked interrupted first. A shared job (prejudge "
        "--join) lists its workers below it: host, pid, status, blocks claimed, items held, results stored, "
        "last heartbeat.",
    )
    add_db_argument(p)
    p.add_argument("--limit", type=int, default=20, help="how many jobs (default 20)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_jobs)

    pool = sub.add_parser(
        "pool", help="pooling commands (adaptive pooling with LLM grades)", description="Pooling commands."
    )
    commands = pool.add_subparsers(dest="pool_command", metavar="POOL_COMMAND")
    commands.required = True
    p = commands.add_parser(
        "adaptive",
        help="iKAT 2024 adaptive pooling: top ranks always, deeper ranks only when the LLM grades them",
        description="Ranks 1..--always of every stored run enter the pool; ranks below, down to --depth, only when "
        "--source graded the passage >= --threshold. Reports the pool size saved and, with --qrels, how "
        "many relevant passages (grade >= --relevant) the filter drops. Without stored runs it reports "
        "over the pairs both sources judged. --apply adds the adaptive pool to the store's pool.",
    )
    add_db_argument(p)
    p.add_argument("--source", required=True, help="the LLM source whose grades filter (e.g. llm:gpt-4)")
    p.add_argument("--threshold", type=int, default=2, help="minimum LLM grade below the top ranks (default 2)")
    p.add_argument("--always", type=int, default=5, help="ranks that always enter (default 5)")
    p.add_argument("--depth", type=int, default=30, help="deepest rank considered (default 30)")
    p.add_argument("--qrels", help="human source to count dropped relevant passages against (e.g. nist)")
    p.add_argument("--relevant", type=int, default=2, help="grade that counts as relevant (default 2)")
    p.add_argument("--apply", action="store_true", help="add the adaptive pool to the pool")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_pool_adaptive)

    p = sub.add_parser(
        "anchoring",
        help="blind-then-reveal audit: did assessors move toward the LLM's grade?",
        description="Over items an assessor first labelled in 'reveal' mode and then changed: how "
        "often the change moved toward the revealed LLM grade, away from it, or neither.",
    )
    add_db_argument(p)
    p.add_argument("--task", choices=("passage", "ptkb"), default="passage")
    p.add_argument("--assessor", help="one assessor (default all)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_anchoring)


def _progress_bar(total: int, enabled: bool):
    tqdm = lazylibs.tqdm().tqdm

    bar = tqdm(
        total=total, file=progress_output(), unit="item", disable=not enabled, mininterval=0.25, dynamic_ncols=True
    )

    def progress(done, _total, counts):
        bar.update(done - bar.n)
        bar.set_postfix(unparseable=counts["unparseable"], errors=counts["error"], refresh=False)

    return bar, progress


def _request(args):
    """The command's options as one :class:`~assess.services.prejudge.PrejudgeRequest`."""

    return prejudge.PrejudgeRequest(
        task=args.task,
        source=args.source,
        model=args.model,
        base_url=args.base_url,
        concurrency=args.concurrency,
        limit=args.limit,
        timeout=args.timeout,
        retries=args.retries,
        depth=args.depth,
        nugget_source=args.nugget_source,
        dedup=args.dedup,
        samples=args.samples,
        temperature=args.temperature,
        no_ptkb=args.no_ptkb,
        contradicts=args.contradicts,
        qrels=args.qrels,
        relevant=args.relevant,
        price_in=args.price_in,
        price_out=args.price_out,
        estimate_only=args.estimate,
        backend=args.backend,
        device=args.device,
        batch_size=args.batch_size,
        nli_threshold=args.nli_threshold,
        probe=args.probe,
        sample=args.sample,
        seed=args.seed,
        batch_out=args.batch_out,
        batch_in=args.batch_in,
        batch_submit=args.batch_submit,
        provider=args.provider,
        poll=args.poll,
        endpoints=tuple(getattr(args, "endpoints", ()) or ()),
        join=args.join,
        block_size=args.block_size,
        lease=args.lease,
    )


def cmd_prejudge(args) -> int:
    db = open_store(args)
    request = _request(args)
    if request.probe is not None:
        return _probe(db, request, args)
    if (request.batch_out or request.batch_in) and not request.estimate_only:
        return _batch(db, request, args)
    if request.batch_submit and not request.estimate_only:
        return run_submit(db, request, args, _progress_bar, _until_stopped, STOPPED)
    bar = None

    def start(estimate, todo):
        nonlocal bar
        print(jobs.describe_estimate(estimate), file=sys.stderr)
        if request.estimate_only:
            return None
        bar, progress = _progress_bar(todo, not args.no_progress)
        return progress

    result = _until_stopped(
        lambda: prejudge.prejudge(db, request, start=start),
        lambda: bar,
        "stopped: every answer received so far is stored; run the same command again to resume",
    )
    if result is STOPPED:
        return 130
    if request.estimate_only:
        if args.json:
            print(json.dumps(result.estimate))
        return 0
    s = result.summary
    if args.json:
        print(json.dumps(s))
        return 0
    skipped = f", {s['skipped']} {s['skipped_reason']} skipped" if s["skipped"] else ""
    print(
        f"{s['source']} {s['task']}: {jobs.describe_stored(s)}, {s['already']} already "
        f"judged{skipped}; {s['tokens_in']:,} + {s['tokens_out']:,} tokens in {s['seconds']:.1f} s"
    )
    if "worker" in s:
        print(
            f"job {s['job']} {s['status']}: {s['job_done']} of {s['job_planned']} stored (this was worker {s['worker']})"
        )
    if s["error"]:
        print(
            f"{s['error']} calls failed (last: {s['last_error']}); run the command again to retry them", file=sys.stderr
        )
    return 0


STOPPED = object()
"""What :func:`_until_stopped` returns when Ctrl-C stopped the job (the command exits 130)."""


def _until_stopped(call, current_bar, stopped: str):
    """``call()``, with the progress bar ``current_bar()`` (None until the job starts) closed on every way out.
    Ctrl-C once the job has started prints ``stopped`` and returns :data:`STOPPED` (what was stored stays);
    before it, the interrupt goes on as usual."""
    try:
        return call()
    except KeyboardInterrupt:
        if current_bar() is None:
            raise
        current_bar().close()
        print(stopped, file=sys.stderr)
        return STOPPED
    finally:
        if current_bar() is not None:
            current_bar().close()


def _batch(db, request, args) -> int:
    """``prejudge --batch-out FILE`` / ``--batch-in FILE``: requests out, or results in with a progress bar."""

    bar = None

    def start(estimate, todo):
        nonlocal bar
        if request.batch_out:
            print(jobs.describe_estimate(estimate), file=sys.stderr)
            return None
        bar, progress = _progress_bar(0, not args.no_progress)

        def counted(done, total, counts):
            bar.total = total
            progress(done, total, counts)

        return counted

    result = _until_stopped(
        lambda: prejudge.prejudge(db, request, start=start),
        lambda: bar,
        "stopped: every result stored so far stays; run the same command again to store the rest",
    )
    if result is STOPPED:
        return 130
    s = result.summary
    if args.json:
        print(json.dumps(s))
        return 0
    if request.batch_out:
        print(batch_files.describe_written(s))
        return 0
    print(batch_files.describe_read(s))
    for line in s["reports"]:
        print(line, file=sys.stderr)
    if s["reports_left_out"]:
        print(f"... and {s['reports_left_out']} more", file=sys.stderr)
    return 0


def _probe(db, request, args) -> int:
    """``prejudge --probe KIND``: the susceptibility probe, with a progress bar of calls."""
    tqdm = lazylibs.tqdm().tqdm

    bar = None

    def start():
        nonlocal bar
        bar = tqdm(file=progress_output(), unit="call", disable=args.no_progress, mininterval=0.25)

        def progress(done, total):
            bar.total = total
            bar.update(done - bar.n)

        return progress

    report = _until_stopped(
        lambda: prejudge.probe(db, request, start=start),
        lambda: bar,
        "stopped: every probe answer received so far is stored; run again to resume",
    )
    if report is STOPPED:
        return 130
    print(json.dumps(report) if args.json else probes.describe(report))
    return 0


def cmd_jobs(args) -> int:
    db = open_store(args)
    rows = jobs.job_listing(db, limit=args.limit)
    figures = endpoints.job_figures(db, [j["id"] for j in rows])  # jobs spread over several endpoints
    batches: dict[int, list] = {}  # jobs sent through a provider's batch API
    for b in provider_batches.batch_rows(db, [j["id"] for j in rows]):
        batches.setdefault(b["job"], []).append(b)
    if args.json:
        for j in rows:
            j.update({"endpoints": figures[j["id"]]} if j["id"] in figures else {})
            j.update({"batches": batches[j["id"]]} if j["id"] in batches else {})
        print(json.dumps(rows))
        return 0
    if not rows:
        print("no pre-judging job yet")
    for j in rows:
        print(
            f"job {j['id']} {j['status']}: {j['task']} for {j['source']} ({j['model']}), {j['done']} of "
            f"{j['planned']} stored, started {j['started_at']}, pid {j['pid']} on {j['host']}, last heartbeat "
            f"{j['heartbeat_at']}" + (f"; {j['message']}" if j["message"] else "")
        )
        for f in figures.get(j["id"], ()):
            print(f"  {endpoints.describe(f)}")
        if j.get("planning") is not None:  # a shared job whose planner is still queueing items
            print(f"  planning: {j['planning']:,} items read, {j['planned']:,} queued so far")
        for w in j.get("workers", ()):
            print("  " + jobs.describe_worker(w))
        for b in batches.get(j["id"], ()):
            print("  " + provider_batches.describe_batch(b))
    return 0


def cmd_pool_adaptive(args) -> int:
    r = pooling.adaptive_pool(
        open_store(args),
        args.source,
        args.threshold,
        args.always,
        args.depth,
        qrels=args.qrels,
        relevant=args.relevant,
        apply=args.apply,
    )
    print(json.dumps(r) if args.json else jobs.describe_adaptive(r))
    return 0


def cmd_anchoring(args) -> int:
    rows = audit.anchoring(open_store(args), args.task, assessor=args.assessor)
    if args.json:
        print(json.dumps(rows))
        return 0
    if not rows:
        print("no item was labelled in reveal mode and then changed")
    for r in rows:
        share = "n/a" if r["toward_share"] is None else f"{r['toward_share']:.0%}"
        print(
            f"{r['assessor']} vs {r['llm']}: {r['changed']} changed after reveal, {r['toward']} toward the LLM "
            f"({share}), {r['away']} away, {r['same_distance']} same distance, {r['landed_on_llm']} on its grade"
        )
    return 0
