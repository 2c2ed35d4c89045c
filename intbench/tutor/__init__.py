"""The tutor protocol's parts outside the env: the ideation checker, Elo skill
calibration with task selection, and Bradley–Terry win rates.  Its metrics (solve
rates, withheld messages, transfer) are in :mod:`intbench.metrics.tutor`."""

from intbench.metrics.tutor import solo_outcome, transfer_report
from intbench.tutor.bradley_terry import (
    BradleyTerry,
    SessionRanking,
    fit_bradley_terry,
    pairwise_from_rankings,
    rankings_from_episodes,
)
from intbench.tutor.checker import CheckResult, rules_check
from intbench.tutor.elo import (
    DOMAIN_ELO,
    EloConfig,
    EloTable,
    elo_update,
    expected_score,
    model_skill,
    ratings_from_episodes,
)

__all__ = [
    "DOMAIN_ELO",
    "BradleyTerry",
    "CheckResult",
    "EloConfig",
    "EloTable",
    "SessionRanking",
    "elo_update",
    "expected_score",
    "fit_bradley_terry",
    "model_skill",
    "pairwise_from_rankings",
    "rankings_from_episodes",
    "ratings_from_episodes",
    "rules_check",
    "solo_outcome",
    "transfer_report",
]
