"""Property tests: every domain's verifier and every response parser survives arbitrary text.

``intbench.verifiers.verify`` turns a crashing verifier into an ``error``
verdict and logs it, so "no exception escapes" is checked on that log: an
example passes only if the verifier itself returned a Verdict without raising.
The parsers are called directly and must return their documented types.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intbench.records import DOMAINS, VERDICT_STATUSES, Problem, Verdict
from intbench.verifiers import get_verifier, verify
from intbench.verifiers.arc import ArcParseError, parse_arc_response
from intbench.verifiers.code import extract_code
from intbench.verifiers.judge import parse_judge_output
from intbench.verifiers.text import (
    answers_match,
    canonical_answer,
    extract_final_answer,
    final_answer_candidates,
)

GRID = [[0, 1], [2, 3]]

PROBLEMS = {
    "math": Problem(id="p/math", domain="math", question="Half of 1?", answer="\\frac{1}{2}"),
    "omni_math": Problem(
        id="p/omni", domain="omni_math", question="Expand.", answer="x^2 + 2x + 1"
    ),
    "codeforces": Problem(
        id="p/cf",
        domain="codeforces",
        question="Print the sum of two integers.",
        tests={
            "kind": "stdio",
            "cases": [{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12\n"}],
            "time_limit_s": 2,
        },
    ),
    "debug": Problem(
        id="p/debug",
        domain="debug",
        question="Fix the bug.",
        solution="def add(a, b):\n    return a + b\n",
        tests={
            "kind": "function",
            "entry_point": "add",
            "setup": "",
            "cases": [{"code": "assert candidate(1, 2) == 3"}],
            "time_limit_s": 2,
        },
        fields={"buggy_code": "def add(a, b):\n    return a - b\n"},
    ),
    "linguini": Problem(
        id="p/ling",
        domain="linguini",
        question="Translate.",
        answer="the dog sleeps",
        fields={"aliases": ["a dog sleeps"]},
    ),
    "arc": Problem(
        id="p/arc",
        domain="arc",
        question="Solve.",
        answer=[GRID],
        fields={"train": [{"input": GRID, "output": GRID}], "test_inputs": [GRID]},
    ),
    "brainteaser": Problem(
        id="p/teaser",
        domain="brainteaser",
        question="What has keys?",
        answer="a piano",
        fields={"aliases": ["keyboard"]},
    ),
    "arithmetic": Problem(
        id="p/arith", domain="arithmetic", question="What is $9 - 4$?", answer="5"
    ),
}

SUBPROCESS_DOMAINS = {"math", "omni_math", "arithmetic", "codeforces", "debug"}

# Pieces that steer random text into the parsers' interesting branches.
FRAGMENTS = [
    "\\boxed{",
    "}",
    "{",
    "$",
    "Answer:",
    "Final answer:",
    "the answer is ",
    "\n",
    "```json\n",
    "```python\n",
    "```\n",
    '{"outputs": ',
    "[[0, 1], [2, 3]]",
    "0 1\n2 3\n",
    "(a)",
    "3.0",
    "print(sum(map(int, input().split())))",
    "def add(a, b):\n    return a + b\n",
    "import os\nos._exit(0)\n",
    "\\frac{1}{2}",
    "\x00",
    "\udcff",
]

decoded_bytes = st.one_of(
    st.binary(max_size=300).map(lambda b: b.decode("utf-8", errors="replace")),
    st.binary(max_size=300).map(lambda b: b.decode("utf-8", errors="surrogateescape")),
)
fragment_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=20)), max_size=12)
arc_json = st.lists(
    st.lists(st.one_of(st.integers(-3, 12), st.booleans(), st.text(max_size=2)), max_size=4),
    max_size=4,
).map(lambda grid: json.dumps({"outputs": [grid]}))
# Text made of LaTeX and markdown tokens, where the parsers' state machines live.
MARKUP_TOKENS = [
    *"{}[]()$^_\\*#>-`~\"',.;:=!?%&|<> \t\n0123456789abxyz",
    "\\boxed{",
    "\\text{",
    "\\frac{",
    "\\left(",
    "\\right)",
    "\\infty",
    "\\%",
    "$$",
    "**",
    "```",
    "```python\n",
    "Answer:",
    "**Final Answer:**",
    "the answer is",
    "Verdict: Correct",
    "Verdict: Incorrect",
    "Explanation:",
    "<student_answer>",
    '{"outputs": [[',
    "\u00e9",
    "\u4e2d",
    "\U0001f600",
    "\u2028",
]
markup_text = st.lists(st.sampled_from(MARKUP_TOKENS), max_size=40).map("".join)
responses = st.one_of(st.text(), decoded_bytes, fragment_text.map("".join), arc_json, markup_text)
fuzzed_text = st.one_of(st.text(max_size=200), markup_text)


class _CrashLog(logging.Handler):
    """Collects the records the dispatcher logs when a verifier raises."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(record)


