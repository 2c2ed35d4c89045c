"""Report tables: group episode records and summarise each group with :mod:`intbench.metrics`.

Monitor episodes are grouped by domain x student x teacher x post x condition,
feedback episodes by domain x student x teacher x mode x K.  Every number
comes from the metric functions; this module only groups, arranges and
formats.  People (``teacher="human:<id>"``) are pooled as one ``"human"``
teacher so that they sit next to the LLM teachers.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from intbench.metrics import (
    BOOTSTRAP_SAMPLES,
    Estimate,
    acc_at_k,
    best_minus_worst,
    feedback_summary,
    fixed_effects,
    monitor_summary,
    solver_vs_teacher,
    split_errors,
)
from intbench.records import Episode, as_episodes

HUMAN = "human"
NO_TEACHER = "none"
CONTROL_MODES = ("self_refine", "self_feedback")  # feedback modes without an outside teacher
MATRIX_METRICS = ("acc@1", "acc@K", "gain", "auc")


def teacher_label(teacher: str | None) -> str:
    """The teacher as reports group it: ``human:<id>`` -> ``"human"``, missing -> ``"none"``."""
    if not teacher:
        return NO_TEACHER
    return HUMAN if str(teacher).startswith("human:") else str(teacher)


class MonitorKey(NamedTuple):
    domain: str
    student: str
    teacher: str
    post: str
    condition: str


class FeedbackKey(NamedTuple):
    domain: str
    student: str
    teacher: str
    mode: str
    k_max: int


def monitor_key(episode: Episode) -> MonitorKey:
    """The monitor group an episode belongs to."""
    return MonitorKey(
        str(episode.domain),
        str(episode.student),
        teacher_label(episode.teacher),
        str(episode.config.get("post", "unknown")),
        str(episode.condition or "standard"),
    )


def _feedback_partial_key(episode: Episode) -> tuple[str, str, str, str]:
    return (
        str(episode.domain),
        str(episode.student),
        teacher_label(episode.teacher),
        str(episode.condition or "teacher"),
    )


# ----------------------------------------------------------------- tables
@dataclass
class Table:
    """A titled table whose cells are numbers, strings, ``None`` or :class:`Estimate`.

    ``name`` is the file stem of its Markdown and CSV files.
    """

    name: str
    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""
    ids: list[str] | None = None  # ASCII column names for the CSV header; the labels if None

    def __post_init__(self) -> None:
        if self.ids is not None and len(self.ids) != len(self.columns):
            raise ValueError(
                f"table {self.name}: {len(self.ids)} ids for {len(self.columns)} columns"
            )

    def to_markdown(self) -> str:
        """A GitHub-flavoured Markdown table (estimates as ``value [low, high]``)."""
        lines = [f"### {self.title}", ""]
        if self.note:
            lines += [self.note, ""]
        lines.append("| " + " | ".join(self.columns) + " |")
        lines.append("|" + "---|" * len(self.columns))
        for row in self.rows:
            lines.append("| " + " | ".join(format_cell(c).replace("|", "\\|") for c in row) + " |")
        return "\n".join(lines) + "\n"

    def to_csv(self) -> str:
        """CSV text; an estimate column ``c`` becomes ``c``, ``c_low``, ``c_high``."""
        estimate_cols = {
            i
            for i in range(len(self.columns))
            if any(isinstance(r[i], Estimate) for r in self.rows)
        }
        header: list[str] = []
        for i, name in enumerate(self.ids or self.columns):
            header += [name, f"{name}_low", f"{name}_high"] if i in estimate_cols else [name]
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        for row in self.rows:
            out: list[str] = []
            for i, cell in enumerate(row):
                if i in estimate_cols:
                    est = cell if isinstance(cell, Estimate) else Estimate(math.nan)
                    out += [_csv_number(est.value), _csv_number(est.low), _csv_number(est.high)]
                else:
                    out.append(
                        _csv_number(cell)
                        if isinstance(cell, float)
                        else ""
                        if cell is None
                        else str(cell)
                    )
            writer.writerow(out)
        return buffer.getvalue()


def format_cell(cell: Any) -> str:
    """How a cell reads in Markdown, HTML and the terminal."""
    if cell is None:
        return "—"
    if isinstance(cell, Estimate):
        return str(cell)
    if isinstance(cell, float):
        return "n/a" if math.isnan(cell) else f"{cell:.3f}"
    return str(cell)


def _csv_number(value: float) -> str:
    # empty rather than "nan": spreadsheets and pandas read it as missing
    return "" if value is None or math.isnan(value) else repr(float(value))


# --------------------------------------------------------------- matrices
@dataclass
class Matrix:
    """Student x teacher values of one domain and K, from ``mode="teacher"`` runs.

    ``values[metric][(student, column)]`` holds the point estimates; columns
    are the teachers followed by the control modes that were run.
    """

    domain: str
    k_max: int
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
        return f"{self.domain} (K={self.k_max})"

    def teacher_pairs(self, metric: str) -> dict[tuple[str, str], float]:
        """The (student, teacher) cells of one metric, controls left out, NaN dropped."""
        teachers = set(self.teachers)
        return {
            k: v for k, v in self.values[metric].items() if k[1] in teachers and not math.isnan(v)
        }


# ------------------------------------------------------------ the summary
@dataclass
class ReportData:
    """Everything the report shows, computed once from the episodes."""

    monitor: dict[MonitorKey, dict]
    feedback: dict[FeedbackKey, dict]
    matrices: list[Matrix]
    tables: list[Table]
    other_protocols: dict[str, int]


def summarize(episodes: Iterable[Episode | dict], samples: int = BOOTSTRAP_SAMPLES) -> ReportData:
    """Group the episodes, compute every summary with its CI, and lay out the tables."""
    monitor_groups: dict[MonitorKey, list[Episode]] = defaultdict(list)
    feedback_partial: dict[tuple, list[Episode]] = defaultdict(list)
    other: dict[str, int] = defaultdict(int)
    generalization: list[Episode] = []
    for episode in as_episodes(episodes):
        protocol = episode.protocol
        if protocol == "monitor":
            monitor_groups[monitor_key(episode)].append(episode)
        elif protocol == "feedback":
            feedback_partial[_feedback_partial_key(episode)].append(episode)
        else:
            other[str(protocol)] += 1
            if protocol == "generalization":
                generalization.append(episode)

    monitor = {
        key: monitor_summary(group, samples=samples)
        for key, group in sorted(monitor_groups.items())
    }
    feedback_groups = _split_by_k(feedback_partial)
    feedback = {
        key: feedback_summary(group, k_max=key.k_max, samples=samples)
        for key, group in sorted(feedback_groups.items())
    }
    matrices = build_matrices(feedback, feedback_groups)

    tables: list[Table] = []
    if monitor:
        tables.append(monitor_table(monitor))
        comparison = standard_vs_oracle_table(monitor)
        if comparison.rows:
            tables.append(comparison)
    if feedback:
        tables.append(feedback_table(feedback))
    for matrix in matrices:
        tables += matrix_tables(matrix)
    if generalization:
        from intbench.generalization import generalization_table

        tables.append(generalization_table(generalization, samples))
    return ReportData(monitor, feedback, matrices, tables, dict(other))


def _split_by_k(partial: dict[tuple, list[Episode]]) -> dict[FeedbackKey, list[Episode]]:
    """Attach K to each group: the configured ``k_max``, else the most attempts seen."""
    groups: dict[FeedbackKey, list[Episode]] = defaultdict(list)
    for (domain, student, teacher, mode), episodes in partial.items():
        fallback = max([len(e.attempts) for e in episodes] + [1])
        for episode in episodes:
            configured = episode.config.get("k_max")
            k = configured if isinstance(configured, int) and configured >= 1 else fallback
            groups[FeedbackKey(domain, student, teacher, mode, k)].append(episode)
    return dict(groups)


def build_matrices(
    feedback: dict[FeedbackKey, dict], groups: dict[FeedbackKey, list[Episode]]
) -> list[Matrix]:
    """One matrix per domain and K with several students or several teachers."""
    by_domain: dict[tuple[str, int], list[FeedbackKey]] = defaultdict(list)
    for key in feedback:
        by_domain[(key.domain, key.k_max)].append(key)
    matrices = []
    for (domain, k_max), keys in sorted(by_domain.items()):
        teacher_keys = [k for k in keys if k.mode == "teacher"]
        students = sorted({k.student for k in teacher_keys})
        teachers = sorted({k.teacher for k in teacher_keys})
        if len(students) < 2 and len(teachers) < 2:
            continue
        controls = [
            m for m in CONTROL_MODES if any(k.mode == m and k.student in students for k in keys)
        ]
        values: dict[str, dict[tuple[str, str], float]] = {m: {} for m in MATRIX_METRICS}
        for key in keys:
            if key.student not in students or (key.mode != "teacher" and key.mode not in controls):
                continue
            column = key.teacher if key.mode == "teacher" else key.mode
            summary = feedback[key]
            for metric in MATRIX_METRICS:
                name = f"acc@{k_max}" if metric == "acc@K" else metric
                values[metric][(key.student, column)] = summary[name].value
        solo = _solo_acc1(domain, teachers, groups)
        matrices.append(Matrix(domain, k_max, students, teachers, controls, values, solo))
    return matrices


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


# ------------------------------------------------------------ the layouts
MONITOR_METRIC_COLUMNS = [
    ("phi", "φ"),
    ("phi_correct", "φ_correct"),
    ("phi_incorrect", "φ_incorrect"),
    ("tau_abs", "τ_abs"),
    ("tau_rel", "τ_rel"),
    ("H", "H"),
    ("wrong_to_right", "wrong→right"),
    ("right_to_wrong", "right→wrong"),
    ("leak_rate", "leak rate"),
]


def monitor_table(monitor: dict[MonitorKey, dict]) -> Table:
    """One row per monitor group with every metric and its 95% CI."""
    keys = list(MonitorKey._fields)
    counts = ["n", "interventions", "excluded", "errors"]
    rows = []
    for key, s in monitor.items():
        rows.append(
            [*key, *(s[name] for name, _ in MONITOR_METRIC_COLUMNS)]
            + [s["n_episodes"], s["n_interventions"], s["n_excluded"], s["n_errors"]]
        )
    return Table(
        "monitor",
        "Monitor protocol",
        keys + [label for _, label in MONITOR_METRIC_COLUMNS] + counts,
        rows,
        "95% bootstrap CIs over problems. τ and H are over applied interventions; errors are excluded from every metric.",
        ids=keys + [name for name, _ in MONITOR_METRIC_COLUMNS] + counts,
    )


COMPARISON_METRICS = [
    ("phi", "φ"),
    ("tau_rel", "τ_rel"),
    ("H", "H"),
    ("wrong_to_right", "w→r"),
    ("right_to_wrong", "r→w"),
]


def standard_vs_oracle_table(monitor: dict[MonitorKey, dict]) -> Table:
    """Standard and Oracle side by side for every group run in both conditions."""
    columns = ids = ["domain", "student", "teacher", "post"]
    for name, label in COMPARISON_METRICS:
        columns = columns + [f"{label} standard", f"{label} oracle"]
        ids = ids + [f"{name}_standard", f"{name}_oracle"]
    columns, ids = columns + ["n standard", "n oracle"], ids + ["n_standard", "n_oracle"]
    rows = []
    for base in sorted({key[:4] for key in monitor}):
        standard = monitor.get(MonitorKey(*base, "standard"))
        oracle = monitor.get(MonitorKey(*base, "oracle"))
        if standard is None or oracle is None:
            continue
        row: list[Any] = list(base)
        for name, _ in COMPARISON_METRICS:
            row += [standard[name], oracle[name]]
        rows.append(row + [standard["n_episodes"], oracle["n_episodes"]])
    return Table(
        "monitor_standard_vs_oracle", "Monitor: Standard vs Oracle", columns, rows, ids=ids
    )


FEEDBACK_COLUMNS = [
    ("acc_at_1", "acc@1"),
    ("acc_at_k", "acc@K"),
    ("gain", "gain"),
    ("normalized_gain", "normalized gain"),
    ("auc", "AUC"),
    ("first_step_gain", "acc@2−acc@1"),
    ("leak_rate", "leak rate"),
]


def feedback_table(feedback: dict[FeedbackKey, dict]) -> Table:
    """One row per feedback group: acc@1, acc@K, gains, AUC, leak rate."""
    keys = ["domain", "student", "teacher", "mode", "K"]
    counts = ["n", "problems", "errors"]
    rows = []
    for key, s in feedback.items():
        rows.append(
            [*key, s["acc@1"], s[f"acc@{key.k_max}"], s["gain"], s["normalized_gain"], s["auc"]]
            + [
                s["first_step_gain"],
                s["leak_rate"],
                s["n_episodes"],
                s["n_problems"],
                s["n_errors"],
            ]
        )
    return Table(
        "feedback",
        "Feedback protocol",
        keys + [label for _, label in FEEDBACK_COLUMNS] + counts,
        rows,
        "acc@K at each group's K; 95% bootstrap CIs over problems; errors are excluded from every metric.",
        ids=keys + [name for name, _ in FEEDBACK_COLUMNS] + counts,
    )


def matrix_tables(matrix: Matrix) -> list[Table]:
    """The dense student x teacher matrices and, where defined, their analyses."""
    stem = f"{slug(matrix.domain)}_k{matrix.k_max}"
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
            )
        )
    analysis = matrix_analysis_table(matrix, stem)
    if analysis.rows:
        tables.append(analysis)
    return tables


def matrix_analysis_table(matrix: Matrix, stem: str) -> Table:
    """Fixed-effect R², best-minus-worst teacher, and solver-vs-teacher rank agreement."""
    rows: list[list[Any]] = []
    for metric in ("gain", "auc"):
        pairs = matrix.teacher_pairs(metric)
        if len({s for s, _ in pairs}) >= 2 and len({t for _, t in pairs}) >= 2:
            for name, value in fixed_effects(pairs).items():
                rows.append(["fixed effects", metric, "all", name, value])
        for student, value in best_minus_worst(pairs).items():
            if sum(1 for s, _ in pairs if s == student) >= 2:
                rows.append(["best − worst teacher", metric, student, "difference", value])
    for teacher, acc in sorted(matrix.solo_acc1.items()):
        rows.append(["teacher solo acc@1", "acc@1", teacher, "as student", acc])
    if len(matrix.solo_acc1) >= 2:
        for student, result in solver_vs_teacher(
            matrix.solo_acc1, matrix.teacher_pairs("auc")
        ).items():
            rows.append(
                ["solver vs teacher (AUC)", "auc", student, "spearman ρ", result["spearman"]]
            )
            rows.append(
                [
                    "solver vs teacher (AUC)",
                    "auc",
                    student,
                    "inversion rate",
                    result["inversion_rate"],
                ]
            )
    return Table(
        f"matrix_analysis_{stem}",
        f"Matrix analyses: {matrix.label}",
        ["analysis", "metric", "student", "statistic", "value"],
        rows,
        "A teacher's solo acc@1 is the acc@1 of the runs where that model is the student.",
    )


def slug(text: str) -> str:
    """``text`` reduced to a file-name-safe stem."""
    return "".join(ch if ch.isalnum() else "_" for ch in text).strip("_") or "x"
