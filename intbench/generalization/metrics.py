"""G and ΔG; defined in :mod:`intbench.metrics.generalization` and importable from here."""

from intbench.metrics.generalization import (
    CONTEXT_LABELS,
    GeneralizationKey,
    generalization_scores,
    generalization_summary,
    generalization_table,
    group_key,
    per_problem_scores,
)

__all__ = [
    "CONTEXT_LABELS",
    "GeneralizationKey",
    "generalization_scores",
    "generalization_summary",
    "generalization_table",
    "group_key",
    "per_problem_scores",
]
