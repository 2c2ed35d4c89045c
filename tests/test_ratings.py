"""Elo skill calibration, task selection, transfer rates and Bradley–Terry, by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from intbench.tutor import (
    EloConfig,
    EloTable,
    SessionRanking,
    elo_update,
    expected_score,
    fit_bradley_terry,
    model_skill,
    pairwise_from_rankings,
    rankings_from_episodes,
    ratings_from_episodes,
    solo_outcome,
    transfer_report,
)
from intbench.tutor.elo import DOMAIN_ELO, initial_task_rating

CONFIG = EloConfig(k=32, scale=400, initial=1500, lower=0, upper=3000)


# ----------------------------------------------------------------------- Elo
def test_expected_score_by_hand():
    assert expected_score(1500, 1500) == 0.5
    assert expected_score(1500, 1900) == pytest.approx(1 / 11)
    assert expected_score(1900, 1500) == pytest.approx(10 / 11)


def test_domain_constants_are_kites():
    # KITE App. C.8: coding K=64, S=200, [1000, 4000], next task 200-400 above;
    # math K=0.8, S=1, [1, 10], next task 0.75-1.25 above.
    coding, math_ = DOMAIN_ELO["codeforces"], DOMAIN_ELO["math"]
    assert (coding.k, coding.scale, coding.lower, coding.upper) == (64, 200, 1000, 4000)
    assert coding.band == (200, 400)
    assert (math_.k, math_.scale, math_.lower, math_.upper) == (0.8, 1, 1, 10)
    assert math_.band == (0.75, 1.25)


def test_math_update_by_hand_keeps_the_task_rating():
    # P_e = 1 / (1 + 10^((6 - 5) / 1)) = 1/11; a loss: 5 + 0.8 (0 - 1/11) = 4.927
    student, task = elo_update(5, 6, False, DOMAIN_ELO["math"])
    assert student == pytest.approx(5 - 0.8 / 11) and round(student, 3) == 4.927
    assert task == 6
    # a win: 5 + 0.8 (1 - 1/11) = 5.727
    assert elo_update(5, 6, True, DOMAIN_ELO["math"]) == pytest.approx((5 + 0.8 * 10 / 11, 6))


def test_coding_update_by_hand_keeps_the_task_rating():
    # P_e = 1 / (1 + 10^((1700 - 1500) / 200)) = 1/11; a win: 1500 + 64 * 10/11
    assert elo_update(1500, 1700, True, DOMAIN_ELO["codeforces"]) == pytest.approx(
        (1500 + 640 / 11, 1700)
    )
    # an even match lost: 1500 - 64/2
    assert elo_update(1500, 1500, False, DOMAIN_ELO["codeforces"]) == (1468, 1500)


def test_ratings_stay_within_the_domain_bounds():
    # math 9.8 vs 9.8 won: 9.8 + 0.4 = 10.2 -> 10; coding 1010 vs 1010 lost: 978 -> 1000
    assert elo_update(9.8, 9.8, True, DOMAIN_ELO["math"]) == (10, 9.8)
    assert elo_update(1010, 1010, False, DOMAIN_ELO["codeforces"]) == (1000, 1010)


def test_config_validation():
    for kwargs in (
        {"k": 0},
        {"scale": 0},
        {"lower": 10, "upper": 5},
        {"initial": 9999},
        {"band": (200, 100)},
    ):
        with pytest.raises(ValueError):
            EloConfig(**kwargs)


def test_initial_task_rating_from_metadata():
    assert initial_task_rating({"rating": 1900}, CONFIG) == 1900
    assert initial_task_rating({"rating": 9000}, CONFIG) == 3000
    assert initial_task_rating({"level": 5}, CONFIG) == 1900  # 1500 + (5 - 3) * 200
    assert initial_task_rating({"difficulty": 1}, CONFIG) == 1100
    assert initial_task_rating({"rating": True, "level": "hard"}, CONFIG) == 1500
    # MATH levels 1-5 on the 1-10 scale: 2.5 + 0.75 (level - 3)
    assert initial_task_rating({"level": 5}, DOMAIN_ELO["math"]) == pytest.approx(4.0)
    assert initial_task_rating({"level": 1}, DOMAIN_ELO["math"]) == pytest.approx(1.0)


def test_table_moves_the_student_only():
    table = EloTable(CONFIG)
    assert table.record("s", "t", True, {"rating": 1500}) == pytest.approx((1516, 1500))
    assert table.record("s", "t", False) == pytest.approx(
        (1516 - 32 * expected_score(1516, 1500), 1500)
    )
    assert table.task("t") == 1500
    assert table.student("new") == 1500


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
    tables = ratings_from_episodes(episodes, {"math": CONFIG})
    expected = EloTable(CONFIG)
    expected.record("s", "p1", True)
    expected.record("s", "p2", False)
    assert tables["math"].students == pytest.approx(expected.students)
    assert tables["math"].tasks == pytest.approx(expected.tasks)


def test_model_skill_is_the_mean_rating_of_the_hardest_solved_quarter():
    ratings = {f"p{i}": 1000 + 100 * i for i in range(1, 10)}
    episodes = [
        {**_episode(p, "M", solved=i != 9), "domain": "codeforces",
         "metadata": {"problem": {"rating": r}}}
        for i, (p, r) in enumerate(ratings.items(), start=1)
    ]  # fmt: skip
    episodes.append({**episodes[8], "solved_at": 1})  # p9 solved on a second try
    # solved: p1..p9 (9 tasks); the hardest quarter: ceil(9 / 4) = 3 -> 1900, 1800, 1700
    assert model_skill(episodes) == {("codeforces", "M"): pytest.approx(1800)}


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


def test_session_rankings_compare_the_latest_model_only():
    # KITE C.7.1: after a session with C, the ranking D > C > B > A gives C's
    # comparisons only: D beats C, C beats B, C beats A (B vs A is not recorded).
    names, wins = pairwise_from_rankings([SessionRanking(["D", "C", "B", "A"], latest="C")])
    assert names == ["A", "B", "C", "D"]
    expected = np.zeros((4, 4))
    expected[3, 2] = expected[2, 1] = expected[2, 0] = 1
    np.testing.assert_allclose(wins, expected)
    with pytest.raises(ValueError, match="not ranked"):
        SessionRanking(["A", "B"], latest="Z")


def test_ties_count_half_or_are_dropped():
    ranking = [{"A": 1.0, "B": 1.0, "C": 0.0}]
    _, half = pairwise_from_rankings(ranking)
    _, dropped = pairwise_from_rankings(ranking, ties="drop")
    assert half[0, 1] == half[1, 0] == 0.5
    assert dropped[0, 1] == dropped[1, 0] == 0 and dropped[0, 2] == dropped[1, 2] == 1
    with pytest.raises(ValueError, match="ties"):
        pairwise_from_rankings(ranking, ties="coin")


def test_pi_scale_standard_errors_two_teachers_by_hand():
    # A beats B 2 of 3: π = (2/3, 1/3).  C.7.3: I_AA = 3 / (π_A + π_B)^2 * π_B / π_A = 3/2;
    # B's row and column removed, Var(π_A) = 2/3.
    fit = fit_bradley_terry([["A", "B"], ["A", "B"], ["B", "A"]])
    np.testing.assert_allclose(fit.pi, [2 / 3, 1 / 3], atol=1e-9)
    assert fit.pi_reference == "B"
    assert fit.pi_se[0] == pytest.approx(math.sqrt(2 / 3)) and math.isnan(fit.pi_se[1])
    other = fit_bradley_terry([["A", "B"], ["A", "B"], ["B", "A"]], pi_reference="A")
    # I_BB = 3 * π_A / π_B = 6, Var(π_B) = 1/6
    assert other.pi_se[1] == pytest.approx(math.sqrt(1 / 6)) and math.isnan(other.pi_se[0])


def test_pi_scale_standard_errors_three_teachers_by_hand():
    # A beats B twice, B beats C, C beats A, B beats A: n_AB = 2, n_BA = 1, n_BC = 1,
    # n_CA = 1.  Fit, then build C.7.3's information from the fitted π by hand.
    rankings = [["A", "B"], ["A", "B"], ["B", "A"], ["B", "C"], ["C", "A"]]
    fit = fit_bradley_terry(rankings)
    a, b, c = fit.pi
    assert a + b + c == pytest.approx(1.0)
    i_aa = 3 / (a + b) ** 2 * b / a + 1 / (a + c) ** 2 * c / a
    i_bb = 3 / (a + b) ** 2 * a / b + 1 / (b + c) ** 2 * c / b
    i_ab = -3 / (a + b) ** 2
    det = i_aa * i_bb - i_ab**2
    assert fit.pi_se[0] == pytest.approx(math.sqrt(i_bb / det))
    assert fit.pi_se[1] == pytest.approx(math.sqrt(i_aa / det))
    assert math.isnan(fit.pi_se[2])
    # the MLE solves the paper's fixed point π_i = w_i / sum_j (n_ij + n_ji) / (π_i + π_j)
    assert a == pytest.approx(2 / (3 / (a + b) + 1 / (a + c)))


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
    assert fit.table().splitlines()[0].startswith("| teacher | π | π SE | strength | SE |")
    assert "| T2 | 0.500 | n/a |" in fit.table()  # the teacher held fixed for the π SEs
    with pytest.raises(ValueError, match="score"):
        rankings_from_episodes(episodes, score="auc")


def test_a_teacher_that_never_wins_gets_pi_zero_and_no_standard_error():
    # KITE C.7.2: w_C = 0, so the update π_C = w_C / sum_j (...) gives π_C = 0.  A beats B
    # 2 of 3, and each beats C once: the fixed point for A is 3 π_A / (π_A + π_B) + 1 = 3,
    # π_A / (π_A + π_B) = 2/3, so π = (2/3, 1/3, 0).
    rankings = [["A", "B"], ["A", "B"], ["B", "A"], ["A", "C"], ["B", "C"]]
    fit = fit_bradley_terry(rankings)
    np.testing.assert_allclose(fit.pi, [2 / 3, 1 / 3, 0.0], atol=1e-9)
    assert fit.never_won == ["C"] and "C never won: π = 0" in fit.note
    # C.7.3 for A without B's row and column (C's terms are 0 at π_C = 0): √(2/3), as
    # with two teachers; C's SE is undefined, and B, held fixed, has none
    assert fit.pi_reference == "B" and fit.pi_se[0] == pytest.approx(math.sqrt(2 / 3))
    assert math.isnan(fit.pi_se[1]) and math.isnan(fit.pi_se[2])
    assert np.isfinite(fit.pi_se[0]) and math.isnan(fit.strengths[2]) and math.isnan(fit.se[2])
    assert fit.win_rate[0, 2] == 1.0 and fit.win_rate[2, 1] == 0.0
    assert math.isnan(fit.win_rate_se[0, 2])
    assert fit.win_rate[0, 1] == pytest.approx(2 / 3)
    assert "| C | 0.000 | n/a | n/a | n/a |" in fit.table()
    assert fit.to_dict()["never_won"] == ["C"]
    # a teacher whose only wins are over C is at π = 0 too (its wins carry no weight)
    chain = fit_bradley_terry([["A", "B"], ["B", "A"], ["A", "D"], ["D", "C"]])
    assert chain.never_won == ["C", "D"] and chain.pi[:2] == pytest.approx([0.5, 0.5])
    with pytest.raises(ValueError, match="never won"):
        fit_bradley_terry(rankings, pi_reference="C")
    with pytest.raises(ValueError, match="does not exist"):  # no win at all
        fit_bradley_terry([{"A": 1, "B": 1}], ties="drop")
