"""Adversarial tests of the math verifier: labelled answer pairs, hostile shapes, fuzzing.

The pairs live in ``fixtures/math_answer_pairs.jsonl`` (see
``benchmarks/math_agreement.py``, which also grades them with math-verify).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intbench.records import VERDICT_STATUSES, Problem, Verdict
from intbench.verifiers.math import MAX_BOXES, default_pool, verify_math

PAIRS_PATH = Path(__file__).parent / "fixtures" / "math_answer_pairs.jsonl"
PAIRS = [json.loads(line) for line in PAIRS_PATH.read_text(encoding="utf-8").splitlines()]
REQUIRED_CATEGORIES = {
    "multi_box", "list", "set", "interval", "unit", "percent", "text", "spacing", "huge",
    "nested", "infinity", "inequality", "assignment", "decimal", "equivalent", "degree",
    "choice", "matrix",
}  # fmt: skip


def _problem(reference: str) -> Problem:
    return Problem(id="adversarial/1", domain="math", question="?", answer=reference)


def _response(pair: dict) -> str:
    return pair.get("response", f"The answer is \\boxed{{{pair.get('answer')}}}.")


def _pair_id(pair: dict) -> str:
    answer = pair.get("answer", pair.get("response", ""))[:40]
    return f"{pair['category']}:{pair['reference'][:30]}|{answer}"


@pytest.fixture(scope="module")
def pool():
    shared = default_pool()
    shared.warm_up()
    return shared


def test_suite_covers_every_category():
    assert len(PAIRS) >= 300
    assert REQUIRED_CATEGORIES <= set(Counter(pair["category"] for pair in PAIRS))
    assert {pair["expected"] for pair in PAIRS} == {"correct", "incorrect"}


@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_pair_gets_its_expected_verdict(pool, pair):
    verdict = verify_math(_problem(pair["reference"]), _response(pair), pool=pool)
    assert verdict.status == pair["expected"], verdict.to_dict()


# The false accepts of the old grader, spelled out: each must stay incorrect.
OLD_FALSE_ACCEPTS = [
    ("5", r"\boxed{\infty}"),
    ("123456789", r"\boxed{-\infty}"),
    ("50", r"\boxed{\infty^{2}}"),
    ("1000000", r"\boxed{10^{400}}"),
    ("123456789", r"\boxed{123456800.0}"),
    ("1000000", r"\boxed{1000000.9}"),
    ("50", r"\boxed{5000\%}"),
    (r"50\%", r"\boxed{0.5\%}"),
    ("5", r"\boxed{\text{the answer is not 5}}"),
    ("2", r"\boxed{\leq 2}"),
    ("2", r"\boxed{\approx 2}"),
    ("2", r"\boxed{x = 3 = 2}"),
    ("x=2", r"\boxed{y=2}"),
    ("32349", r"\boxed{32, 349}"),
    ("2100", r"\boxed{2, 100}"),
    ("7", r"\boxed{5} no wait \boxed{7}"),
]


@pytest.mark.parametrize(("reference", "response"), OLD_FALSE_ACCEPTS)
def test_old_false_accepts_are_incorrect(pool, reference, response):
    assert verify_math(_problem(reference), response, pool=pool).status == "incorrect"


MEGABYTE = 1_000_000
HOSTILE_SHAPES = {
    "dollars": "Final Answer: " + "$" * MEGABYTE,
    "dollars_in_graded_part": "Final Answer: " + "$" * 60_000,
    "dollars_then_answer": "Final Answer: " + "$" * 60_000 + "5$",
    "spaces": "Final Answer:" + " " * MEGABYTE,
    "spaces_in_graded_part": "Final Answer:" + " " * 60_000 + "5",
    "spaces_before_hope": "Final Answer: 5" + " " * 60_000 + "I hope it is correct.",
    "hope_repeated": "Final Answer: " + "I hope " * 9_000,
    "open_braces": "{" * MEGABYTE,
    "close_braces": "}" * MEGABYTE + r"\boxed{5}",
    "open_boxes": r"\boxed{" * (MEGABYTE // 7),
    "nested_frac": r"\boxed{" + r"\frac{1}{" * 100_000 + "2" + "}" * 100_001,
    "nested_frac_in_graded_part": r"\boxed{" + r"\frac{1}{" * 100 + "2" + "}" * 101,
    "nested_parens": r"\boxed{" + "(" * 900 + "5" + ")" * 900 + "}",
    "power_tower": "x" * MEGABYTE + r"\boxed{9^{9^{9^9}}}",
    "factorial": r"\boxed{100000000!}",
    "distinct_boxes": "".join(f"\\boxed{{{i}}}" for i in range(10_000)),
    "repeated_boxes": r"\boxed{5}" * 10_000,
    "hard_boxes": r"\boxed{9^{9^{9^9}}}" * MAX_BOXES,
    "final_answer_lines": "Final answer: 4\n" * 60_000,
}

# Shapes whose padding hides a genuine final answer 5: it must still be found.
HONEST_SHAPES = {
    "dollars_then_answer",
    "spaces_in_graded_part",
    "spaces_before_hope",
    "close_braces",
    "repeated_boxes",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_SHAPES))
def test_hostile_response_is_graded_in_time(pool, name):
    # A worker killed by an earlier timeout is restarted first: start-up is not grading time.
    pool.warm_up()
    start = time.perf_counter()
    verdict = verify_math(_problem("5"), HOSTILE_SHAPES[name], timeout_s=1)
    elapsed = time.perf_counter() - start
    assert elapsed < 3.0, f"{name} took {elapsed:.1f} s"
    assert verdict.correct == (name in HONEST_SHAPES), verdict.to_dict()
    assert verdict.status != "error" or verdict.details["reason"] == "timeout"


def test_too_many_boxes_are_compared_as_strings(pool):
    boxes = "".join(f"\\boxed{{{i}}}" for i in range(MAX_BOXES + 1))
    reference = ", ".join(str(i) for i in range(MAX_BOXES + 1))
    verdict = verify_math(_problem(reference), boxes, pool=pool)
    assert verdict.correct
    assert verdict.details["stage"] == "too_long"


LATEX_PIECES = [
    r"\boxed{", "}", "{", "$", r"\frac", r"\sqrt", "^", "_", r"\infty", r"\%", "%", ",", ", ",
    r"\{", r"\}", "(", ")", "[", "]", "=", r"\leq", r"\approx", r"\pm", r"\text{", "x", "y",
    r"\pi", "0.5", "1,22", "10^{400}", "-", "+", "/", r"\cdot", r"\ ", r"\,", r"\begin{pmatrix}",
    r"\end{pmatrix}", "&", r"\\", "Final Answer: ", "°", r"^\circ", "\x00", "\udcff",
]  # fmt: skip
latex_ish = st.lists(
    st.one_of(st.sampled_from(LATEX_PIECES), st.integers(-999, 999).map(str), st.text(max_size=4)),
    max_size=14,
).map("".join)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(reference=latex_ish, body=latex_ish)
def test_fuzzed_text_always_gives_a_verdict(pool, reference, body):
    for response in (body, f"\\boxed{{{body}}}"):
        verdict = verify_math(_problem(reference), response, timeout_s=2, pool=pool)
        assert isinstance(verdict, Verdict)
        assert verdict.status in VERDICT_STATUSES
        # grader_error is what verify_math returns when its own code raised.
        assert verdict.details.get("reason") != "grader_error", verdict.to_dict()
        json.dumps(verdict.to_dict(), default=str)


# Issue 38: answers a probing policy found accepted for the wrong reason.
PMATRIX = r"\begin{pmatrix}1&2\\3&4\end{pmatrix}"
PROBED_FALSE_ACCEPTS = [
    # only the text after a closed reasoning block is read
    ("5", "<think>it is \\boxed{5}</think>\nThe answer is \\boxed{7}"),
    ("5", "<think>\\boxed{5}</think>\nI am not sure."),
    # a "Final Answer:" line is graded whole, never on its one $...$ span
    ("5", "Final Answer: not $5$"),
    ("5", "Final Answer: x < $5$"),
    ("5", "Final Answer: $5$ or 6"),
    ("5", "Final Answer: it is 6, or maybe it is $5$"),
    # a box that is one operand of a larger expression, or holds another box
    ("3", r"So $-\boxed{3}$."),
    ("3", r"The answer is - \boxed{3}."),
    ("3", r"$\frac{1}{\boxed{3}}$"),
    ("3", r"$\boxed{3}^2$"),
    ("3", r"$2\boxed{3}$"),
    ("3", r"$\boxed{3} - 1$"),
    ("3", r"$\boxed{3} \cdot 2$"),
    ("5", r"\boxed{\boxed{5}+6}"),
    # two boxes that differ only in what normalisation sets aside are two answers
    (r"5\text{ cm}", r"\boxed{5\text{ cm}} or \boxed{5\text{ m}}"),
    ("1011_2", r"\boxed{1011_2} or \boxed{1011_3}"),
    # numeral bases
    ("1011_2", r"\boxed{1011_3}"),
    ("204_5", r"\boxed{204_6}"),
    ("204_5", r"\boxed{204_{6}}"),
    ("11", r"\boxed{1011_3}"),
    ("1011_2", r"\boxed{1012}"),  # not a base-2 numeral
    # units, primes, ellipses, doubled percent, determinants
    (r"5\text{ cm}", r"\boxed{5 m}"),
    (r"5\text{ cm}", r"\boxed{5\text{ km}}"),
    (r"5 \text{ cm}^2", r"\boxed{5 \text{ m}^2}"),
    (r"5\text{ dollars}", r"\boxed{5\text{ cents}}"),
    ("5", r"\boxed{5''}"),
    ("3", r"\boxed{3'}"),
    ("5", r"\boxed{5\dots}"),
    ("2", r"\boxed{2 \ldots}"),
    ("5", r"\boxed{5\%\%}"),
    ("5", r"\boxed{5}\%\%"),
    (PMATRIX, r"\boxed{\begin{vmatrix}1&2\\3&4\end{vmatrix}}"),
    # two answers that only "agree" because neither is a finite value
    ("12:00", r"\boxed{1:00}"),
    (r"\frac{1}{0}", r"\boxed{\frac{2}{0}}"),
    # equations that are not one equation scaled
    ("x^2=4", r"\boxed{x=2}"),
    ("2x+4y-3=0", r"\boxed{2x+4y-3=1}"),
]


@pytest.mark.parametrize(("reference", "response"), PROBED_FALSE_ACCEPTS)
def test_probed_false_accepts_are_incorrect(pool, reference, response):
    verdict = verify_math(_problem(reference), response, pool=pool)
    assert verdict.status == "incorrect", verdict.to_dict()


PROBED_FALSE_REJECTS = [
    # percent written as a word
    (r"28\%", r"\boxed{28 percent}"),
    (r"28\%", r"\boxed{28 pct}"),
    (r"28\%", r"\boxed{28 percentage}"),
    (r"28\%", "Final Answer: 28 percent"),
    (r"50\%", r"\boxed{50}\%"),
    # MATH thousands separators, both directions; decimal-comma references
    (r"10,\!000", r"\boxed{10000}"),
    ("10000", r"\boxed{10,\!000}"),
    ("32349", r"\boxed{32,\! 349}"),
    ("1,22", r"\boxed{1.22}"),
    ("0,111", r"\boxed{0.111}"),
    # lists joined by words, one box per item
    (r"6 \text{ and } 8", r"\boxed{6, 8}"),
    ("19, 46, and 82", r"\boxed{19, 46, 82}"),
    ("(1,2), (3,4)", r"\boxed{(1,2)} and \boxed{(3,4)}"),
    ("(2, 2), (6, 2)", r"$$\boxed{(2, 2)} \quad \text{and} \quad \boxed{(6, 2)}$$"),
    ("(5, 8), (8, 5)", r"\boxed{(x, y) = (5, 8) \text{ and } (8, 5)}"),
    # final-answer lines with words around the answer
    ("34", "Final Answer: The largest $n$ is 34."),
    ("34", "Final Answer: 34. I hope it is correct."),
    ("9", "Final Answer: Answer \\[\n 9 \n\\]"),
    ("9", "**Final Answer**\n\\[ 9 \\]"),
    ("1000.99", "Final Answer: $1,000.99"),
    # doubled backslashes from a raw string printed twice
    (r"\frac{1}{2}", r"\\boxed{\\frac{1}{2}}"),
    (r"\frac{1}{2}", r"Final Answer: $\\frac{1}{2}$"),
    # equivalent equations, unevaluated matrix sums and products
    ("2x+4y-3=0", r"\boxed{y=-\frac{1}{2}x+\frac{3}{4}}"),
    ("x=3", r"\boxed{2x=6}"),
    (
        r"\begin{pmatrix}6&8\\10&12\end{pmatrix}",
        r"\boxed{\begin{pmatrix}1&2\\3&4\end{pmatrix}+\begin{pmatrix}5&6\\7&8\end{pmatrix}}",
    ),
    (PMATRIX, r"\boxed{\begin{pmatrix}1&0\\0&1\end{pmatrix}\begin{pmatrix}1&2\\3&4\end{pmatrix}}"),
    (PMATRIX, r"\boxed{\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}}"),
    # what the new rules must keep accepting
    ("1011_2", r"\boxed{1011_2}"),
    ("1011_2", r"\boxed{1011}"),
    ("11", r"\boxed{1011_2}"),
    (r"5\text{ cm}", r"\boxed{5 \text{ centimeters}}"),
    (r"5\text{ cm}", r"\boxed{5}"),
    ("12:00", r"\boxed{12:00}"),
    ("5", r"$x = \boxed{5}$"),
    ("5", "Answers:\n- \\boxed{5}"),
    ("5", r"**\boxed{5}**"),
    ("5", r"\boxed{5} - that is all."),
    ("5", r"$\boxed{5}$ or 6"),  # a box is graded alone: unmarked words earn nothing
    # a box drafted inside a closed reasoning block is not an answer
    ("7", "<think>maybe \\boxed{5}?</think>\nSo \\boxed{7}"),
    (r"1, 2, 3, \ldots", r"\boxed{1, 2, 3, \dots}"),
]


@pytest.mark.parametrize(("reference", "response"), PROBED_FALSE_REJECTS)
def test_probed_false_rejects_are_correct(pool, reference, response):
    verdict = verify_math(_problem(reference), response, pool=pool)
    assert verdict.status == "correct", verdict.to_dict()
