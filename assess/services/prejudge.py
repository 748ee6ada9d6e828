"""One pre-judging request from a front end, checked, planned, estimated and run: the ``prejudge`` command.

:class:`PrejudgeRequest` holds every option of the command; :func:`prejudge` checks their combinations,
resolves the endpoint and model, plans and estimates the work, builds the client (chat or NLI) and runs
it (:mod:`assess.services.jobs`); :func:`probe` does the same for a susceptibility probe
(:mod:`assess.services.probes`). The caller only prints: it learns the estimate and the number of items
to ask through ``start`` before anything is asked, and draws progress through the callback it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from assess.errors import AssessError
from assess.llm import batch_api, clients
from assess.llm.guard import check_destination
from assess.llm.probes import parse_kinds
from assess.llm.prompts import CONTRADICTS, NO_PTKB
from assess.services import batch_files, jobs, probes, provider_batches, shared_jobs
from assess.services.endpoints import build_pool
from assess.settings import anthropic_settings, llm_settings


@dataclass(frozen=True)
class PrejudgeRequest:
    """The options of one ``prejudge`` run (the command's flags, by the same names)."""

    task: str
    source: str | None = None
    model: str | None = None
    base_url: str | None = None
    concurrency: int | None = None
    limit: int | None = None
    timeout: float = 60.0
    retries: int = 4
    depth: int | None = None
    nugget_source: str | None = None
    dedup: bool = False
    samples: int = 1
    temperature: float | None = None
    no_ptkb: bool = False
    contradicts: bool = False  # citation: the prompt variant that may answer "contradicts" (-2)
    qrels: str | None = None
    relevant: int = 2
    price_in: float | None = None
    price_out: float | None = None
    estimate_only: bool = False
    backend: str = "chat"
    device: str | None = None
    batch_size: int = 32
    nli_threshold: float = 0.5
    probe: str | None = None
    sample: int | None = None
    seed: int = 0
    batch_out: str | None = None  # write the open requests to this batch file instead of asking
    batch_in: str | None = None  # store the results of this batch file instead of asking
    batch_submit: bool = False  # run the job through the provider's batch API to its end
    provider: str = "openai"  # --batch-submit: openai or anthropic
    poll: float | None = None  # --batch-submit: the first wait between polls, seconds
    endpoints: tuple[str, ...] = ()  # several endpoints, URL[,key=ENV_VAR][,concurrency=N][,pause=S] each
    join: bool = False  # work on the shared job of the source and task with other processes
    block_size: int | None = None  # --join: items per claimed block
    lease: float | None = None  # --join: seconds a claimed block is held without a heartbeat


@dataclass(frozen=True)
class PrejudgeResult:
    """The estimate of a run and, unless only the estimate was asked for, the run's summary."""

    estimate: dict
    summary: dict | None = None


def _concurrency(request: PrejudgeRequest) -> int:
    concurrency = request.concurrency if request.concurrency is not None else clients.DEFAULT_CONCURRENCY
    if concurrency < 1:
        raise AssessError(f"--concurrency is at least 1, not {concurrency}")
    return concurrency


def _variant(request: PrejudgeRequest) -> str | None:
    if request.sample is not None:
        raise AssessError("--sample N is the size of a --probe; K answers per item is --samples K")
    if request.contradicts:
        if request.no_ptkb or request.task != "citation":
            raise AssessError(f"--contradicts is a variant of the citation prompt, not of the {request.task} task")

        return CONTRADICTS
    if not request.no_ptkb:
        return None
    if request.task != "passage":
        raise AssessError(f"--no-ptkb is a variant of the passage prompt, not of the {request.task} task")

    return NO_PTKB


def _model(request: PrejudgeRequest) -> tuple[str, dict | None]:
    """The model to ask and the endpoint settings (none for NLI, none for an estimate: it asks nothing)."""
    if request.backend == "nli":
        return request.model or clients.DEFAULT_NLI_MODEL, None
    if request.estimate_only or request.batch_out or request.batch_in or request.batch_submit or request.endpoints:
        model = request.model or llm_settings()["model"]
        if not model:
            raise AssessError("no LLM model given: pass --model MODEL (or set ASSESS_LLM_MODEL)")
        return model, None
    cfg = clients.endpoint_settings(base_url=request.base_url, model=request.model)
    return cfg["model"], cfg


def _check_batch(request: PrejudgeRequest) -> None:
    """Refuse the options a batch file run cannot honour."""
    if not request.batch_submit and (request.poll is not None or request.provider != "openai"):
        raise AssessError("--provider and --poll are options of --batch-submit")
    if not (request.batch_out or request.batch_in or request.batch_submit):
        return
    if sum(map(bool, (request.batch_out, request.batch_in, request.batch_submit))) > 1:
        raise AssessError("--batch-out, --batch-in and --batch-submit are three ways to batch: give one of them")
    if request.batch_submit and (request.base_url or request.join):
        raise AssessError(
            "--batch-submit sends to the configured batch API (ASSESS_LLM_BASE_URL, else OpenAI; "
            "ASSESS_ANTHROPIC_BASE_URL, else Anthropic) and runs the shared job itself: no --base-url or --join"
        )
    if request.backend != "chat":
        raise AssessError("batch files hold chat requests: no --backend nli with --batch-out or --batch-in")
    if request.batch_in and request.limit is not None:
        raise AssessError("--limit chooses what --batch-out writes; --batch-in stores every result of its file")
    if request.endpoints:
        raise AssessError("--endpoint is for calls made now: not with --batch-out or --batch-in")


def _check_endpoints(request: PrejudgeRequest) -> None:
    """Refuse the options a run over several endpoints cannot take."""
    if not request.endpoints:
        return
    if request.base_url:
        raise AssessError("give the endpoints with --endpoint only: not --base-url as well")
    if request.backend != "chat":
        raise AssessError("--endpoint names chat endpoints: not with --backend nli")


def prejudge(
    db, request: PrejudgeRequest, *, start: Callable[[dict, int], jobs.Progress | None] | None = None
) -> PrejudgeResult:
    """Check, plan, estimate and (unless ``estimate_only``) run one pre-judging request.

    ``start(estimate, todo)`` is called once the estimate is known, before any call; what it returns is the
    run's progress callback. Raises :class:`AssessError` on a refused option combination or a live job of the
    same source and task; a ``KeyboardInterrupt`` during the run leaves every answer received so far stored."""
    if request.probe is not None:
        raise AssessError("a --probe request is run by assess.services.prejudge.probe")
    _check_batch(request)
    _check_endpoints(request)
    concurrency = _concurrency(request)
    variant = _variant(request)
    _check_join(request)
    model, cfg = _model(request)
    source = request.source or jobs.default_source(request.task, model, variant)
    if request.join and not request.estimate_only:
        return _join(db, request, model, cfg, source, variant, concurrency, start)
    if request.batch_submit and not request.estimate_only:
        return _submit(db, request, model, source, variant, start)
    if not request.estimate_only:  # one live job per source and task: a second would ask about every item again
        jobs.check_not_running(db, source, request.task)
    plan = jobs.plan(
        db,
        request.task,
        source,
        model,
        limit=request.limit,
        depth=request.depth,
        nugget_source=request.nugget_source,
        qrels=request.qrels,
        relevant=request.relevant,
        dedup=request.dedup,
        backend=request.backend,
        nli_threshold=request.nli_threshold,
        samples=request.samples,
        temperature=request.temperature,
        variant=variant,
    )
    pool = None
    if request.endpoints and not request.estimate_only:
        pool = build_pool(
            model,
            request.endpoints,
            concurrency=concurrency,
            timeout=request.timeout,
            retries=request.retries,
            temperature=plan.temperature,
            default_key=llm_settings()["api_key"],
        )
        concurrency = pool.concurrency
    estimate = jobs.estimate(
        plan,
        concurrency=concurrency,
        latency_s=jobs.measured_latency_s(db, model),
        price_in=request.price_in,
        price_out=request.price_out,
    )
    progress = start(estimate, plan.todo) if start is not None else None
    if request.estimate_only:
        return PrejudgeResult(estimate)
    if request.batch_out or request.batch_in:
        if request.batch_out:
            return PrejudgeResult(estimate, batch_files.write_requests(db, plan, request.batch_out))
        return PrejudgeResult(estimate, batch_files.read_results(db, plan, request.batch_in, progress=progress))
    if request.backend == "nli":
        nli = clients.NliClient(model, device=request.device, batch_size=request.batch_size)
        summary = jobs.run_nli(db, plan, nli, threshold=request.nli_threshold, progress=progress)
    elif pool is not None:
        summary = jobs.run(db, plan, pool, concurrency=concurrency, progress=progress, base_url=pool.base_url)
    else:
        client = clients.OpenAIClient(
            model,
            base_url=cfg["base_url"],
            api_key=cfg["api_key"],
            timeout=request.timeout,
            max_retries=request.retries,
            temperature=plan.temperature,
        )
        summary = jobs.run(db, plan, client, concurrency=concurrency, progress=progress, base_url=cfg["base_url"])
    return PrejudgeResult(estimate, summary)


def _check_join(request: PrejudgeRequest) -> None:
    if not request.join:
        if request.block_size is not None or request.lease is not None:
            raise AssessError("--block-size and --lease are options of a shared job: add --join")
        return
    if request.backend != "chat":
        raise AssessError("--join shares a job of a chat model; the NLI backend runs in one process")
    if request.batch_out or request.batch_in:
        raise AssessError("--join shares a job of live calls: not with --batch-out or --batch-in")


def _join(db, request: PrejudgeRequest, model: str, cfg: dict, source: str, variant, concurrency: int, start):
    """``prejudge --join``: this process works on the shared job of the source and task (starting, joining or
    resuming it) until no block is left (:func:`assess.services.shared_jobs.run_shared`)."""

    temperature = jobs.checked_temperature(request.temperature)
    if request.endpoints:  # a pool of endpoints stands in for one
        client = build_pool(
            model,
            request.endpoints,
            concurrency=concurrency,
            timeout=request.timeout,
            retries=request.retries,
            temperature=temperature,
            default_key=llm_settings()["api_key"],
        )
        concurrency, base_url = client.concurrency, client.base_url
    else:
        client = clients.OpenAIClient(
            model,
            base_url=cfg["base_url"],
            api_key=cfg["api_key"],
            timeout=request.timeout,
            max_retries=request.retries,
            temperature=temperature,
        )
        base_url = cfg["base_url"]
    scope = _scope(request)
    summary = shared_jobs.run_shared(
        db,
        request.task,
        source,
        model,
        client,
        scope=scope,
        limit=request.limit,
        samples=request.samples,
        temperature=request.temperature,
        variant=variant,
        concurrency=concurrency,
        block_size=shared_jobs.DEFAULT_BLOCK_SIZE if request.block_size is None else request.block_size,
        lease_s=request.lease,
        base_url=base_url,
        start=start,
        latency_s=jobs.measured_latency_s(db, model),
    )
    return PrejudgeResult({}, summary)


def _scope(request: PrejudgeRequest) -> shared_jobs.Scope:
    """The items a shared job asks about, as the request gives them."""
    return shared_jobs.Scope(
        depth=request.depth,
        nugget_source=request.nugget_source,
        qrels=request.qrels,
        relevant=request.relevant,
        dedup=request.dedup,
    )


def _submit(db, request: PrejudgeRequest, model: str, source: str, variant, start):
    """``prejudge --batch-submit``: the job through the provider's batch API to its end
    (:func:`assess.services.provider_batches.run_batches`)."""
    if request.provider not in batch_api.PROVIDERS:
        raise AssessError(f"--provider is one of {', '.join(batch_api.PROVIDERS)}, not {request.provider!r}")
    env = llm_settings() if request.provider == "openai" else anthropic_settings()
    if not env["api_key"] and not env["base_url"]:
        needed = "ASSESS_LLM_API_KEY (or OPENAI_API_KEY)" if request.provider == "openai" else "ANTHROPIC_API_KEY"
        raise AssessError(f"--batch-submit --provider {request.provider} needs its key: set {needed}")
    check_destination(env["base_url"])
    api = batch_api.connect(request.provider, base_url=env["base_url"], api_key=env["api_key"])
    settings = provider_batches.Settings(
        request.provider, poll_s=provider_batches.DEFAULT_POLL_S if request.poll is None else request.poll
    )
    scope = _scope(request)
    try:
        summary = provider_batches.run_batches(
            db,
            request.task,
            source,
            model,
            api,
            settings,
            scope=scope,
            limit=request.limit,
            samples=request.samples,
            temperature=request.temperature,
            variant=variant,
            base_url=env["base_url"]
            or (batch_api.OPENAI_URL if request.provider == "openai" else batch_api.ANTHROPIC_URL),
            start=start,
        )
    finally:
        api.close()
    return PrejudgeResult({}, summary)


def probe(
    db, request: PrejudgeRequest, *, start: Callable[[], Callable[[int, int], None]] | None = None
) -> dict[str, Any]:
    """The susceptibility probe of ``request.probe`` (:func:`assess.services.probes.probe`) against the judge of
    ``request.source``. ``start()`` is called once the client is built, before any call; it returns the
    progress callback ``(done, total)``."""

    concurrency = _concurrency(request)
    if request.endpoints or request.batch_out or request.batch_in:
        raise AssessError("--probe asks one endpoint (--base-url): no --endpoint, --batch-out or --batch-in")
    if request.samples != 1 or request.temperature is not None or request.no_ptkb or request.contradicts:
        raise AssessError("--probe re-judges with the passage prompt once: no --samples, --temperature or --no-ptkb")
    if request.task != "passage" or request.backend != "chat":
        raise AssessError("--probe re-judges passages with a chat model: use --task passage (and no --backend nli)")
    try:
        kinds = parse_kinds(request.probe)
    except ValueError as exc:
        raise AssessError(str(exc)) from None
    if not request.source:
        raise AssessError("--probe needs --source llm:NAME, the LLM source whose judge is probed")
    model = probes.probe_model(db, request.source, request.model)
    cfg = clients.endpoint_settings(base_url=request.base_url, model=model)
    client = clients.OpenAIClient(
        model, base_url=cfg["base_url"], api_key=cfg["api_key"], timeout=request.timeout, max_retries=request.retries
    )
    progress = start() if start is not None else None
    return probes.probe(
        db,
        request.source,
        client,
        kinds=kinds,
        sample=probes.DEFAULT_SAMPLE if request.sample is None else request.sample,
        seed=request.seed,
        concurrency=concurrency,
        progress=progress,
    )
