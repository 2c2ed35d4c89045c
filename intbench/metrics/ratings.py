"""The tutor protocol's rating tables (KITE §4.2, App. C.8): Elo skill and transfer.

* Elo: each student's rating calibrated from its solo solves
  (:func:`intbench.tutor.elo.ratings_from_episodes`), the last rating an
  Elo-selected run reached, and the model skill KITE compares it with (the
  mean rating of the hardest quarter of the tasks the model solved alone).
* Transfer: the collaborative solve rate against the teacher model's own
  solo rate on the same tasks (:func:`intbench.metrics.tutor.transfer_report`).
* Win rates (KITE App. C.7): Bradley–Terry strengths of the teachers of one
  domain, fitted to per-task rankings: on each task a student did with two or
  more teachers, the teachers are ranked by that student's solve rate.
* Win rates by skill ordering (KITE §4.3, Table 1): the same comparisons split
  by how the student's rating, the task's rating and the teacher's model skill
  were ordered when they worked together, one Bradley–Terry fit per ordering.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from intbench.metrics.table import Table, slug
from intbench.metrics.tutor import collaborative, transfer_report
from intbench.protocols import has
from intbench.records import Episode
from intbench.tutor.bradley_terry import (
    BradleyTerry,
    SessionRanking,
    fit_bradley_terry,
    rankings_from_episodes,
)
from intbench.tutor.elo import config_for, initial_task_rating, model_skill, ratings_from_episodes

SKILL_ORDERINGS = {
    "HTM": "Human < Task < Model",
    "HMT": "Human < Model < Task",
    "MHT": "Model < Human < Task",
}
"""KITE Table 1's skill orderings (its caption's reading; tasks are drawn above the
human's rating, §4.2, so Human < Task in each)."""


def _last_selected_ratings(episodes: list[Episode]) -> dict[tuple[str, str], float]:
    """The rating after the last update of each Elo-selected (domain, student)."""
    last = {}
    for episode in episodes:
        update = (
            episode.metadata.get("elo")
            if has(str(episode.protocol), "collaboration_condition")
            else None
        )
        if update and not episode.error:
            last[(episode.domain, episode.student)] = float(update["student_after"])
    return last


def elo_table(episodes: list[Episode]) -> Table:
    """One row per (domain, student) with a solo solve or an Elo-selected episode."""
    calibrated = {
        (domain, student): rating
        for domain, table in ratings_from_episodes(episodes).items()
        for student, rating in table.students.items()
    }
    selected = _last_selected_ratings(episodes)
    skill = model_skill(episodes)
    rows: list[list[Any]] = [
        [*key, calibrated.get(key), selected.get(key), skill.get(key)]
        for key in sorted(set(calibrated) | set(selected))
    ]
    return Table(
        "tutor_elo",
        "Tutor protocol: Elo skill (KITE App. C.8)",
        ["domain", "student", "calibrated rating", "rating in Elo-selected run", "model skill"],
        rows,
        "Calibrated: solo solves replayed in order (ΔR = K(O_a − P_e), task ratings fixed). "
        "Model skill: mean rating of the hardest quarter of the tasks solved alone.",
        ids=["domain", "student", "calibrated", "selected", "model_skill"],
    )


def transfer_table(episodes: list[Episode]) -> Table:
    """One row per (teacher, student) with tasks the teacher also solved alone."""
    fields = ["teacher", "student", "tasks", "collaborative_rate", "teacher_solo_rate"]
    fields += ["transfer", "gap"]
    rows = [[row[field] for field in fields] for row in transfer_report(episodes)]
    return Table(
        "tutor_transfer",
        "Tutor protocol: transfer against the teacher's solo rate",
        fields,
        rows,
        "Both rates over the tasks the two have in common; transfer = collaborative / solo.",
    )


def domain_rankings(episodes: list[Episode]) -> dict[str, list[dict[str, float]]]:
    """Per domain, one ranking of teachers by solve rate for each (student, task)."""
    ideation: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for episode in episodes:
        if collaborative(episode):
            ideation[(episode.domain, episode.student)].append(episode.to_dict())
    rankings: dict[str, list[dict[str, float]]] = defaultdict(list)
    for (domain, _), records in sorted(ideation.items()):
        rankings[domain] += rankings_from_episodes(records, score="solved")
    return {domain: found for domain, found in rankings.items() if found}


