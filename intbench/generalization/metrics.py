"""Accuracy and G per context; defined in :mod:`intbench.metrics.generalization` and importable from here."""

from intbench.metrics.generalization import (
    CONTEXT_LABELS,
    GeneralizationKey,
    generalization_scores,
    generalization_summary,
    generalization_table,
    group_key,
    per_pair_scores,
)

__all__ = [
    "CONTEXT_LABELS",
    "GeneralizationKey",
    "generalization_scores",
    "generalization_summary",
    "generalization_table",
    "group_key",
    "per_pair_scores",
]
