"""Elo skill calibration for the tutor protocol, task selection and transfer rates.

Students and tasks share one rating scale.  A student rated ``r_s`` solves a
task rated ``r_t`` with the expected probability

    E = 1 / (1 + 10 ** ((r_t - r_s) / scale))

and after the outcome ``o`` (1 solved, 0 not) both move by

    delta = K * (1 + S * |o - E|) * (o - E),  r_s += delta,  r_t -= delta,

then are clipped to ``[lower, upper]``.  ``S`` conditions the step on
surprise: an outcome the ratings found unlikely (``|o - E|`` near 1) moves
them up to ``1 + S`` times as far as plain Elo, an expected one barely more
than plain Elo; ``S = 0`` is plain Elo.  This is the documented reading of
KITE's "surprise-conditioned" update (the paper's exact constants were not
available here); ``K``, ``S``, the bounds and the selection band are per
domain (its ``Domain.elo``; :data:`DOMAIN_ELO` lists those set).

Task selection, as in KITE's calibration, draws a task from a band of
ratings just *above* the student's (``band`` offsets), so that it is hard
enough for ideation to matter.  Transfer is reported as the collaborative
solve rate (student after ideation with a teacher) against the teacher
model's own solo solve rate on the same tasks
(:func:`intbench.metrics.tutor.transfer_report`).
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
    """New ``(student, task)`` ratings after one attempt (see the module docstring)."""
    expected = expected_score(student, task, config.scale)
    outcome = 1.0 if solved else 0.0
    delta = config.k * (1.0 + config.surprise * abs(outcome - expected)) * (outcome - expected)
    return _clip(student + delta, config), _clip(task - delta, config)


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
    """Ratings of the students and tasks of one domain."""

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
        """Update both ratings with one outcome; returns the new ``(student, task)`` ratings."""
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
