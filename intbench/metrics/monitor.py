"""Monitor protocol metrics, per group of episodes (e.g. one teacher x condition x post).

φ (``phi``): share of episodes in which the teacher intervened.
φ_correct / φ_incorrect: the same share among episodes whose baseline was
    correct / incorrect.
τ_abs / τ_rel: mean revealed characters at the intervention, and that
    position over the trace length, among applied interventions.
H: mean of H_i = post-intervention correctness - baseline correctness over
    applied interventions; wrong→right is the share of interventions on a
    wrong baseline that end right, right→wrong the share of interventions on
    a right baseline that end wrong.

A failed model call or grader on the baseline leaves the episode out of every
metric.  When only the student's continuation after the intervention failed,
the monitoring itself happened: the episode stays in φ, φ_correct,
φ_incorrect and τ, and only leaves H, wrong→right and right→wrong
(Int-Bench §3.2-3.3 define φ and τ over all monitoring rollouts and H over
the interventions whose outcome is known).

Groups are domain x student x teacher x post x condition.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from intbench.metrics.estimate import (
    BOOTSTRAP_SAMPLES,
    PERMUTATIONS,
    ProblemResamples,
    mean,
    paired_permutation_p,
)
from intbench.metrics.groups import Records, by_problem, group_by, split_errors, teacher_label
from intbench.metrics.table import Table
from intbench.records import Episode, Intervention, as_episodes


def _baseline_correct(episode: Episode) -> bool:
    return episode.baseline is not None and episode.baseline.correct


def _post_correct(intervention: Intervention) -> bool:
    return intervention.attempt is not None and intervention.attempt.correct


def _graded_intervention(episode: Episode) -> Intervention | None:
    """The applied intervention, if the continuation after it was generated and graded."""
    intervention = episode.applied_intervention
    attempt = intervention.attempt if intervention else None
    graded = attempt is not None and not attempt.error and attempt.status != "error"
    return intervention if graded else None


def continuation_failed(episode: Episode) -> bool:
    """Whether only the student's call or grading after the intervention failed."""
    baseline = episode.baseline
    return bool(
        episode.error
        and baseline is not None
        and not baseline.error
        and baseline.status in ("correct", "incorrect")
        and episode.applied_intervention
        and not _graded_intervention(episode)
    )


def split_monitor_errors(episodes: Records) -> tuple[list[Episode], int, int]:
    """-> (episodes the monitoring metrics use, episodes left out, failed continuations).

    Failed continuations are among the episodes used; :func:`helpfulness` and
    the transition rates skip them.
    """
    usable, errors = split_errors(episodes)
    failed = [e for e in as_episodes(episodes) if continuation_failed(e)]
    return usable + failed, errors - len(failed), len(failed)


# Each metric is the mean of one term per episode over the episodes that define it
# (None: left out), so that a group's resamples need only per-problem sums and counts.
Term = Callable[[Episode], float | None]


def _phi_term(episode: Episode) -> float:
    return float(episode.intervention is not None)


def _phi_given_baseline_term(correct: bool) -> Term:
    return lambda e: _phi_term(e) if _baseline_correct(e) == correct else None


def _tau_term(name: str) -> Term:
    return lambda e: getattr(i, name) if (i := e.applied_intervention) else None


def _helpfulness_term(episode: Episode) -> float | None:
    if not (i := _graded_intervention(episode)):
        return None
    return float(_post_correct(i)) - float(_baseline_correct(episode))


def _wrong_to_right_term(episode: Episode) -> float | None:
    i = _graded_intervention(episode)
    return float(_post_correct(i)) if i and not _baseline_correct(episode) else None


def _right_to_wrong_term(episode: Episode) -> float | None:
    i = _graded_intervention(episode)
    return float(not _post_correct(i)) if i and _baseline_correct(episode) else None


def _leak_term(episode: Episode) -> float | None:
    return float(episode.intervention.leaked) if episode.intervention else None


TERMS: dict[str, Term] = {
    "baseline_accuracy": lambda e: float(_baseline_correct(e)),
    "phi": _phi_term,
    "phi_correct": _phi_given_baseline_term(True),
    "phi_incorrect": _phi_given_baseline_term(False),
    "tau_abs": _tau_term("tau_abs"),
    "tau_rel": _tau_term("tau_rel"),
    "H": _helpfulness_term,
    "wrong_to_right": _wrong_to_right_term,
    "right_to_wrong": _right_to_wrong_term,
    "leak_rate": _leak_term,
}
"""Every estimate of :func:`monitor_summary`, by its key: the per-episode term it averages."""


