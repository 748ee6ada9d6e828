"""Side-by-side battles: Bradley-Terry strengths with bootstrap intervals, win rates, Elo, agreement between
battle sources and swapped-order consistency (an LLM judge's position bias, a person's re-shows).

A battle is two runs' answers to one topic shown side by side, ``run_a`` on the left, and a verdict:
``a`` (A better), ``b`` (B better), ``tie`` or ``both_bad``. Formulas and choices: docs/measures.md
("Battles"). Pure functions over plain values; every degenerate case has a stated value.

Bradley-Terry (Bradley & Terry 1952; Hunter 2004, eq. 1): ``P(i beats j) = exp(t_i) / (exp(t_i) + exp(t_j))``,
``t`` fitted by maximum likelihood over the win matrix ``W`` (``W[i, j]``: i's wins over j, a tie counting half
a win for each side; ``both_bad`` left out), centred to mean 0. The fit is Newton's method on the concave
log-likelihood (its Hessian a weighted graph Laplacian, made invertible by the centring constraint), all
bootstrap replicates at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from assess.errors import AssessError
from assess.measures.agreement import cohen_kappa

WINNERS = ("a", "b", "tie", "both_bad")
"""A battle's verdict: A (the left run) better, B (the right run) better, a tie, both answers bad."""

RIDGE = 0.01
"""The L2 penalty (``RIDGE * sum(t**2) / 2``) a fit adds only where the maximum-likelihood estimate does not exist
(a run or group of runs never loses, or never wins, against the rest): the strengths then stay finite."""

ELO_K, ELO_START, ELO_SCALE = 4.0, 1000.0, 400.0
"""Elo as LMSYS's Chatbot Arena computes it online (K = 4, start 1000, 400 points = 10:1 odds), ties half a win."""

DEFAULT_REPLICATES, DEFAULT_LEVEL, DEFAULT_SEED = 1000, 0.95, 0


class Battle(NamedTuple):
    """One verdict: ``run_a`` shown on the left, ``run_b`` on the right; ``reshow``: shown again, in swapped order."""

    topic_id: str
    run_a: str
    run_b: str
    winner: str
    reshow: bool = False


def model_text(replicates: int, level: float, seed: int) -> str:
    """The one sentence that says what the strengths are (``battles rank --json``'s ``model``)."""
    return (
        "Bradley-Terry maximum-likelihood log-strengths, centred to mean 0; a tie counts half a win for each side; "
        f"both_bad battles are left out; {level:.0%} percentile bootstrap intervals from {replicates} replicates "
        f"(battles resampled with replacement, seed {seed}); where the MLE does not exist (a run or group of runs "
        f"never loses or never wins) a ridge penalty of {RIDGE} keeps the strengths finite"
    )


# ------------------------------------------------------------------------------------------- the win matrix


