"""Metrics against hand-computed examples, edge cases included."""

from __future__ import annotations

import math

import pytest

from intbench import metrics
from intbench.records import Attempt, Episode, Intervention, Verdict


def _attempt(ok):
    return Attempt(text="", verdict=Verdict("correct" if ok else "incorrect"))


def monitor_episode(
    pid, baseline_ok, tau=None, total=None, post_ok=None, excluded=None, error=None
):
    intervention = None
    if tau is not None or excluded:
        intervention = Intervention(
            message="hint",
            position=tau,
            tau_abs=None if excluded else tau,
            tau_rel=None if excluded else tau / total,
            excluded=excluded,
            attempt=None if excluded else _attempt(post_ok),
        )
    episode = Episode(
        protocol="monitor",
        problem_id=pid,
        domain="math",
        student="s",
        baseline=_attempt(baseline_ok),
        intervention=intervention,
        error=error,
    )
    return episode.to_dict()  # metrics take the records as written, too


MONITOR = [
    monitor_episode("e1", True),
    monitor_episode("e2", True, tau=100, total=400, post_ok=False),
    monitor_episode("e3", False, tau=300, total=600, post_ok=True),
    monitor_episode("e4", False, tau=50, total=100, post_ok=False),
    monitor_episode("e5", False),
    monitor_episode("e7", False, excluded="not_found"),
    monitor_episode("e6", True, tau=10, total=20, post_ok=True, error="grader error"),
]


def test_monitor_metrics_hand_computed():
    s = metrics.monitor_summary(MONITOR, samples=200)
    assert s["n_episodes"] == 6 and s["n_errors"] == 1 and s["n_excluded"] == 1
    assert s["phi"].value == pytest.approx(4 / 6)
    assert s["phi_correct"].value == pytest.approx(1 / 2)
    assert s["phi_incorrect"].value == pytest.approx(3 / 4)
    assert s["tau_abs"].value == pytest.approx(150)
    assert s["tau_rel"].value == pytest.approx((0.25 + 0.5 + 0.5) / 3)
    assert s["H"].value == pytest.approx(0.0)
    assert s["wrong_to_right"].value == pytest.approx(1 / 2)
    assert s["right_to_wrong"].value == pytest.approx(1.0)
    assert s["phi"].low <= s["phi"].value <= s["phi"].high


def test_failed_continuation_stays_in_phi_and_tau_and_leaves_h():
    # Int-Bench §3.2-3.3: 4 monitoring rollouts, 2 interventions, the continuation
    # after one of them failed.  φ = 2/4, τ over both interventions, H over the other.
    failed = monitor_episode(
        "c", False, tau=40, total=100, error="student failed after the intervention: timeout"
    )
    failed["intervention"]["attempt"] = {"text": "", "error": "timeout"}
    episodes = [
        monitor_episode("a", True),
        monitor_episode("b", False),
        failed,
        monitor_episode("d", False, tau=20, total=100, post_ok=True),
    ]
    s = metrics.monitor_summary(episodes, samples=50)
    assert s["phi"].value == pytest.approx(2 / 4)
    assert s["phi_incorrect"].value == pytest.approx(2 / 3)
    assert s["phi_correct"].value == 0.0
    assert s["tau_abs"].value == pytest.approx((40 + 20) / 2)
    assert s["tau_rel"].value == pytest.approx((0.4 + 0.2) / 2)
    assert s["H"].value == pytest.approx(1.0)  # H_d = 1 - 0; c has no outcome
    assert s["wrong_to_right"].value == pytest.approx(1.0)
    assert s["n_episodes"] == 4 and s["n_errors"] == 0 and s["n_failed_continuations"] == 1
    # a failed baseline still leaves every metric
    broken = monitor_episode("e", True, error="student failed on the baseline: timeout")
    broken["baseline"] = {"text": "", "error": "timeout"}
    s = metrics.monitor_summary([*episodes, broken], samples=50)
    assert s["phi"].value == pytest.approx(2 / 4) and s["n_errors"] == 1


def test_monitor_without_interventions_is_nan_not_zero():
    s = metrics.monitor_summary(
        [monitor_episode("a", True), monitor_episode("b", False)], samples=50
    )
    assert s["phi"].value == 0.0
    assert math.isnan(s["tau_rel"].value) and math.isnan(s["H"].value)
    assert str(s["H"]) == "n/a"


def feedback_episode(pid, solved_at, k_max=3, error=None):
    return Episode(
        protocol="feedback",
        problem_id=pid,
        domain="math",
        student="s",
        solved_at=solved_at,
        config={"k_max": k_max},
        error=error,
    )


