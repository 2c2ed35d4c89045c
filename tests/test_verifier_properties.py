"""Property tests: every domain's verifier survives arbitrary text.

``intbench.verifiers.verify`` turns a crashing verifier into an ``error``
verdict and logs it, so "no exception escapes" is checked on that log: an
example passes only if the verifier itself returned a Verdict without raising.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intbench.records import DOMAINS, VERDICT_STATUSES, Problem, Verdict
from intbench.verifiers import get_verifier, verify

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
}

SUBPROCESS_DOMAINS = {"math", "omni_math", "codeforces", "debug"}

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
responses = st.one_of(st.text(), decoded_bytes, fragment_text.map("".join), arc_json)


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
