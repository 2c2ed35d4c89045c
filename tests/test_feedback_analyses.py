"""The feedback paper's analyses across groups (Table 1, Fig. 4, §4.3 lifts, Tables 4-5 with
SEs) and KITE's Bradley–Terry win-rate tables, on records built here, by hand, and in reports."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from intbench.metrics import summarize
from intbench.metrics.feedback_analyses import (
    access_lift,
    control_means,
    feedback_controls,
    feedback_curves,
    history_lift,
    marginal_gains,
)
from intbench.report import generate_report
from tests.report_records import write_run

K = 3
SAMPLES = 20
PROBLEMS = ("p0", "p1")


def _group(student, teacher, solved, mode="teacher", history=1, reference="none") -> list[dict]:
    """One feedback group: problem p_i solved at attempt ``solved[i]`` (None: never)."""
    config = {"k_max": K, "history": history, "teacher_reference": reference}
    config["execution_context"] = "structured"
    config["execution_tests"] = "visible"
    return [
        {
            "protocol": "feedback",
            "problem_id": problem,
            "domain": "math",
            "student": student,
            "teacher": teacher,
            "condition": mode,
            "config": config,
            "solved_at": solved_at,
        }  # fmt: skip
        for problem, solved_at in zip(PROBLEMS, solved, strict=True)
    ]


def _records() -> list[dict]:
    """Students A, B with teachers A, B (the diagonal is self-feedback) and self-refinement,
    at history 1; history 3 and answer access for some cells.

    acc@1..3 at history 1, no reference: A/refine 0 0 .5, A/A .5 .5 .5, A/B .5 1 1,
    B/refine 0 0 0, B/B 0 0 .5, B/A 0 0 0.
    """
    return [
        *_group("A", None, (None, 3), mode="self_refine"),
        *_group("A", "A", (1, None)),
        *_group("A", "B", (1, 2)),
        *_group("B", None, (None, None), mode="self_refine"),
        *_group("B", "B", (3, None)),
        *_group("B", "A", (None, None)),
        # history 3: A/B all at 1 (AUC 1), B/B 0 1 1 (AUC 2/3); C's cell has no history-1 match
        *_group("A", "B", (1, 1), history=3),
        *_group("B", "B", (2, 2), history=3),
        *_group("B", "C", (1, 1), history=3),
        # answer access: A/B AUC 1 at history 1; B/B AUC 1/6 at history 1, 1 at history 3
        *_group("A", "B", (1, 1), reference="answer"),
        *_group("B", "B", (None, 3), reference="answer"),
        *_group("B", "B", (1, 1), history=3, reference="answer"),
    ]


@pytest.fixture(scope="module")
def feedback():
    return feedback_curves(_records())


DEFAULT = ("math", K, "1", "none", "structured", "visible")


def test_controls_by_hand(feedback):
    controls = feedback_controls(feedback)
    a, b = controls[(*DEFAULT, "A")], controls[(*DEFAULT, "B")]
    # A: refine acc@3 .5 (gain .5), self A/A .5 (0), best B 1 (.5)
    assert (a["self_refine"], a["self_feedback"], a["best_feedback"]) == (
        (0.5, 0.5),
        (0.5, 0.0),
        (1.0, 0.5),
    )
    assert a["best_teacher"] == "B"
    # B: refine 0 (0); self B/B .5 (.5) is also the best, over B/A 0
    assert (b["self_refine"], b["self_feedback"], b["best_feedback"]) == (
        (0.0, 0.0),
        (0.5, 0.5),
        (0.5, 0.5),
    )
    assert b["best_teacher"] == "B"
    means = control_means(controls)[DEFAULT]
    assert means["students"] == 2
    assert means["self_refine_acc"] == pytest.approx((0.25, 0.25))  # SD(.5, 0) / √2
    assert means["self_feedback_acc"] == pytest.approx((0.5, 0.0))
    assert means["self_feedback_gain"] == pytest.approx((0.25, 0.25))
    assert means["best_feedback_acc"] == pytest.approx((0.75, 0.25))
    assert means["best_feedback_gain"] == pytest.approx((0.5, 0.0))
    # at history 3 no student ran self-refinement: no mean
    assert ("math", K, "3", "none", "structured", "visible") not in control_means(controls)


def test_marginal_gain_by_hand(feedback):
    found = marginal_gains(feedback)[DEFAULT]
    # pairs A/A, A/B, B/B, B/A: acc@2 − acc@1 = 0, .5, 0, 0; acc@3 − acc@2 = 0, 0, .5, 0
    assert found["pairs"] == 4
    (m2, se2), (m3, se3) = found["per_turn"]
    assert (m2, m3) == pytest.approx((0.125, 0.125))
    assert se2 == pytest.approx(0.125) and se3 == pytest.approx(0.125)  # SD 0.25 / √4
    # mean gain@3 = .25: attempt 2 holds half of it, attempt 3 the rest
    assert found["cumulative_share"] == pytest.approx([0.5, 1.0])
    # one pair is not a matrix
    assert ("math", K, "3", "answer", "structured", "visible") not in marginal_gains(feedback)


def _rows(lifts: list[dict]) -> dict[tuple, dict]:
    return {(row["value"], row["fixed"]): row for row in lifts}


def test_history_lift_by_hand(feedback):
    rows = _rows(history_lift(feedback))
    none = rows[(("3",), ("none", "structured", "visible"))]
    # A/B: AUC 1 − 5/6, acc@3 1 − 1; B/B: AUC 2/3 − 1/6, acc@3 1 − .5 (B/C has no match)
    assert none["baseline"] == ("1",) and none["cells"] == 2
    assert none["lift"]["auc"] == pytest.approx((1 / 3, 1 / 6))
    assert none["lift"]["acc@K"] == pytest.approx((0.25, 0.25))
    answer = rows[(("3",), ("answer", "structured", "visible"))]
    assert answer["cells"] == 1 and answer["lift"]["auc"][0] == pytest.approx(5 / 6)
    assert math.isnan(answer["lift"]["auc"][1])
    pooled = rows[(("3",), "all")]  # the three cells of both access settings
    assert pooled["cells"] == 3
    assert pooled["lift"]["auc"][0] == pytest.approx((1 / 6 + 1 / 2 + 5 / 6) / 3)


def test_access_lift_by_hand(feedback):
    rows = _rows(access_lift(feedback))
    assert set(rows) == {
        (("answer", "structured"), ("1", "visible")),
        (("answer", "structured"), ("3", "visible")),
        (("answer", "structured"), "all"),
    }
    first = rows[(("answer", "structured"), ("1", "visible"))]
    # A/B: AUC 1 − 5/6; B/B: 1/6 − 1/6
    assert first["baseline"] == ("none", "structured") and first["cells"] == 2
    assert first["lift"]["auc"] == pytest.approx((1 / 12, 1 / 12))
    assert first["lift"]["acc@K"] == pytest.approx((0.0, 0.0))
    third = rows[(("answer", "structured"), ("3", "visible"))]  # B/B: 1 − 2/3
    assert third["cells"] == 1 and third["lift"]["auc"][0] == pytest.approx(1 / 3)
    assert rows[(("answer", "structured"), "all")]["lift"]["auc"][0] == pytest.approx(1 / 6)


def test_access_lift_needs_the_baseline_access():
    records = [r for r in _records() if r["config"]["teacher_reference"] == "answer"]
    assert access_lift(feedback_curves(records)) == []


def test_runs_from_when_the_default_context_was_feedback_keep_their_baseline():
    records = _records()
    for record in records:
        record["config"]["execution_context"] = "feedback"
    rows = _rows(access_lift(feedback_curves(records)))
    assert rows[(("answer", "feedback"), ("1", "visible"))]["baseline"] == ("none", "feedback")


def test_matrix_summary_means_and_ses_over_students():
    tables = {t.name: t for t in summarize(_records(), samples=SAMPLES).tables}
    table = tables["matrix_summary_math_k3"]
    rows = {tuple(row[:3]): row[3:] for row in table.rows}
    # AUC: A's teachers 1/2 (A), 5/6 (B); B's 0 (A), 1/6 (B)
    assert rows[("teacher range (Table 4)", "auc", "worst")] == pytest.approx(
        [0.25, 0.25, 2]
    )  # SD(.5, 0) / √2
    assert rows[("teacher range (Table 4)", "auc", "best")] == pytest.approx([0.5, 1 / 3, 2])
    assert rows[("teacher range (Table 4)", "auc", "best − worst")] == pytest.approx(
        [0.25, 1 / 12, 2]
    )
    assert rows[("teacher range (Table 4)", "acc@K", "best − worst")] == pytest.approx([0.5, 0, 2])
    # solo acc@1: A 1/3 (of A's runs, p0 solved first in 2 of 3), B 0; both students get
    # the higher AUC from B, so ρ = −1 and the one comparable pair is inverted
    assert rows[("solver vs teacher (Table 5)", "auc", "spearman ρ")] == pytest.approx([-1, 0, 2])
    assert rows[("solver vs teacher (Table 5)", "auc", "inversion rate")] == pytest.approx(
        [1, 0, 2]
    )


def _csv(out: Path, name: str) -> list[dict]:
    with (out / "tables" / f"{name}.csv").open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_report_shows_the_feedback_analyses(tmp_path):
    runs = tmp_path / "runs"
    records = _records()
    write_run(runs / "history1", [r for r in records if r["config"]["history"] == 1])
    write_run(runs / "history3", [r for r in records if r["config"]["history"] == 3])
    out = generate_report([runs], tmp_path / "out", samples=SAMPLES).html_path.parent
    controls = [r for r in _csv(out, "feedback_controls") if r["history"] == "1"]
    mean = next(r for r in controls if r["student"].startswith("mean of 2"))
    assert float(mean["best_feedback_acc_at_k"]) == pytest.approx(0.75)
    assert float(mean["self_refine_gain"]) == pytest.approx(0.25)
    marginal = [
        r
        for r in _csv(out, "feedback_marginal_gain")
        if (r["history"], r["teacher_reference"]) == ("1", "none")
    ]
    assert [float(r["cumulative_share"]) for r in marginal] == pytest.approx([0.5, 1.0])
    history = {(r["value"], r["fixed"]): r for r in _csv(out, "feedback_history_lift")}
    assert float(history[("3", "none/structured/visible")]["auc_lift"]) == pytest.approx(1 / 3)
    assert float(history[("3", "all")]["auc_lift"]) == pytest.approx(1 / 2)
    access = {(r["value"], r["fixed"]): r for r in _csv(out, "feedback_access_lift")}
    assert float(access[("answer/structured", "1/visible")]["auc_lift"]) == pytest.approx(1 / 12)
    summary = _csv(out, "matrix_summary_math_k3")
    assert {r["statistic"] for r in summary} >= {"best − worst", "spearman ρ", "inversion rate"}
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Feedback controls" in page and "History lift" in page


def test_runs_without_controls_or_other_settings_add_no_analysis_table():
    records = _group("A", "B", (1, 2)) + _group("B", "A", (None, None))
    names = {t.name for t in summarize(records, samples=SAMPLES).tables}
    assert not names & {"feedback_controls", "feedback_history_lift", "feedback_access_lift"}


# ------------------------------------------------------------------ Bradley–Terry
def _tutor(problem, teacher, solved, condition="ideation", **fields) -> dict:
    return {
        "protocol": "tutor", "problem_id": problem, "domain": "math", "student": "s1",
        "teacher": teacher, "condition": condition, "solved_at": 1 if solved else None, **fields,
    }  # fmt: skip


def _tutor_records() -> list[dict]:
    """t1 beats t2 on tasks 0 and 1, loses on task 2; a solo run and a failed run don't count."""
    return [
        _tutor("q0", "t1", True),
        _tutor("q0", "t2", False),
        _tutor("q1", "t1", True),
        _tutor("q1", "t2", False),
        _tutor("q2", "t1", False),
        _tutor("q2", "t2", True),
        _tutor("q2", "t3", True, condition="solo"),
        _tutor("q2", "t3", False, error="teacher failed"),
    ]