def _terms(episodes: Records, term: Term) -> list[float]:
    return [v for e in as_episodes(episodes) if (v := term(e)) is not None]


def _metric(name: str) -> Callable[[Records], float]:
    return lambda episodes: mean(_terms(episodes, TERMS[name]))


phi = _metric("phi")
tau_abs = _metric("tau_abs")
tau_rel = _metric("tau_rel")
helpfulness = _metric("H")
wrong_to_right = _metric("wrong_to_right")
right_to_wrong = _metric("right_to_wrong")
baseline_accuracy = _metric("baseline_accuracy")
"""Share of episodes whose unhelped baseline was right (what φ_correct conditions on)."""
leak_rate = _metric("leak_rate")
"""Share of interventions whose message leaked the answer."""


def phi_given_baseline(episodes: Records, correct: bool) -> float:
    return mean(_terms(episodes, _phi_given_baseline_term(correct)))


MONITOR_METRICS: dict[str, Callable[[Records], float]] = {
    name: _metric(name) for name in TERMS if name != "leak_rate"
}

LABELS = {
    "baseline_accuracy": "baseline accuracy",
    "phi": "φ",
    "phi_correct": "φ_correct",
    "phi_incorrect": "φ_incorrect",
    "tau_abs": "τ_abs",
    "tau_rel": "τ_rel",
    "H": "H",
    "wrong_to_right": "wrong→right",
    "right_to_wrong": "right→wrong",
    "leak_rate": "leak rate",
}
"""Every estimate of :func:`monitor_summary`, by its key, with its column label."""


def monitor_summary(episodes: Records, samples: int = BOOTSTRAP_SAMPLES) -> dict:
    """All monitor metrics of one group of episodes, with CIs and counts."""
    usable, errors, failed = split_monitor_errors(episodes)
    groups = by_problem(usable)
    resamples = ProblemResamples(groups, samples)
    summary: dict[str, Any] = {
        name: resamples.mean({p: _terms(runs, term) for p, runs in groups.items()})
        for name, term in TERMS.items()
    }
    summary["n_episodes"] = len(usable)
    summary["n_errors"] = errors
    summary["n_failed_continuations"] = failed
    summary["n_interventions"] = sum(1 for e in usable if e.intervention)
    summary["n_excluded"] = sum(1 for e in usable if e.intervention and e.intervention.excluded)
    return summary


class MonitorKey(NamedTuple):
    """A monitor group: runs that differ in any field are never pooled."""

    domain: str
    student: str
    teacher: str
    post: str
    increment: str
    teacher_prompt: str
    teacher_access: str
    condition: str


NOT_APPLICABLE = "—"
"""The increment of an Oracle group: that teacher sees the whole trace at once (§3.2)."""


def _setting(episode: Episode, name: str) -> str:
    value = episode.config.get(name)
    return "unknown" if value is None else str(value)


def monitor_key(episode: Episode) -> MonitorKey:
    """The monitor group an episode belongs to."""
    condition = str(episode.condition or "standard")
    return MonitorKey(
        str(episode.domain),
        str(episode.student),
        teacher_label(episode.teacher),
        _setting(episode, "post"),
        NOT_APPLICABLE if condition == "oracle" else _setting(episode, "increment"),
        _setting(episode, "teacher_prompt"),
        _setting(episode, "teacher_access"),
        condition,
    )


def monitor_episode_groups(episodes: Records) -> dict[MonitorKey, list[Episode]]:
    """The monitor episodes by group."""
    return group_by(as_episodes(episodes), monitor_key)


def monitor_groups(
    groups: dict[MonitorKey, list[Episode]], samples: int = BOOTSTRAP_SAMPLES
) -> dict[MonitorKey, dict]:
    """:func:`monitor_summary` of every group of :func:`monitor_episode_groups`."""
    return {key: monitor_summary(group, samples=samples) for key, group in groups.items()}


COUNTS = {
    "n": "n_episodes",
    "interventions": "n_interventions",
    "excluded": "n_excluded",
    "failed continuations": "n_failed_continuations",
    "errors": "n_errors",
}


