"""Elo skill calibration, task selection, transfer rates and Bradley–Terry, by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from intbench.tutor import (
    EloConfig,
    EloTable,
    elo_update,
    expected_score,
    fit_bradley_terry,
    pairwise_from_rankings,
    rankings_from_episodes,
    ratings_from_episodes,
    solo_outcome,
    transfer_report,
)
from intbench.tutor.elo import DOMAIN_ELO, initial_task_rating

PLAIN = EloConfig(k=32, surprise=0.0, initial=1500, lower=0, upper=3000)
SURPRISE = EloConfig(k=32, surprise=1.0, initial=1500, lower=0, upper=3000)


# ----------------------------------------------------------------------- Elo
def test_expected_score_by_hand():
    assert expected_score(1500, 1500) == 0.5
    assert expected_score(1500, 1900) == pytest.approx(1 / 11)
    assert expected_score(1900, 1500) == pytest.approx(10 / 11)


def test_even_match_update_by_hand():
    # E = 1/2, surprise 1/2: delta = 32 * (1 + 1/2) * 1/2 = 24
    assert elo_update(1500, 1500, True, SURPRISE) == pytest.approx((1524, 1476))
    assert elo_update(1500, 1500, False, SURPRISE) == pytest.approx((1476, 1524))
    assert elo_update(1500, 1500, True, PLAIN) == pytest.approx((1516, 1484))


def test_surprising_outcomes_move_ratings_further():
    # E = 1/11.  Solved (surprising): plain 32 * 10/11, surprise-conditioned 32 * 21/11 * 10/11.
    assert elo_update(1500, 1900, True, PLAIN)[0] == pytest.approx(1500 + 320 / 11)
    assert elo_update(1500, 1900, True, SURPRISE)[0] == pytest.approx(1500 + 6720 / 121)
    # Failed (expected): 32 * (1 + 1/11) * (-1/11) = -384/121, barely more than plain -32/11.
    student, task = elo_update(1500, 1900, False, SURPRISE)
    assert student == pytest.approx(1500 - 384 / 121) and task == pytest.approx(1900 + 384 / 121)


def test_ratings_stay_within_bounds():
    tight = EloConfig(k=32, surprise=1.0, initial=1500, lower=1490, upper=1510)
    assert elo_update(1500, 1500, True, tight) == (1510, 1490)
    assert elo_update(1500, 1500, False, tight) == (1490, 1510)


def test_config_validation():
    for kwargs in (
        {"k": 0},
        {"surprise": -1},
        {"lower": 10, "upper": 5},
        {"initial": 9999},
        {"band": (200, 100)},
    ):
        with pytest.raises(ValueError):
            EloConfig(**kwargs)
    assert DOMAIN_ELO["codeforces"].lower == 800 and DOMAIN_ELO["codeforces"].upper == 3500


def test_initial_task_rating_from_metadata():
    assert initial_task_rating({"rating": 1900}, SURPRISE) == 1900
    assert initial_task_rating({"rating": 9000}, SURPRISE) == 3000
    assert initial_task_rating({"level": 5}, SURPRISE) == 1900  # 1500 + (5 - 3) * 200
    assert initial_task_rating({"difficulty": 1}, SURPRISE) == 1100
    assert initial_task_rating({"rating": True, "level": "hard"}, SURPRISE) == 1500


def test_table_records_both_sides():
    table = EloTable(SURPRISE)
    assert table.record("s", "t", True) == pytest.approx((1524, 1476))
    assert table.student("s") == pytest.approx(1524) and table.task("t") == pytest.approx(1476)
    assert table.student("new") == 1500
    assert table.to_dict()["students"] == {"s": pytest.approx(1524)}


def test_task_selection_draws_from_the_band_above_the_student():
    table = EloTable(EloConfig(band=(0, 200)))
    table.tasks = {"a": 1400, "b": 1550, "c": 1650, "d": 1800}
    picks = {
        table.select_task("s", list(table.tasks), np.random.default_rng(seed)) for seed in range(30)
    }
    assert picks == {"b", "c"}
    assert table.select_task("s", list(table.tasks), np.random.default_rng(0), exclude=["b"]) == "c"
    # nothing in [1500, 1700]: the task nearest the band's middle (1600)
    table.tasks |= {"e": 1000, "f": 1850}
    assert table.select_task("s", ["e", "f"], np.random.default_rng(0)) == "f"
    # equally far (1400 and 1800): the tie goes to the smaller id
    assert table.select_task("s", ["d", "a"], np.random.default_rng(0)) == "a"
    assert table.select_task("s", ["a"], np.random.default_rng(0), exclude=["a"]) is None
    # unseen tasks are placed by their metadata
    assert (
        table.select_task(
            "s", ["x", "a"], np.random.default_rng(0), metadata={"x": {"rating": 1600}}
        )
        == "x"
    )


def _episode(
    problem, student, *, protocol="tutor", condition="solo", solved=True, teacher=None, error=None
):
    return {
        "protocol": protocol,
        "condition": condition,
        "problem_id": problem,
        "domain": "math",
        "student": student,
        "teacher": teacher,
        "solved_at": 1 if solved else None,
        "reward": float(solved),
        "error": error,
        "metadata": {"problem": {"level": 3}},
    }


def test_solo_outcome():
    assert solo_outcome(_episode("p", "s")) is True
    assert solo_outcome(_episode("p", "s", solved=False)) is False
    assert solo_outcome(_episode("p", "s", condition="ideation", teacher="T")) is None
    assert solo_outcome(_episode("p", "s", error="boom")) is None
    monitor = {
        **_episode("p", "s", protocol="monitor", condition="standard"),
        "baseline": {"text": "", "verdict": {"status": "incorrect"}},
    }
    assert solo_outcome(monitor) is False
    errored = {**monitor, "baseline": {"text": "", "verdict": {"status": "error"}}}
    assert solo_outcome(errored) is None


def test_ratings_from_episodes_replays_in_order():
    episodes = [
        _episode("p1", "s"),
        _episode("p2", "s", solved=False),
        _episode("p1", "s", condition="ideation", teacher="T"),  # not a solo solve: ignored
    ]
    tables = ratings_from_episodes(episodes, {"math": SURPRISE})
    expected = EloTable(SURPRISE)
    expected.record("s", "p1", True)
    expected.record("s", "p2", False)
    assert tables["math"].students == pytest.approx(expected.students)
    assert tables["math"].tasks == pytest.approx(expected.tasks)


def test_transfer_report_compares_the_same_tasks():
    episodes = [
        # the student with teacher T: p1 solved twice of two, p2 once of two, p3 solved
        _episode("p1", "s", condition="ideation", teacher="T"),
        _episode("p1", "s", condition="ideation", teacher="T"),
        _episode("p2", "s", condition="ideation", teacher="T"),
        _episode("p2", "s", condition="ideation", teacher="T", solved=False),
        _episode("p3", "s", condition="ideation", teacher="T"),
        # T alone: p1 solved, p2 solved; p3 never tried, so it is left out
        _episode("p1", "T"),
        _episode("p2", "T"),
        _episode("p9", "T", solved=False),
    ]
    (row,) = transfer_report(episodes)
    assert row["teacher"] == "T" and row["student"] == "s" and row["tasks"] == 2
    assert row["collaborative_rate"] == pytest.approx(0.75)  # mean of 1.0 and 0.5
    assert row["teacher_solo_rate"] == 1.0
    assert row["transfer"] == pytest.approx(0.75) and row["gap"] == pytest.approx(0.25)
    unsolved = [
        _episode("p1", "s", condition="ideation", teacher="U"),
        _episode("p1", "U", solved=False),
    ]
    assert transfer_report(unsolved)[0]["transfer"] is None


# ------------------------------------------------------------- Bradley–Terry
def test_pairwise_from_rankings_with_ties_and_orders():
    names, wins = pairwise_from_rankings([{"A": 1.0, "B": 0.0, "C": 1.0}, ["C", "B"]])
    assert names == ["A", "B", "C"]
    expected = np.array([[0, 1, 0.5], [0, 0, 0], [0.5, 2, 0]])
    np.testing.assert_allclose(wins, expected)
    with pytest.raises(ValueError, match="twice"):
        pairwise_from_rankings([["A", "A"]])
    with pytest.raises(ValueError, match="mapping or a sequence"):
        pairwise_from_rankings([42])


def test_two_teachers_closed_form():
    # A beats B on 2 of 3 tasks: b_A - b_B = log 2.  Fisher information of the
    # difference: n p (1 - p) = 3 * 2/3 * 1/3 = 2/3, so Var(b_A - b_B) = 3/2.
    rankings = [["A", "B"], ["A", "B"], ["B", "A"]]
    ref = fit_bradley_terry(rankings, constraint="B")
    np.testing.assert_allclose(ref.strengths, [math.log(2), 0.0], atol=1e-9)
    np.testing.assert_allclose(ref.se, [math.sqrt(1.5), 0.0], atol=1e-9)
    centred = fit_bradley_terry(rankings)
    np.testing.assert_allclose(centred.strengths, [math.log(2) / 2, -math.log(2) / 2], atol=1e-9)
    # sum-to-zero: b_A = d / 2, so Var(b_A) = (3/2) / 4 = 3/8
    np.testing.assert_allclose(centred.se, [math.sqrt(3 / 8)] * 2, atol=1e-9)
    assert centred.win_rate[0, 1] == pytest.approx(2 / 3)
    # delta method: p (1 - p) * sqrt(3/2) = 2/9 * sqrt(3/2)
    assert centred.win_rate_se[0, 1] == pytest.approx(2 / 9 * math.sqrt(1.5))


def test_three_teacher_cycle_fisher_standard_errors():
    # A > B, B > C, C > A once each: all strengths 0, every p = 1/2.
    # I = [[1/2, -1/4, -1/4], [-1/4, 1/2, -1/4], [-1/4, -1/4, 1/2]].
    rankings = [["A", "B"], ["B", "C"], ["C", "A"]]
    ref = fit_bradley_terry(rankings, constraint="C")
    # inverse of [[1/2, -1/4], [-1/4, 1/2]] = [[8/3, 4/3], [4/3, 8/3]]
    np.testing.assert_allclose(ref.covariance[:2, :2], [[8 / 3, 4 / 3], [4 / 3, 8 / 3]], atol=1e-9)
    np.testing.assert_allclose(ref.se, [math.sqrt(8 / 3), math.sqrt(8 / 3), 0.0], atol=1e-9)
    centred = fit_bradley_terry(rankings)
    # pinv(I) = (4/3)(Id - J/3): diagonal 8/9, off-diagonal -4/9
    np.testing.assert_allclose(centred.covariance, 4 / 3 * (np.eye(3) - 1 / 3), atol=1e-9)
    np.testing.assert_allclose(centred.strengths, 0.0, atol=1e-12)
    # Var(b_A - b_B) = 8/3 under both constraints; se of the win rate = 1/4 * sqrt(8/3)
    np.testing.assert_allclose(centred.win_rate_se[0, 1], ref.win_rate_se[0, 1])
    assert centred.win_rate_se[0, 1] == pytest.approx(0.25 * math.sqrt(8 / 3))


def test_mle_solves_the_score_equations():
    rankings = [
        ["A", "B", "C"],
        ["B", "A", "C"],
        ["C", "A", "B"],
        {"A": 1, "B": 1, "C": 0},
        ["A", "C"],
    ]
    fit = fit_bradley_terry(rankings)
    expected_wins = (fit.comparisons * fit.win_rate).sum(axis=1)  # the diagonal of n is 0
    np.testing.assert_allclose(fit.wins.sum(axis=1), expected_wins, atol=1e-8)
    assert fit.strengths.sum() == pytest.approx(0.0, abs=1e-12)
    assert fit.names[int(np.argmax(fit.strengths))] == "A"
    np.testing.assert_allclose(fit.win_rate + fit.win_rate.T, 1.0)


def test_mle_that_does_not_exist_is_refused_unless_a_prior_is_given():
    unbeaten = [["A", "B"], ["A", "C"], ["B", "C"], ["C", "B"]]
    with pytest.raises(ValueError, match="does not exist"):
        fit_bradley_terry(unbeaten)
    fit = fit_bradley_terry(unbeaten, prior=0.5)
    assert np.all(np.isfinite(fit.strengths)) and fit.strengths[0] == max(fit.strengths)
    with pytest.raises(ValueError, match="at least two"):
        fit_bradley_terry([["A"]])
    with pytest.raises(ValueError, match="constraint"):
        fit_bradley_terry([["A", "B"], ["B", "A"]], constraint="Z")
    with pytest.raises(ValueError, match="prior"):
        fit_bradley_terry([["A", "B"], ["B", "A"]], prior=-1)


def test_rankings_from_episodes_and_report_outputs():
    episodes = [
        _episode("p1", "s", condition="ideation", teacher="T1"),
        _episode("p1", "s", condition="ideation", teacher="T2", solved=False),
        _episode("p2", "s", condition="ideation", teacher="T1", solved=False),
        _episode("p2", "s", condition="ideation", teacher="T2"),
        _episode("p2", "s", condition="ideation", teacher="T2", solved=False),
        _episode("p3", "s", condition="ideation", teacher="T1"),  # one teacher only: no ranking
        _episode("p4", "s", condition="ideation", teacher="T2", error="boom"),
    ]
    rankings = rankings_from_episodes(episodes, score="solved")
    assert rankings == [{"T1": 1.0, "T2": 0.0}, {"T1": 0.0, "T2": 0.5}]
    fit = fit_bradley_terry(rankings)
    assert fit.win_rate[0, 1] == pytest.approx(0.5)
    report = fit.to_dict()
    assert report["win_rate"]["T1"]["T2"] == pytest.approx(0.5)
    assert [row["teacher"] for row in report["teachers"]] == ["T1", "T2"]
    assert fit.table().splitlines()[0].startswith("| teacher | strength | SE |")
    with pytest.raises(ValueError, match="score"):
        rankings_from_episodes(episodes, score="auc")
