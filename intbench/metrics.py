"""The papers' metrics, computed from episode records.

Every function takes :class:`~intbench.records.Episode` records or the dicts
they are written as (JSONL lines); dicts are parsed once, at the entry.

Monitor protocol (per group of episodes, e.g. one teacher x condition x post):
    φ (``phi``): share of episodes in which the teacher intervened.
    φ_correct / φ_incorrect: the same share among episodes whose baseline was
        correct / incorrect.
    τ_abs / τ_rel: mean revealed characters at the intervention, and that
        position over the trace length, among applied interventions.
    H: mean of H_i = post-intervention correctness - baseline correctness over
        applied interventions; wrong→right is the share of interventions on a
        wrong baseline that end right, right→wrong the share of interventions on
        a right baseline that end wrong.

Feedback protocol (per student x teacher x mode):
    acc@k: a problem counts as solved by k if solved at attempt <= k; repeats of
        a problem are averaged first, then problems are averaged.
    gain@K = acc@K - acc@1; normalised gain = gain@K / (1 - acc@1) (0 when
        acc@1 = 1); AUC = mean of acc@1..acc@K; the first-step gain acc@2 - acc@1.

Episodes whose model or grader failed (``error`` set) are excluded from every
metric and counted in ``n_errors``.  Headline numbers come with 95% bootstrap
confidence intervals that resample problems.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from intbench.records import Episode, Intervention, as_episodes

Records = Iterable[Episode | dict]

BOOTSTRAP_SAMPLES = 1000


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a 95% bootstrap interval (NaN when undefined)."""

    value: float
    low: float = math.nan
    high: float = math.nan
    n: int = 0

    def to_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n}

    def __str__(self) -> str:
        if math.isnan(self.value):
            return "n/a"
        if math.isnan(self.low):
            return f"{self.value:.3f}"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def bootstrap(
    episodes_by_problem: dict[str, list[Episode]],
    statistic: Callable[[list[Episode]], float],
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
) -> Estimate:
    """``statistic`` over all episodes, with a CI from resampling problems."""
    keys = sorted(episodes_by_problem)
    value = statistic([e for k in keys for e in episodes_by_problem[k]])
    if len(keys) < 2 or math.isnan(value):
        return Estimate(value, n=len(keys))
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(samples):
        picked = rng.integers(0, len(keys), len(keys))
        stat = statistic([e for i in picked for e in episodes_by_problem[keys[i]]])
        if not math.isnan(stat):
            draws.append(stat)
    if not draws:
        return Estimate(value, n=len(keys))
    low, high = np.percentile(draws, [2.5, 97.5])
    return Estimate(value, float(low), float(high), len(keys))


def by_problem(items: Iterable) -> dict[str, list]:
    """Group episodes, or any rows with a ``problem_id`` key (analyses use it too), by problem."""
    groups: dict[str, list] = defaultdict(list)
    for item in items:
        groups[item.problem_id if isinstance(item, Episode) else item["problem_id"]].append(item)
    return dict(groups)


def split_errors(episodes: Records) -> tuple[list[Episode], int]:
    """-> (usable episodes, number excluded for a model or grader error)."""
    usable, errors = [], 0
    for episode in as_episodes(episodes):
        if episode.error:
            errors += 1
        else:
            usable.append(episode)
    return usable, errors


# ---------------------------------------------------------------- monitor
def _baseline_correct(episode: Episode) -> bool:
    return episode.baseline is not None and episode.baseline.correct


def _post_correct(intervention: Intervention) -> bool:
    return intervention.attempt is not None and intervention.attempt.correct


def phi(episodes: Records) -> float:
    return _mean([float(e.intervention is not None) for e in as_episodes(episodes)])


def phi_given_baseline(episodes: Records, correct: bool) -> float:
    return phi([e for e in as_episodes(episodes) if _baseline_correct(e) == correct])


def tau_abs(episodes: Records) -> float:
    return _mean([i.tau_abs for e in as_episodes(episodes) if (i := e.applied_intervention)])


def tau_rel(episodes: Records) -> float:
    return _mean([i.tau_rel for e in as_episodes(episodes) if (i := e.applied_intervention)])