def test_win_rate_table_by_hand(tmp_path):
    write_run(tmp_path / "tutor", _tutor_records())
    out = generate_report([tmp_path / "tutor"], tmp_path / "out", samples=SAMPLES)
    strengths = {r["teacher"]: r for r in _csv(out.html_path.parent, "tutor_strengths_math")}
    # 2 wins to 1: π = (2/3, 1/3); π-scale information of t1 without t2's row and column
    # I = n π2 / (π1 (π1 + π2)²) = 3 · (1/3) / (2/3) = 3/2, SE = √(2/3)
    assert set(strengths) == {"t1", "t2"}
    assert float(strengths["t1"]["pi"]) == pytest.approx(2 / 3)
    assert float(strengths["t1"]["pi_se"]) == pytest.approx(math.sqrt(2 / 3))
    assert strengths["t2"]["pi_se"] == ""  # the removed row: no SE
    # log scale, sum zero: b1 = log 2 / 2; var(b1 − b2) = 1 / (n p q) = 3/2, var(b1) = 3/8
    assert float(strengths["t1"]["strength"]) == pytest.approx(math.log(2) / 2)
    assert float(strengths["t1"]["se"]) == pytest.approx(math.sqrt(3 / 8))
    rates = {
        (r["teacher"], r["opponent"]): r for r in _csv(out.html_path.parent, "tutor_win_rates_math")
    }
    # P(t1 beats t2) = 2/3, delta-method SE = p q √(3/2)
    assert float(rates[("t1", "t2")]["win_rate"]) == pytest.approx(2 / 3)
    assert float(rates[("t1", "t2")]["se"]) == pytest.approx(2 / 9 * math.sqrt(1.5))
    assert float(rates[("t2", "t1")]["win_rate"]) == pytest.approx(1 / 3)
    assert "Bradley–Terry win rates" in out.html_path.read_text(encoding="utf-8")


