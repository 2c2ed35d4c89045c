"""The tutor protocol's rating tables (KITE §4.2, App. C.8): Elo skill and transfer.

* Elo: each student's rating calibrated from its solo solves
  (:func:`intbench.tutor.elo.ratings_from_episodes`), the last rating an
  Elo-selected run reached, and the model skill KITE compares it with (the
  mean rating of the hardest quarter of the tasks the model solved alone).
* Transfer: the collaborative solve rate against the teacher model's own
  solo rate on the same tasks (:func:`intbench.metrics.tutor.transfer_report`).
"""

from __future__ import annotations

from typing import Any

from intbench.metrics.table import Table
from intbench.metrics.tutor import transfer_report
from intbench.records import Episode
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


def rating_tables(episodes: list[Episode]) -> list[Table]:
    """The Elo and transfer tables that have rows."""
    return [table for table in (elo_table(episodes), transfer_table(episodes)) if table.rows]
