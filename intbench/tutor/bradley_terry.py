"""Bradley–Terry win rates of teachers (KITE App. C.7).

Comparisons.  Two kinds of ranking give pairwise wins:

* a :class:`SessionRanking`, a person's ranking of the last models they
  worked with after one session, gives only the comparisons between the
  model of that session and each other ranked model (C.7.1): the better
  ranked of the two wins;
* a per-task ranking of teachers by score (``{teacher: score}``, or names
  best first), which is how IntBench compares simulated teachers on the same
  task, gives every pair of the teachers ranked.

A win is recorded when one is ranked above the other.  Equal scores are a
tie, which the paper's rankings (strict orders) never have: ``ties="half"``
(the default) counts half a win to each, ``ties="drop"`` records nothing.

Model.  Teacher ``i`` beats ``j`` with probability ``π_i / (π_i + π_j)``,
``sigmoid(b_i - b_j)`` with ``b = log π``.  The maximum-likelihood strengths
are found by Newton's method with step halving (the same optimum as the
paper's iteration) and reported on both scales:

* ``pi``: the paper's strengths, normalised to sum to 1, with standard errors
  from the Fisher information on the π scale (C.7.3)

      I_ii = sum_k (n_ik + n_ki) / (π_i + π_k)^2 * π_k / π_i,
      I_ij = -(n_ij + n_ji) / (π_i + π_j)^2,

  inverted with one teacher's row and column removed (``pi_reference``, by
  default the last name); that teacher is held fixed and has no standard
  error (NaN);
* ``strengths``: ``b`` with log-scale standard errors from
  ``I_ii = sum_j n_ij p_ij p_ji, I_ij = -n_ij p_ij p_ji`` under
  ``"sum_zero"`` (the pseudo-inverse) or a reference teacher fixed at 0.

The win-rate matrix and its delta-method standard errors do not depend on
the constraint.

A teacher that is beaten but never wins (or wins only over teachers with
π = 0) gets π = 0, where the paper's update (C.7.2, π_i ← w_i / ..., with
w_i = 0) puts it; the others are fitted among themselves, since comparisons
with a π = 0 teacher carry no information about them (its C.7.3 terms are
0).  Such a teacher has no standard error, no log strength (log 0) and its win
rates are 0 and 1 with no standard error: those are NaN, and ``never_won``
names it.  Among the rest the MLE exists only when every teacher both wins
and loses within one connected set of comparisons (the "beats" graph is
strongly connected); when it does not (a teacher that never loses,
unconnected groups), :func:`fit_bradley_terry` raises a ``ValueError`` saying
so, unless ``prior > 0`` adds that many virtual wins each way to every pair of
teachers that met.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SessionRanking:
    """One session's ranking (KITE C.7.1): the models ranked, best first (or
    ``{model: score}``, higher is better, equal scores a tie), and the model the
    session was done with (``latest``, one of them)."""

    order: Sequence[str] | Mapping[str, float]
    latest: str

    def __post_init__(self) -> None:
        if self.latest not in self.order:
            raise ValueError(f"latest model {self.latest!r} is not ranked in {list(self.order)}")


Ranking = Mapping[str, float] | Sequence[str] | SessionRanking
TIES = ("half", "drop")


def _scores(index: int, ranking: Mapping[str, float] | Sequence[str]) -> dict[str, float]:
    """A ranking as ``{teacher: score}``, higher is better."""
    if isinstance(ranking, Mapping):
        scores = {str(k): float(v) for k, v in ranking.items()}
        bad = [k for k, v in scores.items() if math.isnan(v)]
        if bad:
            raise ValueError(f"ranking {index}: NaN score for {bad}")
        return scores
    if isinstance(ranking, Sequence) and not isinstance(ranking, str):
        names = [str(name) for name in ranking]
        if len(set(names)) != len(names):
            raise ValueError(f"ranking {index} names a teacher twice: {names}")
        return {name: float(len(names) - position) for position, name in enumerate(names)}
    raise ValueError(
        f"ranking {index} must be a mapping or a sequence of names, got {type(ranking).__name__}"
    )


def _pairs(ranking: Ranking, scores: dict[str, float]) -> list[tuple[str, str]]:
    """The pairs a ranking compares: the latest model against each other one, or all pairs."""
    if isinstance(ranking, SessionRanking):
        return [(ranking.latest, other) for other in scores if other != ranking.latest]
    names = list(scores)
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]


def pairwise_from_rankings(
    rankings: Iterable[Ranking], ties: str = "half"
) -> tuple[list[str], np.ndarray]:
    """Pairwise wins from rankings (see the module docstring).

    Returns the sorted teacher names and ``wins`` with ``wins[i, j]`` the
    (with ``ties="half"`` possibly fractional) number of times ``i`` beat ``j``.
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    compared: list[tuple[dict[str, float], list[tuple[str, str]]]] = []
    for index, ranking in enumerate(rankings):
        order = ranking.order if isinstance(ranking, SessionRanking) else ranking
        scores = _scores(index, order)
        compared.append((scores, _pairs(ranking, scores)))
    names = sorted({name for scores, _ in compared for name in scores})
    index_of = {name: i for i, name in enumerate(names)}
    wins = np.zeros((len(names), len(names)))
    for scores, pairs in compared:
        for a, b in pairs:
            i, j = index_of[a], index_of[b]
            if scores[a] > scores[b]:
                wins[i, j] += 1.0
            elif scores[b] > scores[a]:
                wins[j, i] += 1.0
            elif ties == "half":
                wins[i, j] += 0.5
                wins[j, i] += 0.5
    return names, wins


