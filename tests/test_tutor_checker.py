"""The tutor's rules checker (KITE §3): code and calculations in any notation are withheld.

Issue 37, item 6: the thirteen notes below all passed the old rules; each must
now be withheld, and legitimate strategy notes must still reach the student.
"""

from __future__ import annotations

import time

import pytest

from intbench.records import Problem
from intbench.tutor.checker import rules_check

PRODUCT = Problem(id="tutor/product", domain="math", question="What is 17 * 3?", answer="51")
MEAN = Problem(
    id="tutor/mean",
    domain="math",
    question="What is the mean of 50 and 53?",
    answer="\\frac{103}{2}",
)
MAXIMUM = Problem(
    id="tutor/max",
    domain="codeforces",
    question='def max_element(l: list):\n    """Return the maximum element in the list."""\n',
    solution="def max_element(l: list):\n    m = l[0]\n    for e in l:\n        if e > m:\n"
    "            m = e\n    return m\n",
)

WITHHELD = [
    (PRODUCT, "3·17 is 51"),
    (PRODUCT, "17 × 3 → 51"),
    (PRODUCT, "Double it, then add one more: 17 → 34 → 51."),
    (PRODUCT, "3 × 17 ＝ 51"),
    (PRODUCT, "３×１７=５１"),
    (PRODUCT, "three times seventeen is fifty-one"),
    (PRODUCT, "In LaTeX: \\(3 \\cdot 17 = 51\\)"),
    (MEAN, "Half of 103 is 51.5"),
    (MEAN, "It comes to 51.5, halfway between them."),
    (MAXIMUM, "def f(l): return max(l)"),
    (MAXIMUM, "f = lambda l: max(l)"),
    (MAXIMUM, "Just `return max(l)`."),
    (MAXIMUM, "for x in l: best = max(best, x)"),
]
# More forms of the same: each must be withheld too.
MORE_WITHHELD = [
    (MAXIMUM, "if not l: return None; if x > m: m = x"),
    (MAXIMUM, "while i < n: i += 1"),
    (MAXIMUM, "Try `m = max(m, x)` in the loop."),
    (MAXIMUM, "def f(l) -> int: return sorted(l)[-1]"),
    (PRODUCT, "51 = 3 × 17, so you are done."),
    (PRODUCT, "Seventeen plus seventeen is thirty-four."),
]

LEGITIMATE = [
    (PRODUCT, "Think of 17 * 3 as 17 * 2 plus one more 17."),
    (PRODUCT, "Think about what multiplying by 3 means."),
    (PRODUCT, "Split 17 into 10 + 7 and use the distributive law."),
    (PRODUCT, "Let n be the length; try n = 5 by hand."),
    (MEAN, "The mean of two numbers lies halfway between them."),
    (MEAN, "Add the two numbers, then divide by how many there are."),
    (MAXIMUM, "Keep a running maximum in `best` while you scan the list."),
    (MAXIMUM, "For every element in the list, compare it with the current maximum: is it larger?"),
    (MAXIMUM, "If the list is empty, what should the function return?"),
    (MAXIMUM, "Sorting works but is slower; is `sorted()` really needed?"),
    (MAXIMUM, "Use a hash map; it gives O(n) time."),
    (MAXIMUM, "Aim for `O(n log n)` by sorting first, or `O(n)` with one pass."),
    (MAXIMUM, "What happens while the window is too large: can you shrink it?"),
]


@pytest.mark.parametrize("problem,note", WITHHELD, ids=[n for _, n in WITHHELD])
def test_solution_and_calculation_notes_are_withheld(problem, note):
    assert len(WITHHELD) == 13
    assert rules_check(problem, note).leak


@pytest.mark.parametrize("problem,note", MORE_WITHHELD, ids=[n for _, n in MORE_WITHHELD])
def test_more_forms_are_withheld(problem, note):
    assert rules_check(problem, note).leak


@pytest.mark.parametrize("problem,note", LEGITIMATE, ids=[n for _, n in LEGITIMATE])
def test_strategy_notes_reach_the_student(problem, note):
    assert len(LEGITIMATE) >= 8
    assert not rules_check(problem, note).leak


@pytest.mark.parametrize(
    "note",
    [
        "1+" * 100_000,
        "3" * 200_000,
        "if " * 60_000,
        "`" + "a" * 199 + "`" * 1000,
        "17 " * 60_000,
        "\\frac{1}{2" * 20_000,
    ],
    ids=["chain", "digits", "ifs", "backticks", "numbers", "fractions"],
)
def test_hostile_notes_are_checked_in_linear_time(note):
    start = time.perf_counter()
    rules_check(PRODUCT, note)
    assert time.perf_counter() - start < 5.0
