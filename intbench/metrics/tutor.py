"""Tutor protocol metrics, per domain x student x teacher x condition.

solve rate: share of episodes whose phase-2 submissions solved the problem;
    repeats of a problem are averaged first, then problems are averaged.
solo rate: the same for the student's own ``condition="solo"`` episodes
    (no ideation), over the problems both were run on; ``collab − solo`` is
    the paired difference over those problems (undefined without solo runs).
withheld / message: share of the teacher's ideation messages the checker
    withheld; withheld / episode: mean withheld messages per episode.

Transfer (:func:`transfer_report`) compares the collaborative solve rate with
the *teacher* model's own solo rate instead, as KITE does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from intbench.metrics.estimate import BOOTSTRAP_SAMPLES, ProblemResamples, mean, problem_mean
from intbench.metrics.groups import Records, by_problem, group_by, split_errors, teacher_label
from intbench.metrics.table import Table
from intbench.protocols import PROTOCOLS, has
from intbench.records import Episode, as_episode, as_episodes

SOLO = "solo"
IDEATION = "ideation"
CALIBRATION = "calibration"  # KITE's solo tasks that set a student's starting rating


def collaborative(episode: Episode, stated: bool = False) -> bool:
    """Whether teacher and student worked together in ``episode``: its condition is its
    protocol's ``collaboration_condition`` (a missing condition counts unless ``stated``)."""
    spec = PROTOCOLS.get(str(episode.protocol))
    if spec is None or spec.collaboration_condition is None:
        return False
    condition = episode.condition if stated else episode.condition or spec.collaboration_condition
    return condition == spec.collaboration_condition


def solo_outcome(episode: Episode | dict) -> bool | None:
    """Whether an episode is a solo solve and its outcome; ``None`` if it is not one.

    Solo solves are tutor episodes without ideation (condition ``"solo"``, or
    ``"calibration"`` in an Elo-selected run) and monitor baselines (the student's unassisted attempt).  Episodes with an
    error say nothing about skill and give ``None``.
    """
    episode = as_episode(episode)
    if episode.error:
        return None
    spec = PROTOCOLS.get(str(episode.protocol))
    if spec is not None and episode.condition in spec.solo_conditions:
        return episode.solved_at is not None
    if has(str(episode.protocol), "interventions") and episode.baseline:
        if episode.baseline.status in ("correct", "incorrect"):
            return episode.baseline.correct
    return None


def solved_per_problem(episodes: Records) -> dict[str, float]:
    """Mean solved (``solved_at`` set) per problem, repeats averaged."""
    return {
        problem: mean([float(e.solved_at is not None) for e in runs])
        for problem, runs in by_problem(as_episodes(episodes)).items()
    }


def _messages(episodes: Iterable[Episode]) -> list[bool]:
    """The withheld flag of every ideation message the checker saw."""
    return [
        bool(getattr(step, "withheld", False))
        for e in episodes
        for step in e.steps
        if step.message is not None
    ]


def withheld_per_message(episodes: Records) -> float:
    return mean([float(w) for w in _messages(as_episodes(episodes))])


def withheld_per_episode(episodes: Records) -> float:
    return mean([float(sum(_messages([e]))) for e in as_episodes(episodes)])


def tutor_summary(episodes: Records, solo: Records = (), samples: int = BOOTSTRAP_SAMPLES) -> dict:
    """The tutor metrics of one group of episodes, with CIs and counts.

    ``solo`` are the same student's solo episodes to compare with (errors in
    them are left out too); without them the solo rate and the difference
    are undefined.
    """
    usable, errors = split_errors(episodes)
    solved = solved_per_problem(usable)
    alone = solved_per_problem(split_errors(solo)[0])
    paired = sorted(set(solved) & set(alone))
    groups = by_problem(usable)
    messages = _messages(usable)
    resamples = ProblemResamples(groups, samples)
    return {
        "solve_rate": problem_mean(solved, samples),
        "solo_rate": problem_mean({p: alone[p] for p in paired}, samples),
        "collaboration_gain": problem_mean({p: solved[p] - alone[p] for p in paired}, samples),
        "withheld_per_message": resamples.mean(
            {p: [float(w) for w in _messages(runs)] for p, runs in groups.items()}
        ),
        "withheld_per_episode": resamples.mean(
            {p: [float(sum(_messages([e]))) for e in runs] for p, runs in groups.items()}
        ),
        "n_episodes": len(usable),
        "n_problems": len(solved),
        "n_paired": len(paired),
        "n_messages": len(messages),
        "n_withheld": sum(messages),
        "n_errors": errors,
    }


