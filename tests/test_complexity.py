"""No function of ``intbench/`` above a cyclomatic complexity of 15 (radon's McCabe count).

The functions still above it are listed in :data:`REMAINING`.  The list only
shrinks: a new function above the limit fails the test, and so does a listed one
that was brought under it (delete its entry).  ``benchmarks/complexity.py``
prints the same functions with their counts.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

LIMIT = 15
ROOT = Path(__file__).resolve().parents[1]

REMAINING = {
    "intbench.training.feedback:FeedbackRollout.__call__",
}
"""``module:qualified name`` of every function still above :data:`LIMIT`."""


@pytest.fixture(scope="module")
def too_complex() -> dict[str, int]:
    """``{module:name: complexity}`` of the functions above the limit."""
    pytest.importorskip(
        "radon", reason="the complexity check needs radon (pip install -e '.[dev]')"
    )
    spec = importlib.util.spec_from_file_location(
        "complexity_report", ROOT / "benchmarks" / "complexity.py"
    )
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    return {
        f"{module.removesuffix('.py').replace('/', '.')}:{name}": complexity
        for complexity, module, name, _ in report.complex_functions(LIMIT)
    }


def test_no_new_function_above_the_limit(too_complex):
    new = {name: n for name, n in too_complex.items() if name not in REMAINING}
    assert not new, (
        f"above cyclomatic complexity {LIMIT}: {new}; split them into helpers with one job each"
    )


def test_listed_functions_are_still_above_the_limit(too_complex):
    fixed = sorted(REMAINING - set(too_complex))
    assert not fixed, f"now at most {LIMIT}, delete from REMAINING: {fixed}"
