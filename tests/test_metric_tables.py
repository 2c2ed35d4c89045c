"""The tables :func:`intbench.metrics.summarize` builds: the tutor table on fixture
records (values computed by hand), dispatch on protocol, text rendering, and the
import paths that predate the metrics package."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from intbench.metrics import Estimate, Table, TutorKey, summarize, tutor_summary
from intbench.metrics.estimate import problem_mean
from intbench.runner import load_run

FIXTURE = Path(__file__).parent / "fixtures" / "episodes_v1"
STUDENT = "scripted:tests.scripted_students:fixture_student"
TEACHER = "scripted:tests.scripted_students:fixture_teacher"
SAMPLES = 200


def _fixture(run: str) -> list[dict]:
    return load_run(FIXTURE / run)


@pytest.fixture()
def tutor_records() -> list[dict]:
    """The fixture's four ideation episodes (problems p0..p3), altered, plus solo runs.

    Ideation: p1 is made unsolved and two of p0's three messages withheld, so
    3 of 4 problems are solved and 2 of 12 messages withheld; one more p0
    episode failed.  Solo: p0 solved, p1 and p2 not, p3 failed.
    """
    ideation = _fixture("tutor")
    ideation[0]["steps"][0]["withheld"] = ideation[0]["steps"][1]["withheld"] = True
    ideation[1]["solved_at"] = None
    failed = {**copy.deepcopy(ideation[0]), "error": "student failed", "episode_id": "failed"}
    solo = []
    for record, solved_at in zip(copy.deepcopy(ideation), (1, None, None, 1), strict=True):
        record.update(condition="solo", steps=[], solved_at=solved_at, episode_id="solo")
        solo.append(record)
    solo[3]["error"] = "grader failed"
    return [*ideation, failed, *solo]


def test_tutor_table_hand_computed(tutor_records):
    summary = summarize(tutor_records, samples=SAMPLES)
    assert [t.name for t in summary.tables] == ["tutor", "tutor_elo"]
    ideation = summary.tutor[TutorKey("math", STUDENT, TEACHER, "ideation")]
    assert ideation["solve_rate"].value == 0.75  # p0, p2, p3 of four problems
    # solo ran on p0..p2 (p3 failed): solo 1, 0, 0 against ideation 1, 0, 1
    assert ideation["solo_rate"].value == pytest.approx(1 / 3)
    assert ideation["collaboration_gain"].value == pytest.approx(1 / 3)
    assert ideation["withheld_per_message"].value == pytest.approx(2 / 12)
    assert ideation["withheld_per_episode"].value == 0.5  # (2 + 0 + 0 + 0) / 4
    assert (ideation["n_episodes"], ideation["n_problems"], ideation["n_paired"]) == (4, 4, 3)
    assert (ideation["n_messages"], ideation["n_withheld"], ideation["n_errors"]) == (12, 2, 1)
    solo = summary.tutor[TutorKey("math", STUDENT, TEACHER, "solo")]
    assert solo["solve_rate"].value == pytest.approx(1 / 3)
    assert math.isnan(solo["solo_rate"].value) and math.isnan(solo["withheld_per_message"].value)
    assert (solo["n_episodes"], solo["n_messages"], solo["n_errors"]) == (3, 0, 1)

    rate = ideation["solve_rate"]  # a 95% interval resampling the four problems
    assert rate == problem_mean({"p0": 1.0, "p1": 0.0, "p2": 1.0, "p3": 1.0}, SAMPLES)
    assert rate.low < rate.value <= rate.high and rate.n == 4
    row = summary.tables[0].to_markdown().splitlines()[-2]  # rows are in key order
    assert row.startswith(f"| math | {STUDENT} | {TEACHER} | ideation | 0.750 [")
    assert row.endswith("| 0.167 [0.000, 0.500] | 0.500 [0.000, 1.500] | 4 | 4 | 3 | 12 | 1 |")


def _solo(problem: str, student: str, solved: bool, level: int, **fields) -> dict:
    return {
        "protocol": "tutor", "condition": "solo", "problem_id": problem, "domain": "math",
        "student": student, "solved_at": 1 if solved else None,
        "metadata": {"problem": {"level": level}}, **fields,
    }  # fmt: skip


def test_tutor_report_shows_elo_skill_and_transfer_by_hand():
    # KITE App. C.8 on the math scale: a new student at 2.5, level 3 at 2.5, level 5 at 4.0.
    episodes = [
        _solo("a", STUDENT, True, 3),  # 2.5 + 0.8 (1 - 1/2) = 2.9
        _solo("b", STUDENT, False, 5),  # 2.9 - 0.8 / (1 + 10^(4.0 - 2.9))
        _solo("a", TEACHER, True, 3),
        _solo("b", TEACHER, True, 5),
        {**_solo("a", STUDENT, True, 3), "condition": "ideation", "teacher": TEACHER},
        {**_solo("b", STUDENT, False, 5), "condition": "ideation", "teacher": TEACHER},
    ]
    tables = {t.name: t for t in summarize(episodes, samples=SAMPLES).tables}
    elo = {row[1]: dict(zip(tables["tutor_elo"].ids, row, strict=True))
           for row in tables["tutor_elo"].rows}  # fmt: skip
    assert elo[STUDENT]["calibrated"] == pytest.approx(2.9 - 0.8 / (1 + 10 ** (4.0 - 2.9)))
    # the teacher solved both alone: the hardest quarter (at least one task) is b at 4.0
    assert elo[TEACHER]["model_skill"] == pytest.approx(4.0)
    assert elo[STUDENT]["selected"] is None  # no Elo-selected run
    (transfer,) = tables["tutor_transfer"].rows
    row = dict(zip(tables["tutor_transfer"].columns, transfer, strict=True))
    assert (row["collaborative_rate"], row["teacher_solo_rate"], row["transfer"]) == (0.5, 1, 0.5)


def test_tutor_without_solo_runs_has_no_comparison():
    summary = tutor_summary(_fixture("tutor"), samples=SAMPLES)
    assert summary["solve_rate"].value == 1.0 and summary["n_paired"] == 0
    assert str(summary["solo_rate"]) == str(summary["collaboration_gain"]) == "n/a"


def test_summarize_gives_one_table_per_protocol_present():
    records = [e for run in ("monitor", "feedback", "tutor") for e in _fixture(run)]
    other = {**records[0], "protocol": "survey", "steps": [], "episode_id": "x"}
    summary = summarize([*records, other], samples=SAMPLES)
    # the monitor baselines are solo solves, so the tutor run gets its Elo table too
    assert [t.name for t in summary.tables] == ["monitor", "feedback", "tutor", "tutor_elo"]
    assert summary.other_protocols == {"survey": 1}
    assert len(summary.monitor) == len(summary.feedback) == len(summary.tutor) == 1
    # a run of one protocol prints that protocol's table only
    text = summarize(_fixture("tutor"), samples=SAMPLES).to_text()
    assert text.startswith("Tutor protocol") and "Monitor" not in text
    assert summarize([]).to_text() == "no episodes"


def test_text_shows_missing_values_as_n_a_and_folds_wide_tables():
    table = Table(
        "t", "T", ["name", "value", "gap"], [["a", math.nan, None], ["b", Estimate(0.5, 0.25, 0.75), 1]],
        ids=["name", "value", "gap"], headline=["value", "name"],
    )  # fmt: skip
    assert table.to_text().splitlines() == [
        "T",
        "name  value                 gap",
        "a     n/a                   —",
        "b     0.500 [0.250, 0.750]  1",
    ]
    assert table.to_text(width=10).splitlines()[1:5] == [
        "-[ 1 ]-",
        "name   a",
        "value  n/a",
        "gap    —",
    ]
    assert table.headline_text(max_rows=1).splitlines() == [
        "T (tables/t.md)",
        "value  name",
        "n/a    a",
        "... 1 more rows",
    ]
    with pytest.raises(ValueError, match="unknown ids"):
        Table("t", "T", ["a"], [], headline=["b"])


def test_names_importable_from_their_old_places():
    import intbench.generalization as generalization
    import intbench.generalization.metrics as old_generalization
    import intbench.metrics as metrics
    import intbench.tutor as tutor
    import intbench.tutor.elo as elo
    from intbench.metrics import generalization as new_generalization
    from intbench.metrics import tutor as new_tutor

    old_metrics_names = (
        "BOOTSTRAP_SAMPLES MONITOR_METRICS Estimate Records acc_at_k auc best_minus_worst "
        "bootstrap by_problem feedback_summary first_step_gain fixed_effects gain helpfulness "
        "leak_rate monitor_summary normalized_gain phi phi_given_baseline r_squared "
        "right_to_wrong solver_vs_teacher spearman split_errors tau_abs tau_rel wrong_to_right"
    ).split()
    assert all(hasattr(metrics, name) for name in old_metrics_names)
    for name in ("generalization_scores", "generalization_summary", "generalization_table"):
        assert getattr(old_generalization, name) is getattr(new_generalization, name)
        assert getattr(generalization, name) is getattr(new_generalization, name)
    assert generalization.CONTEXTS == new_generalization.CONTEXTS
    assert tutor.transfer_report is new_tutor.transfer_report
    assert tutor.solo_outcome is elo.solo_outcome is new_tutor.solo_outcome


def test_a_tutor_eval_prints_the_tutor_table(tmp_path, monkeypatch, capsys):
    from intbench.cli import main

    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    code = main([
        "eval", "--env", "IntBench-Math-Tutor-v0", "--teacher", TEACHER, "--student", STUDENT,
        "-n", "2", "--out", str(tmp_path / "run"), "--no-progress",
    ])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "Tutor protocol" in printed and "withheld / message" in printed
    assert "Monitor" not in printed
    # no checker model configured: summary.json names the rules, the offline fallback
    settings = json.loads((tmp_path / "run" / "summary.json").read_text())["settings"]
    assert settings["checker"] == "rules" and "offline fallback" in settings["checker_note"]
