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
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from intbench.metrics.table import Table, slug
from intbench.metrics.tutor import IDEATION, transfer_report
from intbench.records import Episode
from intbench.tutor.bradley_terry import BradleyTerry, fit_bradley_terry, rankings_from_episodes
from intbench.tutor.elo import model_skill, ratings_from_episodes


def _last_selected_ratings(episodes: list[Episode]) -> dict[tuple[str, str], float]:
    """The rating after the last update of each Elo-selected (domain, student)."""
    last = {}
    for episode in episodes:
        update = episode.metadata.get("elo") if episode.protocol == "tutor" else None
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
        if episode.protocol == "tutor" and (episode.condition or IDEATION) == IDEATION:
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
        "(that teacher has none). Log strengths sum to zero.",
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


def rating_tables(episodes: list[Episode]) -> list[Table]:
    """The Elo and transfer tables that have rows, then each domain's win-rate tables."""
    tables = [table for table in (elo_table(episodes), transfer_table(episodes)) if table.rows]
    for domain, rankings in sorted(domain_rankings(episodes).items()):
        tables += win_rate_tables(domain, rankings)
    return tables
