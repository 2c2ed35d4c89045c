"""The dense student x teacher matrices of the feedback protocol and their analyses.

A matrix holds one feedback metric per (student, teacher) cell of a domain
and K, from ``mode="teacher"`` runs, with the control modes as extra columns.
Its diagonal (teacher = student) is self-feedback: the student's own model
in the teacher role with the teacher prompt (feedback paper Table 7, §4.2);
the feedback env's ``mode="self_feedback"`` runs land there.  The
``self_critique`` column is a different control: the student reviewing its
own attempt with a critique prompt.
The analyses ask how much of a cell's value the teacher explains (fixed
effects), how far apart a student's best and worst teacher are, and whether a
stronger solver makes a better teacher.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from intbench.metrics.estimate import mean_and_se
from intbench.metrics.feedback import SETTINGS, FeedbackKey, acc_at_k
from intbench.metrics.groups import split_errors
from intbench.metrics.table import Table, slug
from intbench.records import Episode

CONTROL_MODES = ("self_refine", "self_critique")  # feedback modes without an outside teacher
LEGACY_MODES = {"self_feedback": "self_critique"}
"""Conditions of older records -> the column they belong to: ``self_feedback`` episodes
were once written with the critique prompt (newer ones are recorded as the diagonal)."""
DIAGONAL_NOTE = (
    "The diagonal (teacher = student) is self-feedback: the student's own model with the "
    "teacher prompt (feedback paper Table 7). self_refine: retries without feedback; "
    "self_critique: the student reviewing its own attempt with a critique prompt."
)
MATRIX_METRICS = ("acc@1", "acc@K", "gain", "auc")
DEFAULT_SETTING = ("1", "none", "structured", "visible")
"""The feedback env's default history, teacher reference, execution context and tests shown."""


# ------------------------------------------------------------- statistics
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


def _ranks(scores: Sequence[float]) -> np.ndarray:
    """Average ranks (ties share the mean rank), 1-based."""
    values = np.asarray(scores, dtype=float)
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


# --------------------------------------------------------------- matrices
@dataclass
class Matrix:
    """Student x teacher values of one domain, K and setting (history, teacher
    reference, execution context), from ``mode="teacher"`` runs.

    ``values[metric][(student, column)]`` holds the point estimates; columns
    are the teachers followed by the control modes that were run.
    """

    domain: str
    k_max: int
    setting: tuple[str, ...]
    students: list[str]
    teachers: list[str]
    controls: list[str]
    values: dict[str, dict[tuple[str, str], float]]
    solo_acc1: dict[str, float] = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        return self.teachers + self.controls

    @property
    def label(self) -> str:
        settings = ", ".join(f"{n}={v}" for n, v in zip(SETTINGS, self.setting, strict=True))
        return f"{self.domain} (K={self.k_max}, {settings})"

    @property
    def stem(self) -> str:
        """The file stem of its tables and figure; the settings join it unless the defaults."""
        base = f"{slug(self.domain)}_k{self.k_max}"
        return base if self.setting == DEFAULT_SETTING else f"{base}_{slug('_'.join(self.setting))}"

    def self_feedback(self, metric: str) -> dict[str, float]:
        """The diagonal: each student's value with its own model as teacher, NaN dropped."""
        return {
            student: value
            for (student, teacher), value in self.values[metric].items()
            if student == teacher and teacher in self.teachers and not math.isnan(value)
        }

    def teacher_pairs(self, metric: str) -> dict[tuple[str, str], float]:
        """The (student, teacher) cells of one metric, controls left out, NaN dropped."""
        teachers = set(self.teachers)
        return {
            k: v for k, v in self.values[metric].items() if k[1] in teachers and not math.isnan(v)
        }


