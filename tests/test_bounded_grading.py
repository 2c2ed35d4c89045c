"""Bounded grading: a 1 MB hostile response is graded (or refused) in bounded time.

Every verifier reads only the last 64 KB of a response
(:func:`intbench.verifiers.bounds.graded_part`) and parses it in linear time,
so each response here must be graded within the verifier's own timeout plus
2 s.  ``extract_code`` keeps its semantics while scanning fences linearly.
"""

from __future__ import annotations

import contextlib
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from intbench.envs.domains import load_problems
from intbench.records import DOMAINS, VERDICT_STATUSES, Verdict
from intbench.verifiers import verify
from intbench.verifiers.arc import ArcParseError, parse_arc_response
from intbench.verifiers.bounds import MAX_GRADED_CHARS
from intbench.verifiers.code import extract_code
from intbench.verifiers.judge import parse_judge_output
from intbench.verifiers.math import DEFAULT_TIMEOUT_S
from intbench.verifiers.text import canonical_answer, extract_final_answer

MB = 1 << 20
SLACK_S = 2.0
CODE_TIMEOUT_S = 20.0
"""The longest total run time the code verifier grants one program (verifiers/code.py)."""
TIMEOUT_S = {
    "math": DEFAULT_TIMEOUT_S,
    "omni_math": DEFAULT_TIMEOUT_S,
    "arithmetic": DEFAULT_TIMEOUT_S,
    "codeforces": CODE_TIMEOUT_S,
    "debug": CODE_TIMEOUT_S,
    "linguini": 0.0,
    "arc": 0.0,
    "brainteaser": 0.0,
}


def _repeat(unit: str, size: int = MB) -> str:
    return (unit * (size // len(unit) + 1))[:size]


SHAPES = {
    "backticks": _repeat("`"),
    "dollars": _repeat("$"),
    "braces": _repeat("{"),
    "brackets": _repeat("["),
    "backslashes": _repeat("\\"),
    "spaces": _repeat(" "),
    "newlines": _repeat("\n"),
    "answer_labels": _repeat("answer:"),
    "answer_then_spaces": "Answer: " + _repeat(" "),
    "final_answer_dollars": "Final Answer: " + _repeat("$"),
    "open_zeros": "[" + _repeat("0,"),
    "digit_rows": _repeat("0 1 2\n"),
    "boxed_opens": _repeat("\\boxed{"),
    "boxed_answers": _repeat("\\boxed{1}\n"),
    "unicode": _repeat("\u00e9\u4e2d\U0001f600"),
    "object_opens": _repeat('{"outputs": ['),
    "nested_objects": _repeat('{"a":[') + _repeat("0,"),
    "fences": _repeat("```python\n"),
    "program": _repeat("x = 1\n"),
}


@pytest.fixture(scope="module")
def problems():
    """One offline problem per domain."""
    return {domain: load_problems(domain, n=1)[0] for domain in sorted(DOMAINS)}


def test_every_domain_has_a_timeout():
    assert set(TIMEOUT_S) == set(DOMAINS)


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("domain", sorted(DOMAINS))
def test_one_megabyte_response_is_graded_in_bounded_time(problems, domain, name):
    start = time.perf_counter()
    verdict = verify(problems[domain], SHAPES[name])
    elapsed = time.perf_counter() - start
    assert isinstance(verdict, Verdict) and verdict.status in VERDICT_STATUSES
    assert elapsed < TIMEOUT_S[domain] + SLACK_S, f"{domain}/{name} took {elapsed:.1f} s"


PARSERS = {
    "extract_code": extract_code,
    "extract_final_answer": extract_final_answer,
    "canonical_answer": canonical_answer,
    "parse_judge_output": parse_judge_output,
    "parse_arc_response": lambda text: parse_arc_response(text, 1),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_parsers_take_bounded_time(parser, name):
    start = time.perf_counter()
    with contextlib.suppress(ArcParseError, ValueError):
        PARSERS[parser](SHAPES[name])
    assert time.perf_counter() - start < SLACK_S


# --- extract_code -------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("```python\na\n```\n```\nb\n```", "a\n"),
        ("```js\na\n```\n```py\nb\n```\n```text\nc\n```", "b\n"),
        ("``` Python3 extra words\na\n```", "a\n"),
        ("```text\na\n```\n```\nb\n```", "b\n"),
        ("Say ```python\na``` inline", "a"),
        ("```python\na\n```\n```python\nb", "b"),
        ("````python\na\n````", "a\n"),  # the rest of the opening line is ignored
        ("trailing ```python", "trailing ```python"),
        ("no fences at all", "no fences at all"),
        ("```python\n   \n```\n", None),
        ("", None),
    ],
)
def test_extract_code_semantics(response, expected):
    assert extract_code(response) == expected


def test_extract_code_reads_only_the_graded_part():
    block = "```python\nprint(1)\n```\n"
    assert extract_code(block + "#" * MAX_GRADED_CHARS) == "#" * MAX_GRADED_CHARS
    assert extract_code("x" * MB + block) == "print(1)\n"


# The regex extract_code used to run (quadratic on long runs of backticks): the
# reference for its semantics on short texts.
_REFERENCE_FENCE = re.compile(r"```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def _reference_extract_code(response: str) -> str | None:
    blocks = _REFERENCE_FENCE.findall(response)
    python = [body for tag, body in blocks if tag.lower() in {"python", "py", "python3", "py3"}]
    code = python[-1] if python else blocks[-1][1] if blocks else response
    return code if code.strip() else None


_FENCE_PIECES = ["`", "```", "```python", "```py ", "``` Py3 x", "\n", "a", " ", "\t", "é", "~"]


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(st.sampled_from(_FENCE_PIECES), max_size=16).map("".join))
def test_extract_code_matches_the_reference_regex(response):
    assert extract_code(response) == _reference_extract_code(response)
