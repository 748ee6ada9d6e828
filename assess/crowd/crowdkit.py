"""Crowd labels aggregated by the crowd-kit library (Toloka; Dawid-Skene, MACE, GLAD) with its agreement figures.

The only module that imports crowd-kit, and only when a method runs: it loads pandas, scikit-learn and
nltk, which `python -m assess --help` and the default majority vote never need. docs/crowd.md#aggregation.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable
from typing import NamedTuple

from assess import lazylibs
from assess.errors import AssessError

# our majority vote (assess.crowd.rules.majority_vote, with the study's tie rule) is the default and
# needs no library; the others are crowd-kit's classes under these names
METHODS = ("majority", "dawid-skene", "mace", "glad")
SEED = 0  # MACE's random restarts: seeded so a rerun writes the same labels


class Given(NamedTuple):
    item: int
    worker: str
    value: int
    group: str  # the criterion (a response study) or "match": each group is fitted on its own


def _model(method: str):
    aggregation = lazylibs.crowdkit_aggregation()
    MACE, DawidSkene, GLAD, MajorityVote = (
        aggregation.MACE,
        aggregation.DawidSkene,
        aggregation.GLAD,
        aggregation.MajorityVote,
    )

    if method == "dawid-skene":
        return DawidSkene(n_iter=100, tol=1e-5)
    if method == "mace":
        return MACE(random_state=SEED)
    if method == "glad":  # EM from fixed starting points: deterministic, nothing to seed
        return GLAD(n_iter=100, tol=1e-5)
    if method == "crowdkit-majority":  # for the peer check of our own majority vote only
        return MajorityVote()
    raise AssessError(f"--method is one of {', '.join(METHODS)}, not {method!r}")


def aggregate(given: Iterable[Given], method: str) -> dict:
    """Fit crowd-kit's ``method`` on each group's answers.

    Returns ``labels`` {item: label} (crowd-kit's ``fit_predict``), ``workers`` {worker: share of their
    answers equal to the aggregated label} (``crowdkit.metrics.workers.accuracy_on_aggregates``, over all
    groups) and ``consistency`` {group: crowd-kit's ``consistency``: the mean posterior probability of the
    majority label given the workers' majority-vote skills}."""
    pd = lazylibs.pandas()
    consistency = lazylibs.crowdkit_metrics().data.consistency
    accuracy_on_aggregates = lazylibs.crowdkit_metrics().workers.accuracy_on_aggregates

    groups: dict[str, list[Given]] = defaultdict(list)
    for g in given:
        groups[g.group].append(g)
    labels: dict[int, int] = {}
    frames, fitted, agreement = [], [], {}
    for name, rows in sorted(groups.items()):
        frame = pd.DataFrame({"task": [r.item for r in rows], "worker": [r.worker for r in rows]})
        frame["label"] = [r.value for r in rows]
        with warnings.catch_warnings():  # crowd-kit 1.4.2 calls pandas' deprecated inplace=: not the user's concern
            warnings.filterwarnings("ignore", module="crowdkit")
            predicted = _model(method).fit_predict(frame)
            agreement[name] = float(consistency(frame))
        labels.update({int(k): int(v) for k, v in predicted.items()})
        frames.append(frame)
        fitted.append(predicted)
    workers: dict[str, float] = {}
    if frames:
        answers, aggregates = pd.concat(frames, ignore_index=True), pd.concat(fitted)
        per_worker = accuracy_on_aggregates(answers, aggregator=None, aggregates=aggregates, by="worker")
        workers = {str(w): float(a) for w, a in sorted(per_worker.items())}
    return {"labels": dict(sorted(labels.items())), "workers": workers, "consistency": agreement}