def build_matrices(
    feedback: dict[FeedbackKey, dict], groups: dict[FeedbackKey, list[Episode]]
) -> list[Matrix]:
    """One matrix per domain, K and setting with several students or several teachers."""
    by_domain: dict[tuple, list[FeedbackKey]] = defaultdict(list)
    for key in feedback:
        group = (key.domain, key.k_max, *(getattr(key, n) for n in SETTINGS))
        by_domain[group].append(key)
    matrices = []
    for (domain, k_max, *setting), keys in sorted(by_domain.items()):
        teacher_keys = [k for k in keys if k.mode == "teacher"]
        students = sorted({k.student for k in teacher_keys})
        teachers = sorted({k.teacher for k in teacher_keys})
        if len(students) < 2 and len(teachers) < 2:
            continue
        controls = [
            m
            for m in CONTROL_MODES
            if any(_column_mode(k) == m and k.student in students for k in keys)
        ]
        values = _cell_values(feedback, keys, k_max, students, controls)
        solo = _solo_acc1(domain, teachers, groups)
        matrices.append(
            Matrix(domain, k_max, tuple(setting), students, teachers, controls, values, solo)
        )
    return matrices


def _cell_values(
    feedback: dict[FeedbackKey, dict],
    keys: list[FeedbackKey],
    k_max: int,
    students: list[str],
    controls: list[str],
) -> dict[str, dict[tuple[str, str], float]]:
    """Per metric, the value of each (student, teacher or control) cell of one matrix."""
    values: dict[str, dict[tuple[str, str], float]] = {m: {} for m in MATRIX_METRICS}
    for key in keys:
        mode = _column_mode(key)
        if key.student not in students or (mode != "teacher" and mode not in controls):
            continue
        column = key.teacher if mode == "teacher" else mode
        summary = feedback[key]
        for metric in MATRIX_METRICS:
            name = f"acc@{k_max}" if metric == "acc@K" else metric
            values[metric][(key.student, column)] = summary[name].value
    return values


def _column_mode(key: FeedbackKey) -> str:
    return LEGACY_MODES.get(key.mode, key.mode)


def _solo_acc1(
    domain: str, teachers: list[str], groups: dict[FeedbackKey, list[Episode]]
) -> dict[str, float]:
    """A teacher model's own acc@1: the acc@1 of all runs where it is the student."""
    solo = {}
    for teacher in teachers:
        runs = [
            e
            for key, group in groups.items()
            if key.domain == domain and key.student == teacher
            for e in group
        ]
        usable, _ = split_errors(runs)
        if usable:
            solo[teacher] = acc_at_k(usable, 1)[0]
    return solo


def matrix_tables(matrix: Matrix) -> list[Table]:
    """The dense student x teacher matrices and, where defined, their analyses."""
    stem = matrix.stem
    tables = []
    for metric in MATRIX_METRICS:
        rows = [
            [student, *(matrix.values[metric].get((student, c), math.nan) for c in matrix.columns)]
            for student in matrix.students
        ]
        title = f"Matrix {metric.replace('K', str(matrix.k_max))}: {matrix.label}, rows students, columns teachers"
        tables.append(
            Table(
                f"matrix_{metric.replace('@', '')}_{stem}",
                title,
                ["student", *matrix.columns],
                rows,
                DIAGONAL_NOTE,
            )
        )
    for table in (matrix_analysis_table(matrix, stem), matrix_summary_table(matrix, stem)):
        if table.rows:
            tables.append(table)
    return tables


def matrix_analysis_table(matrix: Matrix, stem: str) -> Table:
    """Fixed-effect R², best-minus-worst teacher, and solver-vs-teacher rank agreement."""
    rows = _self_feedback_rows(matrix) + _teacher_effect_rows(matrix) + _solo_rows(matrix)
    return Table(
        f"matrix_analysis_{stem}",
        f"Matrix analyses: {matrix.label}",
        ["analysis", "metric", "student", "statistic", "value"],
        rows,
        "Self-feedback is the diagonal cell: the student's own model as teacher, with the "
        "teacher prompt. A teacher's solo acc@1 is the acc@1 of the runs where that model is "
        "the student.",
    )


def _self_feedback_rows(matrix: Matrix) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for metric in ("acc@K", "gain"):
        for student, value in sorted(matrix.self_feedback(metric).items()):
            rows.append(["self-feedback (diagonal)", metric, student, "teacher = student", value])
    return rows