def _rated(problem, teacher, solved, human=None, task=4.0, student="s1") -> dict:
    """An ideation episode with the task's rating and, if given, the student's rating before it."""
    metadata = {"problem": {"rating": task}}
    if human is not None:
        metadata["elo"] = {"student_before": human, "student_after": human, "task": task}
    return _tutor(problem, teacher, solved, student=student, metadata=metadata)


def _solo(model, task_rating) -> dict:
    return _tutor(f"solo-{model}", None, True, condition="solo", student=model,
                  metadata={"problem": {"rating": task_rating}})  # fmt: skip


def test_skill_orderings_are_table_1s():
    from intbench.metrics.ratings import skill_ordering

    # KITE Table 1 caption: HTM = Human < Task < Model, HMT = Human < Model < Task,
    # MHT = Model < Human < Task; any other order (or a tie) is none of them.
    assert skill_ordering(3.0, 4.0, 5.0) == "HTM"
    assert skill_ordering(3.0, 4.0, 3.5) == "HMT"
    assert skill_ordering(3.0, 4.0, 2.0) == "MHT"
    assert skill_ordering(4.0, 3.0, 5.0) is None and skill_ordering(3.0, 4.0, 4.0) is None


def test_win_rates_by_skill_ordering_by_hand():
    # Model skills (hardest solo solve): t1 5.0, t2 3.5, t3 2.0.  Student s1 (rating 3.0 before
    # each task) does tasks q0..q2 (rated 4.0) with t1 (HTM) and t2 (HMT): t1 wins q0, q1, t2 q2.
    # Student s2 (not calibrated: math's starting 2.5) does q3 with t2 (HMT) and t3 (MHT): t2 wins.
    records = [
        _solo("t1", 5.0), _solo("t2", 3.5), _solo("t3", 2.0),
        _rated("q0", "t1", True, 3.0), _rated("q0", "t2", False, 3.0),
        _rated("q1", "t1", True, 3.0), _rated("q1", "t2", False, 3.0),
        _rated("q2", "t1", False, 3.0), _rated("q2", "t2", True, 3.0),
        _rated("q3", "t2", True, student="s2"), _rated("q3", "t3", False, student="s2"),
    ]  # fmt: skip
    tables = {t.name: t for t in summarize(records, samples=SAMPLES).tables}
    table = tables["tutor_win_rates_by_ordering_math"]
    rows = {row[0]: dict(zip(table.column_ids, row, strict=True)) for row in table.rows}
    # all rankings: t1 beats t2 2 of 3, t3 never wins: π = (2/3, 1/3, 0) (C.7.2)
    assert [rows[t]["pi_all"] for t in ("t1", "t2", "t3")] == pytest.approx([2 / 3, 1 / 3, 0.0])
    # HTM, t1's sessions (t1 vs t2 on q0..q2): π = (2/3, 1/3); C.7.3 SE of t1 √(2/3)
    assert rows["t1"]["pi_htm"] == pytest.approx(2 / 3) and rows["t3"]["pi_htm"] is None
    assert rows["t1"]["pi_se_htm"] == pytest.approx(math.sqrt(2 / 3))
    # HMT, t2's sessions: the same three comparisons and t2 beating t3 on q3
    assert [rows[t]["pi_hmt"] for t in ("t1", "t2", "t3")] == pytest.approx([2 / 3, 1 / 3, 0.0])
    # MHT, t3's session on q3: t2 beats t3, π = (1, 0)
    assert (rows["t2"]["pi_mht"], rows["t3"]["pi_mht"]) == pytest.approx((1.0, 0.0))
    assert "HTM (Human < Task < Model): 3, HMT (Human < Model < Task): 4" in table.note
    assert "MHT (Model < Human < Task): 1; in none of them: 0" in table.note
    assert "t3 never won" in table.note


def test_win_rates_say_why_when_the_mle_does_not_exist():
    # t1 beats t2 and t3, which beat each other: t1 never loses, so π_t1 has no maximum
    records = [
        _tutor("q0", "t1", True), _tutor("q0", "t2", False),
        _tutor("q1", "t1", True), _tutor("q1", "t3", False),
        _tutor("q2", "t2", True), _tutor("q2", "t3", False),
        _tutor("q3", "t3", True), _tutor("q3", "t2", False),
    ]  # fmt: skip
    tables = {t.name: t for t in summarize(records, samples=SAMPLES).tables}
    table = tables["tutor_win_rates_math"]
    assert table.rows == [] and table.note.startswith(
        "Not fitted: Bradley–Terry MLE does not exist"
    )
    assert "tutor_strengths_math" not in tables