def win_rate_tables(domain: str, rankings: list[dict[str, float]]) -> list[Table]:
    """The strengths (π with C.7.3's SEs, log scale) and the pairwise win rates of one
    domain; one table saying why when the MLE does not exist."""
    name = f"tutor_win_rates_{slug(domain)}"
    title = f"Tutor protocol: Bradley–Terry win rates, {domain} (KITE App. C.7)"
    try:
        fit = fit_bradley_terry(rankings)
    except ValueError as exc:
        return [
            Table(name, title, ["teacher", "opponent", "P(win)", "SE"], [], f"Not fitted: {exc}")
        ]
    return [_strength_table(domain, fit, len(rankings)), _win_rate_table(name, title, fit)]


def _strength_table(domain: str, fit: BradleyTerry, tasks: int) -> Table:
    rows = [
        [name, fit.pi[i], fit.pi_se[i], fit.strengths[i], fit.se[i]]
        for i, name in enumerate(fit.names)
    ]
    return Table(
        f"tutor_strengths_{slug(domain)}",
        f"Tutor protocol: Bradley–Terry strengths, {domain} (KITE App. C.7)",
        ["teacher", "π", "π SE", "log strength", "log SE"],
        rows,
        f"{tasks} per-task rankings; a tie counts half a win each. π sums to 1; its SEs come "
        f"from the π-scale Fisher information without {fit.pi_reference}'s row and column "
        f"(that teacher has none). Log strengths sum to zero. {fit.note}".strip(),
        ids=["teacher", "pi", "pi_se", "strength", "se"],
    )


def _win_rate_table(name: str, title: str, fit: BradleyTerry) -> Table:
    rows = [
        [a, b, fit.win_rate[i, j], fit.win_rate_se[i, j], fit.comparisons[i, j]]
        for i, a in enumerate(fit.names)
        for j, b in enumerate(fit.names)
        if i != j
    ]
    return Table(
        name,
        title,
        ["teacher", "opponent", "P(win)", "SE", "comparisons"],
        rows,
        "P(teacher beats opponent) = π_t / (π_t + π_o); delta-method SEs.",
        ids=["teacher", "opponent", "win_rate", "se", "comparisons"],
    )


def skill_ordering(human: float, task: float, model: float) -> str | None:
    """KITE Table 1's ordering of the three ratings, or ``None`` for any other
    (a task not above the human, or ties)."""
    if human < task < model:
        return "HTM"
    if human < model < task:
        return "HMT"
    if model < human < task:
        return "MHT"
    return None


def ordering_rankings(episodes: list[Episode]) -> tuple[dict[str, dict[str, list]], dict[str, int]]:
    """Per domain, the session rankings of each skill ordering, and per domain how
    many sessions fit none of the three (or lack a teacher's model skill).

    A session is one teacher's work with a student on a task that the student
    also did with other teachers; as in C.7.1 it compares that teacher with each
    other one (ranked by the student's solve rate on the task) and is filed
    under the ordering of the student's rating before the task (its Elo update,
    else the calibrated rating), the task's rating and the teacher's model skill.
    """
    calibrated = ratings_from_episodes(episodes)
    skill = model_skill(episodes)
    by_ordering: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    unassigned: dict[str, int] = defaultdict(int)
    for (domain, student, _), teachers in sorted(_tutor_tasks(episodes).items()):
        if len(teachers) < 2:
            continue
        solved = {
            t: sum(e.solved_at is not None for e in runs) / len(runs)
            for t, runs in teachers.items()
        }
        table = calibrated.get(domain)
        for teacher, runs in sorted(teachers.items()):
            first = runs[0]
            update = first.metadata.get("elo")
            human = float(update["student_before"]) if update else (
                table.student(student) if table else config_for(domain).initial
            )  # fmt: skip
            task = initial_task_rating(first.metadata.get("problem") or {}, config_for(domain))
            model = skill.get((domain, teacher), math.nan)
            ordering = None if math.isnan(model) else skill_ordering(human, task, model)
            if ordering is None:
                unassigned[domain] += 1
            else:
                by_ordering[domain][ordering].append(SessionRanking(solved, latest=teacher))
    return by_ordering, unassigned