def monitor_table(monitor: dict[MonitorKey, dict]) -> Table:
    """One row per monitor group with every metric and its 95% CI."""
    return Table.of_groups(
        "monitor",
        "Monitor protocol",
        MonitorKey._fields,
        monitor,
        LABELS,
        COUNTS,
        "95% bootstrap CIs over problems. τ is over applied interventions, H over those whose "
        "continuation was graded; a failed continuation leaves only H and the transitions, other "
        "errors every metric. What this shows: φ is how often the teacher stepped in, "
        "φ_correct and φ_incorrect split it by whether the student was right without help "
        "(baseline accuracy), and H is the accuracy its help added; a well-judged teacher has "
        "φ_incorrect above φ_correct and H above 0.",
        headline=[
            "domain",
            "teacher",
            "condition",
            "post",
            "increment",
            "baseline_accuracy",
            "phi",
            "tau_rel",
            "H",
            "n",
            "errors",
        ],
    )


COMPARISON_METRICS = {
    "phi": "φ",
    "tau_rel": "τ_rel",
    "H": "H",
    "wrong_to_right": "w→r",
    "right_to_wrong": "r→w",
}


COMPARISON_KEYS = [
    "domain",
    "student",
    "teacher",
    "post",
    "increment",
    "teacher_prompt",
    "teacher_access",
]


def per_problem(episodes: list[Episode], metric: str) -> dict[str, float]:
    """One monitor metric on each problem's episodes alone (problems where it is undefined left out)."""
    usable, _, _ = split_monitor_errors(episodes)
    terms = {p: _terms(runs, TERMS[metric]) for p, runs in by_problem(usable).items()}
    return {p: math.fsum(values) / len(values) for p, values in terms.items() if values}


def condition_difference(
    standard: list[Episode], oracle: list[Episode], metric: str
) -> tuple[float, float, int]:
    """Oracle − Standard on one metric, paired by problem, with a permutation test.

    -> (mean over the problems both define of the per-problem difference,
    two-sided p-value of :func:`paired_permutation_p`, those problems).
    """
    a, b = per_problem(standard, metric), per_problem(oracle, metric)
    differences = [b[p] - a[p] for p in sorted(set(a) & set(b))]
    return mean(differences), paired_permutation_p(differences), len(differences)


def standard_vs_oracle_table(
    monitor: dict[MonitorKey, dict], groups: dict[MonitorKey, list[Episode]]
) -> Table:
    """Standard and Oracle side by side for every group run in both conditions, with
    the paired difference and its p-value (Int-Bench §5.1 compares φ and τ_rel this way).

    Each Standard increment is compared with the Oracle group of the same settings.
    """
    columns, ids = list(COMPARISON_KEYS), list(COMPARISON_KEYS)
    for name, label in COMPARISON_METRICS.items():
        columns += [f"{label} standard", f"{label} oracle", f"Δ{label}", f"p {label}"]
        ids += [f"{name}_standard", f"{name}_oracle", f"{name}_difference", f"{name}_p"]
    columns, ids = columns + ["n standard", "n oracle"], ids + ["n_standard", "n_oracle"]
    rows = []
    for key in [k for k in monitor if k.condition == "standard"]:
        oracle_key = key._replace(increment=NOT_APPLICABLE, condition="oracle")
        if oracle_key not in monitor:
            continue
        standard, oracle = monitor[key], monitor[oracle_key]
        row: list[Any] = [getattr(key, field) for field in COMPARISON_KEYS]
        for name in COMPARISON_METRICS:
            difference, p, _ = condition_difference(groups[key], groups[oracle_key], name)
            row += [standard[name], oracle[name], difference, p]
        rows.append(row + [standard["n_episodes"], oracle["n_episodes"]])
    return Table(
        "monitor_standard_vs_oracle",
        "Monitor: Standard vs Oracle",
        columns,
        rows,
        "Δ: Oracle − Standard, the mean over problems of the per-problem difference; p: two-sided "
        f"sign-flip permutation test over those problems ({PERMUTATIONS} flips).",
        ids=ids,
    )


def monitor_tables(
    monitor: dict[MonitorKey, dict], groups: dict[MonitorKey, list[Episode]]
) -> list[Table]:
    """The monitor table and, where groups ran in both conditions, Standard vs Oracle."""
    if not monitor:
        return []
    comparison = standard_vs_oracle_table(monitor, groups)
    return [monitor_table(monitor), *([comparison] if comparison.rows else [])]
