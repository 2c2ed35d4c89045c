"""Elo skill calibration for the tutor protocol and task selection (KITE App. C.8).

A student rated ``R_c`` meets a task rated ``R_p``.  The expected outcome is

    P_e = 1 / (1 + 10 ** ((R_p - R_c) / S))

and after the outcome ``O_a`` (1 solved, 0 not solved within the submission
limit) the student's rating moves by ``ΔR = K (O_a - P_e)`` and is clipped to
the domain's bounds.  Task ratings are fixed: they come from the task's
metadata (its ``rating``, or a 1-5 ``level``) and never move.  ``K``, ``S``,
the bounds and the selection band are per domain (its ``Domain.elo``;
:data:`DOMAIN_ELO` lists those set).

The next task is drawn at random from the band of ratings just *above* the
student's (``band`` offsets), so that it is hard enough for ideation to
matter.  The tutor env does this with ``elo_selection=True``
(:class:`intbench.envs.tutor.TutorEnv`); :func:`ratings_from_episodes`
replays recorded solo solves to calibrate ratings after the fact, and
:func:`model_skill` gives KITE's model skill (the mean rating of the hardest
quarter of the tasks a model solved alone).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from intbench.envs.domains import registry
from intbench.envs.domains.registry import EloConfig
from intbench.metrics.tutor import solo_outcome
from intbench.records import Episode, as_episodes

DEFAULT_ELO = EloConfig()
"""The constants of a domain that sets none (one generic scale, MATH-style levels around 1500)."""


def __getattr__(name: str):
    # DOMAIN_ELO follows the registry, which third-party domains join after import.
    if name == "DOMAIN_ELO":
        return {domain.name: domain.elo for domain in registry.domains() if domain.elo}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def config_for(domain: str, configs: Mapping[str, EloConfig] | None = None) -> EloConfig:
    """The constants of ``domain``: from ``configs``, else its ``Domain.elo``, else the default.

    Raises:
        DataSourceError: ``domain`` is not registered.
    """
    return (configs or {}).get(domain) or registry.get_domain(domain).elo or DEFAULT_ELO


def expected_score(student: float, task: float, scale: float = 400.0) -> float:
    """Probability that a student rated ``student`` solves a task rated ``task``."""
    return 1.0 / (1.0 + 10.0 ** ((task - student) / scale))


def elo_update(
    student: float, task: float, solved: bool, config: EloConfig = DEFAULT_ELO
) -> tuple[float, float]:
    """``(student, task)`` ratings after one attempt: the student's moves by
    ``K (O_a - P_e)`` within the bounds, the task's stays as it is."""
    expected = expected_score(student, task, config.scale)
    outcome = 1.0 if solved else 0.0
    return _clip(student + config.k * (outcome - expected), config), task


def _clip(rating: float, config: EloConfig) -> float:
    return min(max(rating, config.lower), config.upper)


def initial_task_rating(metadata: Mapping, config: EloConfig = DEFAULT_ELO) -> float:
    """A task's starting rating from its metadata: ``rating``, else a 1-5 ``level``/``difficulty``."""
    rating = metadata.get("rating")
    if isinstance(rating, (int, float)) and not isinstance(rating, bool) and math.isfinite(rating):
        return _clip(float(rating), config)
    for key in ("level", "difficulty"):
        level = metadata.get(key)
        if isinstance(level, (int, float)) and not isinstance(level, bool) and math.isfinite(level):
            return _clip(config.initial + (float(level) - 3.0) * config.level_step, config)
    return config.initial