def _tutor_tasks(episodes: list[Episode]) -> dict[tuple[str, str, str], dict[str, list[Episode]]]:
    """The error-free ideation tutor episodes by (domain, student, problem), then teacher."""
    tasks: dict[tuple[str, str, str], dict[str, list[Episode]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for episode in episodes:
        if collaborative(episode) and episode.teacher and not episode.error:
            tasks[(episode.domain, episode.student, episode.problem_id)][episode.teacher].append(
                episode
            )
    return tasks


def ordering_table(
    domain: str, by_ordering: dict[str, list], unassigned: int, rankings: list[dict[str, float]]
) -> Table:
    """π ± SE per teacher: all rankings, then one Bradley–Terry fit per skill ordering."""
    fits = _ordering_fits(by_ordering, rankings)
    counts = ", ".join(
        f"{o} ({SKILL_ORDERINGS[o]}): {len(by_ordering.get(o, []))}" for o in SKILL_ORDERINGS
    )
    notes = [f"{label}: {fit}" for label, fit in fits.items() if isinstance(fit, str)]
    notes += [
        f"{label}: {fit.note}"
        for label, fit in fits.items()
        if isinstance(fit, BradleyTerry) and fit.note
    ]
    columns, ids = ["teacher"], ["teacher"]
    for label in fits:
        columns += [f"π {label}", f"π SE {label}"]
        ids += [f"pi_{label.lower()}", f"pi_se_{label.lower()}"]
    return Table(
        f"tutor_win_rates_by_ordering_{slug(domain)}",
        f"Tutor protocol: Bradley–Terry win rates by skill ordering, {domain} (KITE §4.3, Table 1)",
        columns,
        _pi_rows(fits),
        f"One fit per ordering of the student's rating, the task's and the teacher's model skill "
        f"when they worked together. Sessions: {counts}; in none of them: {unassigned}. "
        "SEs from C.7.3, the last teacher of each fit held fixed (no SE). " + " ".join(notes),
        ids=ids,
    )


def _ordering_fits(
    by_ordering: dict[str, list], rankings: list[dict[str, float]]
) -> dict[str, BradleyTerry | str]:
    """A fit of all rankings, then one per skill ordering; a string says why there is none."""
    fits: dict[str, BradleyTerry | str] = {}
    for label, found in [
        ("all", rankings),
        *((o, by_ordering.get(o, [])) for o in SKILL_ORDERINGS),
    ]:
        try:
            fits[label] = fit_bradley_terry(found) if found else "no sessions"
        except ValueError as exc:
            fits[label] = f"not fitted: {exc}"
    return fits


def _pi_rows(fits: dict[str, BradleyTerry | str]) -> list[list[Any]]:
    """Per teacher in any fit, π and its SE in each fit (``None`` where it is not in it)."""
    teachers = sorted(
        {name for fit in fits.values() if isinstance(fit, BradleyTerry) for name in fit.names}
    )
    rows = []
    for teacher in teachers:
        row: list[Any] = [teacher]
        for fit in fits.values():
            if isinstance(fit, BradleyTerry) and teacher in fit.names:
                i = fit.names.index(teacher)
                row += [fit.pi[i], fit.pi_se[i]]
            else:
                row += [None, None]
        rows.append(row)
    return rows


def rating_tables(episodes: list[Episode]) -> list[Table]:
    """The Elo and transfer tables that have rows, then each domain's win-rate tables
    and its win rates by skill ordering."""
    tables = [table for table in (elo_table(episodes), transfer_table(episodes)) if table.rows]
    by_ordering, unassigned = ordering_rankings(episodes)
    for domain, rankings in sorted(domain_rankings(episodes).items()):
        tables += win_rate_tables(domain, rankings)
        tables.append(
            ordering_table(domain, by_ordering.get(domain, {}), unassigned.get(domain, 0), rankings)
        )
    return tables
