"""Verdicts are memoised by what the verifier grades, and give exactly what grading gives."""

from __future__ import annotations

import pytest

from intbench.envs.flows import RequestExecutor, Verify
from intbench.records import Problem, Verdict
from intbench.verifiers import verify

MATH = Problem(id="math/t/0", domain="math", question="1+1?", answer="2")
CODE = Problem(
    id="codeforces/t/0",
    domain="codeforces",
    question="echo",
    tests={"kind": "stdio", "cases": [{"input": "3\n", "output": "3\n"}]},
)


def _counting(calls: list):
    def verifier(problem, text):
        calls.append(text)
        return verify(problem, text)

    verifier.cache_key = verify.cache_key
    return verifier


def _executor() -> RequestExecutor:
    return RequestExecutor({})  # grading needs no model


def test_the_same_final_answer_after_other_reasoning_is_graded_once():
    calls: list = []
    verifier = _counting(calls)
    executor = _executor()
    texts = ["First idea. \\boxed{2}", "Another route, same end: \\boxed{2}", "Hmm \\boxed{3}"]
    verdicts = executor.verify([Verify(MATH, t, verifier) for t in texts])
    assert [v.status for v in verdicts] == ["correct", "correct", "incorrect"]
    assert len(calls) == 2  # the second response reuses the first one's verdict
    again = executor.verify([Verify(MATH, "Later, in another episode: \\boxed{2}", verifier)])
    assert again[0].correct and len(calls) == 2
    assert executor.verdicts.hits == 2


def test_memoised_verdicts_equal_fresh_ones_and_are_copies():
    executor = _executor()
    texts = ["\\boxed{2}", "\\boxed{2}", "Final Answer: 2", "\\boxed{2} and \\boxed{3}", ""]
    memoised = executor.verify([Verify(MATH, t, verify) for t in texts])
    assert [v.to_dict() for v in memoised] == [verify(MATH, t).to_dict() for t in texts]
    memoised[0].details["stage"] = "edited by a caller"
    assert executor.verify([Verify(MATH, "\\boxed{2}", verify)])[0].details["stage"] != (
        "edited by a caller"
    )


def test_the_key_covers_all_boxes_and_the_extraction_method():
    key = verify.cache_key
    assert key(MATH, "\\boxed{2}") == key(MATH, "other words \\boxed{2}")
    assert key(MATH, "\\boxed{2}") != key(MATH, "\\boxed{3} \\boxed{2}")  # multi-box rule
    assert key(MATH, "\\boxed{2}") != key(MATH, "Final Answer: 2")


def test_another_reference_under_the_same_id_is_not_served_from_the_memo():
    executor = _executor()
    other = Problem(id=MATH.id, domain="math", question="1+2?", answer="3")
    first = executor.verify([Verify(MATH, "\\boxed{3}", verify)])[0]
    second = executor.verify([Verify(other, "\\boxed{3}", verify)])[0]
    assert (first.status, second.status) == ("incorrect", "correct")


def test_errors_are_graded_again_and_unkeyed_verifiers_never_memoised():
    executor = _executor()
    calls: list = []

    def flaky(problem, text):
        calls.append(text)
        return Verdict.error("grader timed out", reason="timeout")

    flaky.cache_key = verify.cache_key
    executor.verify([Verify(MATH, "\\boxed{2}", flaky)])
    executor.verify([Verify(MATH, "\\boxed{2}", flaky)])
    assert len(calls) == 2

    judged: list = []

    def judge(problem, text):  # like a judge model: no cache_key
        judged.append(text)
        return Verdict("correct", 1.0)

    executor.verify([Verify(MATH, "\\boxed{2}", judge), Verify(MATH, "\\boxed{2}", judge)])
    assert len(judged) == 2


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("```python\nprint(input())\n```", "I think:\n```python\nprint(input())\n```", True),
        ("```python\nprint(input())\n```", "```python\nprint(int(input()))\n```", False),
    ],
)
def test_code_is_keyed_by_the_extracted_program(first, second, same):
    assert (verify.cache_key(CODE, first) == verify.cache_key(CODE, second)) is same


def test_a_repeated_program_runs_once(monkeypatch):
    import intbench.verifiers.code as code

    runs: list = []
    real = code.run_tests

    def counted(program, tests, visible=None):
        runs.append(program)
        return real(program, tests, visible)

    monkeypatch.setattr(code, "run_tests", counted)
    executor = _executor()
    program = "```python\nprint(input())\n```"
    verdicts = executor.verify([Verify(CODE, f"Try {i}:\n{program}", verify) for i in range(3)])
    assert len({v.status for v in verdicts}) == 1 and len(runs) == 1


def test_keys_are_injective_on_lone_surrogates():
    # Issue 38: keys encoded with errors="replace" made both programs "?" and shared a verdict.
    programs = [f"```python\n# {c}\nprint(input())\n```" for c in ("\ud800", "\udfff", "?")]
    assert len({verify.cache_key(CODE, p) for p in programs}) == 3
    answers = [f"\\boxed{{{c}2}}" for c in ("\ud800", "\udfff")]
    assert verify.cache_key(MATH, answers[0]) != verify.cache_key(MATH, answers[1])
    # A reference with a lone surrogate is fingerprinted, not a crash.
    odd = Problem(id="math/t/1", domain="math", question="?", answer="\ud8002")
    executor = _executor()
    memoised = executor.verify([Verify(odd, a, verify) for a in (*answers, answers[0])])
    assert [v.status for v in memoised] == ["correct", "incorrect", "correct"]
