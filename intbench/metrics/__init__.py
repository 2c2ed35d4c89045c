"""The papers' metrics, computed from episode records, and the tables they are shown in.

Every function takes :class:`~intbench.records.Episode` records or the dicts
they are written as (JSONL lines); dicts are parsed once, at the entry.
:func:`summarize` splits records by protocol and gives each protocol's group
summaries and tables; ``intbench eval``, ``intbench matrix`` and
``intbench report`` all show those.

* :mod:`~intbench.metrics.monitor`: φ, τ, H and the transition rates.
* :mod:`~intbench.metrics.feedback`: acc@k, gains and AUC;
  :mod:`~intbench.metrics.matrix` the student x teacher matrices;
  :mod:`~intbench.metrics.feedback_analyses` the controls, marginal gains and lifts.
* :mod:`~intbench.metrics.tutor`: solve rate, solo rate, withheld messages, transfer.
* :mod:`~intbench.metrics.generalization`: accuracy and G (Int-Bench §3.5) on variant problems.
* :mod:`~intbench.metrics.table`: :class:`Table`, rendered as Markdown, CSV or text.

Episodes whose model or grader failed (``error`` set) are excluded from every
metric and counted in ``n_errors``.  Headline numbers come with 95% bootstrap
confidence intervals that resample problems.
"""

from typing import TYPE_CHECKING

from intbench.lazy import lazy_attributes

if TYPE_CHECKING:  # what the names are, for type checkers and the API docs
    from intbench.metrics.estimate import BOOTSTRAP_SAMPLES, Estimate, bootstrap, problem_mean
    from intbench.metrics.feedback import (
        FeedbackKey,
        acc_at_k,
        auc,
        feedback_summary,
        feedback_table,
        first_step_gain,
        gain,
        normalized_gain,
    )
    from intbench.metrics.feedback_analyses import (
        access_lift,
        feedback_controls,
        feedback_curves,
        history_lift,
        marginal_gains,
    )
    from intbench.metrics.generalization import (
        GeneralizationKey,
        generalization_scores,
        generalization_summary,
        generalization_table,
    )
    from intbench.metrics.groups import Records, by_problem, split_errors, teacher_label
    from intbench.metrics.matrix import (
        Matrix,
        best_minus_worst,
        fixed_effects,
        r_squared,
        solver_vs_teacher,
        spearman,
    )
    from intbench.metrics.monitor import (
        MONITOR_METRICS,
        MonitorKey,
        helpfulness,
        leak_rate,
        monitor_key,
        monitor_summary,
        monitor_table,
        phi,
        phi_given_baseline,
        right_to_wrong,
        tau_abs,
        tau_rel,
        wrong_to_right,
    )
    from intbench.metrics.summary import Summary, summarize
    from intbench.metrics.table import Table, format_cell
    from intbench.metrics.tutor import (
        TutorKey,
        solo_outcome,
        transfer_report,
        tutor_summary,
        tutor_table,
        withheld_per_episode,
        withheld_per_message,
    )


# Each name is imported from its module on first access: ``intbench eval`` needs the
# summary only once its episodes are done, and checking its arguments only the
# bootstrap default.
_SOURCES = {
    **dict.fromkeys(
        (
            "BOOTSTRAP_SAMPLES",
            "Estimate",
            "bootstrap",
            "problem_mean",
        ),
        "intbench.metrics.estimate",
    ),
    **dict.fromkeys(
        (
            "FeedbackKey",
            "acc_at_k",
            "auc",
            "feedback_summary",
            "feedback_table",
            "first_step_gain",
            "gain",
            "normalized_gain",
        ),
        "intbench.metrics.feedback",
    ),
    **dict.fromkeys(
        (
            "access_lift",
            "feedback_controls",
            "feedback_curves",
            "history_lift",
            "marginal_gains",
        ),
        "intbench.metrics.feedback_analyses",
    ),
    **dict.fromkeys(
        (
            "GeneralizationKey",
            "generalization_scores",
            "generalization_summary",
            "generalization_table",
        ),
        "intbench.metrics.generalization",
    ),
    **dict.fromkeys(
        (
            "Records",
            "by_problem",
            "split_errors",
            "teacher_label",
        ),
        "intbench.metrics.groups",
    ),
    **dict.fromkeys(
        (
            "Matrix",
            "best_minus_worst",
            "fixed_effects",
            "r_squared",
            "solver_vs_teacher",
            "spearman",
        ),
        "intbench.metrics.matrix",
    ),
    **dict.fromkeys(
        (
            "MONITOR_METRICS",
            "MonitorKey",
            "helpfulness",
            "leak_rate",
            "monitor_key",
            "monitor_summary",
            "monitor_table",
            "phi",
            "phi_given_baseline",
            "right_to_wrong",
            "tau_abs",
            "tau_rel",
            "wrong_to_right",
        ),
        "intbench.metrics.monitor",
    ),
    **dict.fromkeys(
        (
            "Summary",
            "summarize",
        ),
        "intbench.metrics.summary",
    ),
    **dict.fromkeys(
        (
            "Table",
            "format_cell",
        ),
        "intbench.metrics.table",
    ),
    **dict.fromkeys(
        (
            "TutorKey",
            "solo_outcome",
            "transfer_report",
            "tutor_summary",
            "tutor_table",
            "withheld_per_episode",
            "withheld_per_message",
        ),
        "intbench.metrics.tutor",
    ),
}
__getattr__ = lazy_attributes(__name__, _SOURCES)

__all__ = [
    "BOOTSTRAP_SAMPLES",
    "MONITOR_METRICS",
    "Estimate",
    "FeedbackKey",
    "GeneralizationKey",
    "Matrix",
    "MonitorKey",
    "Records",
    "Summary",
    "Table",
    "TutorKey",
    "acc_at_k",
    "access_lift",
    "auc",
    "best_minus_worst",
    "bootstrap",
    "by_problem",
    "feedback_controls",
    "feedback_curves",
    "feedback_summary",
    "feedback_table",
    "first_step_gain",
    "fixed_effects",
    "format_cell",
    "gain",
    "generalization_scores",
    "generalization_summary",
    "generalization_table",
    "helpfulness",
    "history_lift",
    "leak_rate",
    "marginal_gains",
    "monitor_key",
    "monitor_summary",
    "monitor_table",
    "normalized_gain",
    "phi",
    "phi_given_baseline",
    "problem_mean",
    "r_squared",
    "right_to_wrong",
    "solo_outcome",
    "solver_vs_teacher",
    "spearman",
    "split_errors",
    "summarize",
    "tau_abs",
    "tau_rel",
    "teacher_label",
    "transfer_report",
    "tutor_summary",
    "tutor_table",
    "withheld_per_episode",
    "withheld_per_message",
    "wrong_to_right",
]