def pair_counts(
    left: np.ndarray, right: np.ndarray, winner: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Aggregate battles given as index arrays (``winner`` codes 0 a, 1 b, 2 tie; no both_bad) into per-pair
    counts: ``(pairs (P, 2) with i < j, counts (P, 3): i's wins, j's wins, ties)``, and each run's battle count."""
    left, right, winner = (np.asarray(x, dtype=np.int64) for x in (left, right, winner))
    if np.any(left == right):
        raise AssessError("a battle needs two different runs")
    lo, hi = np.minimum(left, right), np.maximum(left, right)
    # outcome from the lower index's side: 0 lower wins, 1 higher wins, 2 tie
    lower_won = np.where(left == lo, winner == 0, winner == 1)
    side = np.where(winner == 2, 2, np.where(lower_won, 0, 1))
    key = (lo * n + hi) * 3 + side
    counts = np.bincount(key, minlength=n * n * 3).reshape(n * n, 3)
    used = np.flatnonzero(counts.sum(axis=1))
    pairs = np.stack([used // n, used % n], axis=1)
    played = np.bincount(left, minlength=n) + np.bincount(right, minlength=n)
    return pairs, counts[used].astype(np.float64), played


def win_matrix(pairs: np.ndarray, counts: np.ndarray, n: int) -> np.ndarray:
    """``W[i, j]``: i's wins over j plus half their ties (counts ``(..., P, 3)`` give a batch of matrices)."""
    shape = counts.shape[:-2]
    w = np.zeros((*shape, n, n))
    i, j = pairs[:, 0], pairs[:, 1]
    w[..., i, j] = counts[..., 0] + 0.5 * counts[..., 2]
    w[..., j, i] = counts[..., 1] + 0.5 * counts[..., 2]
    return w


def mle_exists(w: np.ndarray) -> bool:
    """Whether the Bradley-Terry MLE of win matrix ``w`` exists (Hunter 2004, Assumption 1 / Ford 1957): for every
    split of the runs into two groups, someone in each group beat someone in the other, i.e. the graph with an
    edge i -> j whenever i beat j (a tie counting both ways) is strongly connected."""
    w = np.asarray(w)
    return w.shape[0] <= 1 or bool(_strongly_connected(w[None] > 0)[0])


def _strongly_connected(edges: np.ndarray) -> np.ndarray:
    """For a batch of directed graphs ``(R, n, n)`` (``edges[r, i, j]``: an edge i -> j), whether each is strongly
    connected: run 0 reaches every run and every run reaches run 0 (a search along the edges, then against them,
    all graphs of the batch a step at a time)."""
    r, n, _ = edges.shape
    out = np.ones(r, dtype=bool)
    for step in (edges, np.swapaxes(edges, 1, 2)):
        step = step.astype(np.float64)
        reach = np.zeros((r, 1, n))
        reach[:, 0, 0] = 1.0
        for _ in range(n):
            grown = np.maximum(reach, (reach @ step > 0).astype(np.float64))
            if np.array_equal(grown, reach):
                break
            reach = grown
        out &= reach[:, 0, :].all(axis=1)
    return out


def _newton(w: np.ndarray, alpha: np.ndarray, theta: np.ndarray, tol: float, max_iter: int) -> np.ndarray:
    """Maximise ``sum W[i,j] log sigma(t_i - t_j) - alpha/2 |t|^2`` over centred ``t`` for a batch ``(R, n, n)``."""
    r, n, _ = w.shape
    total = w + np.swapaxes(w, 1, 2)  # battles between i and j
    wins = w.sum(axis=2)
    ones = np.full((n, n), 1.0 / n)  # adds the direction the likelihood leaves free (a shift of every t)
    eye = np.eye(n)
    active = np.ones(r, dtype=bool)
    for _ in range(max_iter):
        t = theta[active]
        p = 1.0 / (1.0 + np.exp(t[:, None, :] - t[:, :, None]))  # p[i, j] = sigma(t_i - t_j)
        a = alpha[active]
        grad = wins[active] - (total[active] * p).sum(axis=2) - a[:, None] * t
        weight = total[active] * p * (1.0 - p)
        hessian = -weight
        idx = np.arange(n)
        hessian[:, idx, idx] = weight.sum(axis=2)
        hessian = hessian + ones + a[:, None, None] * eye
        step = np.linalg.solve(hessian, grad[..., None])[..., 0]
        big = np.abs(step).max(axis=1, keepdims=True)
        step = step * np.minimum(1.0, 5.0 / np.maximum(big, 1e-300))  # at most 5 per step: no overshoot far out
        t = t + step
        t = t - t.mean(axis=1, keepdims=True)
        theta[active] = t
        still = np.abs(step).max(axis=1) > tol
        active[np.flatnonzero(active)[~still]] = False
        if not active.any():
            break
    return theta


def bradley_terry(w: np.ndarray, *, alpha: float | None = None, tol: float = 1e-10, max_iter: int = 200) -> np.ndarray:
    """Centred Bradley-Terry log-strengths of the runs of win matrix ``w`` (maximum likelihood; ``alpha`` None: 0
    where the MLE exists, else :data:`RIDGE`). Degenerate: one run -> ``[0.0]``; no runs -> ``[]``."""
    w = np.asarray(w, dtype=np.float64)
    n = w.shape[0]
    if n == 0:
        return np.zeros(0)
    if alpha is None:
        alpha = 0.0 if mle_exists(w) else RIDGE
    theta = _newton(w[None], np.array([alpha]), np.zeros((1, n)), tol, max_iter)
    return theta[0]


# ------------------------------------------------------------------------------------------- the ranking


class RunStrength(NamedTuple):
    strength: float
    low: float
    high: float
    win_rate: float
    battles: int


def rank_indices(
    left: np.ndarray,
    right: np.ndarray,
    winner: np.ndarray,
    n: int,
    *,
    replicates: int = DEFAULT_REPLICATES,
    level: float = DEFAULT_LEVEL,
    seed: int = DEFAULT_SEED,
    chunk: int = 100,
) -> dict[str, np.ndarray]:
    """Strengths, percentile bootstrap intervals, win rates and battle counts of runs ``0..n-1`` from battles as
    index arrays (``winner``: 0 a, 1 b, 2 tie; both_bad already left out).

    The battles are aggregated per pair first; a bootstrap replicate resamples all N battles with replacement,
    which is a multinomial draw of N over the (pair, outcome) cells with the observed shares, and is fitted from
    its win matrix warm-started at the point estimate. Every run here must have at least one battle."""
    if not 0 < level < 1:
        raise AssessError(f"the interval level must lie between 0 and 1, not {level}")
    if replicates < 0:
        raise AssessError(f"the number of bootstrap replicates must be >= 0, not {replicates}")
    pairs, counts, played = pair_counts(left, right, winner, n)
    w = win_matrix(pairs, counts, n)
    theta = bradley_terry(w)
    wins = w.sum(axis=1)
    win_rate = np.divide(wins, played, out=np.zeros(n), where=played > 0)
    low, high = theta.copy(), theta.copy()
    if replicates and len(pairs):
        from threadpoolctl import threadpool_limits

        rng = np.random.default_rng(seed)
        total = int(counts.sum())
        per_pair = counts.sum(axis=1)
        exists = mle_exists(w)
        support = w > 0
        samples = np.empty((replicates, n))
        with threadpool_limits(1):  # many small solves: BLAS threads only contend with each other
            for start in range(0, replicates, chunk):
                size = min(chunk, replicates - start)
                drawn = _resample(rng, total, per_pair, counts, size)
                batch = win_matrix(pairs, drawn, n)
                alpha = np.full(size, RIDGE)
                if exists:  # a replicate keeping every cell the data has keeps its MLE; check the others
                    kept = np.all(batch[:, support] > 0, axis=1)
                    kept[~kept] = _strongly_connected(batch[~kept] > 0)
                    alpha[kept] = 0.0
                start_at = np.repeat(theta[None], size, axis=0)
                samples[start : start + size] = _newton(batch, alpha, start_at, 1e-7, 100)
        tail = (1 - level) / 2 * 100
        low, high = np.percentile(samples, [tail, 100 - tail], axis=0)
    return {"strength": theta, "low": low, "high": high, "win_rate": win_rate, "battles": played}


def _resample(rng: np.random.Generator, total: int, per_pair: np.ndarray, counts: np.ndarray, size: int) -> np.ndarray:
    """``size`` bootstrap copies of the per-pair outcome counts ``(P, 3)``: ``total`` battles drawn with replacement
    is a multinomial draw over the (pair, outcome) cells, drawn here in two exact steps (the pairs' totals from a
    multinomial, then each pair's split by binomials conditioned on it: faster than one draw over 3P cells)."""
    n_pair = rng.multinomial(total, per_pair / total, size=size)
    first = rng.binomial(n_pair, counts[:, 0] / per_pair)
    rest = n_pair - first
    if not counts[:, 2].any():  # no ties: the rest are the other run's wins
        return np.stack([first, rest, np.zeros_like(rest)], axis=-1).astype(np.float64)
    rest_share = counts[:, 1] + counts[:, 2]
    second = rng.binomial(rest, np.divide(counts[:, 1], rest_share, out=np.zeros(len(per_pair)), where=rest_share > 0))
    return np.stack([first, second, rest - second], axis=-1).astype(np.float64)


def _counted(battles: Iterable[Battle]) -> list[Battle]:
    out = []
    for b in battles:
        if b.winner not in WINNERS:
            raise AssessError(f"a battle's winner is one of {', '.join(WINNERS)}, not {b.winner!r}")
        if b.run_a == b.run_b:
            raise AssessError(f"a battle needs two different runs, not {b.run_a!r} twice")
        if b.winner != "both_bad":
            out.append(b)
    return out


def rank(
    battles: Iterable[Battle],
    *,
    replicates: int = DEFAULT_REPLICATES,
    level: float = DEFAULT_LEVEL,
    seed: int = DEFAULT_SEED,
) -> dict[str, RunStrength]:
    """Each run's Bradley-Terry strength (centred log-strength), its bootstrap interval, win rate (wins plus half
    the ties, over its battles) and number of battles, both_bad battles left out; runs in name order. A run in
    no counted battle is absent; no battles -> ``{}``."""
    counted = _counted(battles)
    runs = sorted({r for b in counted for r in (b.run_a, b.run_b)})
    if not runs:
        return {}
    index = {r: i for i, r in enumerate(runs)}
    code = {"a": 0, "b": 1, "tie": 2}
    left = np.fromiter((index[b.run_a] for b in counted), np.int64, len(counted))
    right = np.fromiter((index[b.run_b] for b in counted), np.int64, len(counted))
    winner = np.fromiter((code[b.winner] for b in counted), np.int64, len(counted))
    got = rank_indices(left, right, winner, len(runs), replicates=replicates, level=level, seed=seed)
    return {
        run: RunStrength(
            float(got["strength"][i]),
            float(got["low"][i]),
            float(got["high"][i]),
            float(got["win_rate"][i]),
            int(got["battles"][i]),
        )
        for i, run in enumerate(runs)
    }


def elo(battles: Sequence[Battle], *, k: float = ELO_K, start: float = ELO_START, scale: float = ELO_SCALE) -> dict:
    """Online Elo ratings after the battles in the order given (the order matters: the order they were judged in),
    a tie half a win, both_bad left out: ``r_a += k * (s_a - 1 / (1 + 10 ** ((r_b - r_a) / scale)))`` and the
    opposite for b. Runs in name order; no battles -> ``{}``."""
    ratings: dict[str, float] = {}
    score = {"a": 1.0, "b": 0.0, "tie": 0.5}
    for b in _counted(battles):
        ra, rb = ratings.get(b.run_a, start), ratings.get(b.run_b, start)
        expected = 1.0 / (1.0 + 10 ** ((rb - ra) / scale))
        change = k * (score[b.winner] - expected)
        ratings[b.run_a], ratings[b.run_b] = ra + change, rb - change
    return {run: ratings[run] for run in sorted(ratings)}


# ------------------------------------------------------------------------------------------- consistency


def _verdict(b: Battle) -> tuple[tuple[str, str, str], str]:
    """A battle's (topic, lower run, higher run) and its verdict by run, not by side: the winning run's name,
    ``tie`` or ``both_bad``."""
    x, y = sorted((b.run_a, b.run_b))
    verdict = b.run_a if b.winner == "a" else b.run_b if b.winner == "b" else b.winner
    return (b.topic_id, x, y), verdict


def swapped_order(battles: Iterable[Battle]) -> dict[str, float | int | None]:
    """One source's verdicts on pairs it judged in both orders (a re-show, or an LLM asked both ways): ``pairs``
    judged both ways, ``flips`` whose verdict by run differs between the orders, ``flip_share`` (the position
    bias of an LLM judge; None without pairs), ``consistent_share`` = 1 - flip_share, and ``left_share``: of all
    decisive verdicts (a or b) given, the share that chose the left answer (None without any)."""
    shown: dict[tuple, dict[tuple[str, str], str]] = {}
    decisive = left = 0
    for b in battles:
        key, verdict = _verdict(b)
        shown.setdefault(key, {}).setdefault((b.run_a, b.run_b), verdict)
        if b.winner in ("a", "b"):
            decisive += 1
            left += b.winner == "a"
    both = [orders for orders in shown.values() if len(orders) == 2]
    flips = sum(len(set(orders.values())) > 1 for orders in both)
    share = flips / len(both) if both else None
    return {
        "pairs": len(both),
        "flips": flips,
        "flip_share": share,
        "consistent_share": (len(both) - flips) / len(both) if both else None,
        "left_share": left / decisive if decisive else None,
    }


_VERDICT_CODES = ("x", "y", "tie", "both_bad")


def _first_verdicts(battles: Iterable[Battle]) -> dict[tuple[str, str, str], str]:
    """Per (topic, pair) the verdict of its first showing (re-shows and a second order left out), as x / y (the
    lower / higher run by name), tie or both_bad."""
    out: dict[tuple[str, str, str], str] = {}
    for b in battles:
        if b.reshow:
            continue
        key, verdict = _verdict(b)
        if key not in out:
            out[key] = "x" if verdict == key[1] else "y" if verdict == key[2] else verdict
    return out


def source_agreement(first: Iterable[Battle], second: Iterable[Battle]) -> dict[str, float | int | None]:
    """Agreement of two battle sources on the (topic, pair) both judged (each source's first showing): ``common``
    pairs, ``agree`` (the same verdict by run: the same winner, both tie or both both_bad), ``share`` agreeing
    and Cohen's ``kappa`` over the four verdicts (None: no common pairs, or chance agreement 1)."""

    a, b = _first_verdicts(first), _first_verdicts(second)
    common = sorted(set(a) & set(b))
    x = [a[k] for k in common]
    y = [b[k] for k in common]
    agree = sum(p == q for p, q in zip(x, y))
    return {
        "common": len(common),
        "agree": agree,
        "share": agree / len(common) if common else None,
        "kappa": cohen_kappa(x, y, scale=_VERDICT_CODES) if common else None,
    }


def outcome_uncertainty(strengths: Mapping[str, float], x: str, y: str) -> float:
    """How uncertain the outcome of x against y is under Bradley-Terry strengths: ``p (1 - p)`` with
    ``p = sigma(t_x - t_y)`` (largest, 0.25, for equal strengths; a run without a strength counts as 0)."""
    d = strengths.get(x, 0.0) - strengths.get(y, 0.0)
    p = 1.0 / (1.0 + np.exp(-d))
    return float(p * (1 - p))


# ------------------------------------------------------------------------------------------- plans

PLAN_METHODS = ("all", "random", "adaptive")


def all_pairs(runs_by_topic: Mapping[str, Sequence[str]]) -> list[tuple[str, str, str]]:
    """Every pair of runs on every topic: ``(topic, x, y)`` with x < y, topics in the order given."""
    out = []
    for topic, runs in runs_by_topic.items():
        ordered = sorted(set(runs))
        out += [(topic, x, y) for n, x in enumerate(ordered) for y in ordered[n + 1 :]]
    return out


def random_pairs(runs_by_topic: Mapping[str, Sequence[str]], per_topic: int, seed: int) -> list[tuple[str, str, str]]:
    """``per_topic`` pairs drawn without replacement on each topic (all of them where it has fewer), seeded: the
    same seed and responses give the same plan."""
    if per_topic < 1:
        raise AssessError(f"a random plan needs at least one pair per topic, not {per_topic}")
    rng = np.random.default_rng(seed)
    out = []
    for topic, runs in runs_by_topic.items():
        pairs = all_pairs({topic: runs})
        if len(pairs) > per_topic:
            chosen = sorted(rng.choice(len(pairs), size=per_topic, replace=False))
            pairs = [pairs[i] for i in chosen]
        out += pairs
    return out


def adaptive_pairs(
    runs_by_topic: Mapping[str, Sequence[str]],
    strengths: Mapping[str, float],
    judged: Mapping[tuple[str, str, str], int],
    budget: int,
    seed: int,
) -> list[tuple[str, str, str]]:
    """Spend ``budget`` battles on the (topic, pair) cells whose outcome is least certain.

    Rule (docs/measures.md): a cell's priority is ``p (1 - p) / (1 + n_xy)``, ``p = sigma(t_x - t_y)`` under the
    current strengths (:func:`outcome_uncertainty`; a run without one counts as 0, so unseen runs come first) and
    ``n_xy`` the battles runs x and y have had already, on any topic (``judged``: (topic, x, y) -> count), plus
    those this plan has chosen. Cells are taken greedily, highest priority first, each topic's cell of a pair at
    most once, ties broken by a seeded shuffle; cells judged already are not taken again."""
    if budget < 1:
        raise AssessError(f"an adaptive plan needs a budget of at least one battle, not {budget}")
    rng = np.random.default_rng(seed)
    cells = [c for c in all_pairs(runs_by_topic) if not judged.get(c)]
    order = rng.permutation(len(cells))
    cells = [cells[i] for i in order]
    played: dict[tuple[str, str], int] = {}
    for (_, x, y), count in judged.items():
        played[(x, y)] = played.get((x, y), 0) + count
    by_pair: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for cell in cells:
        by_pair.setdefault(cell[1:], []).append(cell)
    out = []
    while len(out) < budget and by_pair:
        best = max(
            by_pair,
            key=lambda pair: outcome_uncertainty(strengths, *pair) / (1 + played.get(pair, 0)),
        )  # max keeps the first of equals: the seeded shuffle's order
        out.append(by_pair[best].pop(0))
        played[best] = played.get(best, 0) + 1
        if not by_pair[best]:
            del by_pair[best]
    return out
