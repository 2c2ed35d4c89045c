"""Overlap-based leakage detection, per domain."""

from __future__ import annotations

import time

import pytest

from intbench.records import Problem
from intbench.verifiers.leakage import answer_leaked

MATH = Problem(id="m", domain="math", question="q", answer="\\frac{1}{2}")
NUMBER = Problem(id="n", domain="math", question="q", answer="3")
TEXT = Problem(id="t", domain="linguini", question="q", answer="Kata mirel dosu")
TEASER = Problem(
    id="b", domain="brainteaser", question="q", answer="a piano", fields={"aliases": ["piano"]}
)
ARC = Problem(id="a", domain="arc", question="q", answer=[[[1, 2], [3, 4]]])
CODE = Problem(
    id="c",
    domain="codeforces",
    question="q",
    solution="def add(a, b):\n    return sorted(set(a) | set(b))\n",
)


@pytest.mark.parametrize(
    "problem,message,leaked",
    [
        (MATH, "So it is $\\dfrac {1} {2}$.", True),
        (MATH, "Check the denominator.", False),
        (NUMBER, "The answer is 3.", True),
        (NUMBER, "We have 13 apples and 3.5 pears", False),
        (TEXT, "Hint: word order.\nThe answer: kata mirel dosu!", True),
        (TEXT, "kata is a word", False),
        (TEASER, "It has keys... like a Piano", True),
        (TEASER, "pianos are big", False),
        (ARC, "Output rows: 1 2 / 3 4", True),
        (ARC, "Look at the colours in the corners.", False),
        (CODE, "Try this:\n```python\nprint(1)\n```", True),
        (CODE, "Use return sorted(set(a) | set(b)) at the end", True),
        (CODE, "Think about duplicates in the inputs.", False),
        (MATH, "", False),
        (MATH, None, False),
    ],
)
def test_leak_detection(problem, message, leaked):
    assert answer_leaked(problem, message) is leaked


HOSTILE_MESSAGES = {
    "spaces": "x" + " " * 200_000 + "x",
    "spaced_words": " x" * 100_000,
    "digits": "3" * 200_000,
    "decimals": ".3" * 100_000,
    "latex_noise": "\\left" * 40_000,
    "fractions": "\\frac{1}{2" * 20_000,
    "dollars": "$" * 200_000,
    "words": "kata mirel " * 20_000,
    "backticks": "`" * 200_000,
}


@pytest.mark.parametrize("problem", [MATH, NUMBER, TEXT, TEASER, ARC, CODE], ids=lambda p: p.id)
@pytest.mark.parametrize("name", sorted(HOSTILE_MESSAGES))
def test_long_hostile_messages_are_checked_in_linear_time(problem, name):
    # Linear checks take well under a second here; a quadratic one would take hours.
    start = time.perf_counter()
    answer_leaked(problem, HOSTILE_MESSAGES[name])
    assert time.perf_counter() - start < 3.0


def test_a_leak_at_the_start_of_a_long_message_is_found():
    assert answer_leaked(TEXT, "Kata mirel dosu." + " padding" * 100_000)
