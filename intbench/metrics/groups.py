"""How metrics group episode records: by problem, by teacher, usable or failed."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

from intbench.records import Episode, as_episodes

Records = Iterable[Episode | dict]
"""What every metric takes: typed episodes or the dicts they are written as."""

HUMAN = "human"
NO_TEACHER = "none"

K = TypeVar("K", bound=Hashable)


def teacher_label(teacher: str | None) -> str:
    """The teacher as reports group it: ``human:<id>`` -> ``"human"``, missing -> ``"none"``."""
    if not teacher:
        return NO_TEACHER
    return HUMAN if str(teacher).startswith("human:") else str(teacher)


def by_problem(items: Iterable) -> dict[str, list]:
    """Group episodes, or any rows with a ``problem_id`` key (analyses use it too), by problem."""
    groups: dict[str, list] = defaultdict(list)
    for item in items:
        groups[item.problem_id if isinstance(item, Episode) else item["problem_id"]].append(item)
    return dict(groups)


def group_by(episodes: Iterable[Episode], key: Callable[[Episode], K]) -> dict[K, list[Episode]]:
    """Episodes grouped by ``key``, groups in key order."""
    groups: dict[K, list[Episode]] = defaultdict(list)
    for episode in episodes:
        groups[key(episode)].append(episode)
    return dict(sorted(groups.items()))


def split_errors(episodes: Records) -> tuple[list[Episode], int]:
    """-> (usable episodes, number excluded for a model or grader error)."""
    usable, errors = [], 0
    for episode in as_episodes(episodes):
        if episode.error:
            errors += 1
        else:
            usable.append(episode)
    return usable, errors
