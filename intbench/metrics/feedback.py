"""Feedback protocol metrics, per student x teacher x mode.

acc@k: a problem counts as solved by k if solved at attempt <= k; repeats of
    a problem are averaged first, then problems are averaged.
gain@K = acc@K - acc@1; normalised gain = gain@K / (1 - acc@1) (0 when
    acc@1 = 1); AUC = mean of acc@1..acc@K; the first-step gain acc@2 - acc@1.

Groups are domain x student x teacher x mode x K x history x teacher
reference x execution context.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from intbench.metrics.estimate import BOOTSTRAP_SAMPLES, ProblemResamples
from intbench.metrics.groups import Records, by_problem, group_by, split_errors, teacher_label
from intbench.metrics.table import Table
from intbench.records import Episode, as_episodes


def _solved_by_k(episodes: list[Episode], k_max: int) -> np.ndarray:
    """(problems in sorted order, k_max): each problem's share of repeats solved by attempt k."""
    problems = {p: i for i, p in enumerate(sorted({e.problem_id for e in episodes}))}
    row = np.array([problems[e.problem_id] for e in episodes], dtype=int)
    solved_at = np.array([k_max + 1 if e.solved_at is None else e.solved_at for e in episodes])
    solved = solved_at[:, None] <= np.arange(1, k_max + 1)
    counts = np.zeros((len(problems), k_max))
    np.add.at(counts, row, solved)
    return counts / np.bincount(row, minlength=len(problems))[:, None]


def acc_at_k(episodes: Records, k_max: int) -> list[float]:
    """acc@1..acc@k_max, averaging repeats within each problem first."""
    solved = _solved_by_k(as_episodes(episodes), k_max)
    if not len(solved):
        return [math.nan] * k_max
    return [float(v) for v in solved.mean(axis=0)]


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
    resamples = ProblemResamples(groups, samples)
    # acc@1..acc@k of the group (row 0) and of every resample at once
    acc = resamples.problem_means(_solved_by_k(usable, k))
    first, last = acc[:, 0], acc[:, -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        normalized = np.where(first >= 1.0, 0.0, (last - first) / (1.0 - first))
    summary = {
        "acc": acc_at_k(usable, k),
        "n_episodes": len(usable),
        "n_problems": len(groups),
        "n_errors": errors,
        "k_max": k,
    }
    for name, statistic in {
        "acc@1": first,
        f"acc@{k}": last,
        "gain": last - first,
        "normalized_gain": normalized,
        "auc": acc.mean(axis=1),
        "first_step_gain": acc[:, 1] - first if k > 1 else np.full(len(acc), math.nan),
    }.items():
        summary[name] = resamples.estimate(statistic)
    summary["leak_rate"] = resamples.mean(
        {
            problem: [float(f.leaked) for e in runs for f in e.feedback if f.message]
            for problem, runs in groups.items()
        }
    )
    return summary


class FeedbackKey(NamedTuple):
    """A feedback group: runs that differ in any field are never pooled."""

    domain: str
    student: str
    teacher: str
    mode: str
    k_max: int
    history: str = "unknown"
    teacher_reference: str = "unknown"
    execution_context: str = "unknown"
    execution_tests: str = "unknown"


SETTINGS = ("history", "teacher_reference", "execution_context", "execution_tests")
"""The env options besides K that change what the student or teacher sees (feedback paper §4.3;
``execution_tests``: which code tests the execution context may show)."""


def _setting(episode: Episode, name: str) -> str:
    value = episode.config.get(name)
    return "unknown" if value is None else str(value)


def feedback_episode_groups(episodes: Records) -> dict[FeedbackKey, list[Episode]]:
    """Feedback episodes by group; K is the configured ``k_max``, else the most attempts seen."""
    partial = group_by(
        as_episodes(episodes),
        lambda e: (
            str(e.domain),
            str(e.student),
            teacher_label(e.teacher),
            str(e.condition or "teacher"),
            *(_setting(e, name) for name in SETTINGS),
        ),
    )
    groups: dict[FeedbackKey, list[Episode]] = defaultdict(list)
    for (domain, student, teacher, mode, *settings), group in partial.items():
        fallback = max([len(e.attempts) for e in group] + [1])
        for episode in group:
            configured = episode.config.get("k_max")
            k = configured if isinstance(configured, int) and configured >= 1 else fallback
            groups[FeedbackKey(domain, student, teacher, mode, k, *settings)].append(episode)
    return dict(sorted(groups.items()))


def feedback_groups(
    groups: dict[FeedbackKey, list[Episode]], samples: int = BOOTSTRAP_SAMPLES
) -> dict[FeedbackKey, dict]:
    """:func:`feedback_summary` of every group of :func:`feedback_episode_groups`."""
    return {
        key: feedback_summary(group, k_max=key.k_max, samples=samples)
        for key, group in groups.items()
    }


LABELS = {
    "acc_at_1": "acc@1",
    "acc_at_k": "acc@K",
    "gain": "gain",
    "normalized_gain": "normalized gain",
    "auc": "AUC",
    "first_step_gain": "acc@2−acc@1",
    "leak_rate": "leak rate",
}
"""The table's estimate columns, by id, with their labels."""
COUNTS = {"n": "n_episodes", "problems": "n_problems", "errors": "n_errors"}


def feedback_table(feedback: dict[FeedbackKey, dict]) -> Table:
    """One row per feedback group: acc@1, acc@K, gains, AUC, leak rate."""
    # the summary names acc@1 and acc@K after K; the table's columns hold for every K
    rows = {
        key: {**s, "acc_at_1": s["acc@1"], "acc_at_k": s[f"acc@{s['k_max']}"]}
        for key, s in feedback.items()
    }
    return Table.of_groups(
        "feedback",
        "Feedback protocol",
        ["domain", "student", "teacher", "mode", "K", *SETTINGS],
        rows,
        LABELS,
        COUNTS,
        "acc@K at each group's K; 95% bootstrap CIs over problems; errors are excluded from every metric.",
        headline=[
            "domain",
            "student",
            "teacher",
            "mode",
            "acc_at_1",
            "acc_at_k",
            "K",
            "auc",
            "n",
            "errors",
        ],
    )
