"""Analyses across feedback groups (feedback paper §4.1, §4.3), from episode records.

Each analysis reads the acc@1..acc@K curve of every feedback group
(:func:`feedback_curves`, errors excluded), e.g. ``history_lift(feedback_curves(records))``.

* Feedback controls (Table 1, Table 7): per student, acc@K and gain@K under
  self-refinement (``mode="self_refine"``), self-feedback (the matrix
  diagonal: the student's own model as its teacher) and best feedback (the
  teacher with the highest acc@K for that student, itself included), and
  their mean over the students that have all three.
* Marginal gain per turn (Fig. 4): acc@k − acc@(k−1) for k = 2..K, averaged
  over the student-teacher pairs of one matrix (domain, K, setting), with the share
  of the pairs' mean gain@K reached by each attempt.
* History lift and information-access lift (§4.3, Fig. 7, Figs. 18–20): the
  mean over matched (student, teacher) cells of AUC and acc@K in one setting
  minus the same cell in the baseline setting; cells are matched on
  everything else (domain, K, the other settings).

Only ``mode="teacher"`` groups are student-teacher cells.  Standard errors
are over cells (lifts, marginal gains) or students (control means).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from intbench.metrics.estimate import mean_and_se
from intbench.metrics.feedback import (
    SETTINGS,
    FeedbackKey,
    acc_at_k,
    auc,
    feedback_episode_groups,
    gain,
)
from intbench.metrics.groups import Records, split_errors
from intbench.metrics.matrix import DEFAULT_SETTING
from intbench.metrics.table import Table

Curves = dict[FeedbackKey, list[float]]
LIFT_METRICS = ("auc", "acc@K")
HISTORY = ("history",)
ACCESS = ("teacher_reference", "execution_context")
BASELINE_ACCESS = ("none", DEFAULT_SETTING[2])
"""The dense matrix's access: no reference, the env's default execution context."""
EARLIER_BASELINE_ACCESS = ("none", "feedback")
"""The same for runs made while the env's default context was ``feedback``."""


def feedback_curves(episodes: Records) -> Curves:
    """The acc@1..acc@K curve of every feedback group with usable episodes."""
    curves = {}
    for key, group in feedback_episode_groups(episodes).items():
        usable, _ = split_errors(group)
        if usable:
            curves[key] = acc_at_k(usable, key.k_max)
    return curves


def point(curve: list[float], metric: str) -> float:
    """A group's ``acc@K``, ``gain`` or ``auc``."""
    return {"acc@K": curve[-1], "gain": gain(curve), "auc": auc(curve)}[metric]


def _context(key: FeedbackKey) -> tuple:
    """What a comparison must hold fixed: domain, K and every setting."""
    return (key.domain, key.k_max, *(getattr(key, name) for name in SETTINGS))


# ---------------------------------------------------------- feedback controls
def feedback_controls(curves: Curves) -> dict[tuple, dict[str, Any]]:
    """Per (domain, K, settings, student): self-refinement, self-feedback and best feedback.

    Each condition is ``(acc@K, gain@K)`` or ``None`` when it was not run;
    ``best_teacher`` names the teacher of the best feedback.
    """
    teachers: dict[tuple, dict[str, list[float]]] = defaultdict(dict)
    refine: dict[tuple, list[float]] = {}
    for key, curve in curves.items():
        cell = (*_context(key), key.student)
        if key.mode == "teacher":
            teachers[cell][key.teacher] = curve
        elif key.mode == "self_refine":
            refine[cell] = curve
    controls = {}
    for cell in sorted(set(teachers) | set(refine)):
        by_teacher = teachers.get(cell, {})
        best = max(by_teacher, key=lambda t: point(by_teacher[t], "acc@K"), default=None)
        controls[cell] = {
            "self_refine": _acc_and_gain(refine.get(cell)),
            "self_feedback": _acc_and_gain(by_teacher.get(cell[-1])),
            "best_feedback": None if best is None else _acc_and_gain(by_teacher[best]),
            "best_teacher": best,
        }
    return controls


def _acc_and_gain(curve: list[float] | None) -> tuple[float, float] | None:
    return None if curve is None else (point(curve, "acc@K"), point(curve, "gain"))


CONTROLS = ("self_refine", "self_feedback", "best_feedback")


