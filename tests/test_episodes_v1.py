"""Run directories of the first record format still load and give the same metrics.

The expected numbers were computed from ``tests/fixtures/episodes_v1`` by the
release that wrote it, before episode parts were typed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from intbench.metrics import acc_at_k, feedback_summary, monitor_summary, summarize
from intbench.records import Attempt, Episode, Intervention, MonitorStep, TutorStep
from intbench.runner import load_run
from intbench.tutor.elo import ratings_from_episodes

FIXTURE = Path(__file__).parent / "fixtures" / "episodes_v1"
RUNS = ("monitor", "feedback", "tutor")
SAMPLES = 200


def _lines(run: str) -> list[str]:
    return (FIXTURE / run / "episodes.jsonl").read_text(encoding="utf-8").splitlines()


def _estimates(summary: dict) -> dict:
    return {k: v.to_dict() if hasattr(v, "to_dict") else v for k, v in summary.items()}


@pytest.mark.parametrize("run", RUNS)
def test_records_round_trip_to_the_same_json(run):
    for line in _lines(run):
        record = json.loads(line)
        assert Episode.from_dict(record).to_dict() == record


def test_parts_are_typed():
    monitor = Episode.from_dict(json.loads(_lines("monitor")[0]))
    assert isinstance(monitor.baseline, Attempt) and monitor.baseline.correct
    assert isinstance(monitor.intervention, Intervention) and monitor.intervention.applied
    assert isinstance(monitor.intervention.attempt, Attempt)
    assert all(isinstance(s, MonitorStep) for s in monitor.steps)
    tutor = Episode.from_dict(json.loads(_lines("tutor")[0]))
    assert all(isinstance(s, TutorStep) for s in tutor.steps)
    assert all(isinstance(a, Attempt) for a in tutor.attempts)


@pytest.mark.parametrize("typed", [False, True], ids=["dicts", "episodes"])
def test_monitor_metrics_are_unchanged(typed):
    episodes = load_run(FIXTURE / "monitor")
    if typed:
        episodes = [Episode.from_dict(e) for e in episodes]
    summary = _estimates(monitor_summary(episodes, samples=SAMPLES))
    assert summary == {
        # two of the four baselines are right (lines 1 and 4 of the fixture)
        "baseline_accuracy": {"value": 0.5, "low": 0.0, "high": 1.0, "n": 4},
        "phi": {"value": 1.0, "low": 1.0, "high": 1.0, "n": 4},
        "phi_correct": {"value": 1.0, "low": 1.0, "high": 1.0, "n": 4},
        "phi_incorrect": {"value": 1.0, "low": 1.0, "high": 1.0, "n": 4},
        "tau_abs": {"value": 200.0, "low": 200.0, "high": 200.0, "n": 4},
        "tau_rel": {
            "value": 0.9569377990430622,
            "low": 0.9569377990430622,
            "high": 0.9569377990430622,
            "n": 4,
        },
        "H": {"value": 0.0, "low": -0.5062499999999999, "high": 0.75, "n": 4},
        "wrong_to_right": {"value": 0.5, "low": 0.0, "high": 1.0, "n": 4},
        "right_to_wrong": {"value": 0.5, "low": 0.0, "high": 1.0, "n": 4},
        "n_episodes": 4,
        "n_errors": 0,
        "n_interventions": 4,
        "n_excluded": 0,
        "n_failed_continuations": 0,
        "leak_rate": {"value": 0.0, "low": 0.0, "high": 0.0, "n": 4},
    }


@pytest.mark.parametrize("typed", [False, True], ids=["dicts", "episodes"])
def test_feedback_metrics_are_unchanged(typed):
    episodes = load_run(FIXTURE / "feedback")
    if typed:
        episodes = [Episode.from_dict(e) for e in episodes]
    summary = _estimates(feedback_summary(episodes, samples=SAMPLES))
    assert summary == {
        "acc": [0.5, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75],
        "n_episodes": 4,
        "n_problems": 4,
        "n_errors": 0,
        "k_max": 10,
        "acc@1": {"value": 0.5, "low": 0.0, "high": 1.0, "n": 4},
        # acc@k intervals: a problem drawn twice by the bootstrap counts twice
        "acc@10": {"value": 0.75, "low": 0.25, "high": 1.0, "n": 4},
        "gain": {"value": 0.25, "low": 0.0, "high": 0.75, "n": 4},
        "normalized_gain": {"value": 0.5, "low": 0.0, "high": 1.0, "n": 4},
        "auc": {"value": 0.725, "low": 0.25, "high": 1.0, "n": 4},
        "first_step_gain": {"value": 0.25, "low": 0.0, "high": 0.75, "n": 4},
        "leak_rate": {"value": 0.0, "low": 0.0, "high": 0.0, "n": 4},
    }


def test_tutor_solve_rates_and_ratings_are_unchanged():
    assert acc_at_k(load_run(FIXTURE / "tutor"), 5) == [0.5, 0.75, 1.0, 1.0, 1.0]
    ratings = ratings_from_episodes(load_run(FIXTURE / "monitor"))["math"].to_dict()
    # KITE App. C.8 on the math scale: start 2.5; levels 3, 1, 4, 1 sit at 2.5, 1.0, 3.25, 1.0
    # (right, wrong, wrong, right): 2.9, 2.1099, 2.0559, 2.1206; task ratings never move.
    assert ratings["students"] == {
        "scripted:tests.scripted_students:fixture_student": pytest.approx(2.1205642088960466)
    }
    assert ratings["tasks"] == {
        "math/procedural/test/0/0": 2.5,
        "math/procedural/test/0/1": 1.0,
        "math/procedural/test/0/2": 3.25,
        "math/procedural/test/0/3": 1.0,
    }


def test_report_tables_are_unchanged():
    episodes = [e for run in RUNS for e in load_run(FIXTURE / run)]
    data = summarize(episodes, samples=SAMPLES)
    assert data.other_protocols == {}
    rows = {table.name: table.to_markdown().splitlines()[-1] for table in data.tables}
    student = "scripted:tests.scripted_students:fixture_student"
    assert rows == {
        # the settings that are never pooled: increment, teacher prompt, teacher access
        "monitor": f"| math | {student} | random:0.3 | continue | 50 | paper | True | standard "
        "| 0.500 [0.000, 1.000] | 1.000 [1.000, 1.000] | 1.000 [1.000, 1.000] | 1.000 [1.000, 1.000] "
        "| 200.000 [200.000, 200.000] | 0.957 [0.957, 0.957] | 0.000 [-0.506, 0.750] "
        "| 0.500 [0.000, 1.000] | 0.500 [0.000, 1.000] | 0.000 [0.000, 0.000] | 4 | 4 | 0 | 0 | 0 |",
        "feedback": f"| math | {student} | scripted:tests.scripted_students:fixture_teacher "
        # history, teacher reference, execution context and tests after K (v1 records
        # predate the execution tests setting: unknown)
        "| teacher | 10 | 1 | none | feedback | unknown | 0.500 [0.000, 1.000] "
        "| 0.750 [0.250, 1.000] | 0.250 [0.000, 0.750] "
        "| 0.500 [0.000, 1.000] | 0.725 [0.250, 1.000] | 0.250 [0.000, 0.750] "
        "| 0.000 [0.000, 0.000] | 4 | 4 | 0 |",
        "tutor": f"| math | {student} | scripted:tests.scripted_students:fixture_teacher "
        "| ideation | 1.000 [1.000, 1.000] | n/a | n/a | 0.000 [0.000, 0.000] "
        "| 0.000 [0.000, 0.000] | 4 | 4 | 0 | 12 | 0 |",
        # the monitor baselines calibrate the student (2.121, see above); its solved tasks
        # sit at 2.5 and 1.0, so the hardest quarter (one task) gives a model skill of 2.5
        "tutor_elo": f"| math | {student} | 2.121 | — | 2.500 |",
    }
