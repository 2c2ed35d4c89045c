"""Groups are never pooled across settings, and the Standard vs Oracle comparison's
paired difference and permutation test, by hand."""

from __future__ import annotations

import pytest

from intbench.metrics import summarize
from intbench.metrics.estimate import paired_permutation_p
from intbench.records import Attempt, Episode, Intervention, Verdict

SAMPLES = 20


def _attempt(ok: bool) -> Attempt:
    return Attempt(text="", verdict=Verdict("correct" if ok else "incorrect"))


def monitor(pid: str, condition: str, intervene: bool, **config) -> dict:
    intervention = None
    if intervene:
        intervention = Intervention(
            message="hint", position=10, tau_abs=10, tau_rel=0.1, attempt=_attempt(True)
        )
    return Episode(
        protocol="monitor", problem_id=pid, domain="math", student="s", teacher="t",
        condition=condition, baseline=_attempt(False), intervention=intervention,
        config={"post": "continue", "increment": 50, "teacher_prompt": "paper",
                "teacher_access": True, **config},
    ).to_dict()  # fmt: skip


def feedback(pid: str, teacher: str, solved_at: int | None, **config) -> dict:
    return Episode(
        protocol="feedback", problem_id=pid, domain="math", student="s", teacher=teacher,
        condition="teacher", solved_at=solved_at,
        config={"k_max": 3, "history": 1, "teacher_reference": "none",
                "execution_context": "feedback", **config},
    ).to_dict()  # fmt: skip


@pytest.mark.parametrize(
    "setting", [{"increment": 300}, {"teacher_prompt": "v1"}, {"teacher_access": False}]
)
def test_monitor_runs_with_other_settings_are_not_pooled(setting):
    episodes = [monitor("p0", "standard", True), monitor("p1", "standard", True, **setting)]
    data = summarize(episodes, samples=SAMPLES)
    assert len(data.monitor) == 2
    assert all(s["n_episodes"] == 1 for s in data.monitor.values())


@pytest.mark.parametrize(
    "setting",
    [
        {"history": 3},
        {"teacher_reference": "solution"},
        {"execution_context": "none"},
        {"execution_tests": "all"},
    ],
)
def test_feedback_runs_with_other_settings_are_not_pooled(setting):
    episodes = [
        feedback("p0", teacher, 1, **extra) for teacher in ("a", "b") for extra in ({}, setting)
    ]
    data = summarize(episodes, samples=SAMPLES)
    assert len(data.feedback) == 4
    # one matrix per setting, each with its own file stem
    assert len(data.matrices) == 2
    assert len({m.stem for m in data.matrices}) == 2


def test_permutation_p_by_hand():
    # three differences of +1: only the all-plus and all-minus flips are as extreme,
    # 2 of the 8 sign patterns -> p = 1/4
    assert paired_permutation_p([1.0, 1.0, 1.0]) == pytest.approx(0.25, abs=0.02)
    assert paired_permutation_p([0.0, 0.0]) == 1.0


def test_standard_vs_oracle_pairs_the_problems_and_tests_the_difference():
    # Standard intervenes on p0..p3, Oracle on none of them: Δφ = 0 - 1 on every problem.
    episodes = [monitor(f"p{i}", "standard", True) for i in range(4)]
    episodes += [monitor(f"p{i}", "oracle", False) for i in range(4)]
    # a Standard run at another increment is compared with the same Oracle run
    episodes += [monitor(f"p{i}", "standard", i < 2, increment=300) for i in range(4)]
    data = summarize(episodes, samples=SAMPLES)
    table = next(t for t in data.tables if t.name == "monitor_standard_vs_oracle")
    rows = {row[table.ids.index("increment")]: dict(zip(table.ids, row, strict=True))
            for row in table.rows}  # fmt: skip
    assert set(rows) == {"50", "300"}
    assert rows["50"]["phi_difference"] == -1.0
    # four differences of -1: 2 of the 16 sign patterns as extreme -> p = 1/8
    assert rows["50"]["phi_p"] == pytest.approx(0.125, abs=0.015)
    # at 300 Standard intervened on p0, p1 only: differences -1, -1, 0, 0
    assert rows["300"]["phi_difference"] == -0.5
    # |mean| >= 1/2 needs both -1s with the same sign: 2 x 4 of 16 patterns -> 1/2
    assert rows["300"]["phi_p"] == pytest.approx(0.5, abs=0.03)
    assert rows["50"]["phi_oracle"].value == 0.0 and rows["50"]["phi_standard"].value == 1.0