def helpfulness(episodes: Records) -> float:
    return _mean(
        [
            float(_post_correct(i)) - float(_baseline_correct(e))
            for e in as_episodes(episodes)
            if (i := e.applied_intervention)
        ]
    )


def wrong_to_right(episodes: Records) -> float:
    return _mean(
        [
            float(_post_correct(i))
            for e in as_episodes(episodes)
            if (i := e.applied_intervention) and not _baseline_correct(e)
        ]
    )


def right_to_wrong(episodes: Records) -> float:
    return _mean(
        [
            float(not _post_correct(i))
            for e in as_episodes(episodes)
            if (i := e.applied_intervention) and _baseline_correct(e)
        ]
    )


def leak_rate(episodes: Records) -> float:
    """Share of interventions whose message leaked the answer."""
    return _mean([float(e.intervention.leaked) for e in as_episodes(episodes) if e.intervention])


MONITOR_METRICS: dict[str, Callable[[Records], float]] = {
    "phi": phi,
    "phi_correct": lambda es: phi_given_baseline(es, True),
    "phi_incorrect": lambda es: phi_given_baseline(es, False),
    "tau_abs": tau_abs,
    "tau_rel": tau_rel,
    "H": helpfulness,
    "wrong_to_right": wrong_to_right,
    "right_to_wrong": right_to_wrong,
}


def monitor_summary(episodes: Records, samples: int = BOOTSTRAP_SAMPLES) -> dict:
    """All monitor metrics of one group of episodes, with CIs and counts."""
    usable, errors = split_errors(episodes)
    groups = by_problem(usable)
    summary = {name: bootstrap(groups, fn, samples) for name, fn in MONITOR_METRICS.items()}
    summary["n_episodes"] = len(usable)
    summary["n_errors"] = errors
    summary["n_interventions"] = sum(1 for e in usable if e.intervention)
    summary["n_excluded"] = sum(1 for e in usable if e.intervention and e.intervention.excluded)
    summary["leak_rate"] = bootstrap(groups, leak_rate, samples)
    return summary


# --------------------------------------------------------------- feedback
def acc_at_k(episodes: Records, k_max: int) -> list[float]:
    """acc@1..acc@k_max, averaging repeats within each problem first."""
    groups = by_problem(as_episodes(episodes))
    if not groups:
        return [math.nan] * k_max
    per_problem = []
    for runs in groups.values():
        solved = np.array(
            [
                [float(r.solved_at is not None and r.solved_at <= k) for k in range(1, k_max + 1)]
                for r in runs
            ]
        )
        per_problem.append(solved.mean(axis=0))
    return [float(v) for v in np.mean(per_problem, axis=0)]


def gain(acc: Sequence[float]) -> float:
    return acc[-1] - acc[0]


def normalized_gain(acc: Sequence[float]) -> float:
    return 0.0 if acc[0] >= 1.0 else (acc[-1] - acc[0]) / (1.0 - acc[0])


def auc(acc: Sequence[float]) -> float:
    return float(np.mean(acc))


def first_step_gain(acc: Sequence[float]) -> float:
    return acc[1] - acc[0] if len(acc) > 1 else math.nan


def _k_max(episodes: list[Episode]) -> int:
    values = {int(e.config.get("k_max", 0)) for e in episodes}
    if len(values) > 1:
        raise ValueError(f"episodes mix k_max values {sorted(values)}; group them first")
    return values.pop() if values else 1


def feedback_summary(
    episodes: Records, k_max: int | None = None, samples: int = BOOTSTRAP_SAMPLES
) -> dict:
    """acc@k curve and its summaries for one group of feedback episodes, with CIs."""
    usable, errors = split_errors(episodes)
    k = k_max or _k_max(usable)
    groups = by_problem(usable)
    summary = {
        "acc": acc_at_k(usable, k),
        "n_episodes": len(usable),
        "n_problems": len(groups),
        "n_errors": errors,
        "k_max": k,
    }
    for name, fn in {
        "acc@1": lambda es: acc_at_k(es, k)[0],
        f"acc@{k}": lambda es: acc_at_k(es, k)[-1],
        "gain": lambda es: gain(acc_at_k(es, k)),
        "normalized_gain": lambda es: normalized_gain(acc_at_k(es, k)),
        "auc": lambda es: auc(acc_at_k(es, k)),
        "first_step_gain": lambda es: first_step_gain(acc_at_k(es, k)),
    }.items():
        summary[name] = bootstrap(groups, fn, samples)
    summary["leak_rate"] = bootstrap(
        groups,
        lambda es: _mean([float(f.leaked) for e in es for f in e.feedback if f.message]),
        samples,
    )
    return summary