@dataclass
class BradleyTerry:
    """A fitted Bradley–Terry model.

    Attributes:
        names: teachers, in the order of every array.
        pi: the paper's strengths ``π``, summing to 1.
        pi_se: their standard errors from the π-scale Fisher information with
            ``pi_reference``'s row and column removed (NaN for that teacher).
        pi_reference: the teacher held fixed for ``pi_se``.
        strengths: ``b = log π`` (log-odds scale) under ``constraint``.
        se: standard errors of ``strengths`` (0 for a reference teacher).
        covariance: the inverse Fisher information under ``constraint``.
        win_rate: ``win_rate[i, j]`` = P(i beats j) = sigmoid(b_i - b_j).
        win_rate_se: delta-method standard errors of ``win_rate``.
        comparisons: ``n_ij``, the comparisons per pair (with the prior).
        wins: the observed wins (with the prior).
        constraint: ``"sum_zero"`` or the reference teacher's name.
        never_won: teachers with π = 0 (beaten, and no win over a teacher with π > 0):
            their SEs, log strengths and win-rate SEs are undefined (NaN).
    """

    names: list[str]
    pi: np.ndarray
    pi_se: np.ndarray
    pi_reference: str
    strengths: np.ndarray
    se: np.ndarray
    covariance: np.ndarray
    win_rate: np.ndarray
    win_rate_se: np.ndarray
    comparisons: np.ndarray
    wins: np.ndarray
    constraint: str
    never_won: list[str]

    @property
    def note(self) -> str:
        """What a reader of the numbers must know: the teachers at π = 0, if any."""
        if not self.never_won:
            return ""
        return (
            f"{', '.join(self.never_won)} never won: π = 0 (KITE C.7.2's update), so its standard "
            "errors and log strength are undefined (n/a)."
        )

    def to_dict(self) -> dict:
        """JSON-ready: per-teacher π and strength with their SEs, and the win-rate matrix."""
        return {
            "constraint": self.constraint,
            "pi_reference": self.pi_reference,
            "never_won": list(self.never_won),
            "note": self.note,
            "teachers": [
                {
                    "teacher": n,
                    "pi": float(p),
                    "pi_se": float(ps),
                    "strength": float(b),
                    "se": float(s),
                }
                for n, p, ps, b, s in zip(
                    self.names, self.pi, self.pi_se, self.strengths, self.se, strict=True
                )
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
        """A Markdown table: teachers by strength, π and b with SEs, and the win-rate matrix."""
        order = np.argsort(-self.pi, kind="stable")
        header = "| teacher | π | π SE | strength | SE | " + " | ".join(
            f"vs {self.names[j]}" for j in order
        )
        lines = [header + " |", "|" + "---|" * (5 + len(order))]
        for i in order:
            cells = [
                "—"
                if i == j
                else f"{_value_text(self.win_rate[i, j], '.2f')} ± "
                f"{_se_text(self.win_rate_se[i, j])}"
                for j in order
            ]
            lines.append(
                f"| {self.names[i]} | {self.pi[i]:.3f} | {_se_text(self.pi_se[i])} | "
                f"{_value_text(self.strengths[i], '+.3f')} | {_se_text(self.se[i])} | "
                + " | ".join(cells)
                + " |"
            )
        return "\n".join(lines)


def _se_text(se: float) -> str:
    return _value_text(se, ".3f")


def _value_text(value: float, spec: str) -> str:
    return "n/a" if math.isnan(value) else format(value, spec)


def fit_bradley_terry(
    rankings: Iterable[Ranking],
    constraint: str = "sum_zero",
    prior: float = 0.0,
    ties: str = "half",
    pi_reference: str | None = None,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> BradleyTerry:
    """Fit Bradley–Terry strengths with Fisher-information standard errors.

    Args:
        rankings: session or per-task rankings (see :func:`pairwise_from_rankings`).
        constraint: ``"sum_zero"`` or the name of a reference teacher (fixed at 0),
            for the log-scale standard errors.
        prior: virtual wins added each way to every pair that met.
        ties: ``"half"`` or ``"drop"`` (see :func:`pairwise_from_rankings`).
        pi_reference: the teacher whose row and column are removed for the
            π-scale standard errors (default: the last name with π > 0).
        tol: convergence threshold on the largest score-equation residual.
        max_iter: Newton iterations before giving up.

    Raises:
        ValueError: fewer than two teachers, an unknown reference
            or one at π = 0, a negative prior, or data for which the MLE does not
            exist among the teachers with π > 0 (the message says why).
    """
    names, wins = pairwise_from_rankings(rankings, ties)
    _check_fit_arguments(names, constraint, pi_reference, prior)
    met = (wins + wins.T) > 0
    wins = wins + prior * met
    comparisons = wins + wins.T
    zero = _never_winning(wins)
    rest = [i for i in range(len(names)) if i not in zero]
    never_won = [names[i] for i in sorted(zero)]
    if constraint in never_won or pi_reference in never_won:
        raise ValueError(
            f"{constraint if constraint in never_won else pi_reference} never won (π = 0) and "
            "cannot be the reference; name another teacher"
        )
    pi_reference = names[rest[-1]] if pi_reference is None else pi_reference
    sub = np.ix_(rest, rest)
    fit = _fit_connected([names[i] for i in rest], wins[sub], constraint, tol, max_iter)
    n = len(names)
    pi, strengths, se = np.zeros(n), np.full(n, math.nan), np.full(n, math.nan)
    covariance, win_rate, win_rate_se = (np.full((n, n), math.nan) for _ in range(3))
    pi[rest], strengths[rest], se[rest] = fit["pi"], fit["strengths"], fit["se"]
    covariance[sub], win_rate[sub], win_rate_se[sub] = (
        fit["covariance"], fit["win_rate"], fit["win_rate_se"]
    )  # fmt: skip
    for i in zero:  # a teacher at π = 0 loses to every teacher with π > 0
        win_rate[i, rest], win_rate[rest, i] = 0.0, 1.0
    np.fill_diagonal(win_rate, 0.5)
    pi_se = np.full(n, math.nan)
    removed = rest.index(names.index(pi_reference))
    pi_se[rest] = _pi_standard_errors(fit["pi"], comparisons[sub], removed)
    return BradleyTerry(
        names=names,
        pi=pi,
        pi_se=pi_se,
        pi_reference=pi_reference,
        strengths=strengths,
        se=se,
        covariance=covariance,
        win_rate=win_rate,
        win_rate_se=win_rate_se,
        comparisons=comparisons,
        wins=wins,
        constraint=constraint,
        never_won=never_won,
    )


def _check_fit_arguments(
    names: list[str], constraint: str, pi_reference: str | None, prior: float
) -> None:
    if len(names) < 2:
        raise ValueError(f"Bradley–Terry needs at least two teachers, got {names}")
    if constraint != "sum_zero" and constraint not in names:
        raise ValueError(
            f"constraint must be 'sum_zero' or a teacher name {names}, got {constraint!r}"
        )
    if pi_reference is not None and pi_reference not in names:
        raise ValueError(f"pi_reference must be a teacher name {names}, got {pi_reference!r}")
    if prior < 0:
        raise ValueError(f"prior must be >= 0, got {prior}")


def _never_winning(wins: np.ndarray) -> set[int]:
    """The teachers at π = 0: beaten by a teacher with π > 0 and never beating one
    (no win at all, or wins only over teachers at π = 0)."""
    zero: set[int] = set()
    while True:
        alive = [j for j in range(len(wins)) if j not in zero]
        more = {i for i in alive if wins[i, alive].sum() == 0 and wins[alive, i].sum() > 0}
        if not more:
            return zero
        zero |= more


def _fit_connected(
    names: list[str], wins: np.ndarray, constraint: str, tol: float, max_iter: int
) -> dict[str, np.ndarray]:
    """The MLE of teachers that all win (π, log strengths, their covariance, win rates)."""
    if len(names) == 1:  # the only teacher that ever won: π = 1, nothing left to estimate
        nan = np.full((1, 1), math.nan)
        return {"pi": np.ones(1), "strengths": np.zeros(1), "se": np.full(1, math.nan),
                "covariance": nan, "win_rate": np.full((1, 1), 0.5), "win_rate_se": nan}  # fmt: skip
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
    pi = np.exp(strengths - strengths.max())
    return {
        "pi": pi / pi.sum(),
        "strengths": strengths,
        "se": np.sqrt(np.clip(np.diag(covariance), 0.0, None)),
        "covariance": covariance,
        "win_rate": win_rate,
        "win_rate_se": win_rate * (1 - win_rate) * np.sqrt(np.clip(var_diff, 0.0, None)),
    }


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


def _pi_fisher(pi: np.ndarray, comparisons: np.ndarray) -> np.ndarray:
    """KITE C.7.3's Fisher information of the π-scale strengths."""
    off = comparisons / (pi[:, None] + pi[None, :]) ** 2
    np.fill_diagonal(off, 0.0)
    diagonal = (off * pi[None, :]).sum(axis=1) / pi
    return np.diag(diagonal) - off


def _pi_standard_errors(pi: np.ndarray, comparisons: np.ndarray, removed: int) -> np.ndarray:
    """Square roots of the diagonal of the inverse π-scale information, one row and
    column removed for the constraint; the removed teacher has none (NaN)."""
    keep = [i for i in range(len(pi)) if i != removed]
    fisher = _pi_fisher(pi, comparisons)[np.ix_(keep, keep)]
    se = np.full(len(pi), math.nan)
    se[keep] = np.sqrt(np.clip(np.diag(np.linalg.inv(fisher)), 0.0, None))
    return se


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
