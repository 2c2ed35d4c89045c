"""Bradley–Terry win rates of teachers from per-task rankings.

Each task ranks the teachers that were run on it (by solve rate or reward).
Every pair of teachers on a task is one comparison: the better one wins, a
tie counts half a win to each.  The Bradley–Terry model says teacher ``i``
beats ``j`` with probability ``sigmoid(b_i - b_j)``; the strengths ``b`` are
fitted by maximum likelihood (Newton's method with step halving) and their
standard errors come from the inverse Fisher information

    I_ii = sum_j n_ij p_ij p_ji,   I_ij = -n_ij p_ij p_ji   (i != j),

under one of two identifying constraints: ``"sum_zero"`` (strengths sum to 0;
the covariance is the pseudo-inverse of ``I``) or a reference teacher fixed at
0 (invert ``I`` without its row and column).  Differences ``b_i - b_j``, the
win-rate matrix and its delta-method standard errors do not depend on the
choice.

The MLE exists only when every teacher both wins and loses within one
connected set of comparisons (the "beats" graph is strongly connected); when
it does not, :func:`fit_bradley_terry` raises a ``ValueError`` saying so,
unless ``prior > 0`` adds that many virtual wins each way to every pair
of teachers that met, which keeps the estimate finite.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


def pairwise_from_rankings(
    rankings: Iterable[Mapping[str, float] | Sequence[str]],
) -> tuple[list[str], np.ndarray]:
    """Pairwise wins from per-task rankings.

    Each ranking is either ``{teacher: score}`` (higher is better, equal scores
    tie) or a sequence of teachers best first.  Returns the sorted teacher
    names and ``wins`` with ``wins[i, j]`` the (possibly fractional) number of
    times ``i`` beat ``j``.
    """
    scored: list[dict[str, float]] = []
    for index, ranking in enumerate(rankings):
        if isinstance(ranking, Mapping):
            scores = {str(k): float(v) for k, v in ranking.items()}
            bad = [k for k, v in scores.items() if math.isnan(v)]
            if bad:
                raise ValueError(f"ranking {index}: NaN score for {bad}")
        elif isinstance(ranking, Sequence) and not isinstance(ranking, str):
            names = [str(name) for name in ranking]
            if len(set(names)) != len(names):
                raise ValueError(f"ranking {index} names a teacher twice: {names}")
            scores = {name: float(len(names) - position) for position, name in enumerate(names)}
        else:
            raise ValueError(
                f"ranking {index} must be a mapping or a sequence of names, got {type(ranking).__name__}"
            )
        scored.append(scores)
    names = sorted({name for scores in scored for name in scores})
    index_of = {name: i for i, name in enumerate(names)}
    wins = np.zeros((len(names), len(names)))
    for scores in scored:
        items = list(scores.items())
        for a in range(len(items)):
            for b in range(a + 1, len(items)):
                (name_a, score_a), (name_b, score_b) = items[a], items[b]
                i, j = index_of[name_a], index_of[name_b]
                if score_a > score_b:
                    wins[i, j] += 1.0
                elif score_b > score_a:
                    wins[j, i] += 1.0
                else:
                    wins[i, j] += 0.5
                    wins[j, i] += 0.5
    return names, wins


@dataclass
class BradleyTerry:
    """A fitted Bradley–Terry model.

    Attributes:
        names: teachers, in the order of every array.
        strengths: ``b`` (log-odds scale) under ``constraint``.
        se: standard errors of ``strengths`` (0 for a reference teacher).
        covariance: the inverse Fisher information under ``constraint``.
        win_rate: ``win_rate[i, j]`` = P(i beats j) = sigmoid(b_i - b_j).
        win_rate_se: delta-method standard errors of ``win_rate``.
        comparisons: ``n_ij``, the comparisons per pair (with the prior).
        wins: the observed wins (with the prior).
        constraint: ``"sum_zero"`` or the reference teacher's name.
    """

    names: list[str]
    strengths: np.ndarray
    se: np.ndarray
    covariance: np.ndarray
    win_rate: np.ndarray
    win_rate_se: np.ndarray
    comparisons: np.ndarray
    wins: np.ndarray
    constraint: str

    def to_dict(self) -> dict:
        """JSON-ready: per-teacher strength/SE and the win-rate matrix."""
        return {
            "constraint": self.constraint,
            "teachers": [
                {"teacher": n, "strength": float(b), "se": float(s)}
                for n, b, s in zip(self.names, self.strengths, self.se, strict=True)
            ],
            "win_rate": {
                a: {b: float(self.win_rate[i, j]) for j, b in enumerate(self.names) if j != i}
                for i, a in enumerate(self.names)
            },
            "win_rate_se": {
                a: {b: float(self.win_rate_se[i, j]) for j, b in enumerate(self.names) if j != i}
                for i, a in enumerate(self.names)
            },
        }

    def table(self) -> str:
        """A Markdown table: teachers by strength, with SEs and the win-rate matrix."""
        order = np.argsort(-self.strengths, kind="stable")
        header = (
            "| teacher | strength | SE | " + " | ".join(f"vs {self.names[j]}" for j in order) + " |"
        )
        lines = [header, "|" + "---|" * (3 + len(order))]
        for i in order:
            cells = [
                "—" if i == j else f"{self.win_rate[i, j]:.2f} ± {self.win_rate_se[i, j]:.2f}"
                for j in order
            ]
            lines.append(
                f"| {self.names[i]} | {self.strengths[i]:+.3f} | {self.se[i]:.3f} | "
                + " | ".join(cells)
                + " |"
            )
        return "\n".join(lines)


def fit_bradley_terry(
    rankings: Iterable[Mapping[str, float] | Sequence[str]],
    constraint: str = "sum_zero",
    prior: float = 0.0,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> BradleyTerry:
    """Fit Bradley–Terry strengths with Fisher-information standard errors.

    Args:
        rankings: per-task rankings (see :func:`pairwise_from_rankings`).
        constraint: ``"sum_zero"`` or the name of a reference teacher (fixed at 0).
        prior: virtual wins added each way to every pair that met.
        tol: convergence threshold on the largest score-equation residual.
        max_iter: Newton iterations before giving up.

    Raises:
        ValueError: fewer than two teachers, an unknown reference, a negative
            prior, or data for which the MLE does not exist (the message says why).
    """
    names, wins = pairwise_from_rankings(rankings)
    if len(names) < 2:
        raise ValueError(f"Bradley–Terry needs at least two teachers, got {names}")
    if constraint != "sum_zero" and constraint not in names:
        raise ValueError(
            f"constraint must be 'sum_zero' or a teacher name {names}, got {constraint!r}"
        )
    if prior < 0:
        raise ValueError(f"prior must be >= 0, got {prior}")
    met = (wins + wins.T) > 0
    wins = wins + prior * met
    _check_mle_exists(names, wins)
    comparisons = wins + wins.T
    reference = 0 if constraint == "sum_zero" else names.index(constraint)
    strengths = _newton(wins, comparisons, reference, tol, max_iter)
    fisher = _fisher(strengths, comparisons)
    if constraint == "sum_zero":
        strengths = strengths - strengths.mean()
        covariance = np.linalg.pinv(fisher)
    else:
        keep = [i for i in range(len(names)) if i != reference]
        covariance = np.zeros_like(fisher)
        covariance[np.ix_(keep, keep)] = np.linalg.inv(fisher[np.ix_(keep, keep)])
    diff = strengths[:, None] - strengths[None, :]
    win_rate = 1.0 / (1.0 + np.exp(-diff))
    var_diff = np.diag(covariance)[:, None] + np.diag(covariance)[None, :] - 2 * covariance
    win_rate_se = win_rate * (1 - win_rate) * np.sqrt(np.clip(var_diff, 0.0, None))
    return BradleyTerry(
        names=names,
        strengths=strengths,
        se=np.sqrt(np.clip(np.diag(covariance), 0.0, None)),
        covariance=covariance,
        win_rate=win_rate,
        win_rate_se=win_rate_se,
        comparisons=comparisons,
        wins=wins,
        constraint=constraint,
    )


def _check_mle_exists(names: list[str], wins: np.ndarray) -> None:
    """Raise unless every teacher can reach every other along "beat" edges."""
    n = len(names)
    beats = wins > 0
    for start in range(n):
        for graph, verb in ((beats, "beat"), (beats.T, "lose to")):
            seen, stack = {start}, [start]
            while stack:
                node = stack.pop()
                for other in np.flatnonzero(graph[node]):
                    if int(other) not in seen:
                        seen.add(int(other))
                        stack.append(int(other))
            if len(seen) < n:
                missing = [names[i] for i in range(n) if i not in seen]
                raise ValueError(
                    f"Bradley–Terry MLE does not exist: {names[start]} does not {verb} {missing} "
                    "even through other teachers (a teacher that never loses or never wins, "
                    "or unconnected groups); add comparisons or pass prior > 0"
                )


def _log_likelihood(b: np.ndarray, wins: np.ndarray) -> float:
    diff = b[:, None] - b[None, :]
    return float(-(wins * np.logaddexp(0.0, -diff)).sum())


def _fisher(b: np.ndarray, comparisons: np.ndarray) -> np.ndarray:
    p = 1.0 / (1.0 + np.exp(-(b[:, None] - b[None, :])))
    weights = comparisons * p * p.T
    np.fill_diagonal(weights, 0.0)
    return np.diag(weights.sum(axis=1)) - weights


def _newton(
    wins: np.ndarray, comparisons: np.ndarray, reference: int, tol: float, max_iter: int
) -> np.ndarray:
    """Maximise the log-likelihood with ``b[reference] = 0``."""
    n = len(wins)
    free = [i for i in range(n) if i != reference]
    b = np.zeros(n)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-(b[:, None] - b[None, :])))
        gradient = wins.sum(axis=1) - (comparisons * p).sum(axis=1)
        if np.max(np.abs(gradient)) < tol:
            return b
        fisher = _fisher(b, comparisons)[np.ix_(free, free)]
        step = np.zeros(n)
        step[free] = np.linalg.solve(fisher, gradient[free])
        current, scale = _log_likelihood(b, wins), 1.0
        # The log-likelihood is concave, so halving the Newton step always ends
        # in an increase; the floor guards against rounding at the optimum.
        while scale > 1e-8 and _log_likelihood(b + scale * step, wins) < current:
            scale /= 2
        b = b + scale * step
    raise ValueError(f"Bradley–Terry fit did not converge in {max_iter} Newton iterations")


def rankings_from_episodes(
    episodes: Iterable[Mapping], score: str = "reward"
) -> list[dict[str, float]]:
    """Per-task rankings of teachers from episode records.

    Episodes are grouped by ``problem_id``; each teacher's score on a task is
    its mean ``score`` field (``"reward"``, or ``"solved"`` for
    ``solved_at is not None``) over repeats.  Episodes with an error or without
    a teacher are skipped, and so are tasks with fewer than two teachers.
    """
    if score not in ("reward", "solved"):
        raise ValueError(f"score must be 'reward' or 'solved', got {score!r}")
    by_task: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for episode in episodes:
        if episode.get("error") or not episode.get("teacher"):
            continue
        value = (
            float(episode.get("solved_at") is not None)
            if score == "solved"
            else float(episode.get("reward", 0.0))
        )
        by_task[episode["problem_id"]][episode["teacher"]].append(value)
    return [
        {teacher: float(np.mean(values)) for teacher, values in teachers.items()}
        for _, teachers in sorted(by_task.items())
        if len(teachers) >= 2
    ]
