"""Tests for the math verifier and the isolated worker pool it runs on."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from intbench.records import Problem
from intbench.verifiers import verify
from intbench.verifiers.isolation import IsolatedPool, RemoteError, WorkerCrashed, WorkerTimeout
from intbench.verifiers.math import extract_final_answer, normalize_answer, verify_math

PMAT_HALF = r"\begin{pmatrix}\frac12&2\\3&4\end{pmatrix}"

# (reference, response, expected status)
GRADING_CASES = [
    # equivalent forms, fractions vs decimals
    (r"\frac{1}{2}", r"\boxed{0.5}", "correct"),
    ("0.5", r"\boxed{\frac12}", "correct"),
    (r"\frac{3}{4}", r"\boxed{\dfrac{3}{4}}", "correct"),
    (r"\frac{3}{4}", r"\boxed{3/4}", "correct"),
    (r"\frac{3}{4}", r"\boxed{0.5}", "incorrect"),
    (r"\frac{1}{2}", r"\boxed{\frac{2}{4}}", "correct"),
    (r"\frac{1}{3}", r"\boxed{0.333333}", "incorrect"),  # an exact reference needs exact
    (r"\frac{1}{3}", r"\boxed{0.33}", "incorrect"),
    ("1000000", r"\boxed{1000001}", "incorrect"),
    ("-3", r"\boxed{-3}", "correct"),
    ("-3", r"\boxed{3}", "incorrect"),
    (r"2\sqrt{2}", r"\boxed{\sqrt{8}}", "correct"),
    (r"\frac{\sqrt{3}}{2}", r"\boxed{\sqrt{3}/2}", "correct"),
    (r"\frac{\sqrt{2}}{2}", r"\boxed{\frac{1}{\sqrt{2}}}", "correct"),
    ("x^2+2x+1", r"\boxed{(x+1)^2}", "correct"),
    ("x^2+2x+1", r"\boxed{(x-1)^2}", "incorrect"),
    ("2^{10}", r"\boxed{1024}", "correct"),
    (r"\pi", r"\boxed{3.14159265}", "incorrect"),
    (r"\pi", r"\boxed{3.14}", "incorrect"),
    # surds: an irrational reference against plain numbers, perfect squares included
    (r"\frac{9\sqrt{51}}{4}", r"\boxed{-1}", "incorrect"),
    (r"\sqrt{2}", r"\boxed{1.4142135623730951}", "incorrect"),
    (r"\sqrt{4}", r"\boxed{2}", "correct"),
    (r"\frac{\sqrt{8}}{\sqrt{2}}", r"\boxed{2}", "correct"),
    (r"0\sqrt{2}", r"\boxed{0}", "correct"),
    (r"\sqrt23", r"\boxed{3\sqrt{2}}", "correct"),
    # intervals
    ("[1,2)", r"\boxed{[1, 2)}", "correct"),
    ("[1,2)", r"\boxed{(1,2]}", "incorrect"),
    (r"(-\infty, 3]", r"\boxed{(-\infty,3]}", "correct"),
    (r"(-\infty, 3]", r"\boxed{(-\infty,3)}", "incorrect"),
    (r"[0, \frac{1}{2}]", r"\boxed{[0, 0.5]}", "correct"),
    (r"(-\infty,-1)\cup(1,\infty)", r"\boxed{(-\infty, -1) \cup (1, \infty)}", "correct"),
    # sets and unordered answer lists
    (r"\{1,2\}", r"\boxed{\{2,1\}}", "correct"),
    (r"\{1,2,3\}", r"\boxed{\{1,2\}}", "incorrect"),
    ("-2, 3", r"\boxed{3, -2}", "correct"),
    ("-2, 3", r"\boxed{3, 2}", "incorrect"),
    (r"1, \frac{1}{2}", r"\boxed{0.5, 1}", "correct"),
    # tuples
    ("(1,2)", r"\boxed{(1, 2)}", "correct"),
    ("(1,2)", r"\boxed{(2,1)}", "incorrect"),
    (r"(3, -\frac{1}{2})", r"\boxed{(3, -0.5)}", "correct"),
    ("(1,2,3)", r"\boxed{(1,2)}", "incorrect"),
    # matrices
    (PMAT_HALF, r"\boxed{\begin{pmatrix}0.5&2\\3&4\end{pmatrix}}", "correct"),
    (PMAT_HALF, r"\boxed{\begin{pmatrix}0.5&3\\2&4\end{pmatrix}}", "incorrect"),
    (r"\begin{pmatrix}1\\2\end{pmatrix}", r"\boxed{\begin{bmatrix}1\\2\end{bmatrix}}", "correct"),
    (PMAT_HALF, r"\boxed{\begin{pmatrix}0.5&2&3&4\end{pmatrix}}", "incorrect"),
    # percent
    (r"50\%", r"\boxed{0.5}", "correct"),
    (r"50\%", r"\boxed{50}", "correct"),
    ("0.5", r"\boxed{50\%}", "correct"),
    (r"50\%", r"\boxed{5\%}", "incorrect"),
    ("50", r"\boxed{0.5}", "incorrect"),
    # units, money and \text{} wrappers
    (r"5\text{ cm}", r"\boxed{5}", "correct"),
    ("5", r"\boxed{5\text{ cm}}", "correct"),
    ("5", r"\boxed{5 \text{ inches}}", "correct"),
    ("12", r"\boxed{\$12}", "correct"),
    ("6", r"\boxed{7 \text{ cm}}", "incorrect"),
    (r"\text{Monday}", r"\boxed{\text{Monday}}", "correct"),
    (r"\text{Monday}", r"\boxed{Tuesday}", "incorrect"),
    (r"\text{Monday}", r"\boxed{\text{Dynamo}}", "incorrect"),
    (r"\text{(C)}", r"\boxed{C}", "correct"),
    (r"\text{(C)}", r"\boxed{(D)}", "incorrect"),
    # degrees
    (r"30^\circ", r"\boxed{30}", "correct"),
    ("30", r"\boxed{30^{\circ}}", "correct"),
    (r"30^\circ", r"\boxed{60^\circ}", "incorrect"),
    # thousands separators
    ("1000", r"\boxed{1,000}", "correct"),
    ("1000", r"\boxed{1{,}000}", "correct"),
    ("12345", r"\boxed{12,345}", "correct"),
    ("12345", r"\boxed{12,346}", "incorrect"),
    # x = 3 vs 3
    ("3", r"\boxed{x = 3}", "correct"),
    ("x=3", r"\boxed{3}", "correct"),
    ("3", r"\boxed{x = 4}", "incorrect"),
    ("y = 2x+3", r"\boxed{y=3+2x}", "correct"),
    # extraction forms
    ("7", r"The answer is \fbox{7}", "correct"),
    ("7", "Final Answer: The final answer is $7$. I hope it is correct.", "correct"),
    ("7", "Adding up, the final answer is 7.", "correct"),
    ("7", r"First \boxed{5}, then corrected: \boxed{7}", "incorrect"),  # boxes must agree
    ("7", r"First \boxed{7}, then changed to \boxed{5}", "incorrect"),
    (r"\{1,2\}", r"$\boxed{\{1, 2\}}$", "correct"),
    (r"\frac{1}{2}", r"\boxed{\boxed{\frac{1}{2}}}", "correct"),
    # wrong and garbage answers
    ("3", r"\boxed{banana}", "incorrect"),
    ("3", r"\boxed{)(][}", "incorrect"),
    ("3", r"\boxed{\frac{1}{0}}", "incorrect"),
]

NO_ANSWER_CASES = [
    "",
    "asdf qwerty",
    r"\boxed{}",
    r"the answer is \boxed{\frac{1}{2}",  # unbalanced: no complete box
    b"\xff\xfe\x00abc\x9c".decode("latin-1"),
]


def _problem(answer: object) -> Problem:
    return Problem(id="test/1", domain="math", question="?", answer=answer)


@pytest.fixture(scope="module")
def pool():
    """One shared worker pool for the whole module (workers start once)."""
    with IsolatedPool(2, preload=("math_verify", "sympy", "intbench.verifiers.math")) as shared:
        shared.warm_up()
        yield shared


@pytest.mark.parametrize(("reference", "response", "expected"), GRADING_CASES)
def test_grading_cases(pool, reference, response, expected):
    verdict = verify_math(_problem(reference), response, pool=pool)
    assert verdict.status == expected, verdict.to_dict()
    assert verdict.score == (1.0 if expected == "correct" else 0.0)
    assert verdict.details["stage"]


@pytest.mark.parametrize("response", NO_ANSWER_CASES)
def test_no_answer_is_incorrect(pool, response):
    verdict = verify_math(_problem("3"), response, pool=pool)
    assert verdict.status == "incorrect"
    assert verdict.details["reason"] == "no_answer"
    assert "no final answer" in verdict.feedback.lower()


def test_verdict_fields(pool):
    verdict = verify_math(_problem("0.5"), r"So \boxed{\frac34}.", pool=pool)
    assert verdict.status == "incorrect"
    assert verdict.answer == r"\frac34"
    assert verdict.feedback == r"Extracted answer \frac34 does not match the reference 0.5"
    assert verdict.details == {
        "extracted": r"\frac34",
        "reference": "0.5",
        "extraction": "boxed",
        "stage": "numeric",
    }


def test_missing_reference_is_error(pool):
    verdict = verify_math(_problem(None), r"\boxed{1}", pool=pool)
    assert verdict.status == "error"
    assert verdict.details["reason"] == "no_reference"


def test_numeric_reference_is_accepted(pool):
    assert verify_math(_problem(42), r"\boxed{42}", pool=pool).correct


@pytest.mark.parametrize(
    ("reference", "answer"),
    [
        (r"\frac{9\sqrt{51}}{4}", "-1"),
        (r"3\sqrt{39}", "18.73"),
        (r"-\frac{1}{\sqrt2}", r"\frac{-7}{10}"),
    ],
)
def test_a_plain_number_against_an_irrational_surd_is_decided_without_a_worker(reference, answer):
    with IsolatedPool(1) as unused:
        verdict = verify_math(_problem(reference), rf"\boxed{{{answer}}}", pool=unused)
        assert verdict.status == "incorrect" and verdict.details["stage"] == "irrational"
        assert unused.calls == 0


@pytest.mark.parametrize(
    "reference",
    [r"\sqrt{4}", r"\frac{\sqrt{8}}{\sqrt{2}}", r"0\sqrt{2}", r"\sqrt23", r"2\sqrt{2}+1"],
)
def test_a_surd_that_may_be_rational_goes_to_the_worker(pool, reference):
    before = pool.calls
    verify_math(_problem(reference), r"\boxed{2}", pool=pool)
    assert pool.calls == before + 1


def test_dispatch_through_verify():
    problem = Problem(id="omni/1", domain="omni_math", question="?", answer=r"\frac{1}{4}")
    assert verify(problem, r"\boxed{0.25}").correct  # decided on the fast path: no worker


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"a \boxed{1} b \boxed{2}", "2"),
        (r"\boxed{\{1, 2\}}", r"\{1, 2\}"),
        (r"\boxed {x^{2}}", "x^{2}"),
        (r"\boxed{\frac{1}{2}} and an open \boxed{3", r"\frac{1}{2}"),
        ("Final answer: $x=5$.", "x=5"),
        ("no answer", None),
    ],
)
def test_extract_final_answer(text, expected):
    assert extract_final_answer(text)[0] == expected


def test_normalize_answer():
    norm = normalize_answer(r"$1{,}000 \text{ cm}$.")
    assert norm.text == "1000"
    assert normalize_answer(r"50\%").percent
    assert normalize_answer(r"\text{Monday}").words == "monday"
    assert normalize_answer(r"x = \dfrac{1}{2}").text == r"\frac{1}{2}"


def test_threads_agree_with_one_thread(pool):
    cases = GRADING_CASES + [("3", response, "incorrect") for response in NO_ANSWER_CASES]

    def status(case):
        reference, response, _ = case
        return verify_math(_problem(reference), response, pool=pool).status

    sequential = [status(case) for case in cases]
    with ThreadPoolExecutor(max_workers=8) as executor:
        threaded = list(executor.map(status, cases))
    assert threaded == sequential
    assert sequential == [expected for _, _, expected in cases]


PATHOLOGICAL = {
    "power_tower": ("1", r"\boxed{9^{9^{9^{9}}}}"),
    "answer_100kb": ("2", r"\boxed{" + "1+" * 50_000 + "1}"),
    "response_100kb": ("2", "blah " * 20_000),
    "deep_braces": ("1", r"\boxed{" + "{" * 20_000 + "1" + "}" * 20_000 + "}"),
    "moderate_braces": ("1", r"\boxed{" + "{" * 300 + "1" + "}" * 300 + "}"),
    "braces_under_size_cap": ("1", r"\boxed{" + "{" * 990 + "1" + "}" * 990 + "}"),
    "moderate_parens": ("1", r"\boxed{" + "(" * 300 + "1" + ")" * 300 + "}"),
    "unbalanced": ("1", r"\boxed{" * 20_000),
    "many_closers": ("1", "}" * 50_000 + r"\boxed{1}"),
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_inputs_return_in_time(pool, name):
    reference, response = PATHOLOGICAL[name]
    timeout = 2.0
    start = time.perf_counter()
    verdict = verify_math(_problem(reference), response, timeout_s=timeout, pool=pool)
    elapsed = time.perf_counter() - start
    assert elapsed < timeout + 3.0, f"{name} took {elapsed:.1f} s"
    assert verdict.status in ("correct", "incorrect", "error")
    if name == "power_tower":
        assert verdict.status == "error"
        assert verdict.details["reason"] == "timeout"
    if name in ("many_closers", "moderate_braces"):
        assert verdict.correct


def test_pool_recovers_after_timeout(pool):
    verify_math(_problem("1"), r"\boxed{9^{9^{9^{9}}}}", timeout_s=0.5, pool=pool)
    verdict = verify_math(_problem("x^2-1"), r"\boxed{(x-1)(x+1)}", pool=pool)
    assert verdict.correct


# --- the isolation utility on its own -------------------------------------------------


@pytest.fixture(scope="module")
def bare_pool():
    with IsolatedPool(1) as shared:
        yield shared


def test_isolated_call_returns_result(bare_pool):
    assert bare_pool.call(divmod, 17, 5, timeout=10) == (3, 2)


def test_isolated_call_propagates_remote_error(bare_pool):
    with pytest.raises(RemoteError) as info:
        bare_pool.call(divmod, 1, 0, timeout=10)
    assert info.value.type_name == "ZeroDivisionError"
    assert "ZeroDivisionError" in info.value.remote_traceback


def test_isolated_call_kills_on_timeout(bare_pool):
    start = time.perf_counter()
    with pytest.raises(WorkerTimeout):
        bare_pool.call(time.sleep, 30, timeout=0.3)
    assert time.perf_counter() - start < 5
    assert bare_pool.call(divmod, 9, 2, timeout=10) == (4, 1)  # replaced worker serves


def test_isolated_call_reports_crash(bare_pool):
    with pytest.raises(WorkerCrashed):
        bare_pool.call(os._exit, 3, timeout=10)
    assert bare_pool.call(abs, -4, timeout=10) == 4


def test_closed_pool_refuses_calls():
    closed = IsolatedPool(1)
    closed.close()
    with pytest.raises(RuntimeError):
        closed.call(abs, 1, timeout=1)
