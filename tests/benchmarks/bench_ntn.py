"""Benchmark: CONE-RAG NtN matching with the local NLI backend, and what it projects to at CONE-RAG's scale.

1. Pairs per second of (extracted nugget, gold nugget) pairs -- both short, NtN-like -- with a tiny random
   BERT built here (2 layers, hidden 32), on CPU: one pair at a time vs batched. The tiny model's
   arithmetic is negligible, so these figures measure the per-pair cost that does not shrink on a GPU:
   tokenisation, padding, tensor set-up and Python.
2. ``nuggets match --method ntn --backend nli`` end to end on the demo store (3 runs x 12 responses,
   nuggets extracted beforehand through the local stub): items and pairs per second including the
   store writes (each response's answers and labels in one transaction).
3. A projection -- not a measurement -- for CONE-RAG's scale, about 305,000 (extracted, gold) pairs, with
   the production model MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli on one GPU:

       time = pairs / (batched pairs/s of step 1)                         # overhead, as measured
            + pairs x FLOPs per pair / (GPU peak FP16 x utilisation)      # arithmetic, from FLOPs

   FLOPs per pair = 2 x non-embedding parameters (86 M for DeBERTa-v3-base; its 98 M embedding
   parameters are look-ups) x tokens per pair (measured on the benchmark pairs' lengths, stated), plus
   the attention term 4 x layers x tokens^2 x hidden. GPUs: an NVIDIA T4 (65 TFLOPS FP16 tensor peak)
   and an A100 (312 TFLOPS); utilisation 25 % for batches of short sequences (an assumption, stated in the
   output). DeBERTa's disentangled attention costs about twice BERT's attention term; it is counted twice.

Run: python tests/benchmarks/bench_ntn.py [--pairs 4000] [--threads 1]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CONE_RAG_PAIRS = 305_000
BASE_NON_EMBEDDING = 86e6  # DeBERTa-v3-base backbone parameters (12 layers, hidden 768)
BASE_LAYERS, BASE_HIDDEN = 12, 768
GPUS = {"T4 (65 TFLOPS FP16)": 65e12, "A100 (312 TFLOPS FP16)": 312e12}
UTILISATION = 0.25


def nugget(rng: random.Random) -> str:
    from tests.services.test_nli import WORDS  # the tiny model's vocabulary

    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18)))


def bench_pairs(pairs: int, threads: int) -> tuple[float, float]:
    import torch

    from assess.llm.clients import NliClient
    from tests.services.test_nli import build_tiny_nli

    torch.set_num_threads(threads)
    rng = random.Random(7)
    data = [(nugget(rng), nugget(rng)) for _ in range(pairs)]
    with tempfile.TemporaryDirectory() as tmp:
        nli = NliClient(str(build_tiny_nli(Path(tmp) / "tiny")), batch_size=32, local_files_only=True).load()
        nli.entailment(data[:64])  # warm up
        rates = {}
        for label, size, n in (("one pair at a time", 1, pairs // 4), ("batched (32)", 32, pairs)):
            start = time.perf_counter()
            nli.entailment(data[:n], batch_size=size)
            seconds = time.perf_counter() - start
            rates[size] = n / seconds
            print(f"NtN pairs, tiny NLI model, CPU, {threads} thread(s), {label:18} {n:6d} pairs in "
                  f"{seconds:6.2f} s = {n / seconds:8.1f} pairs/s")  # fmt: skip
        lengths = [len(nli._tokenizer(a, b)["input_ids"]) for a, b in data[:500]]
    tokens = sum(lengths) / len(lengths)
    print(f"batched / one at a time: {rates[32] / rates[1]:.1f}x; mean pair length {tokens:.1f} tokens")
    return rates[32], tokens


def bench_pipeline(threads: int) -> None:
    import torch

    from assess.llm.clients import NliClient, OpenAIClient
    from assess.services import jobs, matching
    from store import open_db
    from tests.services.test_nli import build_tiny_nli
    from tests.stub_llm import StubLLM

    torch.set_num_threads(threads)
    runs = ["demo-bm25", "demo-dense", "demo-rerank"]
    with tempfile.TemporaryDirectory() as tmp, StubLLM() as stub:
        from tests.helpers import run_cli

        path = Path(tmp) / "demo.db"
        run_cli("init", "--demo", db=path, check=True)
        db = open_db(path)
        extraction = matching.extraction_plan(db, runs, "llm:stub", "stub")
        jobs.run(db, extraction, OpenAIClient("stub", base_url=stub.base_url, api_key="k"))
        extracted = matching.response_nuggets(db, "llm:stub", runs)
        nli = NliClient(str(build_tiny_nli(Path(tmp) / "tiny")), batch_size=32, local_files_only=True).load()
        ntn = matching.ntn_plan(db, "gold", runs, "nli-ntn:tiny", "tiny", extracted, backend="nli")
        pairs = sum(len(ntn.texts[(it.turn_id, it.item_id)][1]) for it in ntn.plan.items)
        start = time.perf_counter()
        summary = matching.run_ntn_nli(db, ntn, nli)
        seconds = time.perf_counter() - start
        db.close()
    print(f"nuggets match ntn/nli end to end on the demo: {summary['asked']} items ({pairs} pairs) stored in "
          f"{seconds:.2f} s = {summary['asked'] / seconds:.0f} items/s, {pairs / seconds:.0f} pairs/s")  # fmt: skip


def project(batched_rate: float, tokens: float) -> None:
    for length in (tokens, 64.0):  # the benchmark's pairs, and pairs of two ~25-word nuggets
        _project(batched_rate, length)


def _project(batched_rate: float, tokens: float) -> None:
    flops = 2 * BASE_NON_EMBEDDING * tokens + 2 * 4 * BASE_LAYERS * tokens**2 * BASE_HIDDEN
    overhead = CONE_RAG_PAIRS / batched_rate
    print(
        f"\nPROJECTION (not measured) for CONE-RAG's ~{CONE_RAG_PAIRS:,} NtN pairs with DeBERTa-v3-base on one GPU: "
        f"{flops / 1e9:.1f} GFLOP per pair of {tokens:.0f} tokens, {CONE_RAG_PAIRS * flops / 1e15:.2f} PFLOP in all; "
        f"per-pair overhead as measured above: {overhead:.0f} s"
    )
    for name, peak in GPUS.items():
        compute = CONE_RAG_PAIRS * flops / (peak * UTILISATION)
        print(f"  {name} at {UTILISATION:.0%} utilisation: compute {compute:5.0f} s + overhead {overhead:.0f} s "
              f"= {(compute + overhead) / 60:.1f} min")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: steadier on a shared machine)")
    args = parser.parse_args()
    rate, tokens = bench_pairs(args.pairs, args.threads)
    bench_pipeline(args.threads)
    project(rate, tokens)


if __name__ == "__main__":
    main()