class TutorKey(NamedTuple):
    domain: str
    student: str
    teacher: str
    condition: str


def tutor_key(episode: Episode) -> TutorKey:
    """The tutor group an episode belongs to."""
    return TutorKey(
        str(episode.domain),
        str(episode.student),
        teacher_label(episode.teacher),
        str(episode.condition or IDEATION),
    )


def tutor_groups(episodes: Records, samples: int = BOOTSTRAP_SAMPLES) -> dict[TutorKey, dict]:
    """:func:`tutor_summary` of every tutor group, each ideation group against its student's solo runs."""
    groups = group_by(as_episodes(episodes), tutor_key)
    solo: dict[tuple[str, str], list[Episode]] = defaultdict(list)
    alone = (SOLO, CALIBRATION)
    for key, group in groups.items():
        if key.condition in alone:
            solo[(key.domain, key.student)] += group
    return {
        key: tutor_summary(
            group, () if key.condition in alone else solo[(key.domain, key.student)], samples
        )
        for key, group in groups.items()
    }


LABELS = {
    "solve_rate": "solve rate",
    "solo_rate": "solo rate",
    "collaboration_gain": "collab − solo",
    "withheld_per_message": "withheld / message",
    "withheld_per_episode": "withheld / episode",
}
COUNTS = {
    "n": "n_episodes",
    "problems": "n_problems",
    "paired": "n_paired",
    "messages": "n_messages",
    "errors": "n_errors",
}


def tutor_table(tutor: dict[TutorKey, dict]) -> Table:
    """One row per tutor group: solve rate, the student's solo rate, withheld messages."""
    return Table.of_groups(
        "tutor",
        "Tutor protocol",
        TutorKey._fields,
        tutor,
        LABELS,
        COUNTS,
        "Solve rate: solved by a phase-2 submission. Solo rate and collab − solo: the student's "
        "solo runs, over the paired problems. 95% bootstrap CIs over problems; errors are excluded.",
        headline=[
            "domain",
            "student",
            "teacher",
            "condition",
            "solve_rate",
            "solo_rate",
            "collaboration_gain",
            "withheld_per_message",
            "n",
            "errors",
        ],
    )


def transfer_report(episodes: Iterable[Episode | dict]) -> list[dict]:
    """Collaborative solve rate per (teacher, student) against the teacher's solo rate.

    Collaborative: tutor episodes with ideation (condition ``"ideation"``), by
    their ``teacher``.  Solo: episodes whose *student* is that teacher model
    solving alone (:func:`solo_outcome`).  Both rates are over the tasks the
    two have in common (repeats averaged per task first), so they compare the
    same problems.  ``transfer`` is collaborative / solo (``None`` when the
    teacher solved none of them); rows without common tasks are left out.
    """
    collab: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    solo: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for episode in as_episodes(episodes):
        if episode.error:
            continue
        if collaborative(episode, stated=True) and episode.teacher:
            key = (episode.teacher, episode.student)
            collab[key][episode.problem_id].append(float(episode.solved_at is not None))
        solved = solo_outcome(episode)
        if solved is not None:
            solo[episode.student][episode.problem_id].append(float(solved))
    rows = []
    for (teacher, student), by_task in sorted(collab.items()):
        common = sorted(set(by_task) & set(solo.get(teacher, {})))
        if not common:
            continue
        collab_rate = float(np.mean([np.mean(by_task[t]) for t in common]))
        solo_rate = float(np.mean([np.mean(solo[teacher][t]) for t in common]))
        rows.append(
            {
                "teacher": teacher,
                "student": student,
                "tasks": len(common),
                "collaborative_rate": collab_rate,
                "teacher_solo_rate": solo_rate,
                "transfer": collab_rate / solo_rate if solo_rate > 0 else None,
                "gap": solo_rate - collab_rate,
            }
        )
    return rows