def control_means(controls: dict[tuple, dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """Table 1: per (domain, K, settings), the mean of each condition over the students
    that have all three, with its SE over those students."""
    complete: dict[tuple, list[dict]] = defaultdict(list)
    for cell, row in controls.items():
        if all(row[c] is not None for c in CONTROLS):
            complete[cell[:-1]].append(row)
    means: dict[tuple, dict[str, Any]] = {}
    for context, rows in sorted(complete.items()):
        means[context] = {"students": len(rows)}
        for condition in CONTROLS:
            for i, metric in enumerate(("acc", "gain")):
                means[context][f"{condition}_{metric}"] = mean_and_se(
                    [row[condition][i] for row in rows]
                )
    return means


def feedback_controls_table(curves: Curves) -> Table:
    """Table 7's per-student rows, then Table 1's mean over complete students."""
    controls = feedback_controls(curves)
    rows = _student_control_rows(controls) + _mean_control_rows(controls)
    conditions = ["self-refinement", "self-feedback", "best feedback"]
    return Table(
        "feedback_controls",
        "Feedback controls: self-refinement, self-feedback, best feedback (feedback paper Table 1)",
        ["domain", "K", *SETTINGS, "student"]
        + [f"{c} {m}" for c in conditions for m in ("acc@K", "gain@K")]
        + ["best teacher"],
        rows,
        "Self-feedback: the student's own model as its teacher (the matrix diagonal). Best "
        "feedback: the teacher with the highest acc@K for the student, picked after the fact. "
        "Means are over the students with all three conditions.",
        ids=["domain", "K", *SETTINGS, "student"]
        + [f"{c}_{m}" for c in CONTROLS for m in ("acc_at_k", "gain")]
        + ["best_teacher"],
    )


def _student_control_rows(controls: dict[tuple, dict]) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for cell, row in controls.items():
        if row["self_refine"] is None and row["self_feedback"] is None:
            continue  # no control: nothing to disentangle
        values = [v for c in CONTROLS for v in (row[c] or (math.nan, math.nan))]
        rows.append([*cell, *values, row["best_teacher"]])
    return rows


def _mean_control_rows(controls: dict[tuple, dict]) -> list[list[Any]]:
    """Per context, the means over complete students and their SEs."""
    rows: list[list[Any]] = []
    for context, means in control_means(controls).items():
        values = [means[f"{c}_{m}"][0] for c in CONTROLS for m in ("acc", "gain")]
        ses = [means[f"{c}_{m}"][1] for c in CONTROLS for m in ("acc", "gain")]
        rows.append([*context, f"mean of {means['students']} students", *values, None])
        rows.append([*context, "SE over students", *ses, None])
    return rows


# ---------------------------------------------------------- marginal gain per turn
def marginal_gains(curves: Curves) -> dict[tuple, dict[str, Any]]:
    """Per (domain, K, settings) with K >= 2 and a matrix (two or more student-teacher
    pairs): the mean over pairs of acc@k − acc@(k−1) for k = 2..K, with SEs over pairs,
    and each attempt's cumulative share of the pairs' mean gain@K."""
    by_context: dict[tuple, list[list[float]]] = defaultdict(list)
    for key, curve in curves.items():
        if key.mode == "teacher" and key.k_max >= 2:
            by_context[_context(key)].append(curve)
    result = {}
    for context, group in sorted(by_context.items()):
        if len(group) < 2:
            continue  # Fig. 4 averages over a matrix's pairs
        steps = np.diff(np.asarray(group, dtype=float), axis=1)
        per_turn = [mean_and_se(list(steps[:, i])) for i in range(steps.shape[1])]
        total = sum(m for m, _ in per_turn)
        cumulative = np.cumsum([m for m, _ in per_turn])
        shares = [float(c / total) if total else math.nan for c in cumulative]
        result[context] = {"per_turn": per_turn, "cumulative_share": shares, "pairs": len(group)}
    return result


def marginal_gain_table(curves: Curves) -> Table:
    """One row per attempt k >= 2 of each domain, K and setting."""
    rows = [
        [*context, k, mean, se, share, found["pairs"]]
        for context, found in marginal_gains(curves).items()
        for k, ((mean, se), share) in enumerate(
            zip(found["per_turn"], found["cumulative_share"], strict=True), start=2
        )
    ]
    return Table(
        "feedback_marginal_gain",
        "Marginal gain per attempt (feedback paper Fig. 4)",
        [
            "domain",
            "K",
            *SETTINGS,
            "attempt",
            "acc@k − acc@(k−1)",
            "SE",
            "share of gain@K",
            "pairs",
        ],
        rows,
        "Mean over student-teacher pairs (mode teacher); SE over pairs. The share is the "
        "cumulative mean marginal gain through attempt k over the mean gain@K.",
        ids=["domain", "K", *SETTINGS, "attempt", "marginal_gain", "se", "cumulative_share"]
        + ["pairs"],
    )


# ---------------------------------------------------------- setting lifts
def setting_lifts(
    curves: Curves, varied: tuple[str, ...], baseline: Callable[[list[tuple]], tuple | None]
) -> list[dict[str, Any]]:
    """Matched lifts of every value of the ``varied`` settings over the ``baseline`` one.

    Cells are (student, teacher) pairs of ``mode="teacher"`` groups; a cell counts
    when it was run at both values with the same domain, K and other settings.
    ``baseline`` picks the reference value from those present in a domain and K.
    Each row holds the lift per metric (mean, SE over cells) within one value of
    the other settings, and pooled over them (``"all"``) when there are several.
    """
    rows = []
    for (domain, k_max), by_value in sorted(_cells_by_value(curves, varied).items()):
        reference = baseline(list(by_value))
        if reference is None:
            continue
        for value in sorted(v for v in by_value if v != reference):
            matched = sorted(set(by_value[value]) & set(by_value[reference]))
            for fixed in _fixed_groups(matched):
                chosen = [c for c in matched if fixed == "all" or c[0] == fixed]
                rows.append(
                    {
                        "domain": domain,
                        "k_max": k_max,
                        "value": value,
                        "baseline": reference,
                        "fixed": fixed,
                        "cells": len(chosen),
                        "lift": _lifts(by_value[value], by_value[reference], chosen),
                    }
                )
    return rows


def _cells_by_value(
    curves: Curves, varied: tuple[str, ...]
) -> dict[tuple, dict[tuple, dict[tuple, list[float]]]]:
    """``{(domain, K): {varied value: {(other settings, student, teacher): curve}}}`` of the
    teacher-mode groups whose varied settings are known."""
    fixed_names = [n for n in SETTINGS if n not in varied]
    cells: dict[tuple, dict[tuple, dict[tuple, list[float]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for key, curve in curves.items():
        value = tuple(getattr(key, n) for n in varied)
        if key.mode != "teacher" or "unknown" in value:
            continue
        fixed = tuple(getattr(key, n) for n in fixed_names)
        cells[(key.domain, key.k_max)][value][(fixed, key.student, key.teacher)] = curve
    return cells


def _lifts(
    lifted: dict[tuple, list[float]], reference: dict[tuple, list[float]], chosen: list[tuple]
) -> dict[str, tuple[float, float]]:
    """Per metric, the mean and SE over the ``chosen`` cells of lifted minus reference."""
    return {
        metric: mean_and_se(
            [point(lifted[c], metric) - point(reference[c], metric) for c in chosen]
        )
        for metric in LIFT_METRICS
    }


def _fixed_groups(matched: list[tuple]) -> list:
    """The other settings' values the matched cells hold, and ``"all"`` when several."""
    values = sorted({cell[0] for cell in matched})
    return values + ["all"] if len(values) > 1 else values


def smallest_history(values: list[tuple]) -> tuple | None:
    """The shortest numeric history, the paper's baseline of history 1."""
    numeric = [v for v in values if v[0].isdigit()]
    return min(numeric, key=lambda v: int(v[0])) if numeric else None


def baseline_access(values: list[tuple]) -> tuple | None:
    """The dense matrix's access (no reference, default execution context), if it was run."""
    return next((a for a in (BASELINE_ACCESS, EARLIER_BASELINE_ACCESS) if a in values), None)


def history_lift(curves: Curves) -> list[dict[str, Any]]:
    """§4.3 RF5: every history against the shortest one, matched cells."""
    return setting_lifts(curves, HISTORY, smallest_history)


def access_lift(curves: Curves) -> list[dict[str, Any]]:
    """§4.3 RF6: every teacher reference / execution context against the dense matrix's."""
    return setting_lifts(curves, ACCESS, baseline_access)


def _lift_table(name: str, title: str, varied: str, fixed: str, rows: list[dict]) -> Table:
    body = [
        [
            row["domain"],
            row["k_max"],
            "/".join(row["value"]),
            "/".join(row["baseline"]),
            row["fixed"] if row["fixed"] == "all" else "/".join(row["fixed"]),
            *(v for metric in LIFT_METRICS for v in row["lift"][metric]),
            row["cells"],
        ]
        for row in rows
    ]
    return Table(
        name,
        title,
        ["domain", "K", varied, "baseline", fixed, "AUC lift", "SE", "acc@K lift", "SE", "cells"],
        body,
        "Mean over (student, teacher) cells run at both settings, all else equal; SE over "
        "cells. 'all' pools the cells of every value of the other settings.",
        ids=["domain", "K", "value", "baseline", "fixed", "auc_lift", "auc_se"]
        + ["acc_at_k_lift", "acc_at_k_se", "cells"],
    )


def history_lift_table(curves: Curves) -> Table:
    return _lift_table(
        "feedback_history_lift",
        "History lift over the shortest history (feedback paper §4.3, Fig. 7)",
        "history",
        "teacher reference/execution context",
        history_lift(curves),
    )


def access_lift_table(curves: Curves) -> Table:
    return _lift_table(
        "feedback_access_lift",
        "Information-access lift over no reference (feedback paper §4.3, Figs. 7, 18)",
        "teacher reference/execution context",
        "history",
        access_lift(curves),
    )


def feedback_analysis_tables(episodes: Records) -> list[Table]:
    """The analyses whose runs are present (tables with rows)."""
    curves = feedback_curves(episodes)
    tables = (
        feedback_controls_table(curves),
        marginal_gain_table(curves),
        history_lift_table(curves),
        access_lift_table(curves),
    )
    return [table for table in tables if table.rows]