def _teacher_effect_rows(matrix: Matrix) -> list[list[Any]]:
    """Fixed effects (with two students and two teachers) and best-minus-worst teacher."""
    rows: list[list[Any]] = []
    for metric in ("gain", "auc"):
        pairs = matrix.teacher_pairs(metric)
        if len({s for s, _ in pairs}) >= 2 and len({t for _, t in pairs}) >= 2:
            for name, value in fixed_effects(pairs).items():
                rows.append(["fixed effects", metric, "all", name, value])
        for student, value in best_minus_worst(pairs).items():
            if sum(1 for s, _ in pairs if s == student) >= 2:
                rows.append(["best − worst teacher", metric, student, "difference", value])
    return rows


def _solo_rows(matrix: Matrix) -> list[list[Any]]:
    """Each teacher's solo acc@1 and, with two or more, how it ranks against teaching."""
    rows: list[list[Any]] = []
    for teacher, acc in sorted(matrix.solo_acc1.items()):
        rows.append(["teacher solo acc@1", "acc@1", teacher, "as student", acc])
    if len(matrix.solo_acc1) >= 2:
        for student, result in solver_vs_teacher(
            matrix.solo_acc1, matrix.teacher_pairs("auc")
        ).items():
            for statistic, name in (
                ("spearman ρ", "spearman"),
                ("inversion rate", "inversion_rate"),
            ):
                rows.append(["solver vs teacher (AUC)", "auc", student, statistic, result[name]])
    return rows


def teacher_range_summary(pairs: dict[tuple[str, str], float]) -> dict[str, tuple]:
    """Table 4: over students with two or more teachers, the mean (and SE) of the worst
    teacher's value, the best teacher's value and their gap."""
    per_student: dict[str, list[float]] = defaultdict(list)
    for (student, _), value in pairs.items():
        per_student[student].append(value)
    ranged = [values for values in per_student.values() if len(values) >= 2]
    worst, best = [min(v) for v in ranged], [max(v) for v in ranged]
    return {
        "worst": (*mean_and_se(worst), len(ranged)),
        "best": (*mean_and_se(best), len(ranged)),
        "best − worst": (
            *mean_and_se([b - w for b, w in zip(best, worst, strict=True)]),
            len(ranged),
        ),
    }


def solver_vs_teacher_summary(
    solo_acc1: dict[str, float], auc_pairs: dict[tuple[str, str], float]
) -> dict[str, tuple]:
    """Table 5: mean Spearman ρ and inversion rate over the students where each is defined."""
    per_student = solver_vs_teacher(solo_acc1, auc_pairs).values()
    summary = {}
    for name, statistic in (("spearman ρ", "spearman"), ("inversion rate", "inversion_rate")):
        values = [r[statistic] for r in per_student if not math.isnan(r[statistic])]
        summary[name] = (*mean_and_se(values), len(values))
    return summary


def matrix_summary_table(matrix: Matrix, stem: str) -> Table:
    """The matrix analyses as the paper tabulates them: means ± SE over students."""
    rows: list[list[Any]] = []
    for metric in ("auc", "acc@K"):
        pairs = matrix.teacher_pairs(metric)
        if len({t for _, t in pairs}) >= 2:
            for statistic, values in teacher_range_summary(pairs).items():
                rows.append(["teacher range (Table 4)", metric, statistic, *values])
    if len(matrix.solo_acc1) >= 2:
        summary = solver_vs_teacher_summary(matrix.solo_acc1, matrix.teacher_pairs("auc"))
        for statistic, values in summary.items():
            rows.append(["solver vs teacher (Table 5)", "auc", statistic, *values])
    return Table(
        f"matrix_summary_{stem}",
        f"Matrix analyses over students: {matrix.label}",
        ["analysis", "metric", "statistic", "mean", "SE", "students"],
        rows,
        "Means over students with the statistic defined; SE = sample SD / √students. "
        "Best and worst teacher are taken per metric.",
        ids=["analysis", "metric", "statistic", "mean", "se", "students"],
    )