@contextlib.contextmanager
def _crash_log():
    handler = _CrashLog()
    logger = logging.getLogger("intbench.verifiers")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def _check(domain: str, response: str) -> None:
    with _crash_log() as crashes:
        verdict = verify(PROBLEMS[domain], response)
    assert isinstance(verdict, Verdict)
    assert verdict.status in VERDICT_STATUSES
    assert 0.0 <= verdict.score <= 1.0
    assert not crashes.records, crashes.records[0].getMessage()
    json.dumps(verdict.to_dict(), default=str)  # records must stay serialisable


def test_every_domain_has_a_representative_problem():
    assert set(PROBLEMS) == set(DOMAINS)


@pytest.mark.parametrize("domain", sorted(DOMAINS))
def test_domain_verifier_is_importable(domain):
    assert callable(get_verifier(domain))


@pytest.mark.parametrize("domain", sorted(set(DOMAINS) - SUBPROCESS_DOMAINS))
@settings(max_examples=300, deadline=None, database=None)
@given(response=responses)
def test_pure_python_verifiers_never_crash(domain, response):
    _check(domain, response)


@pytest.mark.parametrize("domain", sorted(SUBPROCESS_DOMAINS))
@settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(response=responses)
def test_subprocess_verifiers_never_crash(domain, response):
    _check(domain, response)


@pytest.mark.parametrize("domain", sorted(DOMAINS))
@pytest.mark.parametrize("response", [None, "", " ", "\x00", "\udcff" * 3, "x" * 20000])
def test_edge_responses(domain, response):
    _check(domain, response)


HOSTILE = {
    "unclosed_boxed": "\\boxed{" * 10000,
    "nested_text": "\\text{" * 5000 + "x" + "}" * 5000,
    "braces": "{" * 50000,
    "object_starts": '{"' * 25000,
    "deep_json": '{"outputs": ' + "[" * 50000,
    "label_then_spaces": "answer" + " " * 50000 + "x",
    "nested_brackets": "[" * 20000 + "'" * 20000 + "]" * 20000,
    "digit_rows": "0 1 2\n" * 20000,
}


@pytest.mark.parametrize("domain", sorted(set(DOMAINS) - SUBPROCESS_DOMAINS))
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_inputs_finish_quickly(domain, name):
    # Each of these took from seconds to over a minute before the parsers were
    # made linear; 3 s leaves room for a loaded CI machine.
    start = time.perf_counter()
    _check(domain, HOSTILE[name])
    assert time.perf_counter() - start < 3.0


PARSER_EXAMPLES = settings(max_examples=200, deadline=None, database=None)


@PARSER_EXAMPLES
@given(text=fuzzed_text)
def test_extract_code_returns_text_or_none(text):
    code = extract_code(text)
    assert code is None or (isinstance(code, str) and code.strip())


@PARSER_EXAMPLES
@given(text=fuzzed_text)
def test_text_extraction_returns_a_marked_or_last_line(text):
    candidates = final_answer_candidates(text)
    assert isinstance(candidates, list) and all(isinstance(c, str) for c in candidates)
    final = extract_final_answer(text)
    assert final is None or isinstance(final, str)
    if candidates:
        assert final == candidates[-1]


@PARSER_EXAMPLES
@given(predicted=fuzzed_text, reference=fuzzed_text)
def test_answers_match_is_a_symmetric_bool(predicted, reference):
    result = answers_match(predicted, reference)
    assert isinstance(result, bool)
    assert result == answers_match(reference, predicted)
    assert answers_match(predicted, predicted) == bool(canonical_answer(predicted))


@PARSER_EXAMPLES
@given(text=fuzzed_text, n_tests=st.integers(1, 2))
def test_parse_arc_response_returns_valid_grids_or_a_parse_error(text, n_tests):
    try:
        grids = parse_arc_response(text, n_tests)
    except ArcParseError as exc:
        assert exc.reason in ("parse_error", "invalid_output")
        return
    assert len(grids) == n_tests
    for grid in grids:
        assert grid and all(len(row) == len(grid[0]) for row in grid)
        assert all(type(cell) is int and 0 <= cell <= 9 for row in grid for cell in row)


@PARSER_EXAMPLES
@given(text=fuzzed_text)
def test_parse_judge_output_returns_a_status_or_raises_value_error(text):
    try:
        status, explanation = parse_judge_output(text)
    except ValueError:
        return
    assert status in ("correct", "incorrect") and isinstance(explanation, str)


short_answers = st.text(st.sampled_from("abkuma ,.()'[]$"), min_size=1, max_size=12)


def _comparable(domain: str, answer: str) -> str:
    """The form the domain's grader compares (brain teasers ignore a leading article)."""
    form = canonical_answer(answer)
    return re.sub(r"^(?:a|an|the)\s+", "", form) if domain == "brainteaser" else form


@pytest.mark.parametrize("domain", ["linguini", "brainteaser"])
@PARSER_EXAMPLES
@given(first=short_answers, second=short_answers)
def test_two_disagreeing_marked_answers_are_never_correct(domain, first, second):
    problem = Problem(id="p", domain=domain, question="q", answer=first)
    response = f"\\boxed{{{first}}}\nAnswer: {second}"
    second_form = _comparable(domain, second)
    if second_form and second_form != _comparable(domain, first):
        assert not verify(problem, response).correct
