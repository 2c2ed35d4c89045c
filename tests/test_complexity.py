"""No function of ``intbench/`` above a cyclomatic complexity of 15 (radon's McCabe count).

``benchmarks/complexity.py`` prints the functions above it with their counts.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

LIMIT = 15
ROOT = Path(__file__).resolve().parents[1]


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


def test_no_function_above_the_limit(too_complex):
    assert not too_complex, (
        f"above cyclomatic complexity {LIMIT}: {too_complex}; split them into helpers with one job each"
    )
