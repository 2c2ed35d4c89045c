"""Generalization to variant problems (Int-Bench §3.5), from ``protocol="generalization"`` records.

Definition.  Take the records of one group (domain, student, teacher, the
original episode's condition), leaving out records with ``error`` set (model
or grader failures; they are counted, never scored as wrong).  A
reference-variant pair ``i`` is an original problem with one of its variants;
its correctness under a context ``c`` is the mean correctness of its records
under ``c`` (one per original episode and repeat)::

    accuracy_c = mean over the pairs run under c of correct_c(i)
    G_i        = correct_c(i) - correct_no_context(i)
    G_c        = mean of G_i over the M pairs run under both c and No-Context

``G`` is the paper's generalization helpfulness (0 for No-Context itself, so
it is shown for the two with-context conditions).  The 95% confidence
intervals resample original problems, keeping each one's pairs together.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any, NamedTuple

from intbench.metrics.estimate import BOOTSTRAP_SAMPLES, Estimate, ProblemResamples
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
WITH_CONTEXT = CONTEXTS[1:]

Pair = tuple[str, str]
"""(original problem id, variant problem id)."""


class GeneralizationKey(NamedTuple):
    domain: str
    student: str
    teacher: str
    original_condition: str


def _correct(record: Episode) -> float:
    return float(bool(record.attempts) and record.attempts[0].correct)


def _pair(record: Episode) -> Pair:
    return record.metadata["original_problem_id"], record.problem_id


def per_pair_scores(records: Iterable[Episode | dict]) -> dict[Pair, float]:
    """Mean correctness per reference-variant pair (records of one context, no errors)."""
    scores: dict[Pair, list[float]] = defaultdict(list)
    for record in as_episodes(records):
        scores[_pair(record)].append(_correct(record))
    return {pair: sum(v) / len(v) for pair, v in scores.items()}


def _pair_mean(values: dict[Pair, float], samples: int) -> Estimate:
    """The mean over pairs, with a CI from resampling original problems."""
    by_original: dict[str, list[float]] = defaultdict(list)
    for (original, _), value in values.items():
        by_original[original].append(value)
    return ProblemResamples(by_original, samples).mean(by_original)


def generalization_scores(
    records: Iterable[Episode | dict], samples: int = BOOTSTRAP_SAMPLES
) -> dict:
    """Accuracy and G per context for the records of one group.

    Returns ``{context: {"accuracy": Estimate, "G": Estimate, "n_pairs",
    "n_problems", "n_records", "n_errors"}}`` for every context that has
    records; ``G`` is NaN when no pair was also run without context.
    """
    by_context: dict[str | None, list[Episode]] = defaultdict(list)
    errors: dict[str | None, int] = defaultdict(int)
    for record in as_episodes(records):
        if record.protocol != PROTOCOL:
            continue
        if record.error:
            errors[record.condition] += 1
        else:
            by_context[record.condition].append(record)
    reference = per_pair_scores(by_context.get("no_context", []))
    summary = {}
    for context in [c for c in CONTEXTS if c in by_context or c in errors]:
        scores = per_pair_scores(by_context.get(context, []))
        paired = {i: scores[i] - reference[i] for i in scores if i in reference}
        summary[context] = {
            "accuracy": _pair_mean(scores, samples),
            "G": _pair_mean(paired, samples),
            "n_pairs": len(scores),
            "n_problems": len({original for original, _ in scores}),
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
    """The report table: accuracy per context and G per with-context condition, per group.

    Records of other protocols are ignored; the table has no rows when there
    are no generalization records.
    """
    keys = list(GeneralizationKey._fields)
    columns, ids = list(keys), list(keys)
    for context in CONTEXTS:
        columns.append(f"accuracy {CONTEXT_LABELS[context]}")
        ids.append(f"accuracy_{context}")
    for context in WITH_CONTEXT:
        columns.append(f"G {CONTEXT_LABELS[context]}")
        ids.append(f"G_{context}")
    columns += ["pairs", "problems", "records", "errors"]
    ids += ["n_pairs", "n_problems", "n_records", "n_errors"]
    rows = []
    for key, summary in generalization_summary(episodes, samples).items():
        row: list[Any] = list(key)
        row += [summary[c]["accuracy"] if c in summary else None for c in CONTEXTS]
        row += [summary[c]["G"] if c in summary else None for c in WITH_CONTEXT]
        row += [
            max(s["n_pairs"] for s in summary.values()),
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
        "accuracy: correct on the variants, per reference-variant pair, averaged over pairs. "
        "G (Int-Bench §3.5): mean over pairs of correct with the context − correct with "
        "No-Context. 95% bootstrap CIs over original problems; errors are excluded.",
        ids=ids,
        headline=[
            "domain",
            "student",
            "teacher",
            *(f"accuracy_{c}" for c in CONTEXTS),
            *(f"G_{c}" for c in WITH_CONTEXT),
            "n_records",
            "n_errors",
        ],
    )
