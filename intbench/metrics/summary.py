"""One call from episode records to every protocol's summaries and tables."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from intbench.metrics.estimate import BOOTSTRAP_SAMPLES
from intbench.metrics.feedback import (
    FeedbackKey,
    feedback_episode_groups,
    feedback_groups,
    feedback_table,
)
from intbench.metrics.feedback_analyses import feedback_analysis_tables
from intbench.metrics.generalization import PROTOCOL as GENERALIZATION
from intbench.metrics.generalization import generalization_table
from intbench.metrics.groups import Records
from intbench.metrics.matrix import Matrix, build_matrices, matrix_tables
from intbench.metrics.monitor import (
    MonitorKey,
    monitor_episode_groups,
    monitor_groups,
    monitor_tables,
)
from intbench.metrics.ratings import rating_tables
from intbench.metrics.table import Table
from intbench.metrics.tutor import TutorKey, tutor_groups, tutor_table
from intbench.protocols import PROTOCOLS
from intbench.protocols.feedback import SPEC as FEEDBACK
from intbench.protocols.monitor import SPEC as MONITOR
from intbench.protocols.tutor import SPEC as TUTOR
from intbench.records import Episode, as_episodes


@dataclass
class Summary:
    """Every protocol's group summaries and tables, computed once from the episodes.

    ``monitor``, ``feedback`` and ``tutor`` map each group key to that
    group's summary; ``other_protocols`` counts episodes of protocols no
    metric covers.
    """

    monitor: dict[MonitorKey, dict] = field(default_factory=dict)
    feedback: dict[FeedbackKey, dict] = field(default_factory=dict)
    tutor: dict[TutorKey, dict] = field(default_factory=dict)
    matrices: list[Matrix] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    other_protocols: dict[str, int] = field(default_factory=dict)

    def to_text(self) -> str:
        """Every table as plain text, as ``intbench eval`` and ``intbench matrix`` print it."""
        if not self.tables:
            return "no episodes"
        return "\n\n".join(table.to_text() for table in self.tables)


def summarize(episodes: Records, samples: int = BOOTSTRAP_SAMPLES) -> Summary:
    """Split the episodes by protocol and summarise each with its own metrics and tables.

    ``samples`` is the number of bootstrap resamples behind every CI.
    """
    by_protocol: dict[str, list[Episode]] = defaultdict(list)
    for episode in as_episodes(episodes):
        by_protocol[str(episode.protocol)].append(episode)
    summary = Summary()
    for spec in PROTOCOLS.values():
        if by_protocol.get(spec.name):
            spec.hook("summarize")(summary, by_protocol, samples)
    others = {p: es for p, es in by_protocol.items() if p not in PROTOCOLS}
    if generalization := others.pop(GENERALIZATION, None):
        summary.tables.append(generalization_table(generalization, samples))
    summary.other_protocols = {p: len(es) for p, es in sorted(others.items())}
    return summary


def summarize_monitor(
    summary: Summary, by_protocol: Mapping[str, list[Episode]], samples: int
) -> None:
    monitor = by_protocol[MONITOR.name]
    groups = monitor_episode_groups(monitor)
    summary.monitor = monitor_groups(groups, samples)
    summary.tables += monitor_tables(summary.monitor, groups)


def summarize_feedback(
    summary: Summary, by_protocol: Mapping[str, list[Episode]], samples: int
) -> None:
    feedback = by_protocol[FEEDBACK.name]
    groups = feedback_episode_groups(feedback)
    summary.feedback = feedback_groups(groups, samples)
    summary.matrices = build_matrices(summary.feedback, groups)
    summary.tables.append(feedback_table(summary.feedback))
    summary.tables += [t for matrix in summary.matrices for t in matrix_tables(matrix)]
    summary.tables += feedback_analysis_tables(feedback)


def summarize_tutor(
    summary: Summary, by_protocol: Mapping[str, list[Episode]], samples: int
) -> None:
    tutor = by_protocol[TUTOR.name]
    summary.tutor = tutor_groups(tutor, samples)
    summary.tables.append(tutor_table(summary.tutor))
    # solo solves of other protocols (the baselines of intervention protocols) rate
    # students and teachers too
    baselines = [
        e
        for spec in PROTOCOLS.values()
        if spec.interventions
        for e in by_protocol.get(spec.name, [])
    ]
    summary.tables += rating_tables([*tutor, *baselines])
