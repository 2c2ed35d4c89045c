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
domain (:data:`DOMAIN_ELO`).

Task selection, as in KITE's calibration, draws a task from a band of
ratings just *above* the student's (``band`` offsets), so that it is hard
enough for ideation to matter.  Transfer is reported as the collaborative
solve rate (student after ideation with a teacher) against the teacher
model's own solo solve rate on the same tasks (:func:`transfer_report`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from intbench.records import Episode, as_episode, as_episodes


@dataclass(frozen=True)
class EloConfig:
    """One domain's rating constants.

    Attributes:
        k: base step size (rating points for a 0-vs-1 surprise of 1, S = 0).
        surprise: ``S``, the extra weight of unlikely outcomes (0 = plain Elo).
        initial: rating of a new student, and of a task without a known rating.
        lower, upper: rating bounds for students and tasks.
        scale: rating difference at which the odds are 10:1.
        band: task selection offsets ``(low, high)`` above the student's rating.
        level_step: rating points per difficulty level when a task's metadata
            has a 1-5 ``level``/``difficulty`` (MATH-style) instead of a rating;
            level 3 maps to ``initial``.
    """

    k: float = 32.0
    surprise: float = 1.0
    initial: float = 1500.0
    lower: float = 0.0
    upper: float = 3000.0
    scale: float = 400.0
    band: tuple[float, float] = (0.0, 200.0)
    level_step: float = 200.0

    def __post_init__(self) -> None:
        if self.k <= 0 or self.scale <= 0:
            raise ValueError(f"k and scale must be positive, got k={self.k}, scale={self.scale}")
        if self.surprise < 0:
            raise ValueError(f"surprise (S) must be >= 0, got {self.surprise}")
        if not self.lower < self.upper:
            raise ValueError(f"lower must be below upper, got {self.lower} >= {self.upper}")
        if not self.lower <= self.initial <= self.upper:
            raise ValueError(
                f"initial {self.initial} outside the bounds [{self.lower}, {self.upper}]"
            )
        if len(self.band) != 2 or self.band[0] > self.band[1]:
            raise ValueError(f"band must be (low, high) with low <= high, got {self.band}")


# Codeforces problems carry ratings 800-3500, so the scale follows them; the
# other domains use one generic scale with MATH-style levels spread around 1500.
DOMAIN_ELO: dict[str, EloConfig] = {
    "codeforces": EloConfig(
        k=40.0, surprise=1.0, initial=1200.0, lower=800.0, upper=3500.0, band=(100.0, 300.0)
    ),
    "math": EloConfig(
        k=32.0, surprise=1.0, initial=1500.0, lower=500.0, upper=2500.0, band=(50.0, 250.0)
    ),
}
DEFAULT_ELO = EloConfig()


def config_for(domain: str, configs: Mapping[str, EloConfig] | None = None) -> EloConfig:
    """The constants of ``domain``: from ``configs``, else :data:`DOMAIN_ELO`, else the default."""
    return (configs or {}).get(domain) or DOMAIN_ELO.get(domain, DEFAULT_ELO)


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


def solo_outcome(episode: Episode | dict) -> bool | None:
    """Whether an episode is a solo solve and its outcome; ``None`` if it is not one.

    Solo solves are tutor episodes without ideation (condition ``"solo"``) and
    monitor baselines (the student's unassisted attempt).  Episodes with an
    error say nothing about skill and give ``None``.
    """
    episode = as_episode(episode)
    if episode.error:
        return None
    if episode.protocol == "tutor" and episode.condition == "solo":
        return episode.solved_at is not None
    if episode.protocol == "monitor" and episode.baseline:
        if episode.baseline.status in ("correct", "incorrect"):
            return episode.baseline.correct
    return None


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
        if episode.protocol == "tutor" and episode.condition == "ideation" and episode.teacher:
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