# -------------------------------------------------------- matrix analyses
def r_squared(y: np.ndarray, design: np.ndarray) -> float:
    """R² of an ordinary least-squares fit of ``y`` on ``design`` (with intercept)."""
    X = np.column_stack([np.ones(len(y)), design]) if design.size else np.ones((len(y), 1))
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    residual = y - X @ coef
    total = y - y.mean()
    ss_tot = float(total @ total)
    return math.nan if ss_tot == 0 else 1.0 - float(residual @ residual) / ss_tot


def _dummies(labels: Sequence[str]) -> np.ndarray:
    levels = sorted(set(labels))[1:]  # drop one level: the intercept carries it
    return np.array([[float(label == level) for level in levels] for label in labels]).reshape(
        len(labels), len(levels)
    )


def fixed_effects(pairs: dict[tuple[str, str], float]) -> dict[str, float]:
    """Variance of pair-level values (e.g. gain) explained by student and teacher.

    ``pairs`` maps (student, teacher) -> value.  Returns R² of student fixed
    effects alone, teacher fixed effects alone, both, and ΔR² of the teacher
    given the student (both - student).
    """
    keys = sorted(pairs)
    y = np.array([pairs[k] for k in keys], dtype=float)
    students = _dummies([s for s, _ in keys])
    teachers = _dummies([t for _, t in keys])
    r2_student = r_squared(y, students)
    r2_teacher = r_squared(y, teachers)
    r2_both = r_squared(y, np.column_stack([students, teachers]))
    return {
        "r2_student": r2_student,
        "r2_teacher": r2_teacher,
        "r2_both": r2_both,
        "delta_r2_teacher_given_student": r2_both - r2_student,
    }


def best_minus_worst(pairs: dict[tuple[str, str], float]) -> dict[str, float]:
    """Per student: the value of its best teacher minus that of its worst."""
    per_student: dict[str, list[float]] = defaultdict(list)
    for (student, _), value in pairs.items():
        per_student[student].append(value)
    return {s: max(v) - min(v) for s, v in sorted(per_student.items())}


def _ranks(values: Sequence[float]) -> np.ndarray:
    """Average ranks (ties share the mean rank), 1-based."""
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[order[j + 1]] == values[order[i]]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's ρ: Pearson correlation of average ranks (NaN if a side is constant)."""
    if len(x) < 2:
        return math.nan
    rx, ry = _ranks(x), _ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def solver_vs_teacher(
    solo_acc1: dict[str, float], auc_pairs: dict[tuple[str, str], float]
) -> dict[str, dict[str, float]]:
    """Does a stronger solver make a better teacher?

    For each student: Spearman ρ between the teachers' own acc@1 (as solvers)
    and the AUC they give this student, and the inversion rate: the share of
    teacher pairs with different acc@1 whose AUC order is the reverse.
    """
    per_student: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for (student, teacher), value in auc_pairs.items():
        if teacher in solo_acc1:
            per_student[student].append((solo_acc1[teacher], value))
    result = {}
    for student, points in sorted(per_student.items()):
        xs, ys = zip(*points, strict=True) if points else ((), ())
        comparable = inverted = 0
        for i in range(len(points)):
            for j in range(i + 1, len(points)):
                (a1, v1), (a2, v2) = points[i], points[j]
                if a1 == a2:
                    continue
                comparable += 1
                inverted += (a1 - a2) * (v1 - v2) < 0
        result[student] = {
            "spearman": spearman(xs, ys),
            "inversion_rate": inverted / comparable if comparable else math.nan,
            "n_teachers": len(points),
        }
    return result
