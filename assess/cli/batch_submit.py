"""CLI: ``prejudge --batch-submit`` (registered by :mod:`assess.cli.judge`): the job through a provider's batch API."""

from __future__ import annotations

import json
import sys

from assess.services import prejudge, provider_batches


def run_submit(db, request, args, progress_bar, until_stopped, stopped) -> int:
    """Run (or resume) the batch job with a progress bar of stored results; its summary, or JSON with ``--json``."""
    bar = None

    def start(job, role):
        nonlocal bar
        print(
            f"job {job['id']} ({role}): {job['planned']:,} answers queued, {job['done']:,} stored so far; "
            f"sending them to the {request.provider} batch API",
            file=sys.stderr,
        )
        bar, progress = progress_bar(job["planned"], not args.no_progress)
        bar.update(job["done"])
        offset = job["done"]

        def counted(done, total, counts):
            progress(offset + done, total, counts)

        return counted

    result = until_stopped(
        lambda: prejudge.prejudge(db, request, start=start),
        lambda: bar,
        "stopped: every result stored so far stays, and the batches sent are recorded; run the same command again "
        "to go on polling them",
    )
    if result is stopped:
        return 130
    s = result.summary
    if args.json:
        print(json.dumps(s))
        return 0
    print(provider_batches.describe(s))
    for b in s["batches"]:
        print("  " + provider_batches.describe_batch(b))
    return 0