FEEDBACK = [
    feedback_episode("A", 1),
    feedback_episode("A", None),  # a repeat: A is half solved at every k
    feedback_episode("B", 2),
    feedback_episode("C", 3),
    feedback_episode("D", 1, error="student failed"),  # excluded
]


def test_feedback_metrics_hand_computed():
    s = metrics.feedback_summary(FEEDBACK, samples=200)
    assert s["acc"] == pytest.approx([0.5 / 3, 1.5 / 3, 2.5 / 3])
    assert s["n_errors"] == 1 and s["n_problems"] == 3
    assert s["acc@1"].value == pytest.approx(1 / 6)
    assert s["acc@3"].value == pytest.approx(5 / 6)
    assert s["gain"].value == pytest.approx(2 / 3)
    assert s["normalized_gain"].value == pytest.approx((2 / 3) / (5 / 6))
    assert s["auc"].value == pytest.approx(0.5)
    assert s["first_step_gain"].value == pytest.approx(1 / 3)


def test_normalized_gain_is_zero_when_everything_is_solved_first():
    acc = metrics.acc_at_k([feedback_episode("A", 1), feedback_episode("B", 1)], 3)
    assert acc == [1.0, 1.0, 1.0]
    assert metrics.normalized_gain(acc) == 0.0 and metrics.gain(acc) == 0.0


def test_mixed_k_max_is_refused():
    with pytest.raises(ValueError, match="k_max"):
        metrics.feedback_summary(
            [feedback_episode("A", 1, k_max=3), feedback_episode("B", 1, k_max=5)]
        )


def test_fixed_effects_hand_computed():
    pairs = {("s1", "t1"): 1.0, ("s1", "t2"): 3.0, ("s2", "t1"): 2.0, ("s2", "t2"): 4.0}
    fe = metrics.fixed_effects(pairs)
    assert fe["r2_student"] == pytest.approx(0.2)
    assert fe["r2_teacher"] == pytest.approx(0.8)
    assert fe["r2_both"] == pytest.approx(1.0)
    assert fe["delta_r2_teacher_given_student"] == pytest.approx(0.8)
    assert metrics.best_minus_worst(pairs) == {"s1": 2.0, "s2": 2.0}


def test_spearman_and_inversions_hand_computed():
    assert metrics.spearman([1, 2, 3], [3, 1, 2]) == pytest.approx(-0.5)
    assert metrics.spearman([1, 2, 3, 4], [10, 20, 20, 30]) == pytest.approx(
        0.9486832980505138
    )  # ties
    assert math.isnan(metrics.spearman([1, 2], [5, 5]))
    solo = {"t1": 0.2, "t2": 0.5, "t3": 0.9}
    auc = {("s", "t1"): 0.6, ("s", "t2"): 0.4, ("s", "t3"): 0.5}
    result = metrics.solver_vs_teacher(solo, auc)["s"]
    assert result["spearman"] == pytest.approx(-0.5)
    assert result["inversion_rate"] == pytest.approx(2 / 3)


def test_bootstrap_resamples_problems_not_episodes():
    # one problem with many episodes: no resampling possible -> no interval
    groups = {"only": [{"x": 1.0}, {"x": 0.0}]}
    est = metrics.bootstrap(groups, lambda es: sum(e["x"] for e in es) / len(es))
    assert est.value == 0.5 and math.isnan(est.low) and est.n == 1
    groups = {str(i): [{"x": float(i % 2)}] for i in range(40)}
    est = metrics.bootstrap(groups, lambda es: sum(e["x"] for e in es) / len(es), samples=500)
    assert est.low < 0.5 < est.high and est.n == 40


def test_metrics_names_load_on_first_access():
    """``import intbench.metrics`` loads none of its modules (a run's setup needs no
    metric); each exported name loads its module when first read, and the names that
    type checkers and the API docs see are the ones served, from the same modules."""
    import ast
    import importlib
    import subprocess
    import sys

    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, intbench.metrics; print(sorted(n for n in "
         "sys.modules if n.startswith('intbench.metrics.')))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert loaded == "[]"
    tree = ast.parse(open(metrics.__file__, encoding="utf-8").read())
    checked = next(node for node in tree.body if isinstance(node, ast.If))
    declared = {
        alias.name: statement.module for statement in checked.body for alias in statement.names
    }
    assert declared == metrics._SOURCES
    assert set(declared) == set(metrics.__all__)
    for name, module in declared.items():
        assert getattr(metrics, name) is getattr(importlib.import_module(module), name)
