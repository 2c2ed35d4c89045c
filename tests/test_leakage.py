"""Leak detection per domain: the entry point, its edge cases, linear cost, and the reward it feeds.

The leak and honest-hint sets are in ``test_leak_sets.py``.
"""

from __future__ import annotations

import time

import gymnasium as gym
import pytest

import intbench  # noqa: F401  (registers the env ids)
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.envs.domains import registry
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
        # A code block is not a leak by itself (a traceback, a test call): only the reference's logic is.
        (CODE, "Your output:\n```\nTraceback: KeyError: 'b'\n```", False),
        (CODE, "Try this:\n```python\nreturn sorted(set(a) | set(b))\n```", True),
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


def test_every_builtin_domain_names_its_detector_in_its_module():
    for name in ("math", "omni_math", "arithmetic", "linguini", "brainteaser", "codeforces",
                 "debug", "arc"):  # fmt: skip
        assert registry.get_domain(name).leak_check is not None, name


def test_the_math_detector_uses_the_verifiers_reading_of_the_reference():
    # A worded math answer falls back to the text rule; an empty reference never leaks.
    worded = Problem(id="w", domain="math", question="Which day?", answer="\\text{Monday}")
    assert answer_leaked(worded, "It falls on a monday.")
    assert not answer_leaked(worded, "Count the days of the week.")
    empty = Problem(id="e", domain="math", question="q", answer="")
    assert not answer_leaked(empty, "0.5")


def test_a_statement_number_that_is_the_answer_still_leaks():
    # Copied expressions are exempt; the answer as the reference writes it is not.
    eggs = Problem(
        id="e", domain="math", question="A box holds 12 eggs. How many eggs?", answer="12"
    )
    assert answer_leaked(eggs, "It is 12.")
    simplify = Problem(
        id="s", domain="math", question="Simplify $\\frac{6}{12}$.", answer="\\frac{1}{2}"
    )
    assert not answer_leaked(simplify, "Divide the top and bottom of \\frac{6}{12} by 6.")
    assert answer_leaked(simplify, "You get \\frac{1}{2}.")


def test_pedagogical_reward_charges_a_boxed_decimal_leak():
    """Issue 37: ``\\boxed{0.5}`` for 1/2 was paid +0.90 under ``pedagogical`` with leaked = 0."""
    half = Problem(
        id="h", domain="math", question="P(heads) for a fair coin?", answer="\\frac{1}{2}"
    )

    def student(messages):
        update = "<update>" in messages[-1]["content"]
        return "So it is \\boxed{\\frac{1}{2}}." if update else "Thinking... \\boxed{1}."

    env = gym.make("IntBench-Math-v0", student=ScriptedBackend(student), problems=[half],
                   reward="pedagogical")  # fmt: skip
    env.reset(seed=0, options={"problem_index": 0})
    _, reward, _, _, info = env.step({"intervene": 1, "message": "\\boxed{0.5}"})
    assert info["reward_components"]["success"] == 1.0
    assert info["reward_components"]["leaked"] == 1.0
    assert reward < 0.9
