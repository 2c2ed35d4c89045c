"""The array-based summary gives the figures the per-statistic bootstrap gave.

``tests/data/summary_reference.json`` holds every table cell and group summary
that :func:`intbench.metrics.summarize` produced before its statistics were
computed from per-problem arrays, on recorded env runs (monitor, feedback) and
seeded synthetic runs of every protocol (``tests/summary_reference.py``).  The
same seed draws the same problems, so the figures agree to rounding.

One deliberate difference: the old acc@k resamples merged the episodes of a
problem drawn twice into one problem, so each distinct problem counted once and
the intervals of acc@1, acc@K, the gains, AUC and the first-step gain were too
narrow; now a problem drawn twice counts twice, as in every other statistic.
Counting each drawn problem once, the new code gives the old intervals exactly.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from intbench.metrics import estimate, feedback_summary
from tests.summary_reference import STORED, datasets, snapshot
from tests.synthetic_runs import feedback_records

REFERENCE = json.loads(STORED.read_text(encoding="utf-8"))
ACC_STATISTICS = ("acc@1", "gain", "normalized_gain", "auc", "first_step_gain")


def _acc_statistic(group: str, name: str) -> bool:
    """Whether a group summary entry is one of the feedback acc@k statistics."""
    k = group.split("|")[4] if group.startswith("feedback ") else None
    return k is not None and name in (*ACC_STATISTICS, f"acc@{k}")


def _same(new, old, where: str) -> None:
    if isinstance(old, dict):
        assert isinstance(new, dict) and new.keys() == old.keys(), where
        for key in old:
            _same(new[key], old[key], f"{where}/{key}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), where
        for i, (a, b) in enumerate(zip(new, old, strict=True)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(old, float):
        # sums are taken in another order: equal to the last few bits
        close = isinstance(new, float) and math.isclose(new, old, rel_tol=1e-12, abs_tol=1e-12)
        assert close, (where, new, old)
    else:
        assert new == old, (where, new, old)


def _current_key(group: str) -> str:
    """A stored feedback group key in today's form.

    The figures were stored before feedback groups gained a fourth setting,
    the execution tests shown to the teacher, and before the default execution
    context became ``structured`` (neither changes a math run's figures): a
    recorded run now carries ``structured|visible``, a synthetic record without
    the setting ``unknown``.
    """
    fields = group.split("|")
    if not group.startswith("feedback ") or len(fields) != 8:
        return group
    if fields[-1] == "feedback":
        return "|".join([*fields[:-1], "structured", "visible"])
    return "|".join([*fields, "unknown"])


def _current_table(name: str) -> str:
    """A stored matrix table name in today's form (its settings gained the execution tests)."""
    if not name.startswith("matrix_") or re.search(r"_k\d+$", name):
        return name  # the default setting's tables carry no settings in their name
    head, _, context = name.rpartition("_")
    return f"{head}_structured_visible" if context == "feedback" else f"{name}_unknown"


def _split(groups: dict) -> tuple[dict, dict]:
    """-> (the feedback acc@k statistics, everything else), keys in today's form."""
    acc, rest = {}, {}
    for group, values in groups.items():
        group = _current_key(group)
        for name, value in values.items():
            (acc if _acc_statistic(group, name) else rest)[(group, name)] = value
    return acc, rest


@pytest.fixture(scope="module")
def records():
    return datasets()


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_summary_figures_match_the_per_statistic_bootstrap(name, records):
    new = snapshot(records[name])
    old = REFERENCE[name]
    new_acc, new_rest = _split(new["groups"])
    old_acc, old_rest = _split(old["groups"])
    _same(new_rest, old_rest, name)
    # acc@k statistics: the same point estimates and n; intervals as below
    for key, value in old_acc.items():
        _same(new_acc[key]["estimate"][::3], value["estimate"][::3], f"{name} {key}")
    tables = {t: rows for t, rows in new["tables"].items() if not t.startswith("feedback")}
    old_tables = {_current_table(t): r for t, r in old["tables"].items()}
    _same(tables, {t: r for t, r in old_tables.items() if not t.startswith("feedback")}, name)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_counting_each_drawn_problem_once_gives_the_old_acc_intervals(name, records, monkeypatch):
    weights = estimate._resample_weights.__wrapped__
    monkeypatch.setattr(
        estimate, "_resample_weights", lambda *args: np.minimum(weights(*args), 1.0)
    )
    new_acc, _ = _split(snapshot(records[name])["groups"])
    old_acc, _ = _split(REFERENCE[name]["groups"])
    assert old_acc
    _same(new_acc, old_acc, name)


def test_a_problem_drawn_twice_counts_twice():
    # acc@1 over problems drawn with replacement: the resamples' spread is that of
    # a mean of n problems (σ/√n), not of the ~63% distinct problems among them
    records = [r for r in feedback_records(400, seed=3) if r.student == "hf:s1"]
    records = [r for r in records if r.teacher == "hf:s1"]
    summary = feedback_summary(records, samples=2000)
    acc1 = summary["acc@1"]
    per_problem = {}
    for r in records:
        if not r.error:
            per_problem.setdefault(r.problem_id, []).append(float(r.solved_at == 1))
    values = np.array([np.mean(v) for v in per_problem.values()])
    se = values.std(ddof=0) / math.sqrt(len(values))
    width = acc1.high - acc1.low
    assert width == pytest.approx(2 * 1.96 * se, rel=0.15)


def test_warming_draws_the_resamples_the_summary_of_the_run_uses(tmp_path):
    """A run warms the resamples of its problems while requests wait; the end-of-run
    summary then finds them drawn, and its figures are the same as unwarmed."""
    records = feedback_records(60, seed=5)
    problems = len({r.problem_id for r in records})
    estimate._resample_weights.cache_clear()
    cold = feedback_summary(records)
    estimate._resample_weights.cache_clear()
    estimate.warm_estimates(problems)
    assert estimate._resample_weights.cache_info().currsize == 1
    hits = estimate._resample_weights.cache_info().hits
    warm = feedback_summary(records)
    assert estimate._resample_weights.cache_info().hits > hits
    assert estimate._resample_weights.cache_info().misses == 1  # only the warming drew
    assert {k: str(v) for k, v in warm.items()} == {k: str(v) for k, v in cold.items()}
