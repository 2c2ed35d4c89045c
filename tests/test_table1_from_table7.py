"""Feedback paper Table 1 is the mean of Table 7's per-student rows (§4.1): the
controls' means over the students with all three conditions, recomputed by
:func:`intbench.metrics.feedback_analyses.control_means` from Table 7's values
(``tests/data``), give all 24 of Table 1's figures within rounding."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from intbench.metrics.feedback_analyses import CONTROLS, control_means

DATA = Path(__file__).parent / "data"
CELL = re.compile(r"^(-?\d+(?:\.\d+)?) \(([+-]\d+(?:\.\d+)?)\)$")
# Table 7's cells are rounded to 0.1, so a mean of them is off by at most 0.05, and
# Table 1's own rounding adds up to 0.05.
ROUNDING = 0.1 + 1e-9


def _cells(path: Path) -> list[list[str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in lines if line and not line.startswith("#")]


def _acc_gain(cell: str) -> tuple[float, float]:
    acc, gain = CELL.match(cell.strip()).groups()
    return float(acc), float(gain)


def test_table_1_is_the_mean_of_table_7():
    controls = {
        (environment, 10, student): {c: _acc_gain(v) for c, v in zip(CONTROLS, values, strict=True)}
        for environment, student, *values, _best_teacher in _cells(DATA / "feedback_table7.tsv")
    }
    assert len(controls) == 52  # 13 students x 4 environments
    means = control_means(controls)
    checked = 0
    for environment, *values in _cells(DATA / "feedback_table1.tsv"):
        row = means[(environment, 10)]
        assert row["students"] == 13
        for condition, cell in zip(CONTROLS, values, strict=True):
            acc, gain = _acc_gain(cell)
            assert row[f"{condition}_acc"][0] == pytest.approx(acc, abs=ROUNDING), (
                environment,
                condition,
            )
            assert row[f"{condition}_gain"][0] == pytest.approx(gain, abs=ROUNDING), (
                environment,
                condition,
            )
            checked += 2
    assert checked == 24
