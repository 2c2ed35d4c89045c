"""The code verifier: extraction, comparison, verdicts and execution-context rendering."""

from __future__ import annotations

import json

import pytest

from intbench.records import Problem
from intbench.verifiers import verify
from intbench.verifiers.code import (
    extract_code,
    outputs_match,
    render_execution_context,
    verify_code,
)

SUM_TESTS = {
    "kind": "stdio",
    "time_limit_s": 1.0,
    "cases": [
        {"input": "1 2\n", "output": "3\n"},
        {"input": "10 20\n", "output": "30"},
        {"input": "5 5\n", "output": "10"},
    ],
}


def problem(tests, domain="codeforces", solution="print(sum(map(int, input().split())))"):
    return Problem(
        id="p1", domain=domain, question="Add two numbers.", solution=solution, tests=tests
    )


def fenced(code: str, lang: str = "python") -> str:
    return f"Here is my solution.\n```{lang}\n{code}\n```\nDone."


def test_extract_code_prefers_last_python_block():
    text = "```text\nnot code\n```\n```python\nfirst\n```\n```python\nsecond\n```"
    assert extract_code(text).strip() == "second"
    assert extract_code("```\nplain\n```").strip() == "plain"
    assert extract_code("print(1)") == "print(1)"
    assert extract_code("```python\nunterminated = 1\n").strip() == "unterminated = 1"
    assert extract_code("   ") is None
    assert extract_code("```python\n\n```") is None


@pytest.mark.parametrize(
    ("expected", "got", "same"),
    [
        ("3\n", "3", True),
        ("1 2  3", "1\n2\n3\n", True),
        ("0.3333333", "0.33333333", True),
        ("1.0", "1.00001", False),
        ("1e6", "1000000.0000001", True),
        ("YES", "yes", False),
        ("1 2", "1 2 3", False),
        ("abc", "abd", False),
        ("1_000", "1000", False),
        # integers compare exactly, however large; only float tokens get a tolerance
        ("1000000007", "1000000008", False),
        ("1000000007", "1000000007.0", False),
        ("1000000000", "1e9", False),
        ("12345678901234567890", "12345678901234567891", False),
        ("7", "007", True),
        ("-0", "0", True),
        ("5", "+5", True),
        ("1000000007.0", "1000000007", True),
        ("1e400", "1e401", False),
        ("inf", "inf", True),
        ("0.5", "inf", False),
        ("0.5", "nan", False),
        ("12", "\uff11\uff12", False),
        ("1 2", "1\u00a02", False),
    ],
)
def test_outputs_match(expected, got, same):
    assert outputs_match(expected, got) is same


def test_correct_program_is_correct():
    verdict = verify(problem(SUM_TESTS), fenced("a, b = map(int, input().split())\nprint(a + b)"))
    assert verdict.status == "correct" and verdict.score == 1.0
    assert verdict.details["passed"] == verdict.details["total"] == 3
    assert verdict.details["isolation"] is not None


def test_partial_pass_rate_and_first_failure():
    code = "a, b = map(int, input().split())\nprint(a + b if a < 10 else a * b)"
    verdict = verify_code(problem(SUM_TESTS), fenced(code))
    assert verdict.status == "incorrect"
    assert verdict.score == pytest.approx(2 / 3)
    failure = verdict.details["first_failure"]
    assert failure["test"] == 1 and failure["status"] == "wrong_answer"
    assert failure["expected"] == "30" and failure["got"] == "200\n"
    text = render_execution_context(verdict.details, "feedback", tests="all")
    assert "passed 2 of 3 tests" in text and "Test 2 produced the wrong output" in text
    assert "200" in text


def test_runtime_error_renders_traceback():
    verdict = verify_code(problem(SUM_TESTS), fenced("print(undefined_name)"))
    assert verdict.details["reason"] == "runtime_error"
    tb = render_execution_context(verdict.details, "traceback")
    assert "NameError" in tb and 'File "solution.py", line 1' in tb
    structured = json.loads(render_execution_context(verdict.details, "structured"))
    assert structured["passed"] == 0 and structured["status"] == "runtime_error"
    assert "NameError" in structured["first_failure"]["error"]
    assert render_execution_context(verdict.details, "none") == ""


def test_timeout_is_flagged():
    tests = dict(SUM_TESTS, time_limit_s=0.5, cases=SUM_TESTS["cases"][:1])
    verdict = verify_code(problem(tests), fenced("while True:\n    pass"))
    assert verdict.status == "incorrect"
    assert verdict.details["timed_out"] and verdict.details["reason"] == "timeout"
    assert "exceeded the time limit" in verdict.feedback


def test_no_code_and_syntax_error():
    verdict = verify_code(problem(SUM_TESTS), "I don't know.\n```python\n```")
    assert verdict.status == "incorrect" and verdict.details["reason"] == "no_code"
    verdict = verify_code(problem(SUM_TESTS), fenced("def f(:\n    pass"))
    assert verdict.status == "incorrect" and verdict.details["reason"] == "syntax_error"
    assert "SyntaxError" in render_execution_context(verdict.details, "traceback")


def test_function_kind_debug_problem():
    tests = {
        "kind": "function",
        "entry_point": "is_even",
        "setup": "import math",
        "cases": [
            {"code": "assert candidate(2) is True"},
            {"code": "assert candidate(3) is False"},
        ],
    }
    buggy = problem(tests, domain="debug", solution="def is_even(n):\n    return n % 2 == 0")
    assert verify(buggy, fenced("def is_even(n):\n    return n % 2 == 0")).status == "correct"
    wrong = verify(buggy, fenced("def is_even(n):\n    return True"))
    assert wrong.score == 0.5 and wrong.details["first_failure"]["code"].startswith("assert")
    missing = verify(buggy, fenced("def other(n):\n    return True"))
    assert "is_even" in missing.details["first_failure"]["error"]


def test_reference_solution_never_reaches_the_sandbox():
    marker = "REFERENCE_SOLUTION_MARKER_91823"
    tests = {"kind": "stdio", "cases": [{"input": "", "output": marker}]}
    spy = "import os\nprint(sorted(os.environ), open('/proc/self/cmdline').read())"
    verdict = verify_code(problem(tests, solution=f"print('{marker}')"), fenced(spy))
    assert verdict.status == "incorrect"
    assert marker not in verdict.details["first_failure"]["got"]


@pytest.mark.parametrize(
    "tests",
    [None, {"kind": "shell", "cases": []}, {"kind": "stdio", "cases": []},
     {"kind": "stdio", "cases": [{"input": "1"}]}, {"kind": "function", "cases": [{"code": "x"}]},
     dict(SUM_TESTS, time_limit_s="fast")],
)  # fmt: skip
def test_malformed_tests_give_error_verdicts(tests):
    verdict = verify_code(problem(tests), fenced("print(1)"))
    assert verdict.status == "error"
    assert verdict.details["reason"] == "bad_tests"


def test_render_rejects_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        render_execution_context({"passed": 0, "total": 1, "status": "timeout"}, "verbose")