class EloTable:
    """Ratings of the students of one domain, and the fixed ratings of its tasks."""

    def __init__(self, config: EloConfig = DEFAULT_ELO):
        self.config = config
        self.students: dict[str, float] = {}
        self.tasks: dict[str, float] = {}

    def student(self, name: str) -> float:
        return self.students.get(name, self.config.initial)

    def task(self, task_id: str, metadata: Mapping | None = None) -> float:
        """A task's rating; an unseen task starts from its metadata (see :func:`initial_task_rating`)."""
        if task_id not in self.tasks:
            return initial_task_rating(metadata or {}, self.config)
        return self.tasks[task_id]

    def record(
        self, student: str, task_id: str, solved: bool, metadata: Mapping | None = None
    ) -> tuple[float, float]:
        """Update the student's rating with one outcome; returns ``(student, task)`` ratings."""
        new_student, new_task = elo_update(
            self.student(student), self.task(task_id, metadata), solved, self.config
        )
        self.students[student] = new_student
        self.tasks[task_id] = new_task
        return new_student, new_task

    def select_task(
        self,
        student: str,
        task_ids: Sequence[str],
        rng: np.random.Generator,
        exclude: Iterable[str] = (),
        metadata: Mapping[str, Mapping] | None = None,
    ) -> str | None:
        """Draw a task rated within the band above ``student``'s rating.

        When no task lies in the band, the task closest to the band's middle is
        taken (ties broken by id), so selection always succeeds while any task
        is left; ``None`` when ``task_ids`` minus ``exclude`` is empty.
        """
        excluded = set(exclude)
        candidates = sorted(t for t in dict.fromkeys(task_ids) if t not in excluded)
        if not candidates:
            return None
        rating = self.student(student)
        low, high = rating + self.config.band[0], rating + self.config.band[1]
        ratings = {t: self.task(t, (metadata or {}).get(t)) for t in candidates}
        in_band = [t for t in candidates if low <= ratings[t] <= high]
        if in_band:
            return in_band[int(rng.integers(len(in_band)))]
        middle = (low + high) / 2
        return min(candidates, key=lambda t: (abs(ratings[t] - middle), t))

    def to_dict(self) -> dict:
        return {
            "config": self.config.__dict__ | {"band": list(self.config.band)},
            "students": dict(self.students),
            "tasks": dict(self.tasks),
        }


def ratings_from_episodes(
    episodes: Iterable[Episode | dict], configs: Mapping[str, EloConfig] | None = None
) -> dict[str, EloTable]:
    """Calibrate per-domain ratings by replaying the solo solves of ``episodes`` in order."""
    tables: dict[str, EloTable] = {}
    for episode in as_episodes(episodes):
        solved = solo_outcome(episode)
        if solved is None:
            continue
        domain = episode.domain
        table = tables.setdefault(domain, EloTable(config_for(domain, configs)))
        metadata = episode.metadata.get("problem") or {}
        table.record(episode.student, episode.problem_id, solved, metadata)
    return tables


TOP_SOLVED_SHARE = 0.25
"""KITE §4.2 rates a model by the hardest quarter of the tasks it solved alone."""


def model_skill(
    episodes: Iterable[Episode | dict], configs: Mapping[str, EloConfig] | None = None
) -> dict[tuple[str, str], float]:
    """KITE's model skill per ``(domain, model)``: the mean rating of the hardest
    quarter (at least one) of the tasks the model solved alone.

    A task counts as solved when any of the model's solo tries solved it
    (KITE §4.2: solvable if one of three tries is correct); a solo tutor
    episode makes three independent tries by default (``solo_tries``) and is
    solved when one of them is.
    """
    solved: dict[tuple[str, str], dict[str, float]] = {}
    for episode in as_episodes(episodes):
        if not solo_outcome(episode):
            continue
        config = config_for(episode.domain, configs)
        rating = initial_task_rating(episode.metadata.get("problem") or {}, config)
        solved.setdefault((episode.domain, episode.student), {})[episode.problem_id] = rating
    skills = {}
    for key, ratings in sorted(solved.items()):
        hardest = sorted(ratings.values(), reverse=True)
        top = hardest[: max(1, math.ceil(len(hardest) * TOP_SOLVED_SHARE))]
        skills[key] = float(np.mean(top))
    return skills
