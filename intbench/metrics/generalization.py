"""The generalization metric G, computed from ``protocol="generalization"`` records.

Definition.  Take the records of one group (domain, student, teacher, the
original episode's condition) and one context ``c``, leaving out records
with ``error`` set (model or grader failures; they are counted, never scored
as wrong).  For each original problem ``p``::

    g_c(p) = mean correctness of the records on variants of p
             (over all its variants and all original episodes of p)

    G_c     = mean over original problems p of g_c(p)
    ΔG_c    = mean over problems p with records under both c and No-Context
              of g_c(p) - g_no_context(p)

So every original problem weighs the same however many variants or episodes
it has, and ΔG is a paired difference (0 for No-Context itself).  The 95%
confidence intervals resample original problems.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any, NamedTuple

from intbench.metrics.estimate import BOOTSTRAP_SAMPLES, problem_mean
from intbench.metrics.groups import teacher_label
from intbench.metrics.table import Table
from intbench.records import Episode, as_episodes

PROTOCOL = "generalization"

CONTEXT_LABELS = {
    "no_context": "No-Context",
    "problem_context": "Problem-Context",
    "intervention_context": "Intervention-Context",
}
CONTEXTS = tuple(CONTEXT_LABELS)
"""The context conditions of a generalization record, in the order reports show them."""


class GeneralizationKey(NamedTuple):
    domain: str
    student: str
    teacher: str
    original_condition: str


def _correct(record: Episode) -> float:
    return float(bool(record.attempts) and record.attempts[0].correct)


def _original(record: Episode) -> str:
    return record.metadata["original_problem_id"]


def per_problem_scores(records: Iterable[Episode | dict]) -> dict[str, float]:
    """``g(p)``: mean correctness per original problem (records of one context, no errors)."""
    scores: dict[str, list[float]] = defaultdict(list)
    for record in as_episodes(records):
        scores[_original(record)].append(_correct(record))
    return {problem: sum(v) / len(v) for problem, v in scores.items()}


def generalization_scores(
    records: Iterable[Episode | dict], samples: int = BOOTSTRAP_SAMPLES
) -> dict:
    """G and ΔG per context for the records of one group.

    Returns ``{context: {"G": Estimate, "delta": Estimate, "n_problems",
    "n_records", "n_errors"}}`` for every context that has records;
    ``delta`` is NaN when there are no No-Context records to pair with.
    """
    by_context: dict[str, list[Episode]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    for record in as_episodes(records):
        if record.protocol != PROTOCOL:
            continue
        if record.error:
            errors[record.condition] += 1
        else:
            by_context[record.condition].append(record)
    reference = per_problem_scores(by_context.get("no_context", []))
    summary = {}
    for context in [c for c in CONTEXTS if c in by_context or c in errors]:
        scores = per_problem_scores(by_context.get(context, []))
        paired = {p: scores[p] - reference[p] for p in scores if p in reference}
        summary[context] = {
            "G": problem_mean(scores, samples),
            "delta": problem_mean(paired, samples),
            "n_problems": len(scores),
            "n_records": len(by_context.get(context, [])),
            "n_errors": errors.get(context, 0),
        }
    return summary


def group_key(record: Episode) -> GeneralizationKey:
    """The group a generalization record belongs to (people pooled as ``human``)."""
    return GeneralizationKey(
        record.domain,
        record.student,
        teacher_label(record.teacher),
        str(record.metadata.get("original_condition") or ""),
    )


def generalization_summary(
    episodes: Iterable[Episode | dict], samples: int = BOOTSTRAP_SAMPLES
) -> dict[GeneralizationKey, dict]:
    """:func:`generalization_scores` for every group of the generalization records in ``episodes``."""
    groups: dict[GeneralizationKey, list[Episode]] = defaultdict(list)
    for record in as_episodes(episodes):
        if record.protocol == PROTOCOL:
            groups[group_key(record)].append(record)
    return {key: generalization_scores(groups[key], samples) for key in sorted(groups)}


def generalization_table(
    episodes: Iterable[Episode | dict], samples: int = BOOTSTRAP_SAMPLES
) -> Table:
    """The report table: G and ΔG per context for each group.

    Records of other protocols are ignored; the table has no rows when there
    are no generalization records.
    """
    keys = list(GeneralizationKey._fields)
    columns, ids = list(keys), list(keys)
    for context in CONTEXTS:
        columns.append(f"G {CONTEXT_LABELS[context]}")
        ids.append(f"G_{context}")
    for context in CONTEXTS[1:]:
        columns.append(f"ΔG {CONTEXT_LABELS[context]}")
        ids.append(f"delta_{context}")
    columns += ["problems", "records", "errors"]
    ids += ["n_problems", "n_records", "n_errors"]
    rows = []
    for key, summary in generalization_summary(episodes, samples).items():
        row: list[Any] = list(key)
        row += [summary[c]["G"] if c in summary else None for c in CONTEXTS]
        row += [summary[c]["delta"] if c in summary else None for c in CONTEXTS[1:]]
        row += [
            max(s["n_problems"] for s in summary.values()),
            sum(s["n_records"] for s in summary.values()),
            sum(s["n_errors"] for s in summary.values()),
        ]
        rows.append(row)
    return Table(
        "generalization",
        "Generalization to variant problems",
        columns,
        rows,
        "G: accuracy on variants, averaged per original problem, then over problems. "
        "ΔG: paired difference to No-Context over the same problems. "
        "95% bootstrap CIs over original problems; errors are excluded.",
        ids=ids,
        headline=[
            "domain",
            "student",
            "teacher",
            *(f"G_{c}" for c in CONTEXTS),
            "n_records",
            "n_errors",
        ],
    )
